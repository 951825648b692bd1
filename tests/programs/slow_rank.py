"""Three worker processes stepping in lockstep (a barrier per step, as data
parallel training synchronizes gradients); rank 2 does three times the work of
the others. The straggler rule's multi-process test program."""
import multiprocessing as mp
import sys

import strata


def worker(rank, steps, barrier):
    if rank == 2:
        print(f"rank2 pid={mp.current_process().pid}", flush=True)
    acc = 0
    n = 30000 * (3 if rank == 2 else 1)
    for i in range(steps):
        with strata.step():
            for k in range(n):
                acc = (acc + k * k) % 1000003
            barrier.wait()
    return acc


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(3)
    procs = [ctx.Process(target=worker, args=(r, steps, barrier)) for r in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print(f"steps={steps} exit codes {[p.exitcode for p in procs]}")


if __name__ == "__main__":
    main()
