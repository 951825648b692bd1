"""strata's ONNX Runtime support: an unmodified ORT program's inference runs,
and with `strata record --ops-steps A-B` every node ORT ran, from ORT's own
profiler.

`strata record` calls attach() right after the program imported onnxruntime.
Each Session.run (and run_with_iobinding) made outside another becomes a span
"ort.run" on its thread, with a "strata.samples" span carrying the leading
dimension of its first input: the importer's steps for an inference program
(importers/strata/marker_steps.h).

With --ops-steps, sessions created while the program is recorded get ORT's
profiler through their SessionOptions (enable_profiling, with a file prefix in
<trace>/ort/<pid>/; options the program enabled profiling in itself are left
alone), and the profile is written (end_profiling) once the session has run
step B, or at exit. The importer puts its node events on the trace's clock by
matching its model_run events with the "ort.run" spans
(importers/strata/ort_merge.cc), and keeps those of the steps asked for.

Each session's model graph (once, when the session is made) is written to
<trace>/graphs/<pid>/N.json like a tf.function's (strata._tf): every node of the
main graph with its name (ORT's "OpType_index" for an unnamed node, the name its
profiler gives it), op type, the session's execution provider when it has one,
and the nodes whose outputs it reads. Only the nodes are read from the model's
protobuf: its initializers (the weights, most of the file) are skipped unread,
so that neither the time nor the memory of a second load is spent on them, and
the program needs no `onnx` package.
"""
import atexit
import functools
import json
import mmap
import os
import sys
import threading
import weakref

from strata import _tf

_tls = threading.local()
_installed = []
_sessions = weakref.WeakSet()  # sessions whose profile strata asked for and has not written yet
_runs = weakref.WeakKeyDictionary()  # such a session -> its runs so far


def _strata():
    import strata
    return strata


def _end_profiling(sess):
    # In a span: the step it falls in is left out of the step statistics.
    lib = _strata()._lib
    lib.strata_span_begin_(_strata()._intern("strata: ONNX Runtime profiler stop (--ops-steps)"))
    try:
        if sess in _sessions:
            _sessions.discard(sess)
            sess.end_profiling()
    except Exception as e:
        _tf._report("onnxruntime-ops", "error", "end_profiling failed: %s: %s" % (type(e).__name__, e))
    finally:
        lib.strata_span_end_()


def _at_exit():
    for sess in list(_sessions):
        _end_profiling(sess)


def _varint(buf, i):
    n = shift = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, i
        shift += 7
        if shift > 63:
            raise ValueError("malformed varint")


