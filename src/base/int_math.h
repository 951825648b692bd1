// Saturating int64 arithmetic for values read from traces. A trace's numbers
// (timestamps, durations, sizes) are whatever the file says: sums and
// differences of them must not overflow (undefined behaviour), and a value that
// would is meaningless anyway, so it sticks at the limit.
#pragma once

#include <cstdint>
#include <limits>

namespace strata {

inline int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

inline int64_t SatSub(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

}  // namespace strata
