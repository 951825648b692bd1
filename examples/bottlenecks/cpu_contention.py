"""A training-like step loop sharing its core with a CPU-hungry process.

Planted bottleneck (cpu_contention): the job starts a helper process (here a
busy "augmentation" worker that never sleeps) and pins it and the step loop to
the same core, as a job with a wrong CPU list (taskset, a cpuset, a launcher's
--cpu-bind) does. The scheduler then splits that core between them and each
step waits for the CPU about half of its time, while the other core idles.

  strata record -- python3 examples/bottlenecks/cpu_contention.py
  strata record -- python3 examples/bottlenecks/cpu_contention.py --fixed

--fixed applies strata's suggestion: the helper goes to a different core than
the step loop. The default record (context switches) is enough for strata to
see the wait and name the helper.
"""
import argparse
import multiprocessing as mp
import os

try:
    import strata
except ImportError:  # not under `strata record`: run unrecorded
    strata = None


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def burn(cpu, started):
    """The competing process: pure CPU work on its core until terminated."""
    os.sched_setaffinity(0, {cpu})
    if strata:
        strata.thread_name("augment-worker")
    started.set()
    x = 0
    while True:
        for i in range(100000):
            x = (x * 31 + i) & 0xFFFFFFFF


def work(n):
    # The step's compute: a few tens of milliseconds of CPU on one core.
    acc = 0
    for i in range(n):
        acc = (acc + i * i) % 1000003
    return acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--work", type=int, default=150000, help="loop iterations per step")
    ap.add_argument("--fixed", action="store_true", help="run the helper on a different core")
    a = ap.parse_args()

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("cpu_contention.py: needs at least 2 CPUs in its affinity mask")
    step_cpu = cpus[0]
    helper_cpu = cpus[1] if a.fixed else cpus[0]
    os.sched_setaffinity(0, {step_cpu})

    ctx = mp.get_context("fork")
    started = ctx.Event()
    helper = ctx.Process(target=burn, args=(helper_cpu, started), daemon=True)
    helper.start()
    started.wait()
    try:
        acc = 0
        for i in range(a.steps):
            with strata.step() if strata else _Null():
                acc ^= work(a.work)
        print(f"steps={a.steps} fixed={a.fixed} step_cpu={step_cpu} helper_cpu={helper_cpu} acc={acc}")
    finally:
        helper.terminate()
        helper.join()


if __name__ == "__main__":
    main()
