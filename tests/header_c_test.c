/* strata.h must compile as plain C (C99 and later) and be usable alone. */
#include "strata/strata.h"

int main(void) {
  uint32_t name = strata_intern("c_api");
  strata_span_begin(name);
  strata_instant(name);
  strata_counter(name, 1.5);
  strata_flow_out(1);
  strata_flow_in(1);
  strata_span_end();
  strata_step_begin(0);
  strata_step_end(0);
  strata_thread_name("c-main");
  return strata_enabled() ? (strata_flush() == 0 ? 0 : 1) : 0;
}
