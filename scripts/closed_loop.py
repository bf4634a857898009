#!/usr/bin/env python3
"""The closed loop on a real FSDP2 job: record -> replay -> plan -> apply_plan -> run B -> compare,
against B recorded and against B as it runs without ShardScope.

    scripts/closed_loop.py --arch llama --out /tmp/loop            (CPU, gloo, 2 ranks; or --device cuda)
    scripts/closed_loop.py --arch llama --fsdp1 --out /tmp/loop1   (the job on FSDP1, plans through fsdp1_wrap_policy)
    scripts/closed_loop.py --arch llama --mixed-precision bf16      (bf16 parameters, fp32 reductions, on CPU too)
    scripts/closed_loop.py --arch llama --micro-batches 2 [--no-sync] [--no-reshard-after-backward]  (gradient accumulation: 2 passes a step)

1. Record run A of scripts/fsdp_train_sample.py (every layer resharded) with `shardscope record
   --steps W` (a capture window: the steps outside it run unprofiled and are timed, so the profile
   knows the job's step without the profiler).
2. Replay A: `shardscope simulate A.ssdb` (cluster fitted to A's collectives, replay calibrated to
   A's unobserved steps: the default) and `--as-profiled` (the job as recorded). A runs once more
   without `record` (its own step wall time and FSDPMemTracker's peak: what the calibration aims at).
3. Plans from A alone: `plan --modules` (manual: the last two layers kept unsharded), an automatic
   plan under a memory budget (auto: `plan --budget`, cost strategy) and, with --plans, all-gather
   buckets alone (buckets: `plan --buckets`, no unit kept unsharded, applied as fully_shard([...])
   lists), the layers bucketed two by two (pairs: a bucketing the user chose) and activation
   checkpointing of every block (checkpoint: {"activation_checkpointing": {"*": "full"}}).
   With buckets or pairs, FSDP's per-unit host cost is measured first, without a profiler
   (shardscope.measure_fsdp_units, OUT/fsdp_units.json), and the calibrated predictions and plans
   take it (`--cluster`): what a merged unit saves beyond collective latency (--no-unit-cost: not).
4. For each plan: predict B (`simulate A --plan P`, calibrated; and `--as-profiled`), then run B
   with the plan applied by shardscope.apply_plan (the training script's --plan) twice: recorded
   (`record --steps W`) and unrecorded (the job's own wall clock per step, and FSDPMemTracker's peak
   on one step, the job's own memory counter on a CPU).
5. Compare: all-gather / reduce-scatter count and bytes per step (predicted vs recorded B: must be
   equal); step time and peak memory, the calibrated prediction against the unrecorded B (what a
   user runs) and the as-profiled one against the recorded B; and the plan's effect on the step
   (B / A), predicted (from A's calibrated replay) and measured (unrecorded B / unrecorded A), which
   neither the calibration nor A's own unobserved steps enter.
6. With --alternate, each unshard plan's effect once more in one unrecorded process that switches
   between A and B every --alternate-every steps (fsdp_train_sample.py --alternate-plan, blocks
   A B B A): this VM's speed drifts up to 2x between processes, which moves the separate runs'
   effect by more than the 5 % target; in one process it cancels. B's step error is then the
   predicted effect against this one.
A and both Bs are run --repeat times, interleaved (the order of the two Bs alternating), and pooled.
Writes OUT/closed_loop.json and prints a table (the rows of docs/accuracy.md). Exit 1 when the
collective counts or bytes differ.
"""
import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = {  # training-script options per model shape
    "llama": ["--arch", "llama", "--small"],
    "mlp": ["--arch", "mlp", "--dim", "512", "--layers", "6", "--hidden", "2048", "--batch", "8", "--seq", "128"],
    # Eight narrow layers: collectives of ~100 KiB, a step of FSDP's per-unit costs more than of
    # arithmetic (what a bucket saves).
    "narrow": ["--arch", "llama", "--dim", "96", "--layers", "8", "--heads", "4", "--hidden", "256",
               "--vocab", "512", "--seq", "64", "--batch", "4"],
}


