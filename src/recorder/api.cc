// The C ABI of strata.h. Each function is the hot path of one event kind.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "format/schema.h"
#include "recorder/hot.h"
#include "recorder/runtime.h"
#include "recorder/runtime_internal.h"
#include "strata/strata.h"

using namespace strata::recorder;  // NOLINT: this file is the C facade of the recorder
namespace fmt_ = strata::format;

extern "C" {

uint32_t strata_intern(const char* name) { return name ? Intern(name) : 0; }

void strata_span_begin_(uint32_t name_id) {
  uint32_t st = LoadState();
  if (st) EmitSmall(st, fmt_::kSpanBegin, name_id, 4);
}

void strata_span_begin_arg_(uint32_t name_id, uint64_t arg) {
  uint32_t st = LoadState();
  if (!st) return;
  uint8_t p[12];
  std::memcpy(p, &name_id, 4);
  std::memcpy(p + 4, &arg, 8);
  EmitBytes(st, fmt_::kSpanBeginArg, p, sizeof p);
}

void strata_span_end_(void) {
  uint32_t st = LoadState();
  if (st) EmitSmall(st, fmt_::kSpanEnd, 0, 0);
}

void strata_instant_(uint32_t name_id) {
  uint32_t st = LoadState();
  if (st) EmitSmall(st, fmt_::kInstant, name_id, 4);
}

void strata_counter_(uint32_t name_id, double value) {
  uint32_t st = LoadState();
  if (!st) return;
  uint8_t p[12];
  std::memcpy(p, &name_id, 4);
  std::memcpy(p + 4, &value, 8);
  EmitBytes(st, fmt_::kCounter, p, sizeof p);
}

void strata_flow_out_(uint64_t flow_id) {
  uint32_t st = LoadState();
  if (st) EmitBytes(st, fmt_::kFlowOut, &flow_id, 8);
}

void strata_flow_in_(uint64_t flow_id) {
  uint32_t st = LoadState();
  if (st) EmitBytes(st, fmt_::kFlowIn, &flow_id, 8);
}

void strata_step_begin_(uint64_t step) {
  uint32_t st = LoadState();
  if (!st) return;
  NoteExplicitStep(step, true);
  EmitBytes(st, fmt_::kStepBegin, &step, 8);
}

void strata_step_end_(uint64_t step) {
  uint32_t st = LoadState();
  if (!st) return;
  NoteExplicitStep(step, false);
  EmitBytes(st, fmt_::kStepEnd, &step, 8);
}

void strata_thread_name(const char* name) {
  if (!name || !LoadState()) return;
  SetThreadName(static_cast<uint32_t>(::syscall(SYS_gettid)), name);
}

void strata_report_collector(const char* collector, const char* state, const char* detail) {
  if (!collector || !state || !LoadState()) return;
  ReportCollectorStatus(collector, state, detail ? detail : "");
}

void strata_loop_head_(uint32_t what) {
  uint32_t st = LoadState();
  if (st) EmitBytes(st, fmt_::kLoopHead, &what, sizeof what);
}

int strata_flush(void) { return FlushNow() ? 0 : -1; }

uint64_t strata_dropped_events(void) { return DroppedTotal(); }

}  // extern "C"
