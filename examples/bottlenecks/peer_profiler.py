"""The peer recording of a planted example: its loop under torch.profiler, as
the profiler's users write it (the whole loop inside `profile()`, `prof.step()`
at the end of each iteration, the trace exported as the profiler's JSON).
`strata report` on that file and on strata's own recording of the same program
must give the same top finding (tests/profiler_parity_test.cc).

    with torch_profiler(args.torch_profiler) as step_done:
        for batch in loader:
            ...
            step_done()
"""
import contextlib


@contextlib.contextmanager
def torch_profiler(out):
    """Profiles the block into `out` (a .json path); does nothing when `out` is empty."""
    if not out:
        yield lambda: None
        return
    import torch
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        yield prof.step
    prof.export_chrome_trace(out)
