"""Host-reading and copying calls whose call sites strata records (torch_test.cc,
TorchRecord.HostReadsCarryTheProgramsCallSites): .item() from a function of the
program, .tolist() and .to() from the loop, each a known number of times; the
values must be the same with strata's wrappers in place."""
import torch


def read_loss(t):
    return t.item()  # SITE-ITEM


def main():
    torch.manual_seed(0)
    w = torch.randn(32, 32)
    total, rows = 0.0, []
    for _ in range(7):
        y = torch.tanh(w @ w)
        total += read_loss(y.sum())
        rows.append(y[0, :3].tolist())  # SITE-TOLIST
        total += float(y.to(torch.float64)[0, 0])  # SITE-COPY
    wrapped = hasattr(torch.Tensor.item, "__wrapped__")
    print(f"total={total:.6f} first={rows[0][0]:.6f} wrapped={wrapped}")


if __name__ == "__main__":
    main()
