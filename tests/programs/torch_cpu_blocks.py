"""CPU memory blocks under `strata record` (tests/torch_test.cc,
TorchRecord.CpuBlocks): what strata's CPU allocator wrapper and c10's own
reporting must both get right.

  - a 3 MiB block allocated while memory is not recorded, freed once it is:
    nothing of it may appear (its free has no allocation in the trace);
  - a 5 MiB block allocated on the main thread and freed on another: its free
    (recorded without a size) must get the allocation's size;
  - a 7 MiB storage made with torch.UntypedStorage, which comes from c10's
    default CPU allocator, not through the process's (the wrapper's): c10's
    reporting must still record it.
"""
import ctypes
import os
import threading

import torch

MiB = 1 << 20


def main():
    obs = ctypes.CDLL(os.environ["STRATA_TORCH_LIB"])
    obs.strata_torch_set_tiers.argtypes = [ctypes.c_int] * 3
    obs.strata_torch_set_tiers(2, 0, 0)  # ops all, memory off
    early = torch.empty(3 * MiB, dtype=torch.uint8)
    obs.strata_torch_set_tiers(2, 0, 1)  # memory on
    del early
    box = [torch.empty(5 * MiB, dtype=torch.uint8)]
    t = threading.Thread(target=box.clear, name="freer")
    t.start()
    t.join()
    s = torch.UntypedStorage(7 * MiB)
    del s
    print("cpu blocks: done")


if __name__ == "__main__":
    main()
