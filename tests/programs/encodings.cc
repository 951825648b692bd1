// Emits events whose values exercise every on-disk encoding the flusher picks
// (narrow and wide forms): small and huge name ids, flow ids, step numbers and
// counter values of every range.
#include <cstdio>
#include <string>

#include "strata/strata.h"

int main() {
  // 70000 names: ids above 65535 need the wide span_begin.
  uint32_t last = 0;
  for (int i = 0; i < 70000; ++i) last = strata_intern(("name_" + std::to_string(i)).c_str());
  uint32_t first = strata_intern("name_0");
  uint32_t c = strata_intern("value");
  strata_step_begin(7);
  strata_step_begin(1ull << 40);
  strata_span_begin(first);
  strata_flow_out(5);
  strata_span_end();
  strata_span_begin(last);
  strata_flow_in(5);
  strata_flow_out(1ull << 40);
  strata_span_end();
  strata_span_begin_arg(first, 1ull << 50);
  strata_flow_in(1ull << 40);
  strata_span_end();
  const double values[] = {0, -1, 32767, -32768, 32768, -2147483648.0, 2147483647.0, 2147483648.0, 0.5, -1e300, 1e12};
  for (double v : values) strata_counter(c, v);
  strata_step_end(1ull << 40);
  strata_step_end(7);
  std::printf("%u %u\n", first, last);
  return 0;
}
