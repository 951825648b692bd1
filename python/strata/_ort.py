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
"""
import atexit
import functools
import json
import os
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
    if window is not None and _wrap_init(InferenceSession, ort, window):
        done.append("its profiler for --ops-steps")
    _tf._report("onnxruntime", "ok" if done else "unavailable",
                "onnxruntime %s: %s" % (getattr(ort, "__version__", "?"), ", ".join(done) or "nothing"))
