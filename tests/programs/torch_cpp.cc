// A C++ libtorch program (no Python): strata must record its ops with no change
// to it, the observer attaching when main() starts. It marks its steps itself.
#include <ATen/ATen.h>

#include <cstdio>

#include "strata/strata.h"

int main() {
  at::manual_seed(0);
  at::Tensor w = at::randn({64, 64}).set_requires_grad(true);
  double last = 0;
  for (uint64_t s = 0; s < 3; ++s) {
    strata_step_begin(s);
    at::Tensor x = at::randn({32, 64});
    at::Tensor loss = at::relu(at::mm(x, w)).sum();
    loss.backward();
    last = loss.item<double>();
    w.mutable_grad().zero_();
    strata_step_end(s);
  }
  std::printf("loss %.3f\n", last);
  return 0;
}
