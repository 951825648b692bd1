"""A JAX training loop written the usual way: an MLP's parameters as a pytree,
a jax.jit train step with value_and_grad and an SGD-with-momentum update,
batches sliced from numpy arrays and put on the device each iteration, the loss
read back with float() every 5 iterations. Prints iter_ms= per iteration."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import IterClock, parse_args  # noqa: E402


def extra(p):
    p.add_argument("--features", type=int, default=128)
    p.add_argument("--hidden", type=int, default=256)


args = parse_args(__doc__, iters=40, batch=64, extra=extra)
import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

rng = np.random.default_rng(0)
n = args.batch * 8
x_all = rng.standard_normal((n, args.features)).astype("float32")
y_all = rng.integers(0, 10, n)
key = jax.random.PRNGKey(0)
k1, k2 = jax.random.split(key)
params = {
    "w1": jax.random.normal(k1, (args.features, args.hidden)) * 0.05, "b1": jnp.zeros(args.hidden),
    "w2": jax.random.normal(k2, (args.hidden, 10)) * 0.05, "b2": jnp.zeros(10),
}
velocity = jax.tree_util.tree_map(jnp.zeros_like, params)


def loss_fn(p, x, y):
    h = jax.nn.relu(x @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


@jax.jit
def train_step(p, v, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
    v = jax.tree_util.tree_map(lambda vi, g: 0.9 * vi + g, v, grads)
    p = jax.tree_util.tree_map(lambda pi, vi: pi - 0.01 * vi, p, v)
    return p, v, loss


clock = IterClock(args)
i = 0
while clock.more():
    s = (i * args.batch) % n
    x = jax.device_put(x_all[s: s + args.batch])
    y = jax.device_put(y_all[s: s + args.batch])
    params, velocity, loss = train_step(params, velocity, x, y)
    if i % 5 == 0:
        last = float(loss)
    else:
        loss.block_until_ready()
    i += 1
    clock.tick(args.batch)
clock.done()
