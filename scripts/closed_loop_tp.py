#!/usr/bin/env python3
"""The closed loop on a 2D job, FSDP beside tensor parallelism (scripts/fsdp_tp_train.py, dp x tp on
CPU/gloo), against the job as it runs without ShardScope:

    scripts/closed_loop_tp.py --out /tmp/tploop                       # dp 2 x tp 2, SP, layers 0,1 kept
    scripts/closed_loop_tp.py --keep 3 --no-sequence-parallel --repeat 5

1. Record A (every layer resharded) with `shardscope record --steps 3:6`: the steps outside the
   window run unprofiled and are timed, so the replay is calibrated to the job without the profiler.
2. Replay A (`simulate A.ssdb`) and predict B (`simulate A.ssdb --plan P`, P keeping --keep
   unsharded); the collective check of both must match the recording (FSDP's collectives told from
   sequence parallelism's by FSDP's process group).
3. Run A and B (B = the job with `--keep-unsharded`) without ShardScope, interleaved, --repeat
   times: rank 0's median step wall time (steps 2.. but the tracked one) and FSDPMemTracker's peak
   on one step (rank 0), the job's own memory counter on a CPU.
4. Print the predicted B step and peak against the unrecorded B's (median and spread), the plan's
   effect on the step (B / A: predicted from A's replay, measured per interleaved pair, which this
   VM's drift between runs moves less than B alone) and the predicted peak difference B - A
   against the tracker's.
Exit 1 when the replay's FSDP collectives differ from the recording's.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STEPS, TRACKED, WINDOW = 8, 6, "3:6"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="/tmp/closed_loop_tp", help="folder for the profile, plan and trackers' files")
    ap.add_argument("--shardscope", default=os.path.join(ROOT, "build", "app", "shardscope"))
    ap.add_argument("--nproc", type=int, default=4)
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--no-sequence-parallel", action="store_true", help="TP all-reduces instead of SP's pairs")
    ap.add_argument("--keep", default="0,1", help="layer indices the plan keeps unsharded")
    ap.add_argument("--repeat", type=int, default=3)
    return ap.parse_args(argv)


def job(a, extra):
    sp = [] if a.no_sequence_parallel else ["--sequence-parallel", "--loss-parallel"]
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=%d" % a.nproc, "--standalone",
            os.path.join(HERE, "fsdp_tp_train.py"), "--device", "cpu", "--tp", str(a.tp), "--steps", str(STEPS)] + sp + extra


def run(cmd):
    p = subprocess.run(cmd, env=dict(os.environ, OMP_NUM_THREADS="1"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:])
        raise SystemExit("failed (%d): %s" % (p.returncode, " ".join(cmd)))
    return p.stdout


def unrecorded(a, extra, tag):
    """(rank 0's median step ms, FSDPMemTracker's peak bytes on rank 0) of one run without ShardScope."""
    mem = os.path.join(a.out, "mem_%s_{rank}.json" % tag)
    out = run(job(a, extra + ["--mem-tracker-step", str(TRACKED), "--mem-tracker-out", mem]))
    ms = [float(m.group(2)) for m in re.finditer(r"rank 0 step (\d+) loss \S+ ([\d.]+) ms", out)
          if int(m.group(1)) >= 2 and int(m.group(1)) != TRACKED]
    with open(mem.replace("{rank}", "0")) as f:
        (device,) = json.load(f)["devices"].values()
    return statistics.median(ms), sum(v for k, v in device.items() if k != "Total")


def main(argv=None):
    a = parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    profile, plan = os.path.join(a.out, "A.ssdb"), os.path.join(a.out, "plan.json")
    if os.path.exists(profile):
        os.remove(profile)
    run([a.shardscope, "record", "-o", profile, "--steps", WINDOW, "--"] + job(a, []))
    keep = [i for i in a.keep.split(",") if i.strip()]
    with open(plan, "w") as f:
        json.dump({"unsharded": ["layers.%s" % i for i in keep]}, f)
    pa = json.loads(run([a.shardscope, "simulate", profile, "--format", "json"]))
    pb = json.loads(run([a.shardscope, "simulate", profile, "--plan", plan, "--format", "json"]))
    check = pa["replay_collectives"]
    print("A: world %d, FSDP shard group %d; replay %.1f ms vs the unobserved steps' %.1f (%+.2f %%); collectives %s"
          % (pa["world_size"], pa["shard_group"], pa["step_time_ms"], pa["measured_step_time_ms"], pa["error_pct"],
             "match" if check.get("match") else "DIFFER: " + check.get("warning", "")))
    print("B predicted: %.1f ms, peak %d B, %d all-gathers + %d reduce-scatters a step"
          % (pb["step_time_ms"], pb["peak_memory_bytes"], pb["all_gathers"], pb["reduce_scatters"]), flush=True)
    runs = []
    for r in range(a.repeat):
        runs.append((unrecorded(a, [], "a"), unrecorded(a, ["--keep-unsharded", a.keep], "b")))
        (sa, ma), (sb, mb) = runs[-1]
        print("repeat %d: A %.1f ms, peak %d B | B %.1f ms, peak %d B" % (r, sa, ma, sb, mb), flush=True)
    steps = [b[0] for _, b in runs]
    peaks = [b[1] for _, b in runs]
    print("B step: predicted %.1f ms vs unrecorded median %.1f ms (%.1f-%.1f): %+.2f %%"
          % (pb["step_time_ms"], statistics.median(steps), min(steps), max(steps),
             100 * (pb["step_time_ms"] / statistics.median(steps) - 1)))
    ratios = [b[0] / x[0] for x, b in runs]
    print("effect B / A: predicted %.3f vs unrecorded pairs' median %.3f (%s)"
          % (pb["step_time_ms"] / pa["step_time_ms"], statistics.median(ratios), ", ".join("%.3f" % r for r in ratios)))
    print("B peak: predicted %d B vs unrecorded %s: %+.2f %%; B - A predicted %d B, tracker %s"
          % (pb["peak_memory_bytes"], peaks, 100 * (pb["peak_memory_bytes"] / statistics.median(peaks) - 1),
             pb["peak_memory_bytes"] - pa["peak_memory_bytes"], [b[1] - x[1] for x, b in runs]))
    return 0 if check.get("match") else 1


if __name__ == "__main__":
    sys.exit(main())
