"""A JAX training loop that jits nothing: a linear-softmax classifier's
parameters as a pytree, jax.grad of the loss and a hand-written Adam update run
eagerly, one primitive dispatched at a time, the way a first JAX port of a
NumPy loop looks. Batches sliced from numpy arrays; every 10 iterations a
jitted evaluation (loss and accuracy on a held-out slice) read back with
float(): the steps are the gradient's iterations, not the evaluation's.
Prints iter_ms= per iteration."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import IterClock, parse_args  # noqa: E402

args = parse_args(__doc__, iters=40, batch=32)
import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

rng = np.random.default_rng(0)
x_all = rng.standard_normal((1024, 48)).astype("float32")
y_all = rng.integers(0, 6, 1024)
params = {"w": jnp.asarray(rng.standard_normal((48, 6)).astype("float32") * 0.1), "b": jnp.zeros(6)}
m = jax.tree_util.tree_map(jnp.zeros_like, params)
v = jax.tree_util.tree_map(jnp.zeros_like, params)


def loss_fn(p, x, y):
    logits = x @ p["w"] + p["b"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


@jax.jit
def evaluate(p, x, y):
    logits = x @ p["w"] + p["b"]
    return loss_fn(p, x, y), jnp.mean(jnp.argmax(logits, -1) == y)


grad_fn = jax.grad(loss_fn)
x_val, y_val = jnp.asarray(x_all[-256:]), jnp.asarray(y_all[-256:])
clock = IterClock(args)
t = 0
while clock.more():
    i = (t * args.batch) % (1024 - args.batch)
    x, y = jnp.asarray(x_all[i:i + args.batch]), jnp.asarray(y_all[i:i + args.batch])
    g = grad_fn(params, x, y)
    t += 1
    m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
    v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
    params = jax.tree_util.tree_map(
        lambda p_, a, b: p_ - 1e-3 * (a / (1 - 0.9 ** t)) / (jnp.sqrt(b / (1 - 0.999 ** t)) + 1e-8), params, m, v)
    if t % 10 == 0:
        val_loss, val_acc = evaluate(params, x_val, y_val)
        print(f"step {t} val loss {float(val_loss):.4f} acc {float(val_acc):.3f}", flush=True)
    jax.block_until_ready(params)
    clock.tick(args.batch)
clock.done()
