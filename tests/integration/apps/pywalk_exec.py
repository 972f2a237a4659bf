"""Fixture of test_python_bpf.py: creates and runs throwaway functions (exec) as fast as it can,
so code objects are freed and their addresses reused all the time. Each function's name and
first line encode its generation; it calls the fixed function `steady`. Prints 'ready'."""
import itertools

SRC = "def fn_{gen}(k):\n    return steady(k)\n"


def steady(k):
    s = 0
    for i in range(k):
        s += i
    return s


print("ready", flush=True)
for gen in itertools.count():
    g = {"steady": steady}
    src = "\n" * (gen % 50) + SRC.format(gen=gen % 50)
    exec(compile(src, "<throwaway>", "exec"), g)
    g[f"fn_{gen % 50}"](200)
