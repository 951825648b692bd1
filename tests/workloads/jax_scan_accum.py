"""JAX training with gradient accumulation inside the jitted step: lax.scan over
--accum micro-batches summing their gradients, then an SGD-with-momentum update, all
in one jax.jit; batches built with NumPy on the host each iteration; the loss read
back with float() every 10th step."""
import numpy as np
import jax
import jax.numpy as jnp

from common import IterClock, parse_args


def init(key, sizes):
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        key, k = jax.random.split(key)
        params.append((jax.random.normal(k, (a, b)) * (2.0 / a) ** 0.5, jnp.zeros(b)))
    return params


def loss_fn(params, x, y):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    logits = x @ w + b
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))


@jax.jit
def step(params, mom, xs, ys):
    def body(acc, xy):
        l, g = jax.value_and_grad(loss_fn)(params, *xy)
        return jax.tree_util.tree_map(jnp.add, acc, g), l
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    grads, losses = jax.lax.scan(body, zeros, (xs, ys))
    mom = jax.tree_util.tree_map(lambda m, g: 0.9 * m + g / xs.shape[0], mom, grads)
    params = jax.tree_util.tree_map(lambda p, m: p - 0.01 * m, params, mom)
    return params, mom, losses.mean()


def main():
    args = parse_args(__doc__, iters=40, batch=64, extra=lambda p: p.add_argument("--accum", type=int, default=4))
    rng = np.random.default_rng(0)
    params = init(jax.random.PRNGKey(0), [128, 256, 256, 10])
    mom = jax.tree_util.tree_map(jnp.zeros_like, params)
    clock = IterClock(args)
    i = 0
    while clock.more():
        xs = rng.standard_normal((args.accum, args.batch, 128)).astype(np.float32)
        ys = rng.integers(0, 10, (args.accum, args.batch))
        params, mom, loss = step(params, mom, xs, ys)
        i += 1
        if i % 10 == 0:
            print(f"loss {float(loss):.3f}", flush=True)
        else:
            loss.block_until_ready()
        clock.tick(args.batch * args.accum)
    clock.done()


if __name__ == "__main__":
    main()
