"""Fixture of test_python_bpf.py: a syscall-heavy loop without sleeping (os.getppid, os.stat).
Prints 'ready'."""
import os

print("ready", flush=True)


def syscalls():
    while True:
        os.stat("/")
        os.getppid()


syscalls()
