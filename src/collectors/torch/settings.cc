#include "collectors/torch/settings.h"

#include <cstdlib>

#include "recorder/runtime.h"

namespace strata::collectors::torch {

namespace {

int64_t EnvInt(const char* name, int64_t def) {
  const char* v = ::secure_getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  return end && *end == '\0' ? x : def;
}

}  // namespace

Settings ReadSettings() {
  Settings s;
  if (const format::ControlBlock* cb = recorder::Control()) {
    s.mode = static_cast<format::OpsMode>(cb->ops_mode.load(std::memory_order_relaxed));
    if (s.mode != format::OpsMode::kOff && s.mode != format::OpsMode::kSampled) s.mode = format::OpsMode::kAll;
    s.detail = cb->detail.load(std::memory_order_relaxed) != 0;
    s.detail_first = cb->detail_first_step.load(std::memory_order_relaxed);
    s.detail_last = cb->detail_last_step.load(std::memory_order_relaxed);
    s.window_tiers = format::WindowTiers(*cb);
    s.window_ms = cb->sample_window_ms.load(std::memory_order_relaxed);
    s.period_ms = cb->sample_period_ms.load(std::memory_order_relaxed);
    s.batch_size = cb->batch_size.load(std::memory_order_relaxed);
    s.memory = cb->memory.load(std::memory_order_relaxed) != 0;
    s.modules = cb->modules.load(std::memory_order_relaxed) != 0;
  } else {
    if (const char* m = ::secure_getenv("STRATA_TORCH_OPS")) format::ParseOpsMode(m, &s.mode);
    s.detail = EnvInt("STRATA_TORCH_SHAPES", 0) != 0;
    s.detail_first = EnvInt("STRATA_TORCH_DETAIL_FIRST_STEP", -1);
    s.detail_last = EnvInt("STRATA_TORCH_DETAIL_LAST_STEP", -1);
    s.window_ms = static_cast<uint32_t>(EnvInt("STRATA_TORCH_SAMPLE_WINDOW_MS", 10));
    s.period_ms = static_cast<uint32_t>(EnvInt("STRATA_TORCH_SAMPLE_PERIOD_MS", 200));
    s.batch_size = EnvInt("STRATA_BATCH_SIZE", 0);
    s.memory = EnvInt("STRATA_TORCH_MEMORY", 1) != 0;
    s.modules = EnvInt("STRATA_TORCH_MODULES", 1) != 0;
  }
  return s;
}

}  // namespace strata::collectors::torch
