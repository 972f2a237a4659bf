"""Benchmark target: a CPU-bound pure-Python loop that measures its own throughput.

Usage: target.py WARMUP MEASURE. Runs the loop for WARMUP seconds, then counts iterations for
MEASURE seconds and prints "iterations_per_s <value>", then exits. One iteration is a call chain
10 frames deep ending in 1,000 steps of integer arithmetic, so a sampler has real stacks to walk.
"""
import os
import sys
import time


def leaf():
    s = 0
    for i in range(1000):
        s += i * i
    return s


def chain(depth):
    return leaf() if depth == 0 else chain(depth - 1)


def main():
    warmup, measure = float(sys.argv[1]), float(sys.argv[2])
    print("ready", os.getpid(), flush=True)
    start = time.monotonic()
    t0 = start + warmup
    while time.monotonic() < t0:
        chain(10)
    n = 0
    t1 = t0 + measure
    now = time.monotonic()
    while now < t1:
        chain(10)
        n += 1
        if n % 16 == 0:
            now = time.monotonic()
    print("iterations_per_s", n / (now - t0), flush=True)


main()
