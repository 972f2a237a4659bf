"""Integration fixture for the Python profilers (runs on CPython 3.6+).

One busy thread calls Worker.hot_a and Worker.hot_b (a class method each) through a recursive
helper; hot_a does three times the work of hot_b, so the CPU ratio of hot_a to hot_b is 3:1.
The amount of work per cycle is random (hot_a always does three times hot_b's), so that the
cycle never locks in phase with the scheduler's time slices or the sampling period: on a busy
host a thread's waits for a CPU then fall into both functions in proportion too.
Each unit of work drives a generator and calls C-extension code (re, json) through the standard
library. Idle threads sleep, wait on a lock and block on a pipe read: they must not appear in a
CPU profile. The main thread waits in join(). Prints "ready <pid>" once everything runs.

Usage: pyhot.py [GO_FILE SLOT_OFFSET SLOT_LENGTH]: once GO_FILE exists and holds a wall-clock
time T (seconds since the epoch), the busy thread uses a whole CPU from T + SLOT_OFFSET for
SLOT_LENGTH seconds and about 3% of one otherwise, so that many copies can take turns on a small
machine. Without arguments it always uses a whole CPU. PYHOT_DEPTH (default 4) sets the depth
of the recursion above the hot functions; with PYHOT_EXIT_AFTER_SLOT set the process exits when
its slot ends.
"""
import json
import os
import random
import re
import sys
import threading
import time

PATTERN = re.compile(r"(\d+)-(\w+)")
UNIT = 1000  # generator steps per unit of work
DOC = {"items": [{"k": i, "v": "value %d" % i, "ok": i % 2 == 0} for i in range(100)]}
UNITS = 20  # mean units per call of hot_b


def squares(n):
    for i in range(n):
        yield i * i


def unit_of_work():
    total = sum(squares(UNIT))
    DOC["total"] = total
    text = json.dumps(DOC)  # C encoder under Python frames, about a third of a unit
    m = PATTERN.search("id 42-answer " + text)
    return total + len(m.group(2))


class Worker:
    def hot_a(self, units):
        s = 0
        for _ in range(3 * units):
            s += unit_of_work()
        return s

    def hot_b(self, units):
        s = 0
        for _ in range(units):
            s += unit_of_work()
        return s


def recurse(depth, fn, arg):
    if depth == 0:
        return fn(arg)
    return recurse(depth - 1, fn, arg)


def in_slot(slot):
    if not slot:
        return True
    try:
        with open(slot[0]) as f:
            start = float(f.read()) + slot[1]
    except (OSError, ValueError):
        return False
    return start <= time.time() < start + slot[2]


def busy(slot):
    depth = int(os.environ.get("PYHOT_DEPTH", "4"))
    exit_after = "PYHOT_EXIT_AFTER_SLOT" in os.environ
    was_in = False
    w = Worker()
    rng = random.Random(1)
    while True:
        t = time.monotonic()
        units = rng.randint(1, 2 * UNITS - 1)
        recurse(depth, w.hot_a, units)
        recurse(depth, w.hot_b, units)
        if in_slot(slot):
            was_in = True
        elif exit_after and was_in:
            os._exit(0)
        else:
            time.sleep(min(30 * (time.monotonic() - t), 0.5))


def idle_sleeper():
    while True:
        time.sleep(1000)


def idle_lock_waiter(lock):
    lock.acquire()
    lock.acquire()  # never released: blocks forever


def idle_pipe_reader(fd):
    os.read(fd, 1)  # nobody writes


def main():
    slot = (sys.argv[1], float(sys.argv[2]), float(sys.argv[3])) if len(sys.argv) > 3 else None
    lock = threading.Lock()
    rfd, _wfd = os.pipe()
    threads = [
        threading.Thread(target=busy, args=(slot,), daemon=True),
        threading.Thread(target=idle_sleeper, daemon=True),
        threading.Thread(target=idle_lock_waiter, args=(lock,), daemon=True),
        threading.Thread(target=idle_pipe_reader, args=(rfd,), daemon=True),
    ]
    for t in threads:
        t.start()
    print("ready", os.getpid(), flush=True)
    threads[0].join()


main()
