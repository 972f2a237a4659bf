"""Fixture: prints 'ready', waits for SIGUSR2, then forks one child and waits for it. The child
spins in forked_work() in Python (walked as a fork of the parent) until it gets SIGUSR1, then
execs a shell busy loop (no Python in it) that runs until killed with the process group. The
parent prints 'forked <child pid>'."""
import os
import signal

go = False


def forked_work():
    n = 0
    while not go:
        n += 1
    return n


def on_signal(signum, frame):
    global go
    go = True


def main():
    global go
    signal.signal(signal.SIGUSR1, on_signal)
    signal.signal(signal.SIGUSR2, on_signal)
    print("ready", flush=True)
    while not go:
        signal.pause()
    go = False
    pid = os.fork()
    if pid == 0:
        forked_work()
        os.execv("/bin/sh", ["/bin/sh", "-c", "while :; do :; done"])
    print(f"forked {pid}", flush=True)
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
