"""Starts N copies of a Python program as the ranks of one job, the way
torchrun does (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in each
one's environment), for Pythons whose torchrun cannot run (Debian's torch 1.13
under Python 3.11). Exits with the worst exit status of the ranks.

    python3 launch_ranks.py 4 train.py [ARGS...]
    python3 launch_ranks.py --nnodes 2 --node-rank 1 --master-addr 10.0.0.1 --master-port 29500 2 train.py

With --nnodes, this host runs N ranks of N x NNODES (node R's are R*N to
R*N+N-1), like torchrun --nnodes --node-rank on each host.
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
    args = sys.argv[1:]
    opts = {"--nnodes": "1", "--node-rank": "0", "--master-addr": "127.0.0.1", "--master-port": ""}
    while args and args[0] in opts:
        opts[args[0]] = args[1]
        args = args[2:]
    n = int(args[0])
    nodes, node = int(opts["--nnodes"]), int(opts["--node-rank"])
    port = opts["--master-port"] or str(free_port())
    procs = []
    for local in range(n):
        rank = node * n + local
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(local), WORLD_SIZE=str(n * nodes),
                   LOCAL_WORLD_SIZE=str(n), MASTER_ADDR=opts["--master-addr"], MASTER_PORT=port)
        procs.append(subprocess.Popen([sys.executable] + args[1:], env=env))
    codes = [p.wait() for p in procs]
    sys.exit(max(abs(c) for c in codes))


if __name__ == "__main__":
    main()