def _fields(buf, start, end):
    """(field number, start, end) of each length-delimited field of the protobuf
    message in buf[start:end]; the others are stepped over."""
    i = start
    while i < end:
        key, i = _varint(buf, i)
        wire = key & 7
        if wire == 0:
            _, i = _varint(buf, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = _varint(buf, i)
            if i + n > end:
                raise ValueError("field past the end of its message")
            yield key >> 3, i, i + n
            i += n
        else:
            raise ValueError("wire type %d" % wire)


def _text(buf, s, e):
    return bytes(buf[s:e]).decode("utf-8", "replace")


def _onnx_graph(buf):
    """The main graph of a serialized ONNX ModelProto (field 7, a GraphProto):
    its name (field 2) and nodes (field 1, NodeProto: inputs 1, outputs 2, name 3,
    op_type 4) as [name, op_type, [inputs], [outputs]]."""
    graph = None
    for field, s, e in _fields(buf, 0, len(buf)):
        if field == 7:
            graph = (s, e)
    if graph is None:
        raise ValueError("no graph: not an ONNX model (an ORT-format model?)")
    name, nodes = "", []
    for field, s, e in _fields(buf, *graph):
        if field == 2:
            name = _text(buf, s, e)
        elif field == 1:
            node = ["", "", [], []]
            for f, a, b in _fields(buf, s, e):
                if f == 1 or f == 2:
                    node[f + 1].append(_text(buf, a, b))
                elif f == 3 or f == 4:
                    node[f - 3] = _text(buf, a, b)
            nodes.append(node)
    return name, nodes


def _write_graph(sess, model):
    """The session's model graph in <trace>/graphs/<pid>/N.json
    (importers/strata/graph_files.cc), from a path or the bytes it was made from."""
    try:
        if isinstance(model, (bytes, bytearray, memoryview)):
            graph_name, nodes = _onnx_graph(memoryview(model))
            title = graph_name or "model"
        else:
            path = os.fspath(model)
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                graph_name, nodes = _onnx_graph(buf)
            title = os.path.basename(path)
        providers = sess.get_providers()
        device = providers[0] if len(providers) == 1 else ""
        # ORT's profiler names an unnamed node "OpType_index" (its index: its place in the graph).
        names = [name or "%s_%d" % (op, i) for i, (name, op, _, _) in enumerate(nodes)]
        producer = {out: i for i, node in enumerate(nodes) for out in node[3] if out}
        out = [[names[i], op, device, sorted({producer[t] for t in inputs if t in producer})]
               for i, (_, op, inputs, _) in enumerate(nodes)]
        d = os.path.join(os.environ["STRATA_TRACE_DIR"], "graphs", str(os.getpid()))
        os.makedirs(d, exist_ok=True)
        _tf._graph_count[0] += 1
        with open(os.path.join(d, "%d.json" % _tf._graph_count[0]), "w") as f:
            json.dump({"framework": "onnxruntime", "name": "onnx " + title, "nodes": out}, f)
    except Exception as e:
        _tf._report("onnxruntime-graph", "error", "graph of the session's model not recorded: %s: %s" %
                    (type(e).__name__, e))


def _wrap_init(cls, ort, window):
    orig = cls.__dict__.get("__init__")
    if orig is None or getattr(orig, "__strata_wrapped__", False):
        return False
    prefix_dir = os.path.join(os.environ.get("STRATA_TRACE_DIR", "."), "ort", str(os.getpid()))

    @functools.wraps(orig)
    def init(self, path_or_bytes, sess_options=None, *args, **kwargs):
        ours = False
        if window is not None:
            try:
                if sess_options is None:
                    sess_options = ort.SessionOptions()
                if not sess_options.enable_profiling:
                    os.makedirs(prefix_dir, exist_ok=True)
                    with open(os.path.join(prefix_dir, "strata_ort.json"), "w") as f:
                        json.dump({"pid": os.getpid(), "first_step": window[0], "last_step": window[1]}, f)
                    sess_options.enable_profiling = True
                    sess_options.profile_file_prefix = os.path.join(prefix_dir, "profile")
                    ours = True
            except Exception as e:
                _tf._report("onnxruntime-ops", "error", "cannot enable ORT's profiler: %s: %s" % (type(e).__name__, e))
        orig(self, path_or_bytes, sess_options, *args, **kwargs)
        if "STRATA_TRACE_DIR" in os.environ:
            _write_graph(self, path_or_bytes)
        if ours:
            _sessions.add(self)
            _runs[self] = 0
            if not _installed[1:]:
                _installed.append("atexit")
                atexit.register(_at_exit)
            _tf._report("onnxruntime-ops", "ok",
                        "ORT's profiler for steps %d-%d (every node: op, provider, shapes)" % window)

    init.__strata_wrapped__ = True
    cls.__init__ = init
    return True


def _wrap_run(cls, attr, window):
    orig = cls.__dict__.get(attr)
    if orig is None or getattr(orig, "__strata_wrapped__", False):
        return False
    lib = _strata()._lib
    sid = _strata()._intern("ort.run")

    @functools.wraps(orig)
    def run(self, *args, **kwargs):
        if getattr(_tls, "depth", 0) > 0:
            return orig(self, *args, **kwargs)
        lib.strata_span_begin_(sid)
        _tls.depth = 1
        try:
            feed = args[1] if len(args) > 1 else kwargs.get("input_feed")
            if isinstance(feed, dict) and feed:
                _tf._samples(_tf._leading_dim(next(iter(feed.values()))))
            return orig(self, *args, **kwargs)
        finally:
            _tls.depth = 0
            lib.strata_span_end_()
            _tf._arm_loop_head(sys.modules.get("onnxruntime"))
            if window is not None and self in _sessions:
                n = _runs.get(self, 0)
                _runs[self] = n + 1
                if n >= window[1]:
                    _end_profiling(self)

    run.__strata_wrapped__ = True
    setattr(cls, attr, run)
    return True


def attach(ort):
    s = _strata()
    if not s.enabled() or _installed:
        return
    _installed.append(True)
    window = _tf._detail_window()
    try:
        from onnxruntime.capi.onnxruntime_inference_collection import InferenceSession, Session
    except Exception as e:
        _tf._report("onnxruntime", "unavailable", "onnxruntime %s: no InferenceSession (%s)" %
                    (getattr(ort, "__version__", "?"), e))
        return
    done = []
    if _wrap_run(Session, "run", window):
        done.append("Session.run")
    if _wrap_init(InferenceSession, ort, window):
        done.append("model graphs" + (", its profiler for --ops-steps" if window is not None else ""))
    _tf._report("onnxruntime", "ok" if done else "unavailable",
                "onnxruntime %s: %s" % (getattr(ort, "__version__", "?"), ", ".join(done) or "nothing"))
