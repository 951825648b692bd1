"""strata's Keras support (Keras 3, and Keras 2 as tf_keras): `strata record`
calls attach_keras() after the program imported keras. The spans and samples
it writes are described in strata._tf, whose helpers (spans, samples, the
profiler window, the loop watcher) it shares:
  - each call of a model's train/test/predict function is a "keras.train_step",
    "keras.test_step" or "keras.predict_step" span with the samples of its
    batches (from Keras 3's epoch iterator, or x of train_on_batch and the like);
  - a model called eagerly to train, outside any step function, gives its
    step the samples of its input;
  - a Keras optimizer's apply_gradients()/apply() called outside any step
    function is a "keras.optimizer.apply" span, an eager loop's step marker.
"""
import functools
import sys

from strata import _tf


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
        lib = _tf._strata()._lib
        step = _tf._count_step("keras.train") if (self._train and _tf._profiler is not None) else -1
        if step >= 0:
            _tf._profiler.before(step)
        lib.strata_span_begin_(self._id)
        pending = getattr(_tf._tls, "keras_samples", 0)
        if pending:
            _tf._tls.keras_samples = 0
            if self._train or not _tf._training:
                _tf._samples(pending)
        _tf._tls.depth = _tf._depth() + 1
        _tf._tls.keras_step = True
        try:
            return self._fn(*args, **kwargs)
        finally:
            _tf._tls.keras_step = False
            _tf._tls.depth -= 1
            lib.strata_span_end_()
            if step >= 0:
                _tf._profiler.after(step)

    def __getattr__(self, name):
        return getattr(self._fn, name)


def _wrap_maker(cls, maker, attr, span_name):
    orig = cls.__dict__.get(maker)
    if orig is None or getattr(orig, "__strata_wrapped__", False):
        return False
    sid = _tf._strata()._intern(span_name)
    train = attr == "train_function"

    @functools.wraps(orig)
    def wrapper(self, *args, **kwargs):
        result = orig(self, *args, **kwargs)
        fn = getattr(self, attr, None)
        if fn is not None and not isinstance(fn, _StepFunction):
            if train:
                _tf._training.append(True)
            fn = _StepFunction(fn, sid, train)
            setattr(self, attr, fn)
            if result is not None:
                result = fn
        return result

    wrapper.__strata_wrapped__ = True
    setattr(cls, maker, wrapper)
    return True


