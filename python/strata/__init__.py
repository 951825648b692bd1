"""strata: explicit instrumentation for Python programs recorded by `strata record`.

Nothing here is needed for tracing an unmodified program; these calls add model-level
structure where a program wants it:

    import strata
    for batch in loader:
        with strata.step():          # or strata.step_begin()/step_end()
            with strata.span("forward"):
                loss = model(batch)

When the program is not running under `strata record`, every call is a cheap
no-op, so an annotated program does not depend on being traced: install the
package where it runs (`pip install ./python` from strata's repository).

PyTorch programs need none of this: under `strata record`, steps are found from
optimizer.step() (or torch.profiler's ProfilerStep# marks), and ops, modules and
memory are recorded by the observer that attaches when the program imports torch.
Marking steps with strata.step() replaces the automatic detection; give the
number of samples a step processes (strata.step(samples=64)) to get throughput
when the batch size cannot be read from the model's input.
"""
import ctypes
import itertools
import os
import threading

__version__ = "0.1.0"  # strata's version (CMakeLists.txt's project())

__all__ = ["enabled", "span", "scope", "step", "step_begin", "step_end", "instant", "counter", "thread_name", "flush"]

def _libstrata_path():
    """The libstrata already in this process (LD_PRELOAD by `strata record`, or
    linked): dlopen by its path returns that same copy."""
    for p in os.environ.get("LD_PRELOAD", "").replace(":", " ").split():
        if os.path.basename(p).startswith("libstrata.so"):
            return p
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and os.path.basename(parts[5].strip()).startswith("libstrata.so"):
                    return parts[5].strip()
    except OSError:
        pass
    return "libstrata.so"


# Calls keep the GIL (ctypes.PyDLL): each one stores an event into a buffer,
# and releasing the GIL around it would hand the interpreter to any other
# Python thread of the program for up to its switch interval (5 ms) per call.
# Only flush() may wait on the disk: it goes through _lib_io, which releases it.
_lib = None
_lib_io = None
if os.environ.get("STRATA_TRACE_DIR"):
    try:
        _lib = ctypes.PyDLL(_libstrata_path(), mode=ctypes.RTLD_GLOBAL)
        _lib_io = ctypes.CDLL(_libstrata_path(), mode=ctypes.RTLD_GLOBAL)
    except OSError:
        _lib = None
    if _lib is not None:
        _lib.strata_intern.restype = ctypes.c_uint32
        _lib.strata_intern.argtypes = [ctypes.c_char_p]
        _lib.strata_span_begin_.argtypes = [ctypes.c_uint32]
        _lib.strata_span_begin_arg_.argtypes = [ctypes.c_uint32, ctypes.c_uint64]
        _lib.strata_span_end_.argtypes = []
        _lib.strata_instant_.argtypes = [ctypes.c_uint32]
        _lib.strata_counter_.argtypes = [ctypes.c_uint32, ctypes.c_double]
        _lib.strata_step_begin_.argtypes = [ctypes.c_uint64]
        _lib.strata_step_end_.argtypes = [ctypes.c_uint64]
        _lib.strata_thread_name.argtypes = [ctypes.c_char_p]
        try:
            _lib.strata_report_collector.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
            _lib.strata_report_collector.restype = None
        except AttributeError:  # an older libstrata
            pass
        try:
            _lib.strata_loop_head_.argtypes = [ctypes.c_uint32]
            _lib.strata_loop_head_.restype = None
        except AttributeError:  # an older libstrata
            pass
        _active = ctypes.c_uint32.in_dll(_lib, "strata_active_")

_names = {}
_names_lock = threading.Lock()
_step_counter = itertools.count()
_open_steps = threading.local()


def enabled():
    """True while this process records."""
    return _lib is not None and _active.value != 0


def _intern(name):
    i = _names.get(name)
    if i is None:
        with _names_lock:
            i = _names.get(name)
            if i is None:
                i = _lib.strata_intern(name.encode("utf-8", "replace"))
                if i:
                    _names[name] = i
    return i


class span:
    """A span on the calling thread: `with strata.span("name"): ...` or as a decorator."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __enter__(self):
        if _lib is not None:
            _lib.strata_span_begin_(_intern(self._name))
        return self

    def __exit__(self, *exc):
        if _lib is not None:
            _lib.strata_span_end_()
        return False

    def __call__(self, fn):
        def wrapper(*a, **kw):
            with span(self._name):
                return fn(*a, **kw)

        wrapper.__name__ = getattr(fn, "__name__", "wrapper")
        wrapper.__doc__ = getattr(fn, "__doc__", None)
        return wrapper


scope = span  # the same thing under the name the C++ API's RAII helpers use


def step_begin(number=None, samples=None):
    """Starts a model step (training iteration). Numbers default to 0, 1, 2, ...
    `samples`: how many samples the step processes (for throughput)."""
    n = next(_step_counter) if number is None else int(number)
    stack = getattr(_open_steps, "stack", None)
    if stack is None:
        stack = _open_steps.stack = []
    stack.append(n)
    if _lib is not None:
        _lib.strata_step_begin_(n)
        if samples:
            _step_samples(samples)
    return n


def _step_samples(samples):
    import sys
    mod = sys.modules.get("strata._torch")
    if mod is not None:
        mod.step_samples(samples)


def _report_collector(collector, state, detail):
    """What a collector recorded in this process, or why not (internal)."""
    if _lib is not None and hasattr(_lib, "strata_report_collector"):
        _lib.strata_report_collector(collector.encode("utf-8", "replace"), state.encode("utf-8", "replace"),
                                     detail.encode("utf-8", "replace"))


def step_end(number=None):
    """Ends the innermost open step (or the one numbered `number`)."""
    stack = getattr(_open_steps, "stack", None) or []
    if number is None:
        if not stack:
            return
        number = stack.pop()
    elif number in stack:
        stack.remove(number)
    if _lib is not None:
        _lib.strata_step_end_(int(number))


class step:
    """`with strata.step(): ...` marks one model step (`samples=N`: its batch size)."""

    __slots__ = ("_n", "_given", "_samples")

    def __init__(self, number=None, samples=None):
        self._given = number
        self._samples = samples

    def __enter__(self):
        self._n = step_begin(self._given, self._samples)
        return self

    def __exit__(self, *exc):
        step_end(self._n)
        return False


def instant(name):
    if _lib is not None:
        _lib.strata_instant_(_intern(name))


def counter(name, value):
    if _lib is not None:
        _lib.strata_counter_(_intern(name), float(value))


def thread_name(name):
    if _lib is not None:
        _lib.strata_thread_name(name.encode("utf-8", "replace"))


def flush():
    """Writes what was recorded so far (normally automatic every 100 ms)."""
    if _lib_io is not None:
        _lib_io.strata_flush()
