"""Batch inference over a file of JSON-lines requests, the way an offline
scoring job is written: each iteration reads the next requests, parses them
with json.loads, builds the batch tensor from Python lists, runs the model under
torch.inference_mode() and writes each result back as a JSON line. No
DataLoader: parsing the requests is most of each iteration (its input), and
writing the results is the iteration's own tail, after the forward."""
import json
import os
import random
import tempfile

import torch
import torch.nn as nn

from common import IterClock, parse_args


def main():
    args = parse_args(__doc__, iters=30, batch=48, extra=lambda p: p.add_argument("--features", type=int, default=256))
    random.seed(0)
    torch.manual_seed(0)
    d = tempfile.mkdtemp()
    src = os.path.join(d, "requests.jsonl")
    with open(src, "w") as f:
        for i in range(args.iters * args.batch):
            f.write(json.dumps({"id": i, "features": [random.random() for _ in range(args.features)]}) + "\n")
    model = nn.Sequential(nn.Linear(args.features, 64), nn.ReLU(), nn.Linear(64, 20)).eval()
    clock = IterClock(args)
    with open(src) as requests, open(os.path.join(d, "results.jsonl"), "w") as out:
        while clock.more():
            lines = [requests.readline() for _ in range(args.batch)]
            if not lines[0]:
                break
            reqs = [json.loads(line) for line in lines if line]
            x = torch.tensor([r["features"] for r in reqs])
            with torch.inference_mode():
                p = torch.softmax(model(x), -1)
            top = p.topk(3, -1)
            for r, v, i in zip(reqs, top.values.tolist(), top.indices.tolist()):
                out.write(json.dumps({"id": r["id"], "top": i, "p": v}) + "\n")
            clock.tick(len(reqs))
    clock.done()


if __name__ == "__main__":
    main()
