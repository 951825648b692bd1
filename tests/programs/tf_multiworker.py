"""Data-parallel training with TensorFlow's MultiWorkerMirroredStrategy, as
its tutorials write a custom loop: one worker per process (TF_CONFIG names the
cluster and this task), variables made under the strategy's scope, a
distributed tf.data dataset, and a tf.function step whose replicas all-reduce
their gradients (CollectiveReduceV2 ops over gRPC). Each worker prints its own
median iteration time.

    TF_CONFIG='{"cluster": {"worker": ["localhost:P0", "localhost:P1"]}, "task": {"type": "worker", "index": I}}' \
        python tf_multiworker.py
"""
import json, os, time
import numpy as np
import tensorflow as tf
strategy = tf.distribute.MultiWorkerMirroredStrategy()
rank = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
with strategy.scope():
    w1 = tf.Variable(tf.random.normal((64, 256), seed=1) * 0.1)
    w2 = tf.Variable(tf.random.normal((256, 10), seed=2) * 0.1)
x = np.random.rand(2048, 64).astype("float32")
y = np.random.randint(0, 10, 2048)
ds = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((x, y)).batch(64).repeat())

@tf.function
def train_step(batch):
    def replica(xb, yb):
        with tf.GradientTape() as tape:
            logits = tf.matmul(tf.nn.relu(tf.matmul(xb, w1)), w2)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(yb, logits))
        grads = tape.gradient(loss, [w1, w2])
        grads = tf.distribute.get_replica_context().all_reduce("mean", grads)
        for v, g in zip([w1, w2], grads):
            v.assign_sub(0.1 * g)
        return loss
    return strategy.reduce("mean", strategy.run(replica, args=batch), axis=None)

it = iter(ds)
times = []
for i in range(30):
    t0 = time.perf_counter()
    loss = train_step(next(it))
    float(loss)
    times.append(time.perf_counter() - t0)
times = sorted(times[1:])
print(f"worker {rank} median iteration {times[len(times)//2]*1e3:.2f} ms", flush=True)
