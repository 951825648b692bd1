// strata.hpp must compile alone, with -fno-exceptions and -fno-rtti.
#include "strata/strata.hpp"

int main() {
  strata::Step step(1);
  STRATA_SPAN("cpp_api");
  STRATA_SPAN_ARG("cpp_api_arg", 42);
  strata_counter(STRATA_NAME_ID("depth"), 3);
  return 0;
}
