#include "opcost/cost_model.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace strata::opcost {
namespace {

// Products of shapes overflow int64 only for absurd inputs; compute in double
// and saturate rather than wrap.
int64_t Sat(double v) {
  if (!(v >= 0)) return -1;
  if (v > 9.0e18) return INT64_MAX;
  return static_cast<int64_t>(v);
}

// Larger sizes, strides or paddings than any real tensor has; beyond them the
// shape arithmetic could overflow int64.
constexpr int64_t kMaxExtent = int64_t{1} << 31;

bool IsTensor(const ArgDesc& a) { return a.kind == ArgKind::kTensor && !a.truncated; }

const ArgDesc* Arg(std::span<const ArgDesc> args, size_t i) { return i < args.size() ? &args[i] : nullptr; }

double TensorBytes(const ArgDesc* a) { return a && a->kind == ArgKind::kTensor ? static_cast<double>(a->bytes) : 0.0; }

// Sum of the bytes of every tensor (and tensor list) argument.
double InputBytes(std::span<const ArgDesc> args) {
  double b = 0;
  for (const ArgDesc& a : args)
    if (a.kind == ArgKind::kTensor || a.kind == ArgKind::kTensorList) b += static_cast<double>(a.bytes);
  return b;
}

int ElemSize(std::span<const ArgDesc> args) {
  for (const ArgDesc& a : args)
    if (a.kind == ArgKind::kTensor && a.elem_size) return a.elem_size;
  return 4;
}

// Int-list argument `i` as a vector of `n` values (a single value repeats, as
// PyTorch expands stride=2 to [2, 2]); `def` when absent.
bool IntListArg(std::span<const ArgDesc> args, size_t i, int n, int64_t def, int64_t* out) {
  const ArgDesc* a = Arg(args, i);
  for (int k = 0; k < n; ++k) out[k] = def;
  if (!a || a->kind == ArgKind::kNone) return true;
  if (a->kind == ArgKind::kInt) {
    for (int k = 0; k < n; ++k) out[k] = a->value;
    return true;
  }
  if (a->kind != ArgKind::kIntList || a->truncated) return false;
  if (a->ndim == 1) {
    for (int k = 0; k < n; ++k) out[k] = a->dims[0];
    return true;
  }
  if (a->ndim != n) return false;
  for (int k = 0; k < n; ++k) out[k] = a->dims[k];
  return true;
}

int64_t IntArg(std::span<const ArgDesc> args, size_t i, int64_t def) {
  const ArgDesc* a = Arg(args, i);
  if (a && (a->kind == ArgKind::kInt || a->kind == ArgKind::kBool)) return a->value;
  return def;
}

// Where each convolution variant keeps its arguments.
struct ConvLayout {
  int stride, padding, dilation, transposed, output_padding, groups;  // -1: absent
};

struct ConvParams {
  int spatial = 0;
  int64_t stride[3], padding[3], dilation[3], output_padding[3];
  bool transposed = false;
  int64_t groups = 1;
  bool padding_same = false;  // padding given as a string ("same"/"valid")
};

bool ReadConv(std::span<const ArgDesc> args, const ConvLayout& l, int spatial, ConvParams* p) {
  p->spatial = spatial;
  if (!IntListArg(args, static_cast<size_t>(l.stride), spatial, 1, p->stride)) return false;
  const ArgDesc* pad = Arg(args, static_cast<size_t>(l.padding));
  if (pad && pad->kind == ArgKind::kString) {
    p->padding_same = true;
    for (int k = 0; k < spatial; ++k) p->padding[k] = 0;
  } else if (!IntListArg(args, static_cast<size_t>(l.padding), spatial, 0, p->padding)) {
    return false;
  }
  if (!IntListArg(args, static_cast<size_t>(l.dilation), spatial, 1, p->dilation)) return false;
  if (l.output_padding >= 0) {
    if (!IntListArg(args, static_cast<size_t>(l.output_padding), spatial, 0, p->output_padding)) return false;
  } else {
    for (int k = 0; k < spatial; ++k) p->output_padding[k] = 0;
  }
  p->transposed = l.transposed >= 0 && IntArg(args, static_cast<size_t>(l.transposed), 0) != 0;
  p->groups = l.groups >= 0 ? std::max<int64_t>(1, IntArg(args, static_cast<size_t>(l.groups), 1)) : 1;
  // Arguments recorded by other tools (torch.profiler's concrete inputs) can be
  // anything: keep the integer arithmetic below defined.
  for (int k = 0; k < spatial; ++k)
    if (p->stride[k] < 1 || p->dilation[k] < 1 || p->padding[k] < 0 || p->output_padding[k] < 0 ||
        p->stride[k] > kMaxExtent || p->dilation[k] > kMaxExtent || p->padding[k] > kMaxExtent ||
        p->output_padding[k] > kMaxExtent)
      return false;
  return true;
}

// Multiply-adds of a convolution, from input [N, C, *in] and weight
// [O, C/g, *k] (transposed: [C, O/g, *k]); `out_spatial` receives the output's
// spatial sizes. Returns -1 when the shapes do not fit.
double ConvMacs(const ArgDesc& in, const ArgDesc& w, const ConvParams& p, int64_t* out_spatial) {
  int s = p.spatial;
  if (in.ndim != s + 2 || w.ndim != s + 2) return -1;
  for (int k = 0; k < s + 2; ++k)
    if (in.dims[k] < 0 || w.dims[k] < 0 || in.dims[k] > kMaxExtent || w.dims[k] > kMaxExtent) return -1;
  double n = static_cast<double>(in.dims[0]);
  double macs_per_point = 1;
  for (int k = 0; k < s; ++k) macs_per_point *= static_cast<double>(w.dims[2 + k]);
  if (!p.transposed) {
    for (int k = 0; k < s; ++k) {
      int64_t i = in.dims[2 + k];
      int64_t kk = w.dims[2 + k];
      out_spatial[k] = p.padding_same ? (i + p.stride[k] - 1) / p.stride[k]
                                      : (i + 2 * p.padding[k] - p.dilation[k] * (kk - 1) - 1) / p.stride[k] + 1;
      if (out_spatial[k] <= 0) return -1;
    }
    double out_points = 1;
    for (int k = 0; k < s; ++k) out_points *= static_cast<double>(out_spatial[k]);
    double o = static_cast<double>(w.dims[0]);
    double cin_per_group = static_cast<double>(w.dims[1]);
    return n * o * out_points * cin_per_group * macs_per_point;
  }
  // Transposed: every input point scatters into kernel-size outputs.
  for (int k = 0; k < s; ++k) {
    int64_t i = in.dims[2 + k];
    int64_t kk = w.dims[2 + k];
    out_spatial[k] = (i - 1) * p.stride[k] - 2 * p.padding[k] + p.dilation[k] * (kk - 1) + p.output_padding[k] + 1;
  }
  double in_points = 1;
  for (int k = 0; k < s; ++k) in_points *= static_cast<double>(in.dims[2 + k]);
  double c = static_cast<double>(w.dims[0]);
  double out_per_group = static_cast<double>(w.dims[1]);
  return n * c * in_points * out_per_group * macs_per_point;
}

OpCost Conv(std::span<const ArgDesc> args, const ConvLayout& l, int spatial_hint, size_t bias_index,
            bool force_transposed = false) {
  const ArgDesc* in = Arg(args, 0);
  const ArgDesc* w = Arg(args, 1);
  if (!in || !w || !IsTensor(*in) || !IsTensor(*w)) return {};
  int spatial = spatial_hint > 0 ? spatial_hint : in->ndim - 2;
  if (spatial < 1 || spatial > 3) return {};
  ConvParams p;
  if (!ReadConv(args, l, spatial, &p)) return {};
  p.transposed = p.transposed || force_transposed;
  int64_t out_spatial[3];
  double macs = ConvMacs(*in, *w, p, out_spatial);
  if (macs < 0) return {};
  double out_elems = static_cast<double>(in->dims[0]) * static_cast<double>(p.transposed ? w->dims[1] * p.groups : w->dims[0]);
  for (int k = 0; k < spatial; ++k) out_elems *= static_cast<double>(out_spatial[k]);
  OpCost c;
  const ArgDesc* bias = Arg(args, bias_index);
  bool has_bias = bias && bias->kind == ArgKind::kTensor;
  c.flops = Sat(2 * macs + (has_bias ? out_elems : 0));
  c.bytes = Sat(TensorBytes(in) + TensorBytes(w) + (has_bias ? TensorBytes(bias) : 0) + out_elems * in->elem_size);
  return c;
}

// aten::convolution_backward(grad_output, input, weight, bias_sizes, stride,
// padding, dilation, transposed, output_padding, groups, output_mask): the
// gradients of input and weight each cost one forward convolution.
OpCost ConvBackward(std::span<const ArgDesc> args) {
  const ArgDesc* go = Arg(args, 0);
  const ArgDesc* in = Arg(args, 1);
  const ArgDesc* w = Arg(args, 2);
  if (!go || !in || !w || !IsTensor(*go) || !IsTensor(*in) || !IsTensor(*w)) return {};
  int spatial = in->ndim - 2;
  if (spatial < 1 || spatial > 3) return {};
  ConvParams p;
  if (!ReadConv(args, {4, 5, 6, 7, 8, 9}, spatial, &p)) return {};
  int64_t out_spatial[3];
  double macs = ConvMacs(*in, *w, p, out_spatial);
  if (macs < 0) return {};
  int passes = 2;
  const ArgDesc* mask = Arg(args, 10);
  if (mask && mask->kind == ArgKind::kIntList && mask->ndim >= 2) passes = (mask->dims[0] != 0) + (mask->dims[1] != 0);
  OpCost c;
  c.flops = Sat(2 * macs * passes);
  // Reads grad_output, input and weight; writes grad_input and grad_weight.
  c.bytes = Sat(TensorBytes(go) + TensorBytes(in) + TensorBytes(w) + (mask && mask->ndim >= 1 && !mask->dims[0] ? 0 : TensorBytes(in)) +
                (mask && mask->ndim >= 2 && !mask->dims[1] ? 0 : TensorBytes(w)));
  return c;
}

OpCost MatMul2d(const ArgDesc* a, const ArgDesc* b, const ArgDesc* bias, double extra_per_out) {
  if (!a || !b || !IsTensor(*a) || !IsTensor(*b) || a->ndim != 2 || b->ndim != 2) return {};
  double m = static_cast<double>(a->dims[0]), k = static_cast<double>(a->dims[1]), n = static_cast<double>(b->dims[1]);
  OpCost c;
  c.flops = Sat(2 * m * k * n + extra_per_out * m * n);
  c.bytes = Sat(TensorBytes(a) + TensorBytes(b) + TensorBytes(bias) + m * n * a->elem_size);
  return c;
}

OpCost BatchedMatMul(const ArgDesc* a, const ArgDesc* b, const ArgDesc* bias) {
  if (!a || !b || !IsTensor(*a) || !IsTensor(*b) || a->ndim != 3 || b->ndim != 3) return {};
  double bt = static_cast<double>(a->dims[0]), m = static_cast<double>(a->dims[1]), k = static_cast<double>(a->dims[2]),
         n = static_cast<double>(b->dims[2]);
  OpCost c;
  c.flops = Sat(2 * bt * m * k * n + (bias ? bt * m * n : 0));
  c.bytes = Sat(TensorBytes(a) + TensorBytes(b) + TensorBytes(bias) + bt * m * n * a->elem_size);
  return c;
}

// torch.matmul's general case: vectors are promoted, leading dims broadcast.
OpCost GeneralMatMul(const ArgDesc* a, const ArgDesc* b) {
  if (!a || !b || !IsTensor(*a) || !IsTensor(*b) || a->ndim < 1 || b->ndim < 1) return {};
  if (a->ndim == 1 && b->ndim == 1) {
    OpCost c;
    c.flops = Sat(2.0 * static_cast<double>(a->dims[0]));
    c.bytes = Sat(TensorBytes(a) + TensorBytes(b) + a->elem_size);
    return c;
  }
  double k = static_cast<double>(a->dims[a->ndim - 1]);
  double m = a->ndim >= 2 ? static_cast<double>(a->dims[a->ndim - 2]) : 1;
  double n = b->ndim >= 2 ? static_cast<double>(b->dims[b->ndim - 1]) : 1;
  double batch_a = 1, batch_b = 1;
  for (int i = 0; i + 2 < a->ndim; ++i) batch_a *= static_cast<double>(a->dims[i]);
  for (int i = 0; i + 2 < b->ndim; ++i) batch_b *= static_cast<double>(b->dims[i]);
  double batch = std::max(batch_a, batch_b);
  OpCost c;
  c.flops = Sat(2 * batch * m * k * n);
  c.bytes = Sat(TensorBytes(a) + TensorBytes(b) + batch * m * n * a->elem_size);
  return c;
}

// aten::linear(input [..., K], weight [N, K], bias [N]?)
OpCost Linear(std::span<const ArgDesc> args) {
  const ArgDesc* x = Arg(args, 0);
  const ArgDesc* w = Arg(args, 1);
  if (!x || !w || !IsTensor(*x) || !IsTensor(*w) || w->ndim != 2 || x->ndim < 1) return {};
  double k = static_cast<double>(w->dims[1]), n = static_cast<double>(w->dims[0]);
  if (x->dims[x->ndim - 1] != w->dims[1] || k <= 0) return {};
  double rows = static_cast<double>(Numel(*x)) / k;
  const ArgDesc* bias = Arg(args, 2);
  bool has_bias = bias && bias->kind == ArgKind::kTensor;
  OpCost c;
  c.flops = Sat(2 * rows * k * n + (has_bias ? rows * n : 0));
  c.bytes = Sat(TensorBytes(x) + TensorBytes(w) + (has_bias ? TensorBytes(bias) : 0) + rows * n * x->elem_size);
  return c;
}

// One FLOP per output element; the output is as large as the largest input
// (broadcasting), or the first input for an in-place op.
OpCost Elementwise(std::span<const ArgDesc> args, bool in_place, double flops_per_elem) {
  double out = 0;
  int elem = ElemSize(args);
  for (const ArgDesc& a : args)
    if (a.kind == ArgKind::kTensor) {
      if (a.truncated) return {};
      out = std::max(out, static_cast<double>(Numel(a)));
    }
  if (in_place && !args.empty() && args[0].kind == ArgKind::kTensor) out = static_cast<double>(Numel(args[0]));
  OpCost c;
  c.flops = Sat(out * flops_per_elem);
  c.bytes = Sat(InputBytes(args) + out * elem);
  return c;
}

// Reads every input once, writes a (much smaller) result.
OpCost Reduction(std::span<const ArgDesc> args) {
  const ArgDesc* x = Arg(args, 0);
  if (!x || !IsTensor(*x)) return {};
  OpCost c;
  c.flops = Sat(static_cast<double>(Numel(*x)));
  c.bytes = Sat(TensorBytes(x) + x->elem_size);
  return c;
}

// Same-size output, a few FLOPs per element (softmax, normalization).
OpCost Normalizing(std::span<const ArgDesc> args, double flops_per_elem) {
  const ArgDesc* x = Arg(args, 0);
  if (!x || !IsTensor(*x)) return {};
  OpCost c;
  c.flops = Sat(static_cast<double>(Numel(*x)) * flops_per_elem);
  c.bytes = Sat(InputBytes(args) + TensorBytes(x));
  return c;
}

// Copies: read the source, write as much.
OpCost Copy(std::span<const ArgDesc> args, size_t src_index) {
  const ArgDesc* src = Arg(args, src_index);
  double b = 0;
  if (src && (src->kind == ArgKind::kTensor || src->kind == ArgKind::kTensorList)) b = static_cast<double>(src->bytes);
  else return {};
  OpCost c;
  c.flops = 0;
  c.bytes = Sat(2 * b);
  return c;
}

constexpr std::string_view kElementwise[] = {
    "abs",       "add",          "addcdiv",        "addcmul",   "bitwise_and", "bitwise_not", "bitwise_or", "ceil",
    "clamp",     "clamp_max",    "clamp_min",      "cos",       "div",         "elu",         "eq",         "erf",
    "exp",       "expm1",        "fill",           "floor",     "ge",          "gelu",        "gelu_backward", "gt",
    "hardswish", "hardtanh",     "hardtanh_backward", "le",     "leaky_relu",  "leaky_relu_backward", "lerp", "log",
    "log1p",     "logical_and",  "logical_not",    "lt",        "masked_fill", "maximum",     "minimum",    "mish",
    "mul",       "ne",           "neg",            "pow",       "reciprocal",  "relu",        "relu6",      "remainder",
    "round",     "rsqrt",        "rsub",           "sigmoid",   "sigmoid_backward", "sign",   "silu",       "silu_backward",
    "sin",       "softplus",     "sqrt",           "square",    "sub",         "tan",         "tanh",       "tanh_backward",
    "threshold", "threshold_backward", "trunc",    "where",     "zero",
};

constexpr std::string_view kViews[] = {
    "alias",     "as_strided", "detach",  "diagonal", "expand",    "expand_as", "flatten",   "movedim", "narrow",
    "numpy_T",   "permute",    "reshape", "select",   "slice",     "split",     "squeeze",   "t",       "transpose",
    "unbind",    "unflatten",  "unfold",  "unsqueeze", "view",     "view_as",   "chunk",     "_reshape_alias",
    "_unsafe_view", "resolve_conj", "resolve_neg", "lift_fresh", "empty", "empty_like", "empty_strided", "size",
    "stride",
};

template <size_t N>
bool In(const std::string_view (&list)[N], std::string_view s) {
  for (std::string_view x : list)
    if (x == s) return true;
  return false;
}

}  // namespace

