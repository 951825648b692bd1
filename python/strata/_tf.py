"""strata's TensorFlow and Keras support: what an unmodified TF program does,
at the cost of two calls into libstrata per event (always on, cheap).

`strata record` calls attach_tensorflow() right after the program imported
tensorflow, and attach_keras() after it imported keras (Keras 3) or tf_keras
(Keras 2). Each wraps a few Python entry points; every wrapped call becomes a
span on its thread, which is how the importer finds the steps
(importers/strata/marker_steps.cc):
  - "keras.train_step", "keras.test_step", "keras.predict_step": each call of a
    Keras model's train/test/predict function (one batch, or steps_per_execution
    batches) inside fit(), evaluate(), predict() and train_on_batch();
  - "tf.function NAME": each call of a tf.function made outside any other
    (a custom training loop's train_step; the calls inside Keras' step
    functions are not repeated);
  - "tf.Session.run": each Session.run of TF1 graph code (tf.compat.v1);
  - "tf.data.next": each element a Python loop fetches from a tf.data iterator
    (the input wait of a custom loop; Keras fetches inside its graph);
  - "strata.samples" (zero length, argument = the count): the leading dimension
    of each element a tf.data iterator gave the program, and the samples of the
    batches each Keras 3 step function takes: the importer sums them per step
    for throughput.
Nothing is wrapped when the process is not recorded, and a failure to wrap
leaves the program unchanged (the trace says why the level is missing).
"""
import functools
import threading

_tls = threading.local()
_installed = set()


def _strata():
    import strata
    return strata


def _report(collector, state, detail):
    _strata()._report_collector(collector, state, detail)


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


def _wrap_method(cls, attr, span_name, top_level_only=False):
    """Replaces cls.attr by a function that runs it inside a span."""
    orig = cls.__dict__.get(attr)
    if orig is None or getattr(orig, "__strata_wrapped__", False):
        return False
    span = _Span(span_name) if isinstance(span_name, str) else None
    lib = _strata()._lib

    @functools.wraps(orig)
    def wrapper(self, *args, **kwargs):
        if top_level_only and _depth() > 0:
            return orig(self, *args, **kwargs)
        sid = span._id if span is not None else span_name(self)
        lib.strata_span_begin_(sid)
        _tls.depth = _depth() + 1
        try:
            return orig(self, *args, **kwargs)
        finally:
            _tls.depth -= 1
            lib.strata_span_end_()

    wrapper.__strata_wrapped__ = True
    setattr(cls, attr, wrapper)
    return True


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


def attach_tensorflow(tf):
    s = _strata()
    if not s.enabled() or "tensorflow" in _installed:
        return
    _installed.add("tensorflow")
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
    if fn_cls is not None and _wrap_method(fn_cls, "__call__", _function_span_id, top_level_only=True):
        done.append("tf.function calls")
    else:
        missing.append("tf.function")
    try:
        from tensorflow.python.client import session
        if _wrap_method(session.BaseSession, "run", "tf.Session.run", top_level_only=True):
            done.append("Session.run")
    except Exception:
        missing.append("Session.run")
    try:
        from tensorflow.python.data.ops import iterator_ops
        if _wrap_next(iterator_ops.OwnedIterator):
            done.append("tf.data fetches")
    except Exception:
        missing.append("tf.data")
    version = getattr(tf, "__version__", "?")
    detail = "TensorFlow %s: %s" % (version, ", ".join(done) or "nothing")
    if missing:
        detail += " (not found: %s)" % ", ".join(missing)
    _report("tensorflow", "recorded" if done else "unavailable", detail)


_training = []  # non-empty once a Keras train function was made: steps are training steps


class _StepFunction:
    """A Keras step function run inside a span; anything else goes to the function.
    The samples of its batches count for throughput when it is a train function,
    or an evaluation/prediction function in a program that does not train
    (validation batches inside fit() are not training samples)."""

    __slots__ = ("_fn", "_id", "_train", "__weakref__")

    def __init__(self, fn, sid, train):
        self._fn = fn
        self._id = sid
        self._train = train

    def __call__(self, *args, **kwargs):
        lib = _strata()._lib
        lib.strata_span_begin_(self._id)
        pending = getattr(_tls, "keras_samples", 0)
        if pending:
            _tls.keras_samples = 0
            if self._train or not _training:
                _samples(pending)
        _tls.depth = _depth() + 1
        try:
            return self._fn(*args, **kwargs)
        finally:
            _tls.depth -= 1
            lib.strata_span_end_()

    def __getattr__(self, name):
        return getattr(self._fn, name)


def _wrap_maker(cls, maker, attr, span_name):
    orig = cls.__dict__.get(maker)
    if orig is None or getattr(orig, "__strata_wrapped__", False):
        return False
    sid = _strata()._intern(span_name)
    train = attr == "train_function"

    @functools.wraps(orig)
    def wrapper(self, *args, **kwargs):
        result = orig(self, *args, **kwargs)
        fn = getattr(self, attr, None)
        if fn is not None and not isinstance(fn, _StepFunction):
            if train:
                _training.append(True)
            fn = _StepFunction(fn, sid, train)
            setattr(self, attr, fn)
            if result is not None:
                result = fn
        return result

    wrapper.__strata_wrapped__ = True
    setattr(cls, maker, wrapper)
    return True


def _wrap_epoch_iterator():
    """Keras 3 (TensorFlow backend): the batches of each step function call, from
    the (begin, end) steps its epoch iterator yields and the data's batch size."""
    try:
        from keras.src.backend.tensorflow.trainer import TFEpochIterator as cls
    except Exception:
        return False
    orig = cls.__dict__.get("__next__")
    if orig is None or getattr(orig, "__strata_wrapped__", False):
        return False

    @functools.wraps(orig)
    def wrapper(self):
        item = orig(self)
        try:
            begin, end = int(item[0]), int(item[1])
            adapter = getattr(self, "data_adapter", None)
            batch = getattr(adapter, "batch_size", None) or 0
            n = (end - begin + 1) * batch
            partial = getattr(adapter, "partial_batch_size", None)
            batches = getattr(adapter, "num_batches", None)
            if partial and batches and end == batches - 1:
                n -= batch - partial
            _tls.keras_samples = max(0, n)
        except Exception:
            _tls.keras_samples = 0
        return item

    wrapper.__strata_wrapped__ = True
    cls.__next__ = wrapper
    return True


def attach_keras(keras):
    s = _strata()
    name = getattr(keras, "__name__", "keras")
    if not s.enabled() or name in _installed:
        return
    _installed.add(name)
    model = getattr(keras, "Model", None)
    wrapped = []
    if model is not None:
        for kind in ("train", "test", "predict"):
            maker, attr = "make_%s_function" % kind, "%s_function" % kind
            for cls in model.__mro__:
                if maker in cls.__dict__:
                    if _wrap_maker(cls, maker, attr, "keras.%s_step" % kind):
                        wrapped.append(kind)
                    break
    if wrapped and name == "keras":
        _wrap_epoch_iterator()
    version = getattr(keras, "__version__", "?")
    if wrapped:
        _report("keras", "recorded", "%s %s: %s steps" % (name, version, "/".join(wrapped)))
    else:
        _report("keras", "unavailable", "%s %s: no make_train_function on its Model" % (name, version))
