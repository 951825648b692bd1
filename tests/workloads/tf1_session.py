"""TF1 graph code as older programs and tf.compat.v1 ports still run it:
placeholders, a two-layer network, a GradientDescent train op, an initializer
Session.run, then one Session.run of [train_op, loss] per iteration with a
feed_dict built from numpy, and an accuracy run every 10 iterations.
Prints iter_ms= per iteration."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import IterClock, parse_args  # noqa: E402

args = parse_args(__doc__, iters=30, batch=64)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.compat.v1.disable_eager_execution()
x = tf.compat.v1.placeholder(tf.float32, [None, 64])
y = tf.compat.v1.placeholder(tf.int64, [None])
w1 = tf.compat.v1.get_variable("w1", [64, 128])
w2 = tf.compat.v1.get_variable("w2", [128, 10])
logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
rng = np.random.default_rng(0)
clock = IterClock(args)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    i = 0
    while clock.more():
        xs = rng.standard_normal((args.batch, 64)).astype("float32")
        ys = rng.integers(0, 10, args.batch)
        _, l = sess.run([train, loss], feed_dict={x: xs, y: ys})
        if i % 10 == 9:
            sess.run(acc, feed_dict={x: xs, y: ys})
        i += 1
        clock.tick(args.batch)
clock.done()
