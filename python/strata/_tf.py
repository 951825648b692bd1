"""strata's TensorFlow and Keras support: what an unmodified TF program does,
at the cost of two calls into libstrata per event (always on, cheap).

`strata record` calls attach_tensorflow() right after the program imported
tensorflow, and strata._keras.attach_keras() after it imported keras (Keras 3)
or tf_keras (Keras 2). Each wraps a few Python entry points; every wrapped call becomes a
span on its thread, which is how the importer finds the steps
(importers/strata/marker_steps.cc):
  - "keras.train_step", "keras.test_step", "keras.predict_step": each call of a
    Keras model's train/test/predict function (one batch, or steps_per_execution
    batches) inside fit(), evaluate(), predict() and train_on_batch();
  - "tf.function NAME": each call of a tf.function made outside any other
    (a custom training loop's train_step; the calls inside Keras' step
    functions are not repeated);
  - "tf.Session.run": each Session.run of TF1 graph code (tf.compat.v1), its
    argument a signature of its fetches (the training run repeats one);
  - "tf.data.next": each element a Python loop fetches from a tf.data iterator
    (the input wait of a custom loop; Keras fetches inside its graph);
  - the graph of each tf.function (once, after its first call): every op's
    name, type, requested device and inputs, as a dataflow graph of the trace;
  - "tf.data.map (python)", "tf.data.generator": each call of a Python function
    a tf.data pipeline runs per element (tf.py_function / tf.numpy_function
    given to Dataset.map, filter, flat_map or interleave; a from_generator
    generator's next element), on tf.data's threads: while the step's graph
    waits for them, the step waits for its input; "tf.py_function" for one used
    elsewhere;
  - "strata.samples" (zero length, argument = the count): the leading dimension
    of each element a tf.data iterator gave the program, of the first value fed
    to a Session.run, and the samples of the batches each Keras 3 step function
    takes (train_on_batch's: its x's): the importer sums them per step for
    throughput.
With `strata record --ops-steps A-B`, TensorFlow's own profiler runs from step
A to step B (counted as the importer counts them: Keras train steps, else the
calls of the first tf.function called that often) and writes its XSpace into
<trace>/xspace/<pid>/ with the clock pair that puts it on the trace's clock:
every op, TraceMe and allocation of those steps, merged into the trace when it
is read (importers/strata/xspace_merge.h). For TF1 graph code the window's
Session.run calls run with RunOptions(trace_level=FULL_TRACE) instead: their
RunMetadata (TensorFlow's per-node step stats) goes into <trace>/stepstats/<pid>/
(strata._tf_session; importers/strata/step_stats_merge.h), and the first one's partition graphs
become the placed graph "tf.Session.run (placed)".

Nothing is wrapped when the process is not recorded, and a failure to wrap
leaves the program unchanged (the trace says why the level is missing).
"""
import atexit
import functools
import json
import os
import struct
import sys
import threading
import time

_tls = threading.local()
_installed = set()


def _strata():
    import strata
    return strata


def _report(collector, state, detail):
    _strata()._report_collector(collector, state, detail)


_loop_head_emit = []  # [libstrata's strata_loop_head_ or None], decided once


def _arm_loop_head(package=None):
    """After a call of what may be the program's step function (a tf.function,
    Session.run, a jitted JAX function, an ONNX Runtime run, an eager
    optimizer's apply, made outside any other): watch for the loop's next
    iteration (strata._loop_head), where the importer ends the step. `package`:
    the framework's module, whose own frames are never the loop.
    STRATA_LOOP_HEAD=0 turns it off."""
    if not _loop_head_emit:
        lib = _strata()._lib
        ok = hasattr(lib, "strata_loop_head_") and os.environ.get("STRATA_LOOP_HEAD", "1") != "0"
        _loop_head_emit.append(lib.strata_loop_head_ if ok else None)
    emit = _loop_head_emit[0]
    if emit is None:
        return
    from strata import _loop_head
    if package is not None and package not in _skipped_packages:
        _skipped_packages.add(package)
        f = getattr(package, "__file__", None)
        if f:
            _loop_head.skip_dir(os.path.dirname(os.path.abspath(f)))
    _loop_head.arm(emit)


_skipped_packages = set()


def _depth():
    return getattr(_tls, "depth", 0)


class _Span:
    """Begins and ends one span on the calling thread (no allocation per call)."""

    __slots__ = ("_id",)

    def __init__(self, name):
        self._id = _strata()._intern(name)

    def begin(self):
        _strata()._lib.strata_span_begin_(self._id)

    def end(self):
        _strata()._lib.strata_span_end_()


