"""A step loop that reads each step's input with tiny unbuffered reads.

Planted bottleneck (io_syscalls): every step reads its 192 KiB record from a
file with os.read(fd, 64): ~3000 read system calls per step, each paying the
kernel entry/exit and Python's call overhead for 64 bytes. The work on the
record (a checksum over it, as a stand-in for decoding) is small beside that.

  strata record --syscalls -- python3 examples/bottlenecks/tiny_reads.py
  strata record --syscalls -- python3 examples/bottlenecks/tiny_reads.py --fixed

--fixed applies strata's suggestion: read each record with one large buffered
read (the file object's 1 MiB buffer; one system call per record or fewer).
Without --syscalls, strata still sees the reads in the CPU samples' kernel
stacks, with less detail (no counts or sizes).
"""
import argparse
import os
import tempfile
import time
import zlib

try:
    import strata
except ImportError:  # not under `strata record`: run unrecorded
    strata = None

RECORD = 192 * 1024
TINY = 64


def step_ctx():
    return strata.step() if strata else _Null()


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--fixed", action="store_true", help="read each record with one large buffered read")
    a = ap.parse_args()

    fd_tmp, path = tempfile.mkstemp(prefix="strata-tiny-reads-")
    try:
        with os.fdopen(fd_tmp, "wb") as f:
            f.write(os.urandom(RECORD * 8))
        fd = os.open(path, os.O_RDONLY)
        buffered = open(path, "rb", buffering=1 << 20)
        total = 0
        t0 = time.perf_counter()
        for i in range(a.steps):
            with step_ctx():
                offset = (i % 8) * RECORD
                if a.fixed:
                    buffered.seek(offset)
                    data = buffered.read(RECORD)
                else:
                    os.lseek(fd, offset, os.SEEK_SET)
                    parts = []
                    left = RECORD
                    while left:
                        chunk = os.read(fd, TINY)
                        parts.append(chunk)
                        left -= len(chunk)
                    data = b"".join(parts)
                # The step's work on its input.
                for _ in range(20):
                    total = zlib.crc32(data, total)
            t = time.perf_counter()
            print(f"iter_ms={1e3 * (t - t0):.3f}", flush=True)  # the program's own time per iteration
            t0 = t
        buffered.close()
        os.close(fd)
        print(f"steps={a.steps} fixed={a.fixed} checksum={total:08x}")
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
