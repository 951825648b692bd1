"""Inference fed by a producer thread, the way a serving loop or a stream
reader is written: the thread receives each request (a fixed latency, as from a
socket or a camera), normalizes it and puts the batch on a queue.Queue; the
loop takes batches off the queue and runs a TorchScript model under
torch.inference_mode(), turning the predictions into a Python list. The producer
is slower than the model, so the loop spends most of each iteration blocked in
queue.get(): its input, although no DataLoader is in sight. --producers N runs
N producer threads (the fix)."""
import queue
import threading
import time

import torch
import torch.nn as nn

from common import IterClock, parse_args


def main():
    args = parse_args(__doc__, iters=40, batch=16,
                      extra=lambda p: (p.add_argument("--producers", type=int, default=1),
                                       p.add_argument("--latency-ms", type=float, default=4.0)))
    torch.manual_seed(0)
    model = torch.jit.script(nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                                           nn.Linear(128, 10)).eval())
    q = queue.Queue(maxsize=8)
    stop = threading.Event()

    def produce():
        while not stop.is_set():
            time.sleep(args.latency_ms / 1e3)  # the request arrives
            x = torch.randn(args.batch, 256)
            x = (x - x.mean(0)) / (x.std(0) + 1e-5)
            try:
                q.put(x, timeout=0.1)
            except queue.Full:
                pass

    threads = [threading.Thread(target=produce, daemon=True) for _ in range(args.producers)]
    for t in threads:
        t.start()
    clock = IterClock(args)
    labels = []
    with torch.inference_mode():
        while clock.more():
            x = q.get()
            labels.extend(model(x).argmax(1).tolist())
            clock.tick(args.batch)
    stop.set()
    for t in threads:
        t.join()
    clock.done()


if __name__ == "__main__":
    main()