def run(cmd, log=None, check=True, env=None):
    """Runs cmd (env: the whole environment, None for this one's), its output to log; exits on a failure when check."""
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if log:
        with open(log, "w") as f:
            f.write(p.stdout)
    if check and p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:])
        raise SystemExit("failed (%d): %s" % (p.returncode, " ".join(cmd)))
    return p.stdout


def shardscope_json(ss, *args):
    return json.loads(run([ss] + list(args) + ["--format", "json"]))


def job_argv(a, extra, steps=None):
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=%d" % a.nproc, "--standalone",
            os.path.join(HERE, "fsdp_train_sample.py"), "--device", a.device, "--steps", str(steps or a.steps)] + MODELS[a.arch] + extra
    return argv + (["--pin-cores"] if a.device == "cpu" else []) + (["--fsdp1"] if a.fsdp1 else []) + [
        "--mixed-precision", a.mixed_precision, "--micro-batches", str(a.micro_batches)] + (["--no-sync"] if a.no_sync else []) + (
        ["--no-reshard-after-backward"] if a.no_reshard_after_backward else []) + (
        ["--explicit-prefetch", str(a.explicit_prefetch)] if a.explicit_prefetch else []) + (
        ["--eval-every", str(a.eval_every), "--eval-batches", str(a.eval_batches)] if a.eval_every else [])


def record(a, name, extra):
    """B or A under `record --steps WINDOW`; returns the profile."""
    out = os.path.join(a.out, name + ".ssdb")
    run([a.ss, "record", "-o", out, "--steps", a.window, "--backward-ranges", a.backward_ranges, "--"] + job_argv(a, extra),
        os.path.join(a.out, name + ".log"))
    return out


def unrecorded(a, name, extra):
    """B without ShardScope: (rank 0's median step time in ms after the warm-up, the tracked step
    left out; FSDPMemTracker's peak in bytes on that step, rank 0). FSDPMemTracker follows FSDP2
    only: an FSDP1 job on a CPU has no memory counter of its own (peak None). A plan's buckets
    (fully_shard([layers.0, layers.1])) are tracked with shardscope.mem_tracker, which keeps their
    hooks grouped (PyTorch's own tracker gathers a bucket once per module and fails the next step)."""
    summary, tracker = os.path.join(a.out, name + ".json"), os.path.join(a.out, name + "_tracker_{rank}.json")
    tracked = a.device == "cpu" and not a.fsdp1
    run(job_argv(a, extra + ["--summary", summary, "--warmup", str(a.warmup)] +
                 (["--mem-tracker-step", str(a.tracker_step), "--mem-tracker-out", tracker] if tracked else [])),
        os.path.join(a.out, name + ".log"))
    with open(summary) as f:
        s = json.load(f)
    steps = [t for n, t in enumerate(s["step_ms"]) if n >= a.warmup and n != a.tracker_step]
    peak = s.get("max_memory_allocated")
    if tracked:
        with open(tracker.replace("{rank}", "0")) as f:
            peak = next(iter(json.load(f)["devices"].values()))["Total"]
    return statistics.median(steps), peak


def measure_unit_cost(a):
    """FSDP's per-unit host cost on this machine, without a profiler (shardscope.measure_fsdp_units,
    the job's ranks and device): the cluster file the predictions of bucket plans take it from."""
    out = os.path.join(a.out, "fsdp_units.json")
    run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=%d" % a.nproc, "--standalone",
         "-m", "shardscope.measure_fsdp_units", "--device", a.device, "-o", out], os.path.join(a.out, "fsdp_units.log"))
    return out


