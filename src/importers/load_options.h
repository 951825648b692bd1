// Options every importer accepts.
#pragma once

#include <cstddef>

namespace strata::importers {

struct LoadOptions {
  bool progress = false;  // draw a progress bar on stderr when it is a terminal
  // JSON importers: bytes decompressed and parsed per batch (0: the default,
  // a few MiB). Tests set it small to exercise events that span batches.
  size_t json_window = 0;
  // JSON importers: read plain events straight from the bytes. false sends
  // every event through simdjson instead; tests check that both give the
  // same model.
  bool json_fast_path = true;
};

}  // namespace strata::importers
