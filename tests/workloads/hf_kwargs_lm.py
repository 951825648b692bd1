"""A Hugging Face style loop: the model is called as model(**batch) with input_ids,
attention_mask and labels, and returns its loss; variable-length token sequences
are padded by a collate_fn; AdamW with a linear warm-up LambdaLR; loss logged with
.item() every 5th step."""
import torch
import torch.nn as nn

from common import IterClock, parse_args


class TinyLM(nn.Module):
    def __init__(self, vocab=500, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, 4, 128, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d, vocab)

    def forward(self, input_ids=None, attention_mask=None, labels=None):
        h = self.enc(self.emb(input_ids), src_key_padding_mask=attention_mask == 0)
        logits = self.head(h)
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
        return {"loss": loss, "logits": logits}


class Texts(torch.utils.data.Dataset):
    def __init__(self, n=4000):
        g = torch.Generator().manual_seed(0)
        self.lens = torch.randint(8, 48, (n,), generator=g).tolist()

    def __len__(self):
        return len(self.lens)

    def __getitem__(self, i):
        return torch.randint(1, 500, (self.lens[i],))


def collate(seqs):
    n = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), n, dtype=torch.long)
    mask = torch.zeros(len(seqs), n, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = s
        mask[i, :len(s)] = 1
    labels = ids.masked_fill(mask == 0, -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def main():
    args = parse_args(__doc__, iters=40, batch=16)
    torch.manual_seed(0)
    model = TinyLM()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
    loader = torch.utils.data.DataLoader(Texts(), batch_size=args.batch, shuffle=True, collate_fn=collate)
    clock = IterClock(args)
    step = 0
    while clock.more():
        for batch in loader:
            batch = {k: v.to("cpu") for k, v in batch.items()}
            out = model(**batch)
            out["loss"].backward()
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            if step % 5 == 0 and not args.quiet:
                print(f"step {step} loss {out['loss'].item():.3f}", flush=True)
            clock.tick(batch["input_ids"].shape[0])
            if not clock.more():
                break
    clock.done()


if __name__ == "__main__":
    main()
