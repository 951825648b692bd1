"""A Wasserstein GAN: per iteration five critic updates (weights clipped after each)
and one generator update, each model with its own RMSprop optimizer. One iteration
is one generator update: six optimizer steps."""
import torch
import torch.nn as nn

from common import IterClock, parse_args


def main():
    args = parse_args(__doc__, iters=12, batch=64)
    torch.manual_seed(0)
    zdim, xdim, n_critic = 32, 128, 5
    gen = nn.Sequential(nn.Linear(zdim, 256), nn.ReLU(), nn.Linear(256, xdim))
    critic = nn.Sequential(nn.Linear(xdim, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1))
    opt_g = torch.optim.RMSprop(gen.parameters(), lr=5e-5)
    opt_c = torch.optim.RMSprop(critic.parameters(), lr=5e-5)
    real_pool = torch.randn(4096, xdim)
    clock = IterClock(args)
    while clock.more():
        for _ in range(n_critic):
            real = real_pool[torch.randint(0, real_pool.shape[0], (args.batch,))]
            fake = gen(torch.randn(args.batch, zdim)).detach()
            c_loss = critic(fake).mean() - critic(real).mean()
            opt_c.zero_grad()
            c_loss.backward()
            opt_c.step()
            for p in critic.parameters():
                p.data.clamp_(-0.01, 0.01)
        g_loss = -critic(gen(torch.randn(args.batch, zdim))).mean()
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
        print(f"c={c_loss.item():.4f} g={g_loss.item():.4f}", flush=True)
        clock.tick(args.batch)
    clock.done()


if __name__ == "__main__":
    main()
