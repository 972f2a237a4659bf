"""Fixture: the main thread runs code in a sub-interpreter (CPython 3.12's
_xxsubinterpreters, 3.13's _interpreters) that spins in sub_work(), while a second thread of
the main interpreter spins in main_work(). The main thread then has two thread states, one per
interpreter, with the same pthread id."""
import sys
import threading

try:
    import _interpreters as interpreters  # 3.13
except ImportError:
    import _xxsubinterpreters as interpreters  # 3.12

SUB = """
def sub_work():
    n = 0
    while True:
        n += 1

sub_work()
"""


def main_work():
    n = 0
    while True:
        n += 1


def main():
    interp = interpreters.create()
    threading.Thread(target=main_work, daemon=True).start()
    print("ready", flush=True)
    if hasattr(interpreters, "exec"):
        interpreters.exec(interp, SUB)
    else:
        interpreters.run_string(interp, SUB)


if __name__ == "__main__":
    sys.exit(main())
