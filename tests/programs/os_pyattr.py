"""Known Python functions, each calling one distinctive torch op, and
module-level work on a known line: strata's test that a CPU sample's Python
stack and the op it falls in are of the same instant (tests/os_python_test.cc).
The calls alternate, so a stack read a moment after its sample names the
wrong function."""
import sys

import torch

torch.set_num_threads(1)
a = torch.randn(320, 320)
v = torch.randn(1 << 18)
img = torch.randn(1, 8, 112, 112)
w = torch.randn(8, 8, 5, 5)


def call_mm():
    torch.mm(a, a)


def call_sort():
    torch.sort(v)


def call_conv():
    torch.conv2d(img, w)


reps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
for _ in range(reps):
    call_mm()
    call_sort()
    call_conv()
total = 0
for i in range(1_500_000): total += i * i  # MODULE_LINE
print(total)
