# A Python program with one hot function, for the OS collector's Python-stack test.
import sys
import time


def hot_python_function(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def outer(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        hot_python_function(20000)


outer(float(sys.argv[1]) if len(sys.argv) > 1 else 0.5)
