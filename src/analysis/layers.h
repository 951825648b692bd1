// Per-layer analysis (MLModelScope's per-layer tables): for each layer of the
// model, how often it ran, its latency, the host and device time of the work
// inside it, the memory it allocated, its FLOPs and bytes and so its
// arithmetic intensity, and whether that makes it compute- or memory-bound.
//
// What a layer is, per framework:
//  - PyTorch: an nn.Module forward scope (kModule slices, named by the module's
//    path, "ResNet.layer1.0 (BasicBlock)"). Rows are inclusive: a module's row
//    holds what ran in its submodules too; `depth` and `leaf` tell where it sits
//    so that a reader can sum the leaves or the roots without double counting,
//    and LayersSummary's totals count every slice once. Occurrences are calls.
//    Backward work runs outside module scopes and is not attributed.
//  - TensorFlow/Keras: the name scope of the node each op ran ("tf_op" arg of
//    kOp slices, "sequential/dense_1/MatMul:MatMul" -> "sequential/dense_1").
//    Wrapper scopes (StatefulPartitionedCall/, PartitionedCall/) are dropped;
//    "gradient_tape/" ops go to the same layer, counted as backward. Scopes TF
//    opens inside a layer are op names, CamelCase ("dense/Tensordot/MatMul",
//    gradients' "dense/MatMul/MatMul_1"), where Keras names layers in
//    snake_case: the layer ends before the first CamelCase component after the
//    first (a top scope stays, "Adam/Cast" -> "Adam"). Rows are
//    exclusive (a scope's own ops). An occurrence is a step in which the layer
//    ran (the whole trace when there are no steps); its latency the union of
//    the layer's op intervals, on every thread, within the occurrence.
//  - torch.profiler (Kineto) traces keep "nn.Module: X" scopes as Python
//    functions, not module scopes: no layers.
//
// Columns, all summed over occurrences:
//  - cpu_ns: self time of the framework ops and accelerator API calls inside
//    (the layer's host work, without Python and module code between ops);
//  - device_ns: device activities (kernels, copies, fills) launched from inside
//    (launch API call -> enclosing module, or the kernel's own "tf_op");
//  - alloc_bytes / peak_bytes: framework-allocator bytes allocated on the
//    layer's thread during its spans, and the highest rise of that thread's
//    allocated bytes above its level when a span began (one span, the largest);
//  - flops / bytes: the roofline's items (analysis/roofline.h: outermost
//    estimated op calls) inside the layer; intensity and bound against the
//    ridge of the roof most of those items' time ran on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/roofline.h"
#include "model/trace.h"

namespace strata::analysis {

enum class LayerFramework : uint8_t { kPyTorch, kTensorFlow };
const char* LayerFrameworkName(LayerFramework f);  // "pytorch", "tensorflow"

struct LayerStats {
  std::string name;          // module path, or TF name scope
  LayerFramework framework = LayerFramework::kPyTorch;
  uint16_t depth = 0;        // PyTorch: enclosing modules at its first call (0: a root); TF: 0
  bool leaf = true;          // PyTorch: no module ran inside it; TF: always
  uint64_t occurrences = 0;  // calls (PyTorch), steps it ran in (TF)
  int64_t total_ns = 0;      // wall time: span durations, or per-occurrence op unions (TF)
  int64_t mean_ns = 0;       // total / occurrences
  int64_t max_ns = 0;        // longest occurrence
  int64_t self_ns = 0;       // PyTorch: total minus the modules called inside it; TF: total
  int64_t backward_ns = 0;   // TF: union of its gradient_tape ops per occurrence (part of total_ns)
  int64_t cpu_ns = 0;        // self time of the framework ops and API calls inside
  uint64_t ops = 0;          // framework op calls inside
  int64_t device_ns = 0;     // device activities launched from inside
  uint64_t kernels = 0;      // those activities
  int64_t alloc_bytes = 0;   // allocator bytes allocated during its spans
  uint64_t allocs = 0;
  int64_t peak_bytes = 0;    // largest rise of allocated bytes within one span
  double flops = 0;          // roofline items inside (estimates or counters)
  double bytes = 0;
  uint64_t estimated = 0;    // those items
  double intensity = 0;      // flops / bytes; 0 without both
  std::string bound;         // "compute", "memory", "" (no figures or no peaks)
  int roof = -1;             // index into LayersSummary::roofs; -1 none
  double step_pct = 0;       // total_ns as a share of step time
};

struct LayersSummary {
  std::vector<LayerStats> layers;  // by total time, descending
  // The roofs of the roofline (RooflineResult::roofs) and where they came from.
  std::string device;
  std::vector<Roof> roofs;
  // Denominator of step_pct: the steps' durations summed, or the trace's span
  // when it has no steps ("steps" / "trace").
  int64_t step_ns = 0;
  std::string step_basis;
  // Totals counting each slice once (outermost modules; every TF layer).
  int64_t total_ns = 0, cpu_ns = 0, device_ns = 0, alloc_bytes = 0;
  double flops = 0, bytes = 0;
  // Which columns hold anything: a report hides the others.
  bool has_device = false;   // device activities were launched from a layer
  bool has_memory = false;   // allocator events fell in a layer
  bool has_cost = false;     // a layer has FLOP/byte figures
  bool has_ops = false;      // framework ops ran inside layers
  bool has_backward = false;
  bool ops_without_cost = false;  // the layers' ops carry no FLOP/byte estimates (record with shapes)

  bool empty() const { return layers.empty(); }
  const Roof* RoofOf(int i) const { return i >= 0 && static_cast<size_t>(i) < roofs.size() ? &roofs[static_cast<size_t>(i)] : nullptr; }
};

LayersSummary Layers(const model::Trace& t);

// The layer of a TF node name: its name scope without wrapper scopes, "" when
// the node is at the top ("MatMul", "_Send"). `backward` says whether the node
// was under "gradient_tape/". A trailing ":Type" (xplane's "name:type") is dropped.
std::string TfLayerOf(std::string_view node, bool* backward);

}  // namespace strata::analysis
