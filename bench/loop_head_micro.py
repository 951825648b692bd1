#!/usr/bin/env python3
"""The cost of arming the loop-head tracer per iteration (python/strata/_loop_head.py),
without torch: a loop whose "optimizer step" arms it, and a short tail.
  bench/loop_head_micro.py  (with any Python)"""
import sys, time
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__import__("os").path.abspath(__file__)), "..", "python"))
from strata import _loop_head
n = 0
def emit(what):
    global n; n += 1
def step(arm):
    if arm: _loop_head.arm(emit)
def loop(arm, iters):
    t = time.perf_counter()
    for i in range(iters):
        x = i * 2          # the iteration's body
        step(arm)          # the optimizer step (arms)
        y = x + 1          # its tail
        if y % 7 == 0: z = str(y)
    return (time.perf_counter() - t) / iters * 1e6
for r in range(3):
    print(f"per iteration: armed {loop(True, 50000):.2f} us, not {loop(False, 50000):.2f} us; heads {n}")