def _outermost_span(orig, sid, tls, after=None):
    """A method wrapper: orig(self, ...) inside a span `sid` when no span of
    this framework's hooks is open on the thread (`tls.depth`: what orig calls
    in turn is part of it), then after() if given; within one, orig alone."""
    lib = _strata()._lib

    def wrapper(self, *args, **kwargs):
        if getattr(tls, "depth", 0) > 0:
            return orig(self, *args, **kwargs)
        lib.strata_span_begin_(sid)
        tls.depth = 1
        try:
            return orig(self, *args, **kwargs)
        finally:
            tls.depth = 0
            lib.strata_span_end_()
            if after is not None:
                after()

    return wrapper


def _detail_window():
    """--ops-steps A-B from the recording's control file (format/control.h: magic
    'STCB', version 1 or 2, detail_first_step and detail_last_step at offset 32)."""
    d = os.environ.get("STRATA_TRACE_DIR")
    if not d:
        return None
    try:
        with open(os.path.join(d, "control"), "rb") as f:
            head = f.read(48)
        magic, version = struct.unpack_from("<II", head, 0)
        first, last = struct.unpack_from("<qq", head, 32)
    except (OSError, struct.error):
        return None
    if magic != 0x42435453 or version not in (1, 2) or first < 0 or last < first:
        return None
    return first, last


