// strata.hpp: C++ conveniences over strata.h.
//
//   void Step(int i) {
//     strata::Step step(i);                 // step begin/end
//     { STRATA_SPAN("matmul"); Matmul(); }  // name interned once per call site
//   }
#pragma once

#include "strata/strata.h"

namespace strata {

// Interns `name` the first time this call site runs, then reuses the id. The
// static is per call site (per lambda type), so the lock is taken once.
// STRATA_NAME_FN(name) is that lookup as a callable, for ScopedSpan to run only
// when tracing is on.
#define STRATA_NAME_FN(name)                                          \
  ([]() -> uint32_t {                                                 \
    static uint32_t strata_id_ = 0;                                   \
    uint32_t v = __atomic_load_n(&strata_id_, __ATOMIC_RELAXED);      \
    if (__builtin_expect(v == 0, 0)) {                                \
      v = ::strata_intern(name);                                      \
      __atomic_store_n(&strata_id_, v, __ATOMIC_RELAXED);             \
    }                                                                 \
    return v;                                                         \
  })
#define STRATA_NAME_ID(name) (STRATA_NAME_FN(name)())

// A span that closes at the end of the enclosing scope.
class ScopedSpan {
 public:
  // `name_fn` returns the interned name id; it runs only when tracing is on, so
  // a disabled span costs one relaxed load.
  template <typename NameFn>
  explicit ScopedSpan(NameFn name_fn) : active_(strata_enabled()) {
    if (__builtin_expect(active_, 0)) strata_span_begin_(name_fn());
  }
  template <typename NameFn>
  ScopedSpan(NameFn name_fn, uint64_t arg) : active_(strata_enabled()) {
    if (__builtin_expect(active_, 0)) strata_span_begin_arg_(name_fn(), arg);
  }
  ~ScopedSpan() {
    if (active_) strata_span_end_();
  }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

 private:
  bool active_;  // so that a span opened before tracing stopped is still closed
};

// One training/inference step, begin at construction and end at destruction.
class Step {
 public:
  explicit Step(uint64_t n) : n_(n) { strata_step_begin(n_); }
  ~Step() { strata_step_end(n_); }
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;

 private:
  uint64_t n_;
};

}  // namespace strata

#define STRATA_SPAN_VAR_INNER(line) strata_span_##line
#define STRATA_SPAN_VAR(line) STRATA_SPAN_VAR_INNER(line)

// STRATA_SPAN("name"): a scoped span named by a string literal.
#define STRATA_SPAN(name) ::strata::ScopedSpan STRATA_SPAN_VAR(__LINE__)(STRATA_NAME_FN(name))
// STRATA_SPAN_ARG("name", value): the same with one numeric argument.
#define STRATA_SPAN_ARG(name, arg) ::strata::ScopedSpan STRATA_SPAN_VAR(__LINE__)(STRATA_NAME_FN(name), (arg))
