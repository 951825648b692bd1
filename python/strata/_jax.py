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

A loop that jits nothing (every primitive dispatched eagerly) is found by its
gradient: calls of what jax.grad and jax.value_and_grad make, outside any
jitted call, are spans "jax.grad NAME" / "jax.value_and_grad NAME", the steps'
markers where no jitted function is called.

Each compiled jax.jit module's HLO graph (once per signature: the first call
that grows the function's executable cache) is written to
<trace>/graphs/<pid>/N.json like a tf.function's: the instructions of the
optimized module's ENTRY computation (a fusion is one node, "multiply_add_fusion.1":
the name its op has in JAX's profile), their opcodes and operands, and the
module's name ("jit_step", the hlo_module of its ops). The text comes from
`lower(...).compile().as_text()` on the same arguments, which JAX answers from
its lowering and compilation caches (the call just compiled it; a compilation
of its own would double the first call's cost): 0.5 ms to lower, 0.04 ms to
"compile" for a small step, and the text printed and parsed; 12 ms in all for
tests/workloads/jax_train.py's step, whose compilation took 1.5 s. So it is done
whether or not --ops-steps is given, in a "strata: JAX HLO graph" span.
Instructions of computations the ENTRY calls (while and conditional bodies)
are not nodes.
"""
import functools
import json
import os
import re
import sys
import threading

from strata import _tf

_tls = threading.local()
_installed = []


def _strata():
    import strata
    return strata


class _Jitted:
    """A jitted function called inside a span; its attributes are JAX's."""

    __slots__ = ("_fn", "_id", "_name", "_compiled", "__weakref__")

    def __init__(self, fn, sid, name=None):
        self._fn = fn
        self._id = sid
        self._name = name  # "jax.jit NAME" when its HLO graphs are recorded
        self._compiled = 0  # executables cached when its last graph was recorded

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
        ok = False
        try:
            out = self._fn(*args, **kwargs)
            ok = True
            return out
        finally:
            lib.strata_span_end_()
            if ok and self._name is not None:
                _graph_if_compiled(self, args, kwargs)
            _tls.depth = 0
            if step >= 0:
                prof.after(step)
            # Where the loop that called it takes its next iteration: the
            # step's end, so that the iteration's own work before the next
            # call (slicing and putting the next batch) is its own step's.
            if ok:
                _tf._arm_loop_head(sys.modules.get("jax"))

    def __getattr__(self, name):
        return getattr(self._fn, name)

    def __get__(self, obj, objtype=None):
        # A jitted method: bind like a function would.
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self):
        return repr(self._fn)


_graph_span = []
_graphs_written = set()  # (name, module, hash of its text): a cache emptied and filled again writes none


def _graph_if_compiled(jitted, args, kwargs):
    """After a call: the graph of the executable it compiled, if it did (a
    C++ lookup of the size of the function's cache per call otherwise)."""
    try:
        n = jitted._fn._cache_size()
    except Exception:
        jitted._name = None
        return
    if n > jitted._compiled:
        _write_hlo_graph(jitted, args, kwargs)
    jitted._compiled = n


def _write_hlo_graph(jitted, args, kwargs):
    """The HLO graph of the executable a call just compiled, in its own span."""
    lib = _strata()._lib
    if not _graph_span:
        _graph_span.append(_strata()._intern("strata: JAX HLO graph"))
    lib.strata_span_begin_(_graph_span[0])
    try:
        text = jitted._fn.lower(*args, **kwargs).compile().as_text()
        module, nodes = _hlo_entry(text)
        key = (jitted._name, module, hash(text))
        if key in _graphs_written:
            return
        _graphs_written.add(key)
        d = os.path.join(os.environ["STRATA_TRACE_DIR"], "graphs", str(os.getpid()))
        os.makedirs(d, exist_ok=True)
        _tf._graph_count[0] += 1
        with open(os.path.join(d, "%d.json" % _tf._graph_count[0]), "w") as f:
            json.dump({"framework": "jax", "name": jitted._name, "module": module, "nodes": nodes}, f)
    except Exception as e:
        _tf._report("jax-graph", "error", "HLO graph of %s not recorded: %s: %s" % (jitted._name, type(e).__name__, e))
    finally:
        lib.strata_span_end_()


