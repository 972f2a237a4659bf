"""Fixture of test_python_bpf.py: 4 threads compress large buffers with zlib (the GIL released
inside zlib.compress) and one thread runs pure Python. Prints 'ready'."""
import os
import threading
import time
import zlib

DATA = os.urandom(1 << 19) + bytes(1 << 20)


def compressor():
    while True:
        zlib.compress(DATA, 9)


def pure_python():
    x = 0
    while True:
        for i in range(10000):
            x += i * i


for target in [compressor] * 4 + [pure_python]:
    threading.Thread(target=target, daemon=True).start()
print("ready", flush=True)
time.sleep(600)