int64_t Numel(const ArgDesc& a) {
  if (a.kind != ArgKind::kTensor || a.truncated) return -1;
  double n = 1;
  for (int i = 0; i < a.ndim; ++i) n *= static_cast<double>(a.dims[i]);
  return Sat(n);
}

OpCost EstimateCost(std::string_view op, std::span<const ArgDesc> args) {
  // "aten::add_" -> base "add", in place.
  std::string_view base = op;
  if (auto ns = base.find("::"); ns != std::string_view::npos) base = base.substr(ns + 2);
  bool in_place = base.size() > 1 && base.back() == '_' && base[base.size() - 2] != '_';
  if (in_place) base.remove_suffix(1);

  if (base == "mm") return MatMul2d(Arg(args, 0), Arg(args, 1), nullptr, 0);
  if (base == "addmm") return MatMul2d(Arg(args, 1), Arg(args, 2), Arg(args, 0), 2);
  if (base == "bmm") return BatchedMatMul(Arg(args, 0), Arg(args, 1), nullptr);
  if (base == "baddbmm") return BatchedMatMul(Arg(args, 1), Arg(args, 2), Arg(args, 0));
  if (base == "matmul") return GeneralMatMul(Arg(args, 0), Arg(args, 1));
  if (base == "mv" || base == "dot") return GeneralMatMul(Arg(args, 0), Arg(args, 1));
  if (base == "linear") return Linear(args);
  // conv{1,2,3}d(input, weight, bias, stride, padding, dilation, groups)
  if (base == "conv1d") return Conv(args, {3, 4, 5, -1, -1, 6}, 1, 2);
  if (base == "conv2d") return Conv(args, {3, 4, 5, -1, -1, 6}, 2, 2);
  if (base == "conv3d") return Conv(args, {3, 4, 5, -1, -1, 6}, 3, 2);
  // conv_transpose{1,2,3}d(input, weight, bias, stride, padding, output_padding, groups, dilation)
  if (base == "conv_transpose1d" || base == "conv_transpose2d" || base == "conv_transpose3d")
    return Conv(args, {3, 4, 7, -1, 5, 6}, base[base.size() - 2] - '0', 2, /*force_transposed=*/true);
  // convolution / _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, ...)
  if (base == "convolution" || base == "_convolution") return Conv(args, {3, 4, 5, 6, 7, 8}, 0, 2);
  // mkldnn_convolution(input, weight, bias, padding, stride, dilation, groups)
  if (base == "mkldnn_convolution") return Conv(args, {4, 3, 5, -1, -1, 6}, 0, 2);
  // _slow_conv2d_forward / thnn_conv2d(input, weight, kernel_size, bias, stride, padding)
  if (base == "_slow_conv2d_forward" || base == "thnn_conv2d" || base == "_nnpack_spatial_convolution")
    return Conv(args, {4, 5, -1, -1, -1, -1}, 2, 3);
  if (base == "convolution_backward") return ConvBackward(args);

  if (In(kElementwise, base)) return Elementwise(args, in_place, 1);
  if (base == "sum" || base == "mean" || base == "amax" || base == "amin" || base == "prod" || base == "norm" ||
      base == "argmax" || base == "argmin" || base == "nll_loss" || base == "nll_loss_forward" || base == "mse_loss")
    return Reduction(args);
  if (base == "softmax" || base == "_softmax" || base == "log_softmax" || base == "_log_softmax")
    return Normalizing(args, 5);
  if (base == "batch_norm" || base == "native_batch_norm" || base == "_batch_norm_impl_index" ||
      base == "layer_norm" || base == "native_layer_norm" || base == "group_norm" || base == "native_group_norm")
    return Normalizing(args, 5);
  if (base == "copy") return Copy(args, 1);
  if (base == "clone" || base == "contiguous" || base == "_to_copy" || base == "to") return Copy(args, 0);
  if (base == "cat" || base == "stack") return Copy(args, 0);
  if (In(kViews, base)) return {0, 0};
  return {};
}

}  // namespace strata::opcost