_INSTRUCTION = re.compile(r"\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*")
_NAME = re.compile(r"%?([A-Za-z_][\w.\-]*)")


def _balanced(s, i):
    """The end of the bracketed group that opens at s[i] ('(' or '{')."""
    depth = 0
    for j in range(i, len(s)):
        c = s[j]
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
            if depth == 0:
                return j + 1
    raise ValueError("unbalanced HLO text")


def _hlo_entry(text):
    """An optimized HLO module's name and its ENTRY computation's instructions as
    graph nodes [name, opcode, "", [operand indices]]. A line reads
    `[ROOT] %name = SHAPE opcode(%operand, ...), attributes` (SHAPE a tuple in
    parentheses, or one array shape with its layout in braces)."""
    lines = text.splitlines()
    module = lines[0].split()[1].rstrip(",") if lines and lines[0].startswith("HloModule ") else ""
    start = next(i for i, line in enumerate(lines) if line.startswith("ENTRY "))
    index, nodes = {}, []
    for line in lines[start + 1:]:
        if line.startswith("}"):
            break
        m = _INSTRUCTION.match(line)
        if not m:
            continue
        i = m.end()
        if line[i] == "(":
            i = _balanced(line, i)
        else:
            while i < len(line) and not line[i].isspace():
                i = _balanced(line, i) if line[i] in "{[" else i + 1
        opcode = line[i:].lstrip()
        paren = opcode.find("(")
        if paren < 0:
            continue
        at = len(line) - len(opcode) + paren
        operands = line[at:_balanced(line, at)]
        opcode = opcode[:paren]
        inputs = sorted({index[n] for n in _NAME.findall(operands) if n in index})
        index[m.group(1)] = len(nodes)
        nodes.append([m.group(1), opcode, "", inputs])
    return module, nodes


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
        name = prefix + _name_of(fun)
        graphs = (attr == "jit" and hasattr(made, "_cache_size") and hasattr(made, "lower") and
                  "STRATA_TRACE_DIR" in os.environ)
        return _Jitted(made, intern(name), name if graphs else None)

    transform.__strata_wrapped__ = True
    setattr(jax, attr, transform)
    return True


def _wrap_gradient(jax, attr):
    """jax.grad and jax.value_and_grad: a call of the function they make, made
    outside any jitted call (an eager training step: every primitive
    dispatched from Python one at a time), becomes a span "jax.grad NAME" or
    "jax.value_and_grad NAME", which marks the steps of a loop that jits
    nothing. Called inside a jitted function (while JAX traces it) it is part of
    that call's span and makes none."""
    orig = getattr(jax, attr, None)
    if orig is None or getattr(orig, "__strata_wrapped__", False):
        return False
    intern = _strata()._intern
    prefix = "jax.%s " % attr

    @functools.wraps(orig)
    def transform(fun=None, *args, **kwargs):
        if fun is None:
            return functools.partial(transform, *args, **kwargs)
        made = orig(fun, *args, **kwargs)
        if isinstance(fun, _Jitted):  # the gradient of a compiled function: its calls are its spans
            return made
        sid = intern(prefix + _name_of(fun))
        lib = _strata()._lib

        @functools.wraps(made)
        def gradient(*a, **kw):
            if getattr(_tls, "depth", 0) > 0:
                return made(*a, **kw)
            lib.strata_span_begin_(sid)
            _tf._samples(_batch_size(a))
            _tls.depth = 1
            ok = False
            try:
                out = made(*a, **kw)
                ok = True
                return out
            finally:
                _tls.depth = 0
                lib.strata_span_end_()
                if ok:
                    _tf._arm_loop_head(sys.modules.get("jax"))

        return gradient

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
            wrapper = _tf._outermost_span(orig, sid, _tls)
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
    if all([_wrap_gradient(jax, "grad"), _wrap_gradient(jax, "value_and_grad")]):
        done.append("eager grad, value_and_grad")
    if _wrap_reads():
        done.append("waits for results")
    version = getattr(jax, "__version__", "?")
    if done:
        _tf._report("jax", "ok", "JAX %s: %s calls" % (version, ", ".join(done)))
    else:
        _tf._report("jax", "unavailable", "JAX %s: jax.jit not found" % version)
