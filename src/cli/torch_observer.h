// The PyTorch observer for the torch a recorded Python program imports.
//
// strata's own observer (lib/libstrata_torch.so) is built against the libtorch
// found at build time (Debian's libtorch-dev). A program run by another Python
// or venv imports another torch (2.x from PyPI): loading an observer built for
// another libtorch would load a second libtorch, so the observer is built for
// that torch on first use (scripts/build-torch-observer: the torch's own
// headers, libraries and C++ ABI) and cached per torch build, in
// $STRATA_CACHE_DIR, else $XDG_CACHE_HOME/strata, else ~/.cache/strata.
#pragma once

#include <string>
#include <vector>

#include "cli/commands.h"

namespace strata::cli {

struct TorchObserver {
  std::string library;  // the libstrata_torch.so to load; empty: strata's own (or none)
  std::string note;     // what happened, for the manifest and the user (empty: nothing to say)
};

// The observer for the torch CMD's Python imports. Builds it (once, minutes)
// when the program's torch is not the one strata's own observer was built for;
// says so on stderr while it builds. Never fails the recording: when the build
// cannot happen (no compiler, no torch headers), `note` says why and the
// recording goes on without the op level. STRATA_TORCH_AUTOBUILD=0 turns the
// build off.
TorchObserver ObserverFor(const std::vector<std::string>& cmd, const InstallPaths& paths, bool quiet);

// The Python interpreter CMD runs: CMD[0] when it is one (python, python3.11,
// a path to either), else the interpreter named by the #! line of the script
// CMD[0] names (torchrun, accelerate, an executable train.py; directly or
// through /usr/bin/env). "" when CMD does not run Python.
std::string PythonOf(const std::vector<std::string>& cmd);

// The libtorch_cpu an observer library was built against (its .json), or "".
std::string ObserverLibtorch(const std::string& observer_library);

}  // namespace strata::cli
