"""A two-layer network written with raw tensors (no nn.Module) and trained
without an optimizer: each iteration samples a batch by index, runs the forward
and `loss.backward()`, updates the weights by hand under torch.no_grad()
(`p -= lr * p.grad`, then zeroes the gradients) and logs the loss with .item().
Nothing steps an optimizer and no module runs a forward: the loop's backward
passes are all that repeat."""
import torch

from common import IterClock, parse_args


def main():
    args = parse_args(__doc__, iters=30, batch=128)
    torch.manual_seed(0)
    X, Y = torch.randn(4096, 256), torch.randint(0, 10, (4096,))
    w1 = (torch.randn(256, 512) * 0.05).requires_grad_()
    b1 = torch.zeros(512, requires_grad=True)
    w2 = (torch.randn(512, 10) * 0.05).requires_grad_()
    b2 = torch.zeros(10, requires_grad=True)
    params = [w1, b1, w2, b2]
    losses = []
    clock = IterClock(args)
    while clock.more():
        idx = torch.randint(0, X.shape[0], (args.batch,))
        x, y = X[idx], Y[idx]
        loss = torch.nn.functional.cross_entropy(torch.relu(x @ w1 + b1) @ w2 + b2, y)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= 0.05 * p.grad
                p.grad.zero_()
        losses.append(loss.item())
        clock.tick(args.batch)
    clock.done()


if __name__ == "__main__":
    main()
