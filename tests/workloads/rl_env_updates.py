"""A policy-gradient (REINFORCE) loop, the way small reinforcement-learning
experiments are written: each iteration steps an environment simulated in
NumPy and Python for --env-steps steps, choosing each action with the policy's
forward under torch.no_grad(), then updates the policy once from the episode.
The environment's Python is most of each iteration: the program's own code,
not the framework's."""
import numpy as np
import torch
import torch.nn as nn

from common import IterClock, parse_args


def main():
    args = parse_args(__doc__, iters=30, batch=16,
                      extra=lambda p: p.add_argument("--physics", type=int, default=300))
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    policy = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 4))
    opt = torch.optim.Adam(policy.parameters(), 3e-3)

    def env_step(s, a):
        s = s * 0.95 + rng.normal(0, 0.1, 8)
        s[a] += 0.5
        for _ in range(args.physics):  # the simulation's inner steps
            s = np.tanh(s + 0.001)
        return s, float(-np.abs(s).sum())

    clock = IterClock(args)
    s = rng.normal(size=8)
    while clock.more():
        obs, acts, rews = [], [], []
        for _ in range(args.batch):
            with torch.no_grad():
                logits = policy(torch.as_tensor(s, dtype=torch.float32))
            a = int(torch.distributions.Categorical(logits=logits).sample())
            obs.append(s.copy())
            acts.append(a)
            s, r = env_step(s, a)
            rews.append(r)
        ret = torch.tensor(np.cumsum(rews[::-1])[::-1].copy(), dtype=torch.float32)
        ret = (ret - ret.mean()) / (ret.std() + 1e-6)
        logp = torch.log_softmax(policy(torch.as_tensor(np.array(obs), dtype=torch.float32)), -1)
        loss = -(logp[torch.arange(len(acts)), torch.tensor(acts)] * ret).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        clock.tick(args.batch)
    clock.done()


if __name__ == "__main__":
    main()
