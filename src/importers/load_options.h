// Options every importer accepts.
#pragma once

namespace strata::importers {

struct LoadOptions {
  bool progress = false;  // draw a progress bar on stderr when it is a terminal
};

}  // namespace strata::importers
