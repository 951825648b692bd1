/*
 * strata.h: the C instrumentation API of strata.
 *
 * Programs call these to mark spans, instants, counters, steps and flows. The
 * calls are recorded only when the program runs under `strata record` (or with
 * STRATA_TRACE_DIR set); otherwise each call costs one relaxed load and a
 * not-taken branch.
 *
 * Names are interned once: pass the id from strata_intern() (the C++ header's
 * STRATA_SPAN macro does this per call site). Ids are per process.
 *
 * Thread-safety: every function may be called from any thread. Spans nest per
 * thread: strata_span_end() closes the innermost open span of the calling thread.
 *
 * ABI: functions only grow; none changes signature. Link with -lstrata.
 */
#ifndef STRATA_STRATA_H_
#define STRATA_STRATA_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA_API __attribute__((visibility("default")))

/* Non-zero while this process records. Read it with a relaxed load only (the
 * inline wrappers below do); written by the runtime. */
extern STRATA_API uint32_t strata_active_;

static inline int strata_enabled(void) { return __atomic_load_n(&strata_active_, __ATOMIC_RELAXED) != 0; }

/* Interns a NUL-terminated UTF-8 name; returns its id (stable for the process's
 * life). Thread-safe, takes a lock: call once per name, not per event. Returns 0
 * when tracing is off (0 is never a valid id). */
STRATA_API uint32_t strata_intern(const char* name);

/* Out-of-line bodies; call the inline wrappers instead. */
STRATA_API void strata_span_begin_(uint32_t name_id);
STRATA_API void strata_span_begin_arg_(uint32_t name_id, uint64_t arg);
STRATA_API void strata_span_end_(void);
STRATA_API void strata_instant_(uint32_t name_id);
STRATA_API void strata_counter_(uint32_t name_id, double value);
STRATA_API void strata_flow_out_(uint64_t flow_id);
STRATA_API void strata_flow_in_(uint64_t flow_id);
STRATA_API void strata_step_begin_(uint64_t step);
STRATA_API void strata_step_end_(uint64_t step);

/* Opens a span on the calling thread. */
static inline void strata_span_begin(uint32_t name_id) {
  if (__builtin_expect(strata_enabled(), 0)) strata_span_begin_(name_id);
}
/* Opens a span carrying one numeric argument (e.g. a node id, a byte count). */
static inline void strata_span_begin_arg(uint32_t name_id, uint64_t arg) {
  if (__builtin_expect(strata_enabled(), 0)) strata_span_begin_arg_(name_id, arg);
}
/* Closes the calling thread's innermost open span. */
static inline void strata_span_end(void) {
  if (__builtin_expect(strata_enabled(), 0)) strata_span_end_();
}
/* A point event. */
static inline void strata_instant(uint32_t name_id) {
  if (__builtin_expect(strata_enabled(), 0)) strata_instant_(name_id);
}
/* A sample of a named counter (queue depth, bytes in flight, loss, ...). */
static inline void strata_counter(uint32_t name_id, double value) {
  if (__builtin_expect(strata_enabled(), 0)) strata_counter_(name_id, value);
}
/* Flows link work across threads: flow_out in the producer's span, flow_in
 * with the same id in the consumer's span. Ids are chosen by the caller and
 * must be unique within the process. */
static inline void strata_flow_out(uint64_t flow_id) {
  if (__builtin_expect(strata_enabled(), 0)) strata_flow_out_(flow_id);
}
static inline void strata_flow_in(uint64_t flow_id) {
  if (__builtin_expect(strata_enabled(), 0)) strata_flow_in_(flow_id);
}
/* Training/inference steps (the model level): one step's begin and end, on
 * whichever thread drives the loop. */
static inline void strata_step_begin(uint64_t step) {
  if (__builtin_expect(strata_enabled(), 0)) strata_step_begin_(step);
}
static inline void strata_step_end(uint64_t step) {
  if (__builtin_expect(strata_enabled(), 0)) strata_step_end_(step);
}

/* Names the calling thread in the trace. */
STRATA_API void strata_thread_name(const char* name);

/* A collector or instrumentation library says what it recorded in this process,
 * or could not and why: state is "ok", "partial", "unavailable" or "error".
 * `strata report` and the manifest show it (e.g. a framework plug-in that could
 * not attach). */
STRATA_API void strata_report_collector(const char* collector, const char* state, const char* detail);

/* A framework plug-in's loop watcher says where the loop that called the step
 * function takes its next iteration: what = line << 1 (the loop's line) where it
 * saw the loop's head, 1 where it stopped looking with the iteration still
 * running. The importer ends the step there (python/strata/_loop_head.py). */
STRATA_API void strata_loop_head_(uint32_t what);

/* Writes everything recorded so far to the trace directory (normally done every
 * 100 ms and at exit by a background thread). Returns 0 on success. */
STRATA_API int strata_flush(void);

/* Events this process could not record because its buffers were full
 * (drop-and-count policy). They are also in the trace, per stream. */
STRATA_API uint64_t strata_dropped_events(void);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_STRATA_H_ */
