"""The older Keras training loop: batches made by a Python generator from numpy
arrays (normalization and a random flip done in numpy), model.train_on_batch per
batch, the returned loss appended to a history list, and test_on_batch on a
held-out batch every 10 iterations."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import IterClock, parse_args  # noqa: E402

args = parse_args(__doc__, iters=30, batch=64)
import numpy as np  # noqa: E402
import keras  # noqa: E402

rng = np.random.default_rng(0)
images = rng.integers(0, 255, size=(2048, 32, 32, 3), dtype=np.uint8)
labels = rng.integers(0, 10, 2048)


def batches(batch):
    while True:
        idx = rng.permutation(len(images))
        for k in range(0, len(idx) - batch + 1, batch):
            b = images[idx[k:k + batch]].astype("float32") / 255.0
            flip = rng.random(batch) < 0.5
            b[flip] = b[flip, :, ::-1]
            yield (b - 0.5) / 0.25, labels[idx[k:k + batch]]


model = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Conv2D(32, 3, activation="relu"),
                          keras.layers.MaxPooling2D(), keras.layers.Conv2D(64, 3, activation="relu"),
                          keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(10)])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
gen = batches(args.batch)
held_x, held_y = next(batches(256))
history = []
clock = IterClock(args)
i = 0
while clock.more():
    xb, yb = next(gen)
    history.append(float(model.train_on_batch(xb, yb)))
    i += 1
    if i % 10 == 0:
        print(f"iteration {i}: train {np.mean(history[-10:]):.4f} held-out {float(model.test_on_batch(held_x, held_y)):.4f}",
              flush=True)
    clock.tick(args.batch)
clock.done()
