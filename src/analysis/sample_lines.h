// Where a step thread's CPU samples were, by line of the program's own code,
// inside one part of the steps' breakdown (the python part for python_code,
// the input part for input_pipeline): the innermost frame outside libraries,
// with the innermost library function it was in when it differs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analysis/findings_context.h"
#include "analysis/step_breakdown.h"

namespace strata::analysis {

struct SampleLines {
  double samples = 0;    // in the part's pieces
  double framework = 0;  // ... of them in the framework's own Python (torch's package), not the program's
  std::vector<std::pair<std::string, double>> lines;  // label ("file.py:12 (fn), in lib_fn"), samples; most first
};

SampleLines LinesInPart(const FindingsContext& c, StepPart part);

// "a.py:3 (f) 60%; b.py:9 (g) 20%": up to `max` lines with at least 5% of the
// program's own samples (shares of those), each also appended to `involved`.
std::string LineList(const SampleLines& w, size_t max, std::vector<std::string>* involved);

}  // namespace strata::analysis
