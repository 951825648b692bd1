// Options every importer accepts.
#pragma once

#include <cstddef>

namespace strata::importers {

struct LoadOptions {
  bool progress = false;  // draw a progress bar on stderr when it is a terminal
  // JSON importers: bytes decompressed and parsed per batch (0: the default,
  // a few MiB). Tests set it small to exercise events that span batches.
  size_t json_window = 0;
};

}  // namespace strata::importers
