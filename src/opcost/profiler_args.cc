#include "opcost/profiler_args.h"

#include <charconv>
#include <cmath>

namespace strata::opcost {
namespace {

struct TypeInfo {
  std::string_view name;
  int size;
  std::string_view precision;
};

// Tensor dtypes as the profiler prints them: caffe2::TypeMeta names ("float",
// "long int", "c10::Half"), with or without the c10:: prefix. Capitalized
// ScalarType names that are also IValue tags ("Int", "Double", "Bool": what the
// profiler writes for scalar arguments) are deliberately absent.
constexpr TypeInfo kTypes[] = {
    {"float", 4, "f32"},           {"double", 8, "f64"},         {"Half", 2, "f16"},
    {"BFloat16", 2, "f16"},        {"long int", 8, ""},          {"long", 8, ""},
    {"int64_t", 8, ""},            {"int", 4, ""},               {"short int", 2, ""},
    {"short", 2, ""},              {"signed char", 1, "i8"},     {"unsigned char", 1, ""},
    {"bool", 1, ""},               {"complex<float>", 8, "f32"}, {"complex<double>", 16, "f64"},
    {"complex<Half>", 4, "f16"},   {"Float8_e4m3fn", 1, "i8"},   {"Float8_e5m2", 1, "i8"},
    {"Float8_e4m3fnuz", 1, "i8"},  {"Float8_e5m2fnuz", 1, "i8"}, {"qint8", 1, "i8"},
    {"quint8", 1, "i8"},           {"qint32", 4, ""},
};

const TypeInfo* FindType(std::string_view type) {
  if (type.starts_with("c10::")) type.remove_prefix(5);
  for (const TypeInfo& t : kTypes)
    if (t.name == type) return &t;
  return nullptr;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool ParseInt(std::string_view s, int64_t* out) {
  s = Trim(s);
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "[2, 2]" -> an int list; false when any element is not an integer.
bool ParseIntList(std::string_view s, ArgDesc* d) {
  s = Trim(s);
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return false;
  s = s.substr(1, s.size() - 2);
  d->kind = ArgKind::kIntList;
  d->ndim = 0;
  if (Trim(s).empty()) return true;
  int n = 0;
  while (true) {
    size_t comma = s.find(',');
    int64_t v;
    if (!ParseInt(s.substr(0, comma), &v)) return false;
    if (n < kMaxDims) d->dims[n] = v;
    else d->truncated = true;
    ++n;
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  d->ndim = static_cast<uint8_t>(n < kMaxDims ? n : kMaxDims);
  return true;
}

}  // namespace

int ElemSizeOfType(std::string_view type) {
  const TypeInfo* t = FindType(type);
  return t ? t->size : 0;
}

std::string_view PrecisionOfType(std::string_view type) {
  const TypeInfo* t = FindType(type);
  return t ? t->precision : std::string_view();
}

ArgDesc DescribeProfilerInput(const ProfilerInput& in) {
  ArgDesc d;
  int elem = ElemSizeOfType(in.type);
  if (elem > 0) {
    // A tensor (a 0-d tensor has no dims).
    d.kind = ArgKind::kTensor;
    d.elem_size = static_cast<uint8_t>(elem);
    d.truncated = in.dims.size() > static_cast<size_t>(kMaxDims);
    d.ndim = static_cast<uint8_t>(d.truncated ? kMaxDims : in.dims.size());
    double n = 1;
    for (size_t i = 0; i < in.dims.size(); ++i) {
      if (i < static_cast<size_t>(kMaxDims)) d.dims[i] = in.dims[i];
      n *= static_cast<double>(in.dims[i]);
    }
    double b = n * elem;
    d.bytes = b >= 0 && b < 9.0e18 ? static_cast<int64_t>(b) : -1;
    if (d.bytes < 0) d.truncated = true;
    return d;
  }
  std::string_view c = Trim(in.concrete);
  if (c.empty()) return d;  // None, or a value the profiler did not record
  int64_t v;
  if (in.type == "Bool" || c == "True" || c == "False") {
    d.kind = ArgKind::kBool;
    d.value = c == "True" || c == "true" || c == "1";
    return d;
  }
  if (ParseInt(c, &v)) {
    d.kind = ArgKind::kInt;
    d.value = v;
    return d;
  }
  if (c.front() == '[') {
    if (!ParseIntList(c, &d)) d = ArgDesc{};
    return d;
  }
  if (in.type == "String" || in.type == "str") {
    d.kind = ArgKind::kString;
    return d;
  }
  d.kind = ArgKind::kDouble;  // "0.5", "1e-05"
  return d;
}

}  // namespace strata::opcost
