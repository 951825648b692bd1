"""Keras 3 model.fit on numpy arrays, as most Keras users train: a small CNN on
synthetic images, Adam, accuracy metric, validation data. A callback times each
iteration the way users time batches (perf_counter from one batch's end to the
next's). Prints iter_ms= per iteration."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import IterClock, parse_args  # noqa: E402


def extra(p):
    p.add_argument("--size", type=int, default=16)
    p.add_argument("--epochs", type=int, default=2)


args = parse_args(__doc__, iters=0, batch=32, extra=extra)
import numpy as np  # noqa: E402
import keras  # noqa: E402

rng = np.random.default_rng(0)
n = args.batch * 10 + args.batch // 2  # a partial last batch, as real datasets have
x = rng.standard_normal((n, args.size, args.size, 3)).astype("float32")
y = rng.integers(0, 10, n)
model = keras.Sequential([
    keras.Input((args.size, args.size, 3)),
    keras.layers.Conv2D(16, 3, activation="relu"),
    keras.layers.MaxPooling2D(),
    keras.layers.Flatten(),
    keras.layers.Dense(64, activation="relu"),
    keras.layers.Dense(10),
])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
clock = IterClock(args)


class Timing(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        size = args.batch if batch < n // args.batch else n % args.batch
        clock.tick(size)


model.fit(x, y, batch_size=args.batch, epochs=args.epochs, verbose=0, callbacks=[Timing()],
          validation_data=(x[: args.batch * 2], y[: args.batch * 2]))
clock.done()
