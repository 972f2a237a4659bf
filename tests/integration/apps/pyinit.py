"""Integration fixture for issue 33 (runs on CPython 3.6+): one busy thread, the main one,
constructs objects of a class with a Python __init__ in a loop, and nearly all its CPU time is
spent in that __init__ (its own loop), called from build(). CPython 3.13 specialises the call
site (CALL_ALLOC_AND_ENTER_INIT) and runs each __init__ on top of the interpreter's init shim
frame, which is not the program's and must not appear in a profile: every stack through
Point.__init__ must have build() directly under it. Prints "ready <pid>"; runs until killed."""
import os


class Point:
    def __init__(self, n):
        s = 0
        for i in range(n):
            s += i * i
        self.s = s


def build():
    while True:
        for _ in range(100):
            Point(2000)


print("ready", os.getpid(), flush=True)
build()
