"""A GAN: per iteration one discriminator update and one generator update, each with its
own Adam optimizer."""
import torch
import torch.nn as nn

from common import IterClock, parse_args


def main():
    args = parse_args(__doc__, iters=25, batch=64)
    torch.manual_seed(0)
    zdim, xdim = 32, 128
    gen = nn.Sequential(nn.Linear(zdim, 256), nn.LeakyReLU(0.2), nn.Linear(256, 256), nn.LeakyReLU(0.2),
                        nn.Linear(256, xdim), nn.Tanh())
    disc = nn.Sequential(nn.Linear(xdim, 256), nn.LeakyReLU(0.2), nn.Linear(256, 128), nn.LeakyReLU(0.2),
                         nn.Linear(128, 1))
    opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(disc.parameters(), lr=2e-4, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    real_pool = torch.tanh(torch.randn(4096, xdim))
    clock = IterClock(args)
    while clock.more():
        idx = torch.randint(0, real_pool.shape[0], (args.batch,))
        real = real_pool[idx]
        z = torch.randn(args.batch, zdim)
        fake = gen(z)
        # discriminator step
        opt_d.zero_grad()
        d_loss = bce(disc(real), torch.ones(args.batch, 1)) + bce(disc(fake.detach()), torch.zeros(args.batch, 1))
        d_loss.backward()
        opt_d.step()
        # generator step
        opt_g.zero_grad()
        g_loss = bce(disc(fake), torch.ones(args.batch, 1))
        g_loss.backward()
        opt_g.step()
        print(f"d={d_loss.item():.4f} g={g_loss.item():.4f}", flush=True)
        clock.tick(args.batch)
    clock.done()


if __name__ == "__main__":
    main()
