#!/usr/bin/env python3
"""A real CPU trace of the kind `shardscope record` and HTA users make, for the import benchmark:
torch.profiler with record_shapes and profile_memory (operators with `Input Dims` / `Input type`,
`[memory]` events, forward-backward flow arrows) around a real FSDP2 run of
scripts/fsdp_train_sample.py on CPU (gloo). Run under torchrun; every rank writes OUT_DIR/rankN.json.

  .venv/bin/torchrun --nproc_per_node=2 bench/import/gen_cpu_fsdp_trace.py OUT_DIR [sample args...]

e.g. `... OUT_DIR --device cpu --small --steps 6` gives ~215k events (~41 MB) per rank. The sample
runs in this process (runpy) exactly as it would alone; only the profiler is added around it."""
import os
import runpy
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    sample = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "fsdp_train_sample.py")
    sys.argv = [sample] + sys.argv[2:]
    prof = profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True)
    prof.start()
    try:
        runpy.run_path(sample, run_name="__main__")
    except SystemExit as e:  # the sample's own exit code, after the trace is written
        if e.code:
            raise
    finally:
        prof.stop()
        prof.export_chrome_trace(os.path.join(out_dir, "rank%s.json" % os.environ.get("RANK", "0")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
