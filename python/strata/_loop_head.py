"""Where a training loop's next iteration begins, seen from Python.

A step found from the optimizer ends where the optimizer's step() does, but the
program's iteration goes on: logging, a checkpoint, an evaluation, a scheduler
step. Where a DataLoader feeds the loop its next fetch marks the loop's head;
a loop over a list, a generator or a hand-made loader shows nothing. So after
each optimizer step, arm() watches the frame that called step() (the loop's
body, or a helper the loop calls: then its caller once it returns) for the
first line at or above the step's own line: the `for`/`while` head taking the
next iteration. `emit()` is called there, once.

Only the tail of an iteration is traced, and only in the frame that matters:
the global trace function (needed for a frame's own trace function to run)
returns None for every other frame. Tracing still slows the Python that runs
meanwhile (CPython 3.11 runs traced code unspecialized: an evaluation loop over
torch 2's Python modules takes ~1.4x as long), so it stops once the tail has
run for a tenth of the last iteration: `emit(1)` then says the iteration was
still running there (the importer ends it at the next iteration's first
activity instead), `emit(0)` is the loop's head. A program that traces itself
(a debugger, coverage) is left alone.
"""
import os
import sys
import sysconfig
import time

# Frames that are never the loop: torch's and strata's own code, the standard library's.
_SKIP = tuple(os.path.realpath(p) + os.sep for p in filter(None, (
    sysconfig.get_paths().get("stdlib"),
    os.path.dirname(os.path.abspath(__file__)),
)))
_SHARE = 0.1  # of the last iteration that its tail may be traced for
_MIN_S = 0.0002
# The first tail has no iteration to take a tenth of, and it is the longest
# (the first calls of each op warm up): it may be traced this long, once.
_FIRST_S = 0.05
_last_arm = [0.0]  # when the last arm() ran (perf_counter)


def skip_dir(path):
    """Adds a package directory whose frames are never the loop (torch's)."""
    global _SKIP
    p = os.path.realpath(path) + os.sep
    if p not in _SKIP:
        _SKIP = _SKIP + (p,)


_real = {}  # code filename -> realpath, memoized


def _skipped(frame):
    name = frame.f_code.co_filename
    real = _real.get(name)
    if real is None:
        real = _real[name] = os.path.realpath(name) if name and not name.startswith("<") else name
    return real.startswith(_SKIP)


def _user_frame(frame):
    while frame is not None and _skipped(frame):
        frame = frame.f_back
    return frame


_with_exits_of = {}  # code object -> offsets where a with statement's exit begins


def _with_exits(code):
    """Offsets in `code` where a `with` block's exit begins: it runs at the with
    statement's line (calling __exit__(None, None, None)), above the block's
    lines, and is not the loop's head."""
    offsets = _with_exits_of.get(code)
    if offsets is None:
        offsets = set()
        try:
            import dis
            entered = {}  # line -> offset of its with statement's entry
            for ins in dis.get_instructions(code):
                pos = getattr(ins, "positions", None)
                line = pos.lineno if pos is not None else None
                if ins.opname in ("BEFORE_WITH", "SETUP_WITH", "BEFORE_ASYNC_WITH", "SETUP_ASYNC_WITH"):
                    entered.setdefault(line, ins.offset)
                elif ins.opname == "LOAD_CONST" and ins.argval is None and line in entered:
                    offsets.add(ins.offset)
        except Exception:
            pass
        _with_exits_of[code] = offsets
    return offsets


def arm(emit):
    """Called right after an optimizer step, from within it (a hook): calls
    emit(line << 1) at the loop's next head (the loop's line: inner and outer
    loops told apart), or emit(1) where it stops looking."""
    now = time.perf_counter()
    budget = max(_MIN_S, _SHARE * (now - _last_arm[0])) if _last_arm[0] else _FIRST_S
    _last_arm[0] = now
    if sys.gettrace() is not None:
        return  # armed already (another optimizer of the same iteration), or traced by someone else
    frame = _user_frame(sys._getframe(1))
    if frame is None:
        return
    _with_exits(frame.f_code)  # (the first time for this code: before the budget's clock)
    deadline = time.perf_counter() + budget
    # The frame, the line it stepped on, calls seen, whether it has run since
    # (until it does, the optimizer's step() is still unwinding: giving up
    # there would put the mark inside the optimizer step, before its end).
    watched = [frame, frame.f_lineno, 0, False]

    def disarm():
        sys.settrace(None)
        if watched[0] is not None:
            watched[0].f_trace = None
            watched[0] = None

    def fire(what):
        disarm()
        try:
            emit(what)
        except Exception:
            pass

    def on_call(frame, event, arg):
        watched[2] += 1
        if watched[3] and watched[2] & 15 == 0 and time.perf_counter() > deadline:
            fire(1)
        return None

    def on_frame(frame, event, arg):
        if frame is not watched[0]:
            return None
        watched[3] = True
        if event == "line":
            if frame.f_lineno <= watched[1] and frame.f_lasti not in _with_exits(frame.f_code):
                fire((frame.f_lineno & 0x7fffffff) << 1)  # seen (bit 0 clear), at this line
                return None
            if time.perf_counter() > deadline:
                fire(1)
                return None
        elif event == "return":
            # A helper stepped the optimizer: the loop is in a caller.
            parent = _user_frame(frame.f_back)
            if parent is None:
                disarm()
                return None
            watched[0], watched[1] = parent, parent.f_lineno
            parent.f_trace_lines = True
            parent.f_trace = on_frame
            return None
        return on_frame

    try:
        frame.f_trace_lines = True
        frame.f_trace = on_frame
        sys.settrace(on_call)
    except Exception:
        disarm()
