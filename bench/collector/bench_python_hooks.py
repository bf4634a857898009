"""CPU cost of the Python module hooks per module call (forward + backward), Debian torch on CPU.

    PYTHONPATH=profiler/python /usr/bin/python3 bench/collector/bench_python_hooks.py
A chain of 200 tiny Linear modules makes the hook cost dominate; the backend does nothing, so this
is the hooks' own cost (NVTX adds its range_start/range_end, about a microsecond each).
"""
import time

import torch
import torch.nn as nn

import shardscope


class NullBackend:
    def start(self, message):
        return None

    def end(self, token):
        pass


def main(modules=200, repeats=50):
    torch.set_num_threads(1)
    model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(modules)])
    x = torch.randn(2, 8)

    def step():
        model(x).sum().backward()

    def timed():
        for _ in range(5):
            step()
        best = float("inf")
        for _ in range(5):  # best of 5 blocks: the machine is shared
            t = time.perf_counter()
            for _ in range(repeats):
                step()
            best = min(best, (time.perf_counter() - t) / repeats)
        return best

    base = timed()
    handle = shardscope.annotate(model, backend=NullBackend())
    hooked = timed()
    handle.remove()
    print("step without hooks %.3f ms, with hooks %.3f ms, hook cost %.1f us per module call (forward + backward)"
          % (base * 1e3, hooked * 1e3, (hooked - base) / modules * 1e6))


if __name__ == "__main__":
    main()