def alternating(a, name, plan_file):
    """A and B in one unrecorded process (fsdp_train_sample.py --alternate-plan: blocks of
    --alternate-every steps, A B B A after the warm-up): (median A step, median B step) in ms,
    rank 0's wall clock, the first step after each switch left out."""
    summary = os.path.join(a.out, name + ".json")
    run(job_argv(a, ["--alternate-plan", plan_file, "--alternate-every", str(a.alternate_every), "--summary", summary,
                     "--warmup", str(a.warmup)], steps=a.alternate_steps), os.path.join(a.out, name + ".log"))
    with open(summary) as f:
        return alternating_medians(json.load(f), a.warmup)


def alternating_steps(configs, warmup):
    """{step: "A" | "B"} of an --alternate-plan job's step_config that are timed: the steps after
    the warm-up, the first step after each switch left out."""
    return {n: c for n, c in enumerate(configs) if n >= warmup and c == configs[n - 1]}


def alternating_medians(summary, warmup):
    """(median A step, median B step) in ms of an --alternate-plan job's summary (alternating_steps)."""
    kept = alternating_steps(summary["step_config"], warmup)
    return tuple(statistics.median(summary["step_ms"][n] for n, c in kept.items() if c == config) for config in "AB")


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


def holds_evaluation(a, step):
    """Whether the job's evaluation after step - 1 (fsdp_train_sample.py --eval-every) runs in step."""
    return bool(a.eval_every) and step > 0 and (step - 1) % a.eval_every == a.eval_every - 1


def pct(x, ref):
    return 100.0 * (x - ref) / ref if ref else None


