"""A synthetic PyTorch memory snapshot for the import benchmark (docs/benchmarks.md): N
alloc/free pairs in the layout of torch.cuda.memory._snapshot() (time_us, frames shared from a
pool of 300 stacks, free_requested + free_completed), pickled as _dump_snapshot does.
  gen_memory_snapshot.py N OUT.pickle        (seeded: the same N gives the same file)"""
import pickle
import random
import sys


def main(n, out):
    rng = random.Random(1)
    t = 1_732_400_000_000_000
    pool = [[{"filename": "/src/model%d.py" % (j % 7), "line": rng.randint(1, 500),
              "name": rng.choice(["forward", "linear", "_call_impl", "step", "main"])}
             for j in range(rng.randint(5, 40))] for _ in range(300)]
    trace, live = [], []
    for i in range(n):
        t += rng.randint(0, 3)
        common = {"stream": 0, "time_us": t, "compile_context": "N/A", "user_metadata": ""}
        if live and rng.random() < 0.5:
            a, s, f = live.pop(rng.randrange(len(live)))
            trace.append(dict(action="free_requested", addr=a, size=s, frames=f, **common))
            trace.append(dict(action="free_completed", addr=a, size=s, frames=f, **common))
        else:
            a, s, f = 0x7F0000000000 + i * 4096, 512 * rng.randint(1, 4096), rng.choice(pool)
            live.append((a, s, f))
            trace.append(dict(action="alloc", addr=a, size=s, frames=f, **common))
    with open(out, "wb") as fh:
        pickle.dump({"segments": [], "device_traces": [trace], "external_annotations": [],
                     "allocator_settings": {}}, fh)
    print("%d trace entries -> %s" % (len(trace), out))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
