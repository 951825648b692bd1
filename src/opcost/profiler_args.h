// Op arguments as the PyTorch profiler (Kineto JSON) records them, turned into
// the cost model's ArgDesc, so that traces recorded by torch.profiler get the
// same FLOP/byte estimates as strata's own observer.
//
// Per input the profiler writes three parallel lists:
//   "Input Dims"       [[32, 3, 224, 224], [64, 3, 7, 7], [], ...]  ([] for non-tensors)
//   "Input type"       ["float", "c10::BFloat16", "Scalar", "GenericList", "", ...]
//   "Concrete Inputs"  ["", "", "[2, 2]", "1", "True", ...]  (PyTorch >= 2.1 only)
// Older traces have no concrete values: a convolution's stride and padding are
// then unknown, and DescribeProfilerInput leaves those arguments kNone, which
// the cost model reads as their defaults (stride 1, no padding). Callers that
// know better (the analyses) may substitute. JSON decoding is the caller's; this
// library stays free of dependencies (it also builds into the recorder side).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "opcost/cost_model.h"

namespace strata::opcost {

// Bytes per element of a profiler dtype name ("float", "c10::Half", "long int",
// "BFloat16", ...), or 0 when `type` is not a tensor element type (a Scalar,
// an empty string for None, "GenericList", ...).
int ElemSizeOfType(std::string_view type);

// Short precision name of a dtype for choosing a roof: "f64", "f32", "f16"
// (half and bfloat16), "i8" (int8/fp8), or "" when unknown.
std::string_view PrecisionOfType(std::string_view type);

struct ProfilerInput {
  std::span<const int64_t> dims;  // the input's "Input Dims" entry
  std::string_view type;          // its "Input type" entry
  std::string_view concrete;      // its "Concrete Inputs" entry ("" when absent)
};

// One argument of the cost model from one profiler input.
ArgDesc DescribeProfilerInput(const ProfilerInput& in);

}  // namespace strata::opcost
