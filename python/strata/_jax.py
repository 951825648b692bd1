"""strata's JAX support: what an unmodified JAX program does, at the cost of
two calls into libstrata per jitted call (always on, cheap).

`strata record` calls attach() right after the program imported jax. jax.jit
(and jax.pmap) are replaced by functions that make what JAX makes and wrap it,
so that `@jax.jit`, `jax.jit(f, static_argnums=...)`, `partial(jax.jit, ...)`
and `from jax import jit` (once jax is imported) all give wrapped functions;
everything else about the jitted function (lower, trace, eval_shape,
__wrapped__) is JAX's. Each call made outside any other becomes a span
"jax.jit NAME" on its thread: the importer takes the one with the most time,
called at least twice, as the step (importers/strata/marker_steps.h). JAX
dispatches asynchronously: the span holds the dispatch (and the compilation of
a first call); the device work runs behind it, and the program's waits for it
are spans too: "jax.block_until_ready", and "jax.device_read" for the reads that
wait for a value (float(loss), .item(), np.asarray).

With `strata record --ops-steps A-B`, JAX's profiler (jax.profiler.start_trace)
runs from the A-th to the B-th call of the step function and its XSpace is
merged into the trace like TensorFlow's (strata._tf).
"""
import functools
import threading

from strata import _tf

_tls = threading.local()
_installed = []


def _strata():
    import strata
    return strata


class _Jitted:
    """A jitted function called inside a span; its attributes are JAX's."""

    __slots__ = ("_fn", "_id", "__weakref__")

    def __init__(self, fn, sid):
        self._fn = fn
        self._id = sid

    def __call__(self, *args, **kwargs):
        if getattr(_tls, "depth", 0) > 0:
            return self._fn(*args, **kwargs)
        lib = _strata()._lib
        prof = _tf._profiler
        step = _tf._count_step(self._id) if prof is not None else -1
        if step >= 0:
            prof.before(step)
        lib.strata_span_begin_(self._id)
        _tf._samples(_batch_size(args))
        _tls.depth = 1
        try:
            return self._fn(*args, **kwargs)
        finally:
            _tls.depth = 0
            lib.strata_span_end_()
            if step >= 0:
                prof.after(step)

    def __getattr__(self, name):
        return getattr(self._fn, name)

    def __get__(self, obj, objtype=None):
        # A jitted method: bind like a function would.
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self):
        return repr(self._fn)


def _leading(a):
    shape = getattr(a, "shape", None)
    if shape is None or not hasattr(a, "dtype"):
        return 0
    try:
        return int(shape[0]) if len(shape) > 0 else 0
    except (TypeError, ValueError):
        return 0


def _batch_size(args):
    """The samples a step function's call takes: the leading dimension of its
    first argument that is an array, or a small dict/tuple of arrays that share
    one (a batch {"image", "label"}); parameter and optimizer pytrees, whose
    arrays differ in size, are passed over."""
    for a in args:
        n = _leading(a)
        if n:
            return n
        if isinstance(a, dict):
            a = tuple(a.values())
        if isinstance(a, (tuple, list)) and 0 < len(a) <= 8:
            dims = {_leading(x) for x in a}
            if len(dims) == 1 and 0 not in dims:
                return dims.pop()
    return 0


def _name_of(fun):
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or type(fun).__name__


def _wrap_transform(jax, attr, prefix):
    orig = getattr(jax, attr, None)
    if orig is None or getattr(orig, "__strata_wrapped__", False):
        return False
    intern = _strata()._intern

    @functools.wraps(orig)
    def transform(fun=None, *args, **kwargs):
        if fun is None:  # jax.jit(static_argnums=...) used as a decorator factory
            return functools.partial(transform, *args, **kwargs)
        made = orig(fun, *args, **kwargs)
        return _Jitted(made, intern(prefix + _name_of(fun)))

    transform.__strata_wrapped__ = True
    setattr(jax, attr, transform)
    return True


def _wrap_reads():
    """The program's waits for JAX's asynchronous work: jax.Array's
    block_until_ready, and the reads that wait for the value (float(), int(),
    .item(), .tolist(), np.asarray) in "jax.block_until_ready" and
    "jax.device_read" spans (waits: the breakdown's sync part)."""
    try:
        from jax._src import array
        cls = array.ArrayImpl
    except Exception:
        return False
    lib = _strata()._lib
    intern = _strata()._intern
    wrapped = False
    for attr, span_name in (("block_until_ready", "jax.block_until_ready"), ("__float__", "jax.device_read"),
                            ("__int__", "jax.device_read"), ("item", "jax.device_read"),
                            ("tolist", "jax.device_read"), ("__array__", "jax.device_read")):
        orig = cls.__dict__.get(attr)
        if orig is None or getattr(orig, "__strata_wrapped__", False):
            continue
        sid = intern(span_name)

        def make(orig=orig, sid=sid, attr=attr):
            def wrapper(self, *args, **kwargs):
                if getattr(_tls, "depth", 0) > 0:
                    return orig(self, *args, **kwargs)
                lib.strata_span_begin_(sid)
                _tls.depth = 1
                try:
                    return orig(self, *args, **kwargs)
                finally:
                    _tls.depth = 0
                    lib.strata_span_end_()
            # (functools.wraps fails on nanobind's methods: their __qualname__ is not a str.)
            wrapper.__name__ = attr
            wrapper.__doc__ = getattr(orig, "__doc__", None)
            wrapper.__wrapped__ = orig
            wrapper.__strata_wrapped__ = True
            return wrapper

        try:
            setattr(cls, attr, make())
            wrapped = True
        except (AttributeError, TypeError):
            pass
    return wrapped


def attach(jax):
    s = _strata()
    if not s.enabled() or _installed:
        return
    _installed.append(True)
    window = _tf._detail_window()
    if window is not None and _tf._profiler is None:
        _tf._profiler = _tf._Profiler(*window, backend="jax")
    done = [name for name, prefix in (("jit", "jax.jit "), ("pmap", "jax.pmap ")) if _wrap_transform(jax, name, prefix)]
    if _wrap_reads():
        done.append("waits for results")
    version = getattr(jax, "__version__", "?")
    if done:
        _tf._report("jax", "ok", "JAX %s: %s calls" % (version, ", ".join(done)))
    else:
        _tf._report("jax", "unavailable", "JAX %s: jax.jit not found" % version)
