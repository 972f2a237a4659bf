"""Integration fixture: a Python process with two hot functions (3:1)."""
import os
import sys
import time


def hot_a():
    s = 0
    for i in range(300000):
        s += i
    return s


def hot_b():
    s = 0
    for i in range(100000):
        s += i
    return s


print("ready", os.getpid(), flush=True)
while True:
    t = time.monotonic()
    hot_a()
    hot_b()
    time.sleep(2 * (time.monotonic() - t))  # about one third of a CPU
