#!/usr/bin/env python3
"""What strata's TensorFlow/Keras hooks (the cheap tier, python/strata/_tf.py and _keras.py)
add to each step, measured in one process: each wrapper the hooks put around a
step function, timed around a do-nothing function against that function
called bare, interleaved in blocks (median of per-block differences). Run it
under `strata record` so the hooks talk to a live recorder:

  strata record -q -o /tmp/h -- ~/.cache/strata/venv-tf/bin/python bench/tf_hook_cost.py

Prints ns per call for: the Keras step-function wrapper (a span, and the
step's samples: one more zero-length span), the epoch iterator's wrapper (the
batch size of each step), a tf.function call's wrapper (a span; the graph is
written once, at the first call, not timed here), and a tf.data fetch's
wrapper (a span and the batch's samples). A Keras fit step takes the first,
second and (inside the step function) none of the others; a custom loop the
third and fourth. Compare with the step's own time (bench/keras_cost.sh).
"""
import statistics
import time

import tensorflow as tf  # noqa: F401  (strata attaches its hooks at this import)
import keras  # noqa: F401

from strata import _keras, _tf


def noop(*args, **kwargs):
    return None


class Epoch:
    """What Keras' TFEpochIterator.__next__ returns: (begin, end) steps."""

    def __init__(self):
        self.data_adapter = type("A", (), {"batch_size": 32, "partial_batch_size": None, "num_batches": 1000})()

    def __next__(self):
        return (0, 0)


class Fn:
    """A do-nothing tf.function stand-in with the wrapped class's __call__."""
    _name = "bench"

    def __call__(self, *args, **kwargs):
        return None

    def get_concrete_function(self, *args, **kwargs):
        raise RuntimeError("no graph")


class It:
    def __next__(self):
        return ()


def block(f, n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        f()
    return (time.perf_counter_ns() - t0) / n


def cost(name, wrapped, bare, n=2000, rounds=200):
    diffs = []
    for r in range(rounds):
        if r % 2:
            b = block(bare, n)
            w = block(wrapped, n)
        else:
            w = block(wrapped, n)
            b = block(bare, n)
        diffs.append(w - b)
    diffs.sort()
    lo, hi = diffs[int(0.25 * len(diffs))], diffs[int(0.75 * len(diffs))]
    print(f"{name}: {statistics.median(diffs):.0f} ns per call (interquartile {lo:.0f}..{hi:.0f})", flush=True)


def main():
    sid = _tf._strata()._intern("keras.train_step")
    step = _keras._StepFunction(noop, sid, True)
    cost("Keras step function wrapper", step, noop)

    # The epoch iterator: a stand-in class wrapped as strata wraps Keras' TFEpochIterator.
    plain = Epoch()
    EpochW = type("EpochW", (Epoch,), {"__next__": Epoch.__next__})
    _keras._wrap_epoch_iterator(EpochW)
    w = EpochW()
    cost("Keras epoch iterator wrapper", lambda: next(w), lambda: next(plain))

    FnW = type("FnW", (Fn,), {"__call__": Fn.__call__})
    _tf._graph_collection.append(True)  # (graph collection is the first call's, once)
    _tf._wrap_function_call(FnW)
    fw, fb = FnW(), Fn()
    fw()  # the first call writes the graph (here: says it cannot)
    cost("tf.function call wrapper", fw, fb)

    ItW = type("ItW", (It,), {"__next__": It.__next__})
    _tf._wrap_next(ItW)
    iw, ib = ItW(), It()
    cost("tf.data fetch wrapper", lambda: next(iw), lambda: next(ib))


if __name__ == "__main__":
    main()
