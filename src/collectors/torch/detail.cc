// The detail tier of the PyTorch observer: an op's boxed inputs become the
// op_detail event (interned shape and dtype strings in the PyTorch profiler's
// format, the cost model's FLOP and byte estimates, input tensor ids), its
// outputs the op_outputs event. Tensor ids are TensorImpl addresses: the
// importer links an op that consumes a tensor to the op that produced it.
#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <cstdio>
#include <string>

#include "collectors/torch/observer.h"
#include "format/schema.h"
#include "recorder/runtime.h"

namespace strata::collectors::torch {
namespace {

constexpr size_t kMaxIdsChars = 30000;  // an event holds at most 64 KiB

void AppendId(std::string& out, const void* p) {
  if (out.size() > kMaxIdsChars) return;
  char buf[24];
  int n = std::snprintf(buf, sizeof buf, "%s%lx", out.empty() ? "" : " ", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(p)));
  out.append(buf, static_cast<size_t>(n));
}

void AppendShape(std::string& out, c10::IntArrayRef sizes) {
  out.push_back('[');
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(sizes[i]);
  }
  out.push_back(']');
}

void DescribeTensor(const at::Tensor& t, ArgDesc* d) {
  d->kind = ArgKind::kTensor;
  c10::IntArrayRef sizes = t.sizes();
  d->truncated = sizes.size() > static_cast<size_t>(kMaxDims);
  d->ndim = static_cast<uint8_t>(std::min<size_t>(sizes.size(), kMaxDims));
  for (int i = 0; i < d->ndim; ++i) d->dims[i] = sizes[static_cast<size_t>(i)];
  d->elem_size = static_cast<uint8_t>(t.element_size());
  d->bytes = t.numel() * static_cast<int64_t>(t.element_size());
}

// Shapes/dtypes follow the profiler's record_shapes output, so that users can
// compare: "[[32, 1, 28, 28], [16], []]" and "float, float, Scalar".
void Describe(ThreadState& ts, const c10::IValue& v, ArgDesc* d) {
  std::string& shapes = ts.shapes;
  std::string& dtypes = ts.dtypes;
  if (shapes.size() > 1) {
    shapes += ", ";
    dtypes += ", ";
  }
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) {
      shapes += "[]";
      return;
    }
    AppendId(ts.ids, t.unsafeGetTensorImpl());
    if (t.is_nested()) {  // sizes() throws for nested tensors
      shapes += "[]";
      dtypes += "Nested";
      return;
    }
    DescribeTensor(t, d);
    AppendShape(shapes, t.sizes());
    c10::string_view name = t.dtype().name();
    dtypes.append(name.data(), name.size());
    return;
  }
  shapes += "[]";
  if (v.isInt() || v.isBool()) {
    d->kind = v.isInt() ? ArgKind::kInt : ArgKind::kBool;
    d->value = v.isInt() ? v.toInt() : v.toBool();
    dtypes += "Scalar";
  } else if (v.isDouble()) {
    d->kind = ArgKind::kDouble;
    dtypes += "Scalar";
  } else if (v.isString()) {
    d->kind = ArgKind::kString;
    dtypes += "String";
  } else if (v.isIntList()) {
    d->kind = ArgKind::kIntList;
    c10::ArrayRef<c10::IValue> l = v.toListRef();
    d->truncated = l.size() > static_cast<size_t>(kMaxDims);
    d->ndim = static_cast<uint8_t>(std::min<size_t>(l.size(), kMaxDims));
    for (int i = 0; i < d->ndim; ++i) d->dims[i] = l[static_cast<size_t>(i)].toInt();
    dtypes += "ScalarList";
  } else if (v.isList()) {
    // Tensor lists (cat, stack), optional-tensor lists (index), bool lists.
    c10::ArrayRef<c10::IValue> l = v.toListRef();
    int64_t bytes = 0, tensors = 0;
    for (const c10::IValue& e : l) {
      if (!e.isTensor()) continue;
      const at::Tensor& t = e.toTensor();
      if (!t.defined()) continue;
      AppendId(ts.ids, t.unsafeGetTensorImpl());
      ++tensors;
      if (!t.is_nested()) bytes += t.numel() * static_cast<int64_t>(t.element_size());
    }
    if (tensors > 0) {
      d->kind = ArgKind::kTensorList;
      d->value = tensors;
      d->bytes = bytes;
      dtypes += "TensorList";
    } else {
      dtypes += "GenericList";
    }
  }
}

}  // namespace

void EmitOpDetail(ThreadState& ts, const at::RecordFunction& fn, const NameEntry& name) {
  ts.shapes.assign("[");
  ts.dtypes.clear();
  ts.ids.clear();
  ts.args.clear();
  for (const c10::IValue& v : fn.inputs()) {
    ts.args.emplace_back();
    Describe(ts, v, &ts.args.back());
  }
  ts.shapes.push_back(']');
  OpCost cost = EstimateCost(name.text, ts.args);
  uint32_t shapes = InternDetail(ts, ts.shapes);
  uint32_t dtypes = InternDetail(ts, ts.dtypes);
  // {u32 shapes, u32 dtypes, i64 flops, i64 bytes, string inputs}
  std::string& p = ts.shapes;  // reused as the payload buffer (already interned)
  p.clear();
  p.append(reinterpret_cast<const char*>(&shapes), 4);
  p.append(reinterpret_cast<const char*>(&dtypes), 4);
  p.append(reinterpret_cast<const char*>(&cost.flops), 8);
  p.append(reinterpret_cast<const char*>(&cost.bytes), 8);
  p += ts.ids;
  p.push_back('\0');
  recorder::EmitThreadEvent(format::kOpDetail, p.data(), static_cast<uint32_t>(p.size()));
}

void EmitOpOutputs(ThreadState& ts, const at::RecordFunction& fn) {
  ts.ids.clear();
  for (const c10::IValue& v : fn.outputs()) {
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (t.defined()) AppendId(ts.ids, t.unsafeGetTensorImpl());
    } else if (v.isList()) {
      for (const c10::IValue& e : v.toListRef())
        if (e.isTensor() && e.toTensor().defined()) AppendId(ts.ids, e.toTensor().unsafeGetTensorImpl());
    }
  }
  if (ts.ids.empty()) return;
  ts.ids.push_back('\0');
  recorder::EmitThreadEvent(format::kOpOutputs, ts.ids.data(), static_cast<uint32_t>(ts.ids.size()));
}

}  // namespace strata::collectors::torch
