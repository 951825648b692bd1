"""Starts N copies of a Python program as the ranks of one job, the way
torchrun does (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in each
one's environment), for Pythons whose torchrun cannot run (Debian's torch 1.13
under Python 3.11). Exits with the worst exit status of the ranks.

    python3 launch_ranks.py 4 train.py [ARGS...]
"""
import os
import socket
import subprocess
import sys


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    n = int(sys.argv[1])
    port = str(free_port())
    procs = []
    for rank in range(n):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen([sys.executable] + sys.argv[2:], env=env))
    codes = [p.wait() for p in procs]
    sys.exit(max(abs(c) for c in codes))


if __name__ == "__main__":
    main()
