"""Knowledge distillation with a guard for bad batches: a frozen teacher CNN
runs under torch.no_grad(), a smaller student trains on the KL divergence to
the teacher's softened outputs plus the labels' cross entropy (SGD, nesterov).
About one batch in eight is malformed (a wrong number of channels, as from a
corrupt file); the student's forward raises, the loop logs it and moves on to
the next batch."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from common import IterClock, parse_args


def cnn(width):
    return nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(width, width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(width, 10))


def main():
    args = parse_args(__doc__, iters=32, batch=32)
    torch.manual_seed(0)
    teacher, student = cnn(48).eval(), cnn(16)
    opt = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    clock = IterClock(args)
    n = skipped = 0
    while clock.more():
        n += 1
        channels = 1 if n % 8 == 0 else 3
        x = torch.randn(args.batch, channels, 32, 32)
        y = torch.randint(0, 10, (args.batch,))
        try:
            logits = student(x)
        except RuntimeError as e:
            skipped += 1
            print(f"skipping batch {n}: {str(e).splitlines()[0][:60]}", flush=True)
            clock.tick(0)
            continue
        with torch.no_grad():
            soft = F.softmax(teacher(x) / 4.0, dim=1)
        loss = 0.7 * F.kl_div(F.log_softmax(logits / 4.0, dim=1), soft, reduction="batchmean") * 16 + \
            0.3 * F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        clock.tick(args.batch)
    print(f"skipped={skipped}")
    clock.done()


if __name__ == "__main__":
    main()
