"""A step loop in which every 10th step stalls: a synchronous "checkpoint"
(here a 60 ms wait) inside the step, the rest of the steps a few milliseconds of
work. The straggler rule's test program (tests/bottlenecks_os_test.cc)."""
import sys
import time

import strata

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
acc = 0
for i in range(steps):
    with strata.step():
        with strata.span("compute"):
            for k in range(20000):
                acc = (acc + k * k) % 1000003
            time.sleep(0.004)
        if i > 0 and i % 10 == 0:
            with strata.span("save_checkpoint"):
                time.sleep(0.06)
print(f"steps={steps} acc={acc}")
