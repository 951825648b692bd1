"""strata's TensorFlow hooks for TF1 graph code (tf.compat.v1): each
Session.run in a "tf.Session.run" span, the graph the session runs, and for
--ops-steps A-B TensorFlow's own step stats (RunOptions(trace_level=FULL_TRACE))
of the window's runs with their placed graph. Installed by
strata._tf.attach_tensorflow; the helpers it shares (spans, samples, graph
files, the clock pair) are strata._tf's."""
import functools
import os
import sys

from strata import _tf


def _fetch_signature(fetches):
    """What a Session.run computes, as a number: the identities of its fetches
    (the init run, the training run and an evaluation run differ)."""
    if isinstance(fetches, dict):
        fetches = tuple(fetches.values())
    if not isinstance(fetches, (list, tuple)):
        fetches = (fetches,)
    return hash(tuple(id(f) for f in fetches)) & 0x7FFFFFFFFFFFFFFF


class _StepStats:
    """--ops-steps A-B for TF1 graph code: the Session.run calls of steps A to B
    run with RunOptions(trace_level=FULL_TRACE), TensorFlow's own per-node step
    stats, and each call's RunMetadata is written as it is into
    <trace>/stepstats/<pid>/<step>.pb beside a wall-clock / trace-clock pair
    (importers/strata/step_stats.cc reads them). The steps are the calls of the
    first fetch signature called A+1 times (the training run, as the importer
    counts them: an initializer runs once, an evaluation run less often). The
    first traced call also returns the partition graphs: the placed graph."""

    def __init__(self, first, last):
        self.first, self.last = first, last
        self.sig = None
        self.done = False
        self.dir = None

    def wants(self, sig, step):
        """Whether this call (the step-th of its signature) runs traced."""
        if self.done:
            return False
        if self.sig is None:
            if step < self.first:
                return False
            self.sig = sig
            self._start()
        return sig == self.sig and self.dir is not None and self.first <= step <= self.last

    def _start(self):
        span = _tf._Span("strata: TensorFlow step stats profiler start (--ops-steps)")
        span.begin()
        try:
            d = os.path.join(os.environ["STRATA_TRACE_DIR"], "stepstats", str(os.getpid()))
            os.makedirs(d, exist_ok=True)
            _tf._write_clock(d)
            self.dir = d
        except Exception as e:
            self.done = True
            _tf._report("tensorflow-ops", "error", "step stats not recorded: %s: %s" % (type(e).__name__, e))
        finally:
            span.end()

    def run(self, orig, session, fetches, args, kwargs, step):
        """orig(session, fetches, ...) with FULL_TRACE; the metadata written after."""
        from tensorflow.core.protobuf import config_pb2
        args = list(args)
        options = kwargs.pop("options", args[1] if len(args) > 1 else None)
        metadata = kwargs.pop("run_metadata", args[2] if len(args) > 2 else None)
        del args[1:]
        traced = config_pb2.RunOptions()
        if options is not None:
            traced.CopyFrom(options)
        traced.trace_level = config_pb2.RunOptions.FULL_TRACE
        traced.output_partition_graphs = step == self.first
        if metadata is None:
            metadata = config_pb2.RunMetadata()
        result = orig(session, fetches, *args, options=traced, run_metadata=metadata, **kwargs)
        self.metadata = metadata
        return result

    def after(self, session, step):
        """Writes the traced call's RunMetadata (after the call's span: the
        writing is not the run's time); stops after the window's last step."""
        md = getattr(self, "metadata", None)
        self.metadata = None
        if md is not None:
            try:
                with open(os.path.join(self.dir, "%d.pb" % step), "wb") as f:
                    f.write(md.SerializeToString())
                if md.partition_graphs:
                    _write_session_graphs(session, md)
            except Exception as e:
                _tf._report("tensorflow-ops", "error", "step stats of step %d not written: %s: %s" % (step, type(e).__name__, e))
        if step >= self.last:
            self.done = True
            span = _tf._Span("strata: TensorFlow step stats profiler stop (--ops-steps)")
            span.begin()
            span.end()
            _tf._report("tensorflow-ops", "ok",
                    "TensorFlow's step stats (FULL_TRACE) for Session.run steps %d-%d" % (self.first, self.last))


_step_stats = None
_session_graphs = set()  # id of the graphs whose Session.run graph is in the trace


def _write_session_graph(session):
    """The graph a Session runs, once per graph (at the second call of a fetch
    signature: the graph is built by then): every op's name, type, requested
    device and inputs, as the graph "tf.Session.run"."""
    g = session.graph
    if id(g) in _session_graphs:
        return
    _session_graphs.add(id(g))
    try:
        _tf._write_graph_file(_tf._graphs_dir(), "tf.Session.run", _tf._graph_nodes(g.get_operations()))
    except Exception as e:
        _tf._report("tensorflow-graph", "error", "graph of Session.run not recorded: %s: %s" % (type(e).__name__, e))


def _write_session_graphs(session, md):
    """The placed graph of a traced Session.run ("tf.Session.run (placed)"):
    its partition graphs, a tensor's bytes from the run's own outputs."""
    sizes = {}
    for dev in md.step_stats.dev_stats:
        for ns in dev.node_stats:
            for out in ns.output:
                if out.slot == 0:
                    sizes[ns.node_name] = out.tensor_description.allocation_description.requested_bytes
    for op in session.graph.get_operations():
        if op.name not in sizes:
            b = _tf._output_bytes(op)
            if b >= 0:
                sizes[op.name] = b
    _tf._write_graph_file(_tf._graphs_dir(), "tf.Session.run (placed)", _tf._placed_nodes(md.partition_graphs, sizes))


def _wrap_session_run(cls):
    """Session.run in a "tf.Session.run" span whose argument tells its fetches
    apart; with --ops-steps, TensorFlow's step stats for the window's calls."""
    orig = cls.__dict__.get("run")
    if orig is None or getattr(orig, "__strata_wrapped__", False):
        return False
    sid = _tf._Span("tf.Session.run")._id
    lib = _tf._strata()._lib
    calls = {}  # fetch signature -> calls so far

    @functools.wraps(orig)
    def wrapper(self, fetches, *args, **kwargs):
        if _tf._depth() > 0:
            return orig(self, fetches, *args, **kwargs)
        sig = _fetch_signature(fetches)
        n = calls.get(sig, 0)
        calls[sig] = n + 1
        traced = _step_stats is not None and _step_stats.wants(sig, n)
        lib.strata_span_begin_arg_(sid, sig)
        _tf._tls.depth = _tf._depth() + 1
        try:
            feed = kwargs.get("feed_dict", args[0] if args else None)
            if isinstance(feed, dict) and feed:
                _tf._samples(_tf._leading_dim(next(iter(feed.values()))))
            if traced:
                return _step_stats.run(orig, self, fetches, args, kwargs, n)
            return orig(self, fetches, *args, **kwargs)
        finally:
            if n == 1:
                _write_session_graph(self)
            _tf._tls.depth -= 1
            lib.strata_span_end_()
            if traced:
                _step_stats.after(self, n)
            _tf._arm_loop_head(sys.modules.get("tensorflow"))

    wrapper.__strata_wrapped__ = True
    cls.run = wrapper
    return True
