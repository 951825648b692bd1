"""A step loop whose time goes to one side of the roofline, for strata's roofline
tests (recorded with `strata record --shapes`):

  --kind memory   elementwise ops on a large tensor (about 0.1 FLOP per byte):
                  memory-bound on any machine
  --kind matmul   square fp32 matrix products (n/6 FLOP per byte): compute-bound
                  where n/6 is above the host's ridge point

Each step is a ProfilerStep#N scope, which the strata observer records as a step.
"""
import argparse

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", default="memory")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--n", type=int, default=1 << 21, help="elements (memory) or matrix side (matmul)")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if args.kind == "memory":
        x = torch.randn(args.n)
        y = torch.randn(args.n)
        work = lambda: torch.relu(x * 1.5 + y).sum()
    else:
        a = torch.randn(args.n, args.n)
        b = torch.randn(args.n, args.n)
        work = lambda: torch.mm(a, b)
    for i in range(args.steps):
        with torch.autograd.profiler.record_function(f"ProfilerStep#{i}"):
            for _ in range(4):
                work()


if __name__ == "__main__":
    main()
