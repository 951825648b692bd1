"""What recording costs a PyTorch training loop on a GPU: strata against
torch.profiler (its peer: Kineto over CUPTI), side by side in one run.

Each mode is its own process (strata's CUDA collector is injected when CUDA
starts), and the modes alternate round by round so that drift of the machine
falls on all of them alike. Every process trains the same MLP (warm-up steps,
then --steps timed steps) and prints the median wall time of a step; this
driver prints, per mode, the median over rounds and its ratio to untraced.

  python3 bench/gpu/torch_overhead.py --strata build/bin/strata [--rounds 5] [--steps 300] [--width 4096]

Modes: untraced; strata record (default tiers: every op, memory, CUDA API and
activity); strata --ops off (steps, memory and CUDA only); strata --accel none
(framework level only); torch.profiler with CPU and CUDA activities (the
steps inside the profiler's context; its exit, which builds its event list, is
timed apart as profiler_exit_ms). --window-modes adds --cuda-activity sampled
(device activity one step in 50) with every op and with --ops off. --api-modes adds strata --ops off with
--cuda-api activity and with --cuda-api none: what CUDA tracing costs by how
API calls are traced.

Run as a child with --child MODE.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

MODES = ["untraced", "strata", "strata_ops_off", "strata_no_cuda", "torch_profiler"]
# --cuda-api variants, with --ops off (what CUDA tracing alone costs, by how API calls are traced)
API_MODES = ["strata_api_activity", "strata_api_none"]
# CUDA device activity in windows of steps (--window-modes): one step in 50, the default of --serve
WINDOW_MODES = ["strata_cuda_sampled", "strata_cheap_sampled"]


def child(mode, steps, width):
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, width), torch.nn.ReLU(), torch.nn.Linear(width, 1024)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 1024, device="cuda")
    y = torch.randn(256, 1024, device="cuda")

    def step():
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()

    for _ in range(20):
        step()
    torch.cuda.synchronize()
    walls = []

    def loop():
        for _ in range(steps):
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize()
            walls.append(time.perf_counter() - t0)

    out = {}
    if mode == "torch_profiler":
        from torch.profiler import ProfilerActivity, profile

        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
        loop()
        t0 = time.perf_counter()
        prof.__exit__(None, None, None)
        out["profiler_exit_ms"] = 1e3 * (time.perf_counter() - t0)
    else:
        loop()
    out["step_ms"] = 1e3 * statistics.median(walls)
    print(json.dumps(out))


def run(mode, strata, steps, width):
    me = [sys.executable, os.path.abspath(__file__), "--child", mode, "--steps", str(steps), "--width", str(width)]
    if mode.startswith("strata"):
        extra = {"strata": [], "strata_ops_off": ["--ops", "off"], "strata_no_cuda": ["--accel", "none"],
                 "strata_api_activity": ["--ops", "off", "--cuda-api", "activity"],
                 "strata_api_none": ["--ops", "off", "--cuda-api", "none"],
                 "strata_cuda_sampled": ["--cuda-activity", "sampled"],
                 "strata_cheap_sampled": ["--ops", "off", "--cuda-activity", "sampled"]}[mode]
        trace = tempfile.mkdtemp(prefix="strata-gpu-ovh-")
        me = [strata, "record", "-q", "-o", trace] + extra + ["--"] + me
    r = subprocess.run(me, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{mode}: exit {r.returncode}: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--strata", default="build/bin/strata")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--width", type=int, default=4096)
    ap.add_argument("--api-modes", action="store_true", help="add the --cuda-api activity and none modes")
    ap.add_argument("--window-modes", action="store_true",
                    help="add --cuda-activity sampled, with every op and with --ops off (the live run's cheap tier)")
    a = ap.parse_args()
    if a.child:
        return child(a.child, a.steps, a.width)
    modes = MODES + (API_MODES if a.api_modes else []) + (WINDOW_MODES if a.window_modes else [])
    got = {m: [] for m in modes}
    exits = []
    for r in range(a.rounds):
        order = modes if r % 2 == 0 else modes[::-1]
        for m in order:
            res = run(m, a.strata, a.steps, a.width)
            got[m].append(res["step_ms"])
            if "profiler_exit_ms" in res:
                exits.append(res["profiler_exit_ms"])
        print(f"round {r + 1}: " + ", ".join(f"{m} {got[m][-1]:.3f}" for m in modes), flush=True)
    base = statistics.median(got["untraced"])
    print(f"\nmedian wall time of a step over {a.rounds} rounds ({a.steps} steps each, MLP width {a.width}):")
    for m in modes:
        med = statistics.median(got[m])
        print(f"  {m:<16} {med:8.3f} ms  {100 * (med / base - 1):+7.1f}%   (rounds: {min(got[m]):.3f} .. {max(got[m]):.3f})")
    print(f"  torch.profiler's exit: {statistics.median(exits):.1f} ms (median)")


if __name__ == "__main__":
    main()
