#!/usr/bin/env python3
"""The closed loop on a real FSDP2 job: record -> replay -> plan -> apply_plan -> record -> compare.

    scripts/closed_loop.py --arch llama --out /tmp/loop            (CPU, gloo, 2 ranks; or --device cuda)

1. Record run A of scripts/fsdp_train_sample.py (every layer resharded) with `shardscope record`.
2. Replay A: `shardscope simulate A.ssdb` (cluster fitted to A's collectives, the default).
3. Two plans from A alone: `plan --modules` (the last two layers kept unsharded) and an automatic
   plan under a memory budget (`plan --budget`, cost strategy).
4. For each plan: predict B (`simulate A.ssdb --plan P -o predicted.ssdb`), run B with the plan
   applied by shardscope.apply_plan (the training script's --plan), record it.
5. Compare prediction and measurement: all-gather / reduce-scatter count and bytes per step (must
   be equal), step time, peak memory.
Writes OUT/closed_loop.json and prints a table (the rows of docs/accuracy.md). Exit 1 when the
collective counts or bytes differ.
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = {  # training-script options per model shape
    "llama": ["--arch", "llama", "--small"],
    "mlp": ["--arch", "mlp", "--dim", "512", "--layers", "6", "--hidden", "2048", "--batch", "8", "--seq", "128"],
}


def run(cmd, log=None, check=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if log:
        with open(log, "w") as f:
            f.write(p.stdout)
    if check and p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:])
        raise SystemExit("failed (%d): %s" % (p.returncode, " ".join(cmd)))
    return p.stdout


def shardscope_json(ss, *args):
    return json.loads(run([ss] + list(args) + ["--format", "json"]))


def record(a, name, extra):
    out = os.path.join(a.out, name + ".ssdb")
    cmd = [a.ss, "record", "-o", out, "--", sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=%d" % a.nproc,
           os.path.join(HERE, "fsdp_train_sample.py"), "--device", a.device, "--steps", str(a.steps)] + MODELS[a.arch] + extra
    if a.device == "cpu":
        cmd.append("--pin-cores")
    run(cmd, os.path.join(a.out, name + ".log"))
    return out


def collectives_per_step(profile, rank=0, skip_first=True):
    """{step: sorted [(type, bytes)]} of the FSDP collectives (all-gather, reduce-scatter) per step."""
    db = sqlite3.connect("file:%s?mode=ro" % profile, uri=True)
    types = dict(db.execute("SELECT value, label FROM enums WHERE type = 'collective_type'").fetchall())
    steps = db.execute("SELECT number, start_ns, start_ns + duration_ns FROM steps WHERE rank = ? ORDER BY number",
                       (rank,)).fetchall()
    out = {}
    for n, t0, t1 in steps[1 if skip_first and len(steps) > 1 else 0:]:
        rows = db.execute("SELECT type, bytes FROM collectives WHERE rank = ? AND start_ns >= ? AND start_ns < ?",
                          (rank, t0, t1)).fetchall()
        out[n] = sorted((types[t], b) for t, b in rows if types[t] in ("all_gather", "reduce_scatter"))
    return out


def pct(x, ref):
    return 100.0 * (x - ref) / ref if ref else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", choices=sorted(MODELS), default="llama")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--out", default="/tmp/shardscope_loop")
    ap.add_argument("--ss", default=os.path.join(ROOT, "build", "app", "shardscope"))
    ap.add_argument("--repeat", type=int, default=3, help="A and each B are run this many times, interleaved")
    ap.add_argument("--budget-margin", type=float, default=2.5,
                    help="automatic plan: budget = A's measured peak + this many of the largest unit's gathered size")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    # Repeats interleave A and the B runs, so that drift of the machine (a shared CPU) hits both;
    # each B is predicted from the A recorded just before it, with the plans made from the first A.
    runs = []
    plans = None
    budget = None
    ok = True
    for rep in range(a.repeat):
        A = record(a, "A%d" % rep, [])
        replay = shardscope_json(a.ss, "simulate", A)
        if plans is None:
            units = [u for u in replay["units"] if u["name"].startswith("layers.")]
            last_two = ",".join(u["name"] for u in units[-2:])
            largest = max(u["params"] for u in replay["units"]) * 4  # fp32 on CPU; a budget, not a measurement
            budget = int(replay["measured_breakdown"]["peak_memory_bytes"] + a.budget_margin * largest)
            plans = {}
            for name, args in (("manual", ["--modules", last_two]), ("auto", ["--budget", str(budget), "--strategy", "cost"])):
                plan_file = os.path.join(a.out, "plan_%s.json" % name)
                plans[name] = (plan_file, shardscope_json(a.ss, "plan", A, "-o", plan_file, *args))
        run_ = {"A": {"measured_step_ms": replay["measured_step_time_ms"], "replayed_step_ms": replay["step_time_ms"],
                      "replay_error_pct": replay["error_pct"], "cluster": replay.get("cluster_used"),
                      "measured_peak_bytes": replay["measured_breakdown"]["peak_memory_bytes"],
                      "replayed_peak_bytes": replay["peak_memory_bytes"]}, "plans": {}}
        for name, (plan_file, planned) in plans.items():
            predicted_profile = os.path.join(a.out, "predicted_%s_%d.ssdb" % (name, rep))
            pred = shardscope_json(a.ss, "simulate", A, "--plan", plan_file, "-o", predicted_profile)
            B = record(a, "B_%s_%d" % (name, rep), ["--plan", plan_file])
            meas = shardscope_json(a.ss, "simulate", B)
            measured_colls = collectives_per_step(B)
            want = next(iter(collectives_per_step(predicted_profile, skip_first=False).values()))
            exact = all(v == want for v in measured_colls.values())
            ok = ok and exact
            count = lambda lst, t: sum(1 for x in lst if x[0] == t)
            run_["plans"][name] = {
                "unsharded": planned.get("unsharded"),
                "predicted_step_ms": pred["step_time_ms"],
                "measured_step_ms": meas["measured_step_time_ms"],
                "step_prediction_error_pct": pct(pred["step_time_ms"], meas["measured_step_time_ms"]),
                "B_replay_error_pct": meas["error_pct"],
                "predicted_peak_bytes": pred["peak_memory_bytes"],
                "measured_peak_bytes": meas["measured_breakdown"]["peak_memory_bytes"],
                "peak_prediction_error_pct": pct(pred["peak_memory_bytes"], meas["measured_breakdown"]["peak_memory_bytes"]),
                "collectives_per_step": {"all_gather": count(want, "all_gather"), "reduce_scatter": count(want, "reduce_scatter"),
                                         "bytes": sum(b for _, b in want)},
                "collectives_exact": exact,
            }
        runs.append(run_)
    mean = lambda xs: sum(xs) / len(xs)
    summary = {"arch": a.arch, "device": a.device, "nproc": a.nproc, "steps": a.steps, "repeats": a.repeat,
               "budget_bytes": budget, "runs": runs}
    A_meas = mean([r["A"]["measured_step_ms"] for r in runs])
    A_rep = mean([r["A"]["replayed_step_ms"] for r in runs])
    summary["A"] = {"measured_step_ms": A_meas, "replayed_step_ms": A_rep, "replay_error_pct": pct(A_rep, A_meas),
                    "replay_error_pct_per_run": [r["A"]["replay_error_pct"] for r in runs],
                    "measured_peak_bytes": mean([r["A"]["measured_peak_bytes"] for r in runs]),
                    "replayed_peak_bytes": mean([r["A"]["replayed_peak_bytes"] for r in runs])}
    summary["plans"] = {}
    for name in plans:
        rs = [r["plans"][name] for r in runs]
        pm, mm = mean([x["predicted_step_ms"] for x in rs]), mean([x["measured_step_ms"] for x in rs])
        pp, mp = mean([x["predicted_peak_bytes"] for x in rs]), mean([x["measured_peak_bytes"] for x in rs])
        summary["plans"][name] = {"unsharded": rs[0]["unsharded"], "predicted_step_ms": pm, "measured_step_ms": mm,
                                  "step_prediction_error_pct": pct(pm, mm),
                                  "step_prediction_error_pct_per_run": [x["step_prediction_error_pct"] for x in rs],
                                  "predicted_peak_bytes": pp, "measured_peak_bytes": mp, "peak_prediction_error_pct": pct(pp, mp),
                                  "collectives_per_step": rs[0]["collectives_per_step"],
                                  "collectives_exact": all(x["collectives_exact"] for x in rs)}
    with open(os.path.join(a.out, "closed_loop.json"), "w") as f:
        json.dump(summary, f, indent=1)
    r = summary["A"]
    print("%s on %s x%d, %d repeats of %d steps: A measured %.1f ms, replay %.1f ms (%+.2f %%; per run %s); peak %.2f MiB, replayed %.2f MiB"
          % (a.arch, a.device, a.nproc, a.repeat, a.steps, r["measured_step_ms"], r["replayed_step_ms"], r["replay_error_pct"],
             " ".join("%+.1f" % x for x in r["replay_error_pct_per_run"]), r["measured_peak_bytes"] / 2**20,
             r["replayed_peak_bytes"] / 2**20))
    for name, p in summary["plans"].items():
        c = p["collectives_per_step"]
        print("  %-6s keep %-28s step pred %.1f / meas %.1f ms (%+.2f %%; per run %s), peak pred %.2f / meas %.2f MiB (%+.2f %%), "
              "per step %d AG + %d RS, %d B: %s"
              % (name, ",".join(p["unsharded"] or []) or "-", p["predicted_step_ms"], p["measured_step_ms"],
                 p["step_prediction_error_pct"], " ".join("%+.1f" % x for x in p["step_prediction_error_pct_per_run"]),
                 p["predicted_peak_bytes"] / 2**20, p["measured_peak_bytes"] / 2**20, p["peak_prediction_error_pct"],
                 c["all_gather"], c["reduce_scatter"], c["bytes"], "exact" if p["collectives_exact"] else "DIFFERENT"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
