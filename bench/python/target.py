"""Benchmark target: a CPU-bound pure-Python loop that measures its own throughput.

Usage: target.py WARMUP MEASURE. Runs the loop for WARMUP seconds, then counts iterations for
MEASURE seconds of wall-clock time and prints "iterations_per_s <per wall second> <per CPU
second of the loop's thread>", then exits. On a shared machine the per-CPU-second figure is the
one to compare: other processes' load changes the wall-clock rate, not the rate per CPU second,
while a profiler that slows the target (stops, cache or TLB pollution, page faults) lowers both. One iteration is a call chain
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
    c0 = time.thread_time()
    while now < t1:
        chain(10)
        n += 1
        if n % 16 == 0:
            now = time.monotonic()
    cpu = time.thread_time() - c0
    print("iterations_per_s", n / (now - t0), n / cpu, flush=True)


main()
