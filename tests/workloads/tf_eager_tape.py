"""A TensorFlow 2 training loop run eagerly, as many first versions are written:
no tf.function and no fit(), a GradientTape per batch sliced from NumPy arrays,
Adam's apply_gradients, the loss logged with .numpy() every 10 iterations
beside a validation loss from a tf.function. The optimizer call marks the
steps (strata._keras), not the tf.function that runs every 10th iteration.
Prints iter_ms= per iteration."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import IterClock, parse_args  # noqa: E402

args = parse_args(__doc__, iters=30, batch=128)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

rng = np.random.default_rng(0)
n = args.batch * 16
x = rng.standard_normal((n, 64)).astype("float32")
y = rng.integers(0, 10, n)
model = tf.keras.Sequential([tf.keras.Input((64,)), tf.keras.layers.Dense(256, activation="relu"),
                             tf.keras.layers.Dense(256, activation="relu"), tf.keras.layers.Dense(10)])
opt = tf.keras.optimizers.Adam(1e-3)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

@tf.function
def evaluate(xv, yv):
    return loss_fn(yv, model(xv, training=False))


clock = IterClock(args)
it = 0
while clock.more():
    s = (it * args.batch) % n
    xb, yb = x[s:s + args.batch], y[s:s + args.batch]
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    if it % 10 == 0:
        print(f"iteration {it}: loss {loss.numpy():.4f} val {float(evaluate(x[:256], y[:256])):.4f}", flush=True)
    it += 1
    clock.tick(args.batch)
clock.done()
