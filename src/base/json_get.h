// Reading members of JSON files strata did not necessarily write (a manifest,
// a sweep.json edited or damaged by hand): a member of another type than
// expected reads as the default, integers are clamped to their type. json's own
// value() and get() throw type_error instead, which would end strata report.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace strata::json_get {

inline std::string Str(const nlohmann::json& o, const char* key, std::string def = {}) {
  if (!o.is_object()) return def;
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : def;
}

inline double Num(const nlohmann::json& o, const char* key, double def = 0.0) {
  if (!o.is_object()) return def;
  auto it = o.find(key);
  return it != o.end() && it->is_number() ? it->get<double>() : def;
}

template <typename T>
T Int(const nlohmann::json& o, const char* key, T def = 0) {
  if (!o.is_object()) return def;
  auto it = o.find(key);
  if (it == o.end()) return def;
  if (it->is_number_unsigned()) {
    auto v = it->get<uint64_t>();
    return v > static_cast<uint64_t>(std::numeric_limits<T>::max()) ? std::numeric_limits<T>::max() : static_cast<T>(v);
  }
  if (it->is_number_integer()) {
    auto v = it->get<int64_t>();
    if (v < static_cast<int64_t>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (v > 0 && static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
  return def;
}

}  // namespace strata::json_get
