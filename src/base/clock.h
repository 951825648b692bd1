// The trace clock.
//
// Every event in a strata trace is stamped on one clock: CLOCK_MONOTONIC in
// nanoseconds. That is the clock perf_event (use_clockid), CUPTI (through a
// timestamp callback) and OpenCL conversions can all share, so levels line up
// without post-hoc alignment.
//
// Reading CLOCK_MONOTONIC costs ~20 ns in a VM; the TSC costs about half. The
// recorder's hot path therefore stores raw TSC ticks when the TSC is invariant
// and converts them to monotonic ns off the hot path, with a TscCalibration
// that is re-anchored periodically (so NTP slewing of CLOCK_MONOTONIC is
// followed to well under a microsecond).
#pragma once

#include <time.h>

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define STRATA_HAVE_TSC 1
#else
#define STRATA_HAVE_TSC 0
#endif

namespace strata {

inline uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t ReadTsc() {
#if STRATA_HAVE_TSC
  return __rdtsc();
#else
  return MonotonicNs();
#endif
}

// CLOCK_REALTIME as this host's wall clock reads it, for pairing with the
// trace clock (manifests, CTF clock offsets): RealtimeNs() plus
// STRATA_TEST_WALL_CLOCK_ERROR_NS from the environment, an error tests inject
// to play hosts whose NTP disagree (strata merge must then find their clocks'
// offsets from their communication, not from the wall clock).
int64_t WallClockNs();

// How much this process's CLOCK_MONOTONIC reads ahead of the kernel's own
// (a time namespace's monotonic offset, /proc/self/timens_offsets; 0 outside
// one). Times the kernel stamps itself (perf_event records) are on the
// kernel's clock: adding this puts them on the trace clock.
int64_t TimeNamespaceOffsetNs();

// True when the TSC ticks at a constant rate across cores and sleep states
// (constant_tsc + nonstop_tsc) and the kernel itself trusts it (clocksource tsc).
// STRATA_CLOCK=monotonic in the environment forces the portable path.
bool TscIsReliable();

// A (tsc, ns) pair taken with the narrowest window we can get.
struct ClockAnchor {
  uint64_t tsc = 0;
  uint64_t ns = 0;
};
ClockAnchor TakeClockAnchor();

// Maps TSC ticks to CLOCK_MONOTONIC ns, piecewise linearly between anchors.
// Not thread-safe: owned by the recorder's flusher.
class TscCalibration {
 public:
  void Start(ClockAnchor first);
  // Adds a newer anchor; the rate is re-estimated over the last interval.
  void AddAnchor(ClockAnchor a);
  // Once per recorded event on the flusher: inline, integer only. Ticks before
  // the newest anchor interpolate from the previous one, later ones extrapolate
  // from the newest: each interval uses the rate measured over it. The rate is
  // fixed point with 52 fractional bits (as exact as the double it comes
  // from), rounded to the nearest ns.
  uint64_t ToNs(uint64_t tsc) const {
    __extension__ using I128 = __int128;  // hours of ticks times the rate overflow 64 bits
    const ClockAnchor& base = tsc >= last_.tsc ? last_ : prev_;
    I128 delta = static_cast<I128>(static_cast<int64_t>(tsc - base.tsc)) * rate_q52_;
    int64_t ns = static_cast<int64_t>(base.ns) + static_cast<int64_t>((delta + (I128{1} << 51)) >> 52);
    return ns < 0 ? 0 : static_cast<uint64_t>(ns);
  }
  double ns_per_tick() const { return ns_per_tick_; }
  // False until two anchors far enough apart have been seen.
  bool has_rate() const { return ns_per_tick_ > 0; }

 private:
  ClockAnchor prev_{};
  ClockAnchor last_{};
  double ns_per_tick_ = 0;  // 0 until two anchors exist
  int64_t rate_q52_ = int64_t{1} << 52;  // ns per tick << 52 (1.0 until two anchors exist)
};

}  // namespace strata
