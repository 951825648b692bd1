// Estimated work of a framework op from its arguments: floating-point operations
// and bytes moved, the two inputs of a roofline (arithmetic intensity = flops /
// bytes). Pure functions over plain argument descriptions, so they are tested
// without the framework and shared by any framework observer.
//
// Conventions (those of the PyTorch profiler's with_flops and of MLModelScope):
//  - a multiply-add counts 2 FLOPs; elementwise ops count 1 per output element;
//  - bytes = every tensor input read once + the output written once (an
//    in-place op writes its first input); views and metadata ops move 0 bytes;
//  - -1 means "no estimate" (the op is not modelled).
// An op that calls other ops (aten::linear -> aten::addmm) gets an estimate at
// each level: totals must count only the outermost estimated op of a nest.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace strata::opcost {

inline constexpr int kMaxDims = 8;

enum class ArgKind : uint8_t {
  kNone,        // None, an undefined tensor, or an argument we do not describe
  kTensor,      // dims = sizes, elem_size = bytes per element
  kTensorList,  // value = number of tensors, bytes = their total size
  kInt,         // value
  kBool,        // value 0/1
  kDouble,
  kIntList,     // dims = values (up to kMaxDims)
  kString,
};

struct ArgDesc {
  ArgKind kind = ArgKind::kNone;
  uint8_t ndim = 0;       // tensor rank or int-list length, <= kMaxDims
  uint8_t elem_size = 0;  // tensors: bytes per element
  bool truncated = false; // rank or list longer than kMaxDims (estimates give up)
  int64_t value = 0;      // ints, bools, tensor-list length
  int64_t bytes = 0;      // tensors and tensor lists: bytes of their elements
  int64_t dims[kMaxDims] = {};
};

struct OpCost {
  int64_t flops = -1;
  int64_t bytes = -1;
};

// Elements of a tensor argument (1 for a 0-d tensor), or -1 when unknown.
int64_t Numel(const ArgDesc& a);

// `op` is the op's full name ("aten::addmm", "aten::add_").
OpCost EstimateCost(std::string_view op, std::span<const ArgDesc> args);

}  // namespace strata::opcost
