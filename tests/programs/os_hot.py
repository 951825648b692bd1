# A Python program with one hot function, for the OS collector's Python-stack test.
import sys
import time


def hot_python_function(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def outer(seconds):
    # CPU time, not wall time: the test machine may be busy.
    end = time.process_time() + seconds
    while time.process_time() < end:
        hot_python_function(200000)  # ~10 ms: the clock read above is a system call


outer(float(sys.argv[1]) if len(sys.argv) > 1 else 0.5)
