// Telling the program's own code from libraries in sampled stacks, and picking
// the label most samples carried: shared by the rules that name the program's
// lines or what a thread ran (rules_python.cc, rules_checkpoint.cc, rules_os.cc).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace strata::analysis {

// A Python frame of a library (the interpreter's standard library, an
// installed package, a frozen module) rather than of the program itself.
inline bool LibraryFile(std::string_view path) {
  return path.empty() || path.front() == '<' || path.find("/site-packages/") != std::string_view::npos ||
         path.find("/dist-packages/") != std::string_view::npos || path.find("/lib/python3") != std::string_view::npos;
}

// strata's own hooks in the program (python/strata/_*.py).
inline bool StrataHookFile(std::string_view path) { return path.find("/strata/_") != std::string_view::npos; }

// The framework's own Python package (torch's, tensorflow's, keras's, jax's),
// or strata's own hooks in the program.
inline bool FrameworkFile(std::string_view path) {
  for (std::string_view pkg : {"/torch/", "/tensorflow/", "/keras/", "/jax/", "/torchvision/"})
    if (path.find(pkg) != std::string_view::npos && LibraryFile(path)) return true;
  return StrataHookFile(path);
}

// The label counted most often ("" when none; the first in order on a tie).
inline std::string MostCommon(const std::map<std::string, size_t>& count) {
  std::string best;
  size_t n = 0;
  for (const auto& [label, k] : count)
    if (k > n) {
      best = label;
      n = k;
    }
  return best;
}

}  // namespace strata::analysis
