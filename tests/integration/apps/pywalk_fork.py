"""Fixture: a pre-forking parent. It prints 'ready', then keeps 2 children alive: each forked
child spins in forked_work() for ~0.4 s and exits (workers that come and go), and every third
child execs a new interpreter on this file with the argument 'exec', which spins in
after_exec() (a new program in the same pid). The parent itself only waits."""
import os
import sys
import time


def forked_work(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


def after_exec(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


def child(k):
    if k % 3 == 2:
        os.execv(sys.executable, [sys.executable, __file__, "exec"])
    forked_work(0.4)
    os._exit(0)


def main():
    if sys.argv[1:] == ["exec"]:
        after_exec(2.5)  # alive across a drain (every 2 s): named there
        return
    print("ready", flush=True)
    live, k = set(), 0
    while True:
        while len(live) < 2:
            pid = os.fork()
            if pid == 0:
                child(k)
            live.add(pid)
            k += 1
        pid, _ = os.wait()
        live.discard(pid)


if __name__ == "__main__":
    main()
