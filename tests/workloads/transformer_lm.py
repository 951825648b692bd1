"""A small Transformer language model trained on random tokens with Adam."""
import math

import torch
import torch.nn as nn

from common import IterClock, parse_args


class TinyLM(nn.Module):
    def __init__(self, vocab, d_model, heads, layers, seq):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.zeros(1, seq, d_model))
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d_model, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1))

    def forward(self, tokens):
        h = self.embed(tokens) * math.sqrt(self.embed.embedding_dim) + self.pos[:, : tokens.shape[1]]
        h = self.encoder(h, mask=self.mask[: tokens.shape[1], : tokens.shape[1]])
        return self.head(h)


def main():
    args = parse_args(__doc__, iters=15, batch=8,
                      extra=lambda p: (p.add_argument("--seq", type=int, default=64),
                                       p.add_argument("--d-model", type=int, default=128),
                                       p.add_argument("--layers", type=int, default=2)))
    torch.manual_seed(0)
    vocab = 1000
    model = TinyLM(vocab, args.d_model, 4, args.layers, args.seq)
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    clock = IterClock(args)
    while clock.more():
        tokens = torch.randint(0, vocab, (args.batch, args.seq + 1))
        x, y = tokens[:, :-1], tokens[:, 1:]
        logits = model(x)
        loss = loss_fn(logits.reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        print(f"loss={loss.item():.4f}", flush=True)
        clock.tick(args.batch)
    clock.done()


if __name__ == "__main__":
    main()