def _write_clock(d):
    """<d>/strata_clock.json: this process's pid and a wall-clock / trace-clock
    pair read together, which put a framework profile's wall-clock times on the
    trace's clock (importers/strata/xspace_merge.h, ReadProfileClock)."""
    r1 = time.time_ns()
    mono = time.monotonic_ns()  # the trace's clock (CLOCK_MONOTONIC)
    r2 = time.time_ns()
    with open(os.path.join(d, "strata_clock.json"), "w") as f:
        json.dump({"pid": os.getpid(), "realtime_ns": (r1 + r2) // 2, "trace_clock_ns": mono}, f)


class _Profiler:
    """The framework's own profiler over steps [first, last] (--ops-steps):
    TensorFlow's, or JAX's (backend "jax"); both write an XSpace."""

    def __init__(self, first, last, backend="tensorflow"):
        self.first, self.last = first, last
        self.backend = backend
        self.collector = backend + "-ops"
        self.title = "TensorFlow" if backend == "tensorflow" else "JAX"
        self.state = 0  # 0 waiting, 1 running, 2 done
        self.lock = threading.Lock()

    def before(self, step):
        if self.state == 0 and step >= self.first:
            with self.lock:
                if self.state == 0:
                    self._start()

    def after(self, step):
        if self.state == 1 and step >= self.last:
            with self.lock:
                if self.state == 1:
                    self._stop()

    def _start(self):
        self.state = 2
        span = _Span("strata: %s profiler start (--ops-steps)" % self.title)
        span.begin()
        try:
            logdir = os.path.join(os.environ["STRATA_TRACE_DIR"], "xspace", str(os.getpid()))
            os.makedirs(logdir, exist_ok=True)
            _write_clock(logdir)
            if self.backend == "jax":
                import jax
                jax.profiler.start_trace(logdir)
            else:
                import tensorflow as tf
                opts = tf.profiler.experimental.ProfilerOptions(host_tracer_level=2, python_tracer_level=0,
                                                                device_tracer_level=1)
                tf.profiler.experimental.start(logdir, options=opts)
            self.state = 1
            atexit.register(self.at_exit)
        except Exception as e:
            _report(self.collector, "error", "%s's profiler did not start: %s: %s" % (self.title, type(e).__name__, e))
        finally:
            span.end()

    def _stop(self):
        self.state = 2
        span = _Span("strata: %s profiler stop (--ops-steps)" % self.title)
        span.begin()
        try:
            if self.backend == "jax":
                import jax
                jax.profiler.stop_trace()
            else:
                import tensorflow as tf
                tf.profiler.experimental.stop()
            _report(self.collector, "ok",
                    "%s's profiler for steps %d-%d (ops, TraceMe events, allocations)" % (self.title, self.first, self.last))
        except Exception as e:
            _report(self.collector, "error", "%s's profiler did not stop: %s: %s" % (self.title, type(e).__name__, e))
        finally:
            span.end()

    def at_exit(self):
        if self.state == 1:
            with self.lock:
                if self.state == 1:
                    self._stop()


_profiler = None
_step_calls = {}  # step counting for --ops-steps: key -> calls so far


def _count_step(key):
    n = _step_calls.get(key, 0)
    _step_calls[key] = n + 1
    return n


def _samples(n):
    if n > 0:
        lib = _strata()._lib
        lib.strata_span_begin_arg_(_samples_id(), int(n))
        lib.strata_span_end_()


def _samples_id(_cache=[]):
    if not _cache:
        _cache.append(_strata()._intern("strata.samples"))
    return _cache[0]


def _leading_dim(element):
    """The batch size of a tf.data element: the first dimension of its first tensor."""
    for _ in range(4):
        if isinstance(element, (tuple, list)):
            if not element:
                return 0
            element = element[0]
        elif isinstance(element, dict):
            if not element:
                return 0
            element = next(iter(element.values()))
        else:
            break
    shape = getattr(element, "shape", None)
    try:
        return int(shape[0]) if shape is not None and len(shape) > 0 and shape[0] is not None else 0
    except (TypeError, ValueError, IndexError):
        return 0


def _wrap_next(cls):
    """Iterator.__next__ inside a "tf.data.next" span, then its batch size."""
    orig = cls.__dict__.get("__next__")
    if orig is None or getattr(orig, "__strata_wrapped__", False):
        return False
    span = _Span("tf.data.next")
    lib = _strata()._lib

    @functools.wraps(orig)
    def wrapper(self):
        lib.strata_span_begin_(span._id)
        try:
            element = orig(self)
        finally:
            lib.strata_span_end_()
        if _depth() == 0:
            _samples(_leading_dim(element))
        return element

    wrapper.__strata_wrapped__ = True
    cls.__next__ = wrapper
    return True


def _function_span_id(fn, _cache={}):
    name = getattr(fn, "_name", None) or getattr(fn, "__name__", "function")
    sid = _cache.get(name)
    if sid is None:
        sid = _cache[name] = _strata()._intern("tf.function " + name)
    return sid


_graphs_written = set()  # id of the tf.function objects whose graph is in the trace
_graph_count = [0]


def _write_graph(fn, args, kwargs):
    """The graph of a tf.function's call, once per function (its first call):
    every op's name, type, requested device and inputs, in
    <trace>/graphs/<pid>/N.json (importers/strata/graph_files.cc)."""
    key = id(fn)
    if key in _graphs_written:
        return
    _graphs_written.add(key)
    try:
        cf = fn.get_concrete_function(*args, **kwargs)
        ops = cf.graph.get_operations()
        d = _graphs_dir()
        name = getattr(fn, "_name", None) or getattr(fn, "__name__", "function")
        _write_graph_file(d, "tf.function " + name, _graph_nodes(ops))
        _write_placed_graph(d, name, ops)
    except Exception as e:
        _report("tensorflow-graph", "error", "graph of %r not recorded: %s: %s" % (fn, type(e).__name__, e))


def _graphs_dir():
    return os.path.join(os.environ["STRATA_TRACE_DIR"], "graphs", str(os.getpid()))


def _graph_nodes(ops):
    """A graph's ops as graph-file rows [name, type, requested device, [inputs]]."""
    index = {op.name: i for i, op in enumerate(ops)}
    nodes = []
    for op in ops:
        inputs = sorted({index[t.op.name] for t in op.inputs if t.op.name in index})
        nodes.append([op.name, op.type, op.device or "", inputs])
    return nodes


def _output_bytes(op):
    """Bytes of an op's first output where its static shape is fully known, else -1."""
    try:
        t = op.outputs[0]
        n = t.shape.num_elements()
        return -1 if n is None else int(n) * t.dtype.size
    except Exception:
        return -1


def _write_placed_graph(d, name, ops):
    """The graph as TensorFlow placed and partitioned it at the function's first
    call (graph collection is on from the start: _enable_graph_collection):
    every node of every partition with the device it runs on, _Send -> _Recv
    pairs as edges between partitions, and the bytes a _Send carries (from the
    traced graph's static shapes). Written as "tf.function NAME (placed)"; the
    placement analysis reads it."""
    if not _graph_collection or not _graph_collection[0]:
        return
    from tensorflow.python.eager import context
    md = context.export_run_metadata()
    parts = [p for fg in (md.function_graphs if md is not None else []) for p in fg.partition_graphs]
    if not parts:
        return
    _write_graph_file(d, "tf.function %s (placed)" % name, _placed_nodes(parts, {op.name: _output_bytes(op) for op in ops}))


def _placed_nodes(parts, sizes):
    """The nodes of partition graphs (GraphDefs, one per device) as graph-file
    rows [name, type, device, [inputs], bytes]: _Send -> _Recv pairs are edges,
    a _Send's bytes those of the tensor it sends (`sizes`: node name -> bytes)."""
    nodes, index, sends, recvs = [], {}, {}, []
    for p in parts:
        for n in p.node:
            key = n.name if n.name not in index else "%s@%s" % (n.name, n.device)
            index[key] = len(nodes)
            nodes.append([n.name, n.op, n.device, [], n])
    for i, (nm, op, dev, inputs, n) in enumerate(nodes):
        for inp in n.input:
            src = inp.lstrip("^").split(":")[0]
            j = index.get(src)
            if j is not None:
                inputs.append(j)
        if op in ("_Send", "_Recv", "_HostSend", "_HostRecv"):
            a = n.attr
            k = (a["tensor_name"].s, a["send_device"].s, a["recv_device"].s)
            if op.endswith("Send"):
                sends[k] = i
            else:
                recvs.append((k, i))
    for k, i in recvs:
        if k in sends:
            nodes[i][3].append(sends[k])
    out = []
    for nm, op, dev, inputs, n in nodes:
        b = -1
        if op.endswith("Send") and n.input:
            b = sizes.get(n.input[0].split(":")[0], -1)
        elif nm in sizes:
            b = sizes[nm]
        out.append([nm, op, dev, sorted(set(inputs)), b])
    return out


def _write_graph_file(d, name, nodes):
    """One graph file, <trace>/graphs/<pid>/N.json (importers/strata/graph_files.cc)."""
    os.makedirs(d, exist_ok=True)
    _graph_count[0] += 1
    with open(os.path.join(d, "%d.json" % _graph_count[0]), "w") as f:
        json.dump({"framework": "tensorflow", "name": name, "nodes": nodes}, f)


_graph_collection = []  # non-empty once tried; [True] when TensorFlow collects the graphs it places


def _enable_graph_collection():
    """Graph collection makes TensorFlow keep each function's partition graphs
    (placed, with Send/Recv) when it instantiates the function: a copy of the
    graph once per function, nothing per call. Turned on at the first
    tf.function call, not when TensorFlow is imported: it initializes the
    eager context, after which the program could no longer configure its
    devices (set_logical_device_configuration, set_memory_growth)."""
    _graph_collection.append(False)
    try:
        from tensorflow.python.eager import context
        context.enable_graph_collection()
        _graph_collection[0] = True
    except Exception as e:
        _report("tensorflow-graph", "partial", "placed graphs not recorded: %s: %s" % (type(e).__name__, e))


def _wrap_function_call(cls):
    """tf.function calls made outside any other, each in a "tf.function NAME" span;
    with --ops-steps, the profiler starts and stops around the step's calls."""
    orig = cls.__dict__.get("__call__")
    if orig is None or getattr(orig, "__strata_wrapped__", False):
        return False
    lib = _strata()._lib

    def graph_once(self, args, kwargs):
        if id(self) not in _graphs_written:
            _tls.depth = _depth() + 1
            try:
                _write_graph(self, args, kwargs)
            finally:
                _tls.depth -= 1

    @functools.wraps(orig)
    def wrapper(self, *args, **kwargs):
        if not _graph_collection:
            _enable_graph_collection()
        if _depth() > 0:
            # (A Keras step function's tf.function: its graph is recorded all the same.)
            result = orig(self, *args, **kwargs)
            if getattr(_tls, "keras_step", False):
                graph_once(self, args, kwargs)
            return result
        sid = _function_span_id(self)
        step = -1
        if _profiler is not None and not _training:
            step = _count_step(sid)
            _profiler.before(step)
        lib.strata_span_begin_(sid)
        _tls.depth = _depth() + 1
        try:
            return orig(self, *args, **kwargs)
        finally:
            _tls.depth -= 1
            # (Inside the call's span: the graph written at the first call is
            # that call's time, in its step, as the program's clock sees it.)
            graph_once(self, args, kwargs)
            lib.strata_span_end_()
            if step >= 0:
                _profiler.after(step)
            _arm_loop_head(sys.modules.get("tensorflow"))

    wrapper.__strata_wrapped__ = True
    cls.__call__ = wrapper
    return True


def _timed_callable(func, sid):
    """func run inside a span (per element of a tf.data pipeline)."""
    lib = _strata()._lib

    def run(*args, **kwargs):
        lib.strata_span_begin_(sid)
        try:
            return func(*args, **kwargs)
        finally:
            lib.strata_span_end_()

    run.__name__ = getattr(func, "__name__", "func")
    run.__wrapped__ = func
    return run


def _wrap_dataset(dataset_cls, script_ops, tf):
    """Python functions tf.data runs per element, each call in a span."""
    intern = _strata()._intern
    lib = _strata()._lib
    map_sid, gen_sid, py_sid = intern("tf.data.map (python)"), intern("tf.data.generator"), intern("tf.py_function")
    done = False
    # Dataset.map & co. trace their function in the calling thread: a Python
    # function wrapped while that runs is one the pipeline calls per element.
    for name in ("map", "filter", "flat_map", "interleave"):
        orig = dataset_cls.__dict__.get(name)
        if orig is None or getattr(orig, "__strata_wrapped__", False):
            continue

        def make(orig=orig):
            @functools.wraps(orig)
            def traced(self, *args, **kwargs):
                _tls.in_dataset = getattr(_tls, "in_dataset", 0) + 1
                try:
                    return orig(self, *args, **kwargs)
                finally:
                    _tls.in_dataset -= 1
            traced.__strata_wrapped__ = True
            return traced

        setattr(dataset_cls, name, make())
        done = True
    for mod_attr, tf_attr in (("eager_py_func", "py_function"), ("numpy_function", "numpy_function")):
        orig = getattr(script_ops, mod_attr, None)
        if orig is None or getattr(orig, "__strata_wrapped__", False):
            continue

        def make_fn(orig=orig):
            @functools.wraps(orig)
            def py_function(func=None, *args, **kwargs):
                if callable(func):
                    func = _timed_callable(func, map_sid if getattr(_tls, "in_dataset", 0) else py_sid)
                return orig(func, *args, **kwargs)
            py_function.__strata_wrapped__ = True
            return py_function

        wrapped = make_fn()
        setattr(script_ops, mod_attr, wrapped)
        if getattr(tf, tf_attr, None) is orig:
            setattr(tf, tf_attr, wrapped)
        done = True
    gen = dataset_cls.__dict__.get("from_generator")
    if isinstance(gen, staticmethod) and not getattr(gen.__func__, "__strata_wrapped__", False):
        orig_gen = gen.__func__

        @functools.wraps(orig_gen)
        def from_generator(generator, *args, **kwargs):
            if callable(generator):
                inner = generator

                def timed(*gargs):
                    it = iter(inner(*gargs))
                    while True:
                        lib.strata_span_begin_(gen_sid)
                        try:
                            item = next(it)
                        except StopIteration:
                            return
                        finally:
                            lib.strata_span_end_()
                        yield item

                generator = timed
            return orig_gen(generator, *args, **kwargs)

        from_generator.__strata_wrapped__ = True
        dataset_cls.from_generator = staticmethod(from_generator)
        done = True
    return done


def attach_tensorflow(tf):
    global _profiler
    s = _strata()
    if not s.enabled() or "tensorflow" in _installed:
        return
    _installed.add("tensorflow")
    window = _detail_window()
    if window is not None and _profiler is None:
        _profiler = _Profiler(*window)
    from strata import _tf_session
    if window is not None and _tf_session._step_stats is None:
        _tf_session._step_stats = _tf_session._StepStats(*window)
    done, missing = [], []
    try:
        from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf
        fn_cls = pf.Function
    except Exception:
        try:
            from tensorflow.python.eager import def_function as pf  # TF < 2.12
            fn_cls = pf.Function
        except Exception:
            fn_cls = None
    if fn_cls is not None and _wrap_function_call(fn_cls):
        done.append("tf.function calls")
    else:
        missing.append("tf.function")
    try:
        from tensorflow.python.client import session
        if _tf_session._wrap_session_run(session.BaseSession):
            done.append("Session.run")
    except Exception:
        missing.append("Session.run")
    try:
        from tensorflow.python.data.ops import iterator_ops
        if _wrap_next(iterator_ops.OwnedIterator):
            done.append("tf.data fetches")
        from tensorflow.python.data.ops import dataset_ops
        from tensorflow.python.ops import script_ops
        if _wrap_dataset(dataset_ops.DatasetV2, script_ops, tf):
            done.append("tf.data Python functions")
    except Exception:
        missing.append("tf.data")
    version = getattr(tf, "__version__", "?")
    detail = "TensorFlow %s: %s" % (version, ", ".join(done) or "nothing")
    if missing:
        detail += " (not found: %s)" % ", ".join(missing)
    _report("tensorflow", "ok" if done else "unavailable", detail)


_training = []  # non-empty once a Keras train function was made: steps are training steps
