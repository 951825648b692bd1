"""A TensorFlow 2 custom training loop, written the usual way: a tf.data pipeline
(shuffle, map, batch), a @tf.function train step with GradientTape and Adam, the
loss read back with .numpy() every few iterations for the log, an evaluation
tf.function every epoch. Prints iter_ms= per iteration (fetch included)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import IterClock, parse_args  # noqa: E402


def extra(p):
    p.add_argument("--features", type=int, default=64)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--prefetch", action="store_true", help="end the pipeline with prefetch(AUTOTUNE)")


args = parse_args(__doc__, iters=40, batch=64, extra=extra)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

rng = np.random.default_rng(0)
n = args.batch * 16
x = rng.standard_normal((n, args.features)).astype("float32")
y = rng.integers(0, 10, n)
ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(n).map(lambda a, b: (a * 0.5, b)).batch(args.batch)
if args.prefetch:
    ds = ds.prefetch(tf.data.AUTOTUNE)
model = tf.keras.Sequential([tf.keras.Input((args.features,)), tf.keras.layers.Dense(args.hidden, activation="relu"),
                             tf.keras.layers.Dense(args.hidden, activation="relu"), tf.keras.layers.Dense(10)])
opt = tf.keras.optimizers.Adam(1e-3)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


@tf.function
def eval_step(xb, yb):
    return tf.reduce_mean(tf.cast(tf.argmax(model(xb, training=False), -1) == tf.cast(yb, tf.int64), tf.float32))


clock = IterClock(args)
while clock.more():
    for xb, yb in ds:
        loss = train_step(xb, yb)
        if len(clock.times) % 5 == 0:
            last = float(loss.numpy())
        clock.tick(int(xb.shape[0]))
        if not clock.more():
            break
    else:
        acc = float(eval_step(x[: args.batch], y[: args.batch]))
clock.done()
