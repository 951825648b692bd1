"""Keras 3 fit on a tf.data pipeline whose map runs Python per sample (a
tf.py_function doing per-sample feature work, as ported numpy/PIL preprocessing
often does), batched without prefetch: the input pipeline bounds the step.
A timing callback prints iter_ms= per iteration."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import IterClock, parse_args  # noqa: E402


def extra(p):
    p.add_argument("--work", type=int, default=1500, help="Python loop iterations per sample")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batches", type=int, default=40, help="batches per epoch")


args = parse_args(__doc__, iters=0, batch=32, extra=extra)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

n = args.batch * args.batches
rng = np.random.default_rng(0)
x = rng.standard_normal((n, 32)).astype("float32")
y = rng.integers(0, 10, n)


def features(a):
    s = 0.0
    for i in range(args.work):  # per-sample Python work
        s += i * 0.5
    return a * np.float32(1.0 + s * 1e-12)


def load(a, b):
    a = tf.py_function(features, [a], tf.float32)
    a.set_shape([32])
    return a, b


ds = tf.data.Dataset.from_tensor_slices((x, y)).map(load).batch(args.batch)
model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(256, activation="relu"), keras.layers.Dense(10)])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
clock = IterClock(args)


class Timing(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        clock.tick(args.batch)


model.fit(ds, epochs=args.epochs, verbose=0, callbacks=[Timing()])
clock.done()
