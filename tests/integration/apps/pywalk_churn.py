"""Fixture of test_python_bpf.py: the main thread runs pure Python (busy) while another starts
short-lived threads without pause, as a thread-per-request server does: an exiting thread
keeps running in the kernel after it has let go of the process's memory. Prints 'ready'."""
import threading


def short():
    x = 0
    for i in range(500):
        x += i


def churn():
    while True:
        threads = [threading.Thread(target=short) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def busy():
    x = 0
    for i in range(10000):
        x += i * i
    return x


threading.Thread(target=churn, daemon=True).start()
print("ready", flush=True)
while True:
    busy()