def _dataset_batches(adapter):
    """(batch size, size of the last partial batch or 0) of a tf.data dataset
    whose element spec leaves the batch dimension unknown (Dataset.batch keeps
    a partial last batch): from the batching dataset in its chain (batch,
    padded_batch and their parallel forms) and the cardinality of what it
    batches. (0, 0) when there is none. Once per adapter."""
    cached = getattr(adapter, "_strata_batches", None)
    if cached is not None:
        return cached
    found = (0, 0)
    d = getattr(adapter, "_dataset", None)
    for _ in range(64):
        if d is None:
            break
        b = getattr(d, "_batch_size", None)
        if b is not None:
            b = int(b)
            partial = 0
            drop = getattr(d, "_drop_remainder", None)
            src = getattr(d, "_input_dataset", None)
            if b > 0 and src is not None and drop is not None and not bool(drop):
                card = int(src.cardinality())
                batches = getattr(adapter, "num_batches", None)
                # (Only where the epoch is those batches: no take() or filter() after them.)
                if card > 0 and batches == -(-card // b):
                    partial = card % b
            found = (max(b, 0), partial)
            break
        d = getattr(d, "_input_dataset", None)
    try:
        adapter._strata_batches = found
    except Exception:
        pass
    return found


def _wrap_epoch_iterator(cls=None):
    """Keras 3 (TensorFlow backend): the batches of each step function call, from
    the (begin, end) steps its epoch iterator yields and the data's batch size.
    (`cls`: another class of the same shape, for bench/tf_hook_cost.py.)"""
    if cls is None:
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
            partial = getattr(adapter, "partial_batch_size", None)
            if not batch:
                batch, partial = _dataset_batches(adapter)
            n = (end - begin + 1) * batch
            batches = getattr(adapter, "num_batches", None)
            if partial and batches and end == batches - 1:
                n -= batch - partial
            _tf._tls.keras_samples = max(0, n)
        except Exception:
            _tf._tls.keras_samples = 0
        return item

    wrapper.__strata_wrapped__ = True
    cls.__next__ = wrapper
    return True


def _could_record():
    """Whether a GradientTape may be recording (TensorFlow's own test); False
    where this TensorFlow has no such test."""
    try:
        from tensorflow.python.eager import record
        return bool(record.could_possibly_record())
    except Exception:
        return False


def _wrap_model_call(model):
    """A Keras model called eagerly outside any step function or tf.function
    (an eager GradientTape loop) to train, with training=True or under a
    recording tape: its input's leading dimension is samples of the step (the
    optimizer's apply marks the step). The outermost model only (a model
    inside a model is the same samples); not an evaluation (training=False, or
    no tape)."""
    layer_call = None
    for cls in model.__mro__:
        if "__call__" in cls.__dict__:
            layer_call = cls.__dict__["__call__"]
            break
    if layer_call is None or getattr(layer_call, "__strata_wrapped__", False):
        return False

    def wrapper(self, *args, **kwargs):
        if _tf._depth() > 0 or getattr(_tf._tls, "in_model", False) or not args:
            return layer_call(self, *args, **kwargs)
        try:
            import tensorflow as tf
            training = kwargs.get("training")
            if tf.executing_eagerly() and (training is True or (training is None and _could_record())):
                _tf._samples(_tf._leading_dim(args[0]))
        except Exception:
            pass
        _tf._tls.in_model = True
        try:
            return layer_call(self, *args, **kwargs)
        finally:
            _tf._tls.in_model = False

    functools.update_wrapper(wrapper, layer_call)
    wrapper.__strata_wrapped__ = True
    try:
        model.__call__ = wrapper  # (the Model class's own: layers keep theirs)
    except (AttributeError, TypeError):
        return False
    return True


def _wrap_methods(base, attrs, make):
    """Replaces each method in `attrs` where `base`'s MRO defines it (once: a
    wrapped one is left alone) by make(orig, attr). Returns whether any was."""
    wrapped = False
    for attr in attrs:
        for cls in base.__mro__:
            orig = cls.__dict__.get(attr)
            if orig is None:
                continue
            if getattr(orig, "__strata_wrapped__", False):
                break
            wrapper = make(orig, attr)
            functools.update_wrapper(wrapper, orig)
            wrapper.__strata_wrapped__ = True
            try:
                setattr(cls, attr, wrapper)
                wrapped = True
            except (AttributeError, TypeError):
                pass
            break
    return wrapped


def _wrap_on_batch(model):
    """Model.train_on_batch(x, ...) (and test_on_batch, predict_on_batch): the
    batch of the step function call inside is x's leading dimension (Keras 3
    hands its step function a generator of that one batch, which no epoch
    iterator sizes)."""

    def make(orig, attr):
        def wrapper(self, x, *args, **kwargs):
            _tf._tls.keras_samples = _tf._leading_dim(x)
            try:
                return orig(self, x, *args, **kwargs)
            finally:
                _tf._tls.keras_samples = 0
                if attr == "train_on_batch" and _tf._depth() == 0:
                    _tf._arm_loop_head(sys.modules.get("keras"))
        return wrapper

    return _wrap_methods(model, ("train_on_batch", "test_on_batch", "predict_on_batch"), make)


def _wrap_optimizer(base):
    """A Keras optimizer's apply_gradients()/apply() called outside any step
    function (an eager GradientTape loop: no tf.function, no fit()) is a span
    "keras.optimizer.apply", the importer's step marker for such a loop (what
    optimizer.step() is for PyTorch). Inside a Keras step or a tf.function it
    runs once while the graph is traced and is not marked."""
    if base is None:
        return
    sid = _tf._strata()._intern("keras.optimizer.apply")

    def after():
        _tf._arm_loop_head(sys.modules.get("tensorflow"))

    _wrap_methods(base, ("apply_gradients", "apply"), lambda orig, attr: _tf._outermost_span(orig, sid, _tf._tls, after))


def attach_keras(keras):
    s = _tf._strata()
    name = getattr(keras, "__name__", "keras")
    if not s.enabled() or name in _tf._installed:
        return
    _tf._installed.add(name)
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
    if wrapped:
        _wrap_on_batch(model)
        _wrap_model_call(model)
    _wrap_optimizer(getattr(getattr(keras, "optimizers", None), "Optimizer", None))
    version = getattr(keras, "__version__", "?")
    if wrapped:
        _tf._report("keras", "ok", "%s %s: %s steps" % (name, version, "/".join(wrapped)))
    else:
        _tf._report("keras", "unavailable", "%s %s: no make_train_function on its Model" % (name, version))