def pooled(rows, pred_key, meas_key):
    """(pooled predicted, pooled measured, error % of the pooled means, per-run errors %); None
    where a run has no measurement (an FSDP1 job's own peak on a CPU)."""
    if any(x[meas_key] is None for x in rows):
        return None
    mean = lambda xs: sum(xs) / len(xs)
    p, m = mean([x[pred_key] for x in rows]), mean([x[meas_key] for x in rows])
    return p, m, pct(p, m), [pct(x[pred_key], x[meas_key]) for x in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", choices=sorted(MODELS), default="llama")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--window", default="3:7", help="record --steps for A and the recorded B (steps 3-6; the rest timed)")
    ap.add_argument("--backward-ranges", default="modules", choices=("modules", "units"), help="record --backward-ranges")
    ap.add_argument("--warmup", type=int, default=2, help="unrecorded B: steps left out of its step time")
    ap.add_argument("--tracker-step", type=int, default=8, help="unrecorded B: the step FSDPMemTracker follows (CPU)")
    ap.add_argument("--out", default="/tmp/shardscope_loop")
    ap.add_argument("--ss", default=os.path.join(ROOT, "build", "app", "shardscope"))
    ap.add_argument("--repeat", type=int, default=3, help="A and each B are run this many times, interleaved")
    ap.add_argument("--budget-margin", type=float, default=2.5,
                    help="automatic plan: budget = A's measured peak + this many of the largest unit's gathered size")
    ap.add_argument("--plans", default="manual,auto", help="which plans: manual, auto, checkpoint (comma list)")
    ap.add_argument("--fsdp1", action="store_true", help="the job shards with FSDP1 (FullyShardedDataParallel); "
                    "plans go in as fsdp1_wrap_policy")
    ap.add_argument("--mixed-precision", choices=["auto", "bf16", "off"], default="auto",
                    help="the job's mixed precision (fsdp_train_sample.py): auto is bf16 on a GPU, fp32 on CPU")
    ap.add_argument("--micro-batches", type=int, default=1,
                    help="gradient accumulation: forward-backward passes per optimizer step (fsdp_train_sample.py)")
    ap.add_argument("--no-sync", action="store_true", help="with --micro-batches: gradients reduced on the last pass only")
    ap.add_argument("--no-reshard-after-backward", action="store_true",
                    help="with --micro-batches: parameters held unsharded between passes (FSDP2's set_reshard_after_backward)")
    ap.add_argument("--explicit-prefetch", type=int, default=0, metavar="N",
                    help="the job prefetches N layers ahead in forward and backward (PyTorch's FSDP2 example): "
                    "A and every B, the plans applied on top")
    ap.add_argument("--eval-every", type=int, default=0, metavar="N",
                    help="the job evaluates after every N-th step (--eval-batches forwards under no_grad, outside its "
                         "step time): the unobserved steps holding one are left out of the calibration")
    ap.add_argument("--eval-batches", type=int, default=4, metavar="M")
    ap.add_argument("--alternate", action="store_true",
                    help="also time each unshard plan's effect in one unrecorded process that alternates A and B "
                    "(blocks A B B A): the drift between processes, which moves single runs here by up to 2x, cancels")
    ap.add_argument("--alternate-every", type=int, default=3, help="--alternate: steps per block")
    ap.add_argument("--alternate-steps", type=int, default=26, help="--alternate: steps of that job (warm-up included)")
    ap.add_argument("--no-unit-cost", action="store_true",
                    help="bucket plans (buckets, pairs): predict without FSDP's per-unit host cost (by default measured "
                    "first with shardscope.measure_fsdp_units and given to simulate / plan as --cluster)")
    a = ap.parse_args()
    wanted = a.plans.split(",")
    if not wanted or any(p not in ("manual", "auto", "buckets", "pairs", "checkpoint") for p in wanted):
        ap.error("--plans: a comma list of manual, auto, buckets, pairs, checkpoint")
    if a.fsdp1 and ("buckets" in wanted or "pairs" in wanted):
        ap.error("--fsdp1: FSDP1 wraps one module per unit (no buckets)")
    if a.alternate and a.alternate_steps < a.warmup + 4 * a.alternate_every:
        ap.error("--alternate-steps: at least --warmup + 4 x --alternate-every (one A B B A round)")
    if a.micro_batches < 1 or ((a.no_sync or a.no_reshard_after_backward) and a.micro_batches < 2):
        ap.error("--micro-batches: at least 1, and at least 2 with --no-sync or --no-reshard-after-backward")
    if a.no_reshard_after_backward and a.fsdp1:
        ap.error("--no-reshard-after-backward: FSDP2 only (FSDP1 holds under no_sync() with SHARD_GRAD_OP)")
    if a.explicit_prefetch and a.fsdp1:
        ap.error("--explicit-prefetch: FSDP2 only (FSDP1's forward_prefetch / backward_prefetch are not lists)")
    if a.alternate and a.fsdp1:
        ap.error("--alternate: FSDP1 has no reshard switch at run time (FSDP2's set_reshard_after_forward)")
    if a.fsdp1 and "checkpoint" in wanted:
        ap.error("--fsdp1: fsdp1_wrap_policy applies unshard plans only (checkpointing is the script's own wrapper)")
    os.makedirs(a.out, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # The unrecorded B applies the plan with the shardscope package, which `record` puts on the
    # path of the job it runs; without record, the job finds it here.
    package = os.path.join(ROOT, "profiler", "python")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH", "")) if p)

    # What a merged unit saves beyond collective latency (its hooks and calls) is measured once,
    # unprofiled; the calibrated predictions of A take that cluster file (it changes only bucket plans).
    unit_cost = [] if a.no_unit_cost or not ({"buckets", "pairs"} & set(wanted)) else ["--fit", "--cluster", measure_unit_cost(a)]
    # Repeats interleave A and the B runs, so that drift of the machine (a shared CPU) hits every
    # column; each B is predicted from the A recorded just before it, with the plans made from the first A.
    runs = []
    plans = None
    budget = None
    ok = True
    for rep in range(a.repeat):
        A = record(a, "A%d" % rep, [])
        a_free_ms, a_free_peak = unrecorded(a, "Afree%d" % rep, [])
        replay = shardscope_json(a.ss, "simulate", A, *unit_cost)
        replay_rec = shardscope_json(a.ss, "simulate", A, "--as-profiled")
        if plans is None:
            units = [u for u in replay["units"] if u["name"].startswith("layers.")]
            last_two = ",".join(u["name"] for u in units[-2:])
            gathered = 2 if a.mixed_precision == "bf16" or (a.mixed_precision == "auto" and a.device == "cuda") else 4
            largest = max(u["params"] for u in replay["units"]) * gathered  # a budget, not a measurement
            budget = int(replay["measured_breakdown"]["peak_memory_bytes"] + a.budget_margin * largest)
            plans = {}
            auto = ["--budget", str(budget), "--strategy", "cost"]
            for name, args in (("manual", ["--modules", last_two]), ("auto", auto), ("buckets", ["--buckets"])):
                if name in wanted:
                    plan_file = os.path.join(a.out, "plan_%s.json" % name)
                    plans[name] = (plan_file, shardscope_json(a.ss, "plan", A, "-o", plan_file, *args, *unit_cost))
            if "pairs" in wanted:  # a bucketing the user chose: the layers two by two
                pairs = [[u["name"] for u in units[i:i + 2]] for i in range(0, len(units) - 1, 2)]
                plan_file = os.path.join(a.out, "plan_pairs.json")
                with open(plan_file, "w") as f:
                    json.dump({"buckets": pairs}, f)
                plans["pairs"] = (plan_file, {"unsharded": [], "buckets": pairs})
            if "checkpoint" in wanted:
                plan_file = os.path.join(a.out, "plan_checkpoint.json")
                with open(plan_file, "w") as f:
                    json.dump({"activation_checkpointing": {"*": "full"}}, f)
                plans["checkpoint"] = (plan_file, {"unsharded": []})
        u = replay["unobserved"]
        run_ = {"A": {"profiled_step_ms": replay_rec["measured_step_time_ms"], "replayed_as_profiled_ms": replay_rec["step_time_ms"],
                      "replay_error_pct": replay_rec["error_pct"], "unobserved_step_ms": u.get("step_time_ms"),
                      "unrecorded_step_ms": a_free_ms, "unrecorded_peak_bytes": a_free_peak,
                      "replayed_calibrated_ms": replay["step_time_ms"], "recording_slowdown_pct": u.get("recording_slowdown_pct"),
                      "cluster": replay.get("cluster_used"),
                      "measured_peak_bytes": replay["measured_breakdown"]["peak_memory_bytes"],
                      "replayed_peak_bytes": replay["peak_memory_bytes"]}, "plans": {}}
        for i, (name, (plan_file, planned)) in enumerate(plans.items()):
            predicted_profile = os.path.join(a.out, "predicted_%s_%d.ssdb" % (name, rep))
            pred = shardscope_json(a.ss, "simulate", A, "--plan", plan_file, "-o", predicted_profile, *unit_cost)
            # As profiled: the job under the profiler, whose per-operator cost hides FSDP's per-unit
            # one (a CPU recording of pairs ran as long as its A), so without the measured unit cost.
            pred_rec = shardscope_json(a.ss, "simulate", A, "--plan", plan_file, "--as-profiled")
            extra = ["--plan", plan_file]
            if (rep + i) % 2 == 0:
                B = record(a, "B_%s_%d" % (name, rep), extra)
                free_ms, free_peak = unrecorded(a, "Bfree_%s_%d" % (name, rep), extra)
            else:
                free_ms, free_peak = unrecorded(a, "Bfree_%s_%d" % (name, rep), extra)
                B = record(a, "B_%s_%d" % (name, rep), extra)
            # Checkpointing changes the model's structure: no switch at run time (buckets: a second model).
            alt = alternating(a, "AB_%s_%d" % (name, rep), plan_file) if a.alternate and name != "checkpoint" else None
            meas = shardscope_json(a.ss, "simulate", B, "--as-profiled")
            measured_colls = collectives_per_step(B)
            want = next(iter(collectives_per_step(predicted_profile, skip_first=False).values()))
            # A step holding an evaluation (--eval-every: it runs after the step before) gathers
            # for it too; the replay, like the plan, is of the training step.
            exact = all(v == want for n, v in measured_colls.items() if not holds_evaluation(a, n))
            ok = ok and exact
            count = lambda lst, t: sum(1 for x in lst if x[0] == t)
            run_["plans"][name] = {
                "unsharded": planned.get("unsharded"), "buckets": planned.get("buckets"),
                "predicted_step_ms": pred["step_time_ms"], "unrecorded_step_ms": free_ms,
                "predicted_effect_pct": pct(pred["step_time_ms"], replay["step_time_ms"]),
                "unrecorded_effect_pct": pct(free_ms, a_free_ms),
                # One process, A and B alternating: the effect without the drift between processes.
                "alternating_A_ms": alt and alt[0], "alternating_B_ms": alt and alt[1],
                "alternating_effect_pct": alt and pct(alt[1], alt[0]),
                "predicted_as_profiled_step_ms": pred_rec["step_time_ms"], "recorded_step_ms": meas["measured_step_time_ms"],
                "predicted_peak_bytes": pred["peak_memory_bytes"], "unrecorded_peak_bytes": free_peak,
                "predicted_as_profiled_peak_bytes": pred_rec["peak_memory_bytes"],
                "recorded_peak_bytes": meas["measured_breakdown"]["peak_memory_bytes"],
                "collectives_per_step": {"all_gather": count(want, "all_gather"), "reduce_scatter": count(want, "reduce_scatter"),
                                         "bytes": sum(b for _, b in want)},
                "collectives_exact": exact,
            }
        runs.append(run_)
    mean = lambda xs: sum(xs) / len(xs)
    summary = {"arch": a.arch, "fsdp1": a.fsdp1, "mixed_precision": a.mixed_precision, "device": a.device, "nproc": a.nproc,
               "micro_batches": a.micro_batches, "no_sync": a.no_sync, "no_reshard_after_backward": a.no_reshard_after_backward,
               "explicit_prefetch": a.explicit_prefetch,
               "steps": a.steps, "window": a.window, "repeats": a.repeat, "budget_bytes": budget, "runs": runs}
    As = [r["A"] for r in runs]
    summary["A"] = {"replay_as_profiled": pooled(As, "replayed_as_profiled_ms", "profiled_step_ms"),
                    "replay_calibrated": pooled(As, "replayed_calibrated_ms", "unobserved_step_ms"),
                    "unobserved_vs_unrecorded": pooled(As, "unobserved_step_ms", "unrecorded_step_ms"),
                    "recording_slowdown_pct_per_run": [x["recording_slowdown_pct"] for x in As],
                    "peak": pooled(As, "replayed_peak_bytes", "measured_peak_bytes"),
                    "peak_vs_unrecorded": pooled(As, "replayed_peak_bytes", "unrecorded_peak_bytes")}
    summary["plans"] = {}
    for name in plans:
        rs = [r["plans"][name] for r in runs]
        summary["plans"][name] = {
            "unsharded": rs[0]["unsharded"], "buckets": rs[0]["buckets"], "collectives_per_step": rs[0]["collectives_per_step"],
            "collectives_exact": all(x["collectives_exact"] for x in rs),
            "step_vs_unrecorded": pooled(rs, "predicted_step_ms", "unrecorded_step_ms"),
            "step_vs_recorded": pooled(rs, "predicted_as_profiled_step_ms", "recorded_step_ms"),
            "peak_vs_unrecorded": pooled(rs, "predicted_peak_bytes", "unrecorded_peak_bytes"),
            "peak_vs_recorded": pooled(rs, "predicted_as_profiled_peak_bytes", "recorded_peak_bytes"),
            "effect_predicted_pct": [x["predicted_effect_pct"] for x in rs],
            "effect_unrecorded_pct": [x["unrecorded_effect_pct"] for x in rs]}
        if all(x["alternating_effect_pct"] is not None for x in rs):
            # B's step error with the drift between processes taken out: the predicted effect against
            # the effect measured in one process (A's calibrated replay taken as exact; its error
            # against A's own unobserved steps is the "calibrated" figure above).
            errors = [pct(1 + x["predicted_effect_pct"] / 100, 1 + x["alternating_effect_pct"] / 100) for x in rs]
            summary["plans"][name].update({
                "effect_alternating_pct": [x["alternating_effect_pct"] for x in rs],
                "step_vs_alternating_pct": errors, "step_vs_alternating_median_pct": statistics.median(errors)})
    with open(os.path.join(a.out, "closed_loop.json"), "w") as f:
        json.dump(summary, f, indent=1)
    per = lambda xs: " ".join("%+.1f" % x for x in xs)
    r = summary["A"]
    print("%s on %s x%d, %d repeats of %d steps (window %s): A replay as profiled %.1f vs %.1f ms (%+.2f %%; per run %s); "
          "calibrated %.1f vs unobserved %.1f ms (%+.2f %%; per run %s); the profiled step %s %% slower; peak %+.2f %%"
          % (a.arch, a.device, a.nproc, a.repeat, a.steps, a.window, r["replay_as_profiled"][0], r["replay_as_profiled"][1],
             r["replay_as_profiled"][2], per(r["replay_as_profiled"][3]), r["replay_calibrated"][0], r["replay_calibrated"][1],
             r["replay_calibrated"][2], per(r["replay_calibrated"][3]), per(r["recording_slowdown_pct_per_run"]), r["peak"][2]))
    v = r["unobserved_vs_unrecorded"]
    print("  A's unobserved step %.1f ms vs A unrecorded %.1f ms (%+.2f %% pooled; per run %s)" % (v[0], v[1], v[2], per(v[3])))
    v = r["peak_vs_unrecorded"]
    if v is not None:
        print("  A's replayed peak %.2f MiB vs A unrecorded %.2f MiB (%+.2f %% pooled; per run %s)"
              % (v[0] / 2**20, v[1] / 2**20, v[2], per(v[3])))
    for name, p in summary["plans"].items():
        c = p["collectives_per_step"]
        kept = ",".join(p["unsharded"] or []) or "-"
        if p.get("buckets"):
            kept += " buckets " + ";".join("+".join(b) for b in p["buckets"])
        print("  %-6s keep %-28s per step %d AG + %d RS, %d B: %s" % (name, kept, c["all_gather"],
              c["reduce_scatter"], c["bytes"], "exact" if p["collectives_exact"] else "DIFFERENT"))
        for key, what in (("step_vs_unrecorded", "step vs unrecorded B"), ("step_vs_recorded", "step vs recorded B  "),
                          ("peak_vs_unrecorded", "peak vs unrecorded B"), ("peak_vs_recorded", "peak vs recorded B  ")):
            v = p[key]
            if v is None:
                print("         %s: not measured (no memory counter of the job's own)" % what)
                continue
            unit, scale = ("MiB", 2**20) if key.startswith("peak") else ("ms", 1)
            # The median of the per-run errors beside the pooled figure: one run the VM's drift
            # slowed as a whole moves the pooled mean of few repeats, not the median of three.
            print("         %s: pred %.2f / meas %.2f %s (%+.2f %% pooled; per run %s; median %+.2f %%)" % (
                what, v[0] / scale, v[1] / scale, unit, v[2], per(v[3]), statistics.median(v[3])))
        print("         the plan's effect on the step: predicted %s %%, unrecorded B / unrecorded A %s %% (per run)"
              % (per(p["effect_predicted_pct"]), per(p["effect_unrecorded_pct"])))
        if "effect_alternating_pct" in p:
            print("         in one process, A and B alternating: effect %s %%; B's step predicted %s %% off (median %+.2f %%)"
                  % (per(p["effect_alternating_pct"]), per(p["step_vs_alternating_pct"]), p["step_vs_alternating_median_pct"]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
