"""A TensorFlow 2 training loop split by hand over two devices, the way a model-
parallel attempt is written: the process's CPU is configured as two logical
devices (tf.config.set_logical_device_configuration, as one would have two GPUs),
and each block of a deep, narrow MLP is pinned with tf.device to the device in
--devices (default: alternating, so every block boundary crosses devices, forward
and backward). --place BLOCK=DEVICE[,...] moves blocks (block_3=CPU:0): what
strata's placement finding tells the user to do. Prints iter_ms= per iteration."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import IterClock, parse_args  # noqa: E402


def extra(p):
    p.add_argument("--blocks", type=int, default=48)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--devices", default="alternate", help="'alternate', or device indices per block, repeated: 0 / 0,1,1 / ...")
    p.add_argument("--place", default="", help="blocks to move, comma-separated: block_3=CPU:0,block_40=CPU:1")


args = parse_args(__doc__, iters=60, batch=64, extra=extra)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

if args.devices == "alternate":
    where = [i % 2 for i in range(args.blocks)]
else:
    where = [int(d) for d in args.devices.split(",")]
    where = (where * args.blocks)[:args.blocks]  # "0": every block on /CPU:0
moved = dict(m.strip().split("=") for m in args.place.split(",") if m.strip())
where = [int(moved[f"block_{i}"].rsplit(":", 1)[1]) if f"block_{i}" in moved else d for i, d in enumerate(where)]

rng = np.random.default_rng(0)
weights, biases = [], []
for i in range(args.blocks):
    with tf.device(f"/CPU:{where[i]}"):
        weights.append(tf.Variable(rng.standard_normal((args.width, args.width)).astype("float32") * 0.1,
                                   name=f"block_{i}_w"))
        biases.append(tf.Variable(np.zeros(args.width, "float32"), name=f"block_{i}_b"))
opt = tf.keras.optimizers.SGD(1e-3)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        h = xb
        for i in range(args.blocks):
            with tf.device(f"/CPU:{where[i]}"), tf.name_scope(f"block_{i}"):
                h = tf.nn.relu(tf.matmul(h, weights[i]) + biases[i]) + h
        loss = tf.reduce_mean(tf.square(h - yb))
    variables = weights + biases
    grads = tape.gradient(loss, variables)
    opt.apply_gradients(zip(grads, variables))
    return loss


x = rng.standard_normal((args.batch * 8, args.width)).astype("float32")
y = rng.standard_normal((args.batch * 8, args.width)).astype("float32")
clock = IterClock(args)
i = 0
while clock.more():
    s = (i % 8) * args.batch
    xb, yb = tf.constant(x[s:s + args.batch]), tf.constant(y[s:s + args.batch])
    loss = train_step(xb, yb)
    if i % 10 == 0:
        print(f"loss={float(loss):.4f}", flush=True)
    clock.tick(args.batch)
    i += 1
clock.done()
