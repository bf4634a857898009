#!/usr/bin/env python3
"""The closed loop on torchtitan (PyPI, unedited), CPU/gloo, 2 ranks: record -> plan -> apply -> run.

    scripts/closed_loop_torchtitan.py --out /tmp/titan_loop [--model llama3] [--repeat 3] [--steps 9] [--window 3:6]

--model: llama3 (torchtitan's llama3 debug model, as it ships), qwen3_moe_ep (its Qwen3 MoE debug
config made smaller, with expert parallelism over both ranks: blocks of two parameter groups) or
qwen3_moe (the same without expert parallelism), each MoE one with _ac: with the activation
checkpointing torchtitan's config ships; tests/trainers/titan_cpu_config.py.

Per repeat, interleaved (so that the machine's drift hits every column alike):
1. A: the model as torchtitan builds it (tests/trainers/titan_cpu_config.py), recorded
   with a capture window (`record --steps`; the other steps timed and stored as unobserved, so the
   predictions are calibrated to the job without the profiler), then run again without `record`
   (its own step wall times: what the calibration aims at, and the base of the plans' measured effect).
2. Two plans from the first A: manual (`plan --modules layers.4,layers.5`) and automatic under a
   budget (`plan --budget --strategy cost`, candidates restricted to the blocks: torchtitan's
   chunked loss sets the output head's reshard policy itself at run time).
3. For each plan: the prediction from this repeat's A (`simulate A --plan P --fit`, and
   `--as-profiled` for the recorded B); B with the plan applied through
   shardscope.torchtitan.parallelize_hook ($SHARDSCOPE_PLAN), recorded with the same window; and B
   again without `record` (the job's own step wall times: the median of all but the first).
4. Compare: all-gathers per step and their bytes, reduce-scattered bytes per step (predicted vs
   recorded B: must be equal), step time (pooled means over the repeats; and the plan's effect, B / A,
   predicted against unrecorded B / unrecorded A), peak memory (against the recorded B, and against
   the unrecorded B's FSDPMemTracker on one step: shardscope.mem_tracker, --tracker-step).
Writes OUT/closed_loop_torchtitan.json and prints the rows of docs/accuracy.md. Exit 1 when the
collectives differ.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import closed_loop  # noqa: E402  (its run, collectives_per_step and pct)
from closed_loop import pct  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRAINERS = os.path.join(ROOT, "tests", "trainers")


# --model: (titan_cpu_config config, torchtitan's arguments, environment). The MoE runs keep fp32
# parameters (their experts cast to bf16 for torch._grouped_mm themselves; bf16 GEMMs run ~35x
# slower than fp32 on an AVX2 CPU) and torchtitan's all-to-all dispatcher needs CUDA graphs off.
MOE_ENV = {"SS_TITAN_SEQ": "128", "SS_TITAN_BATCH": "1"}
MODELS = {
    "llama3": ("llama3_debug_cpu", [], {}),
    "qwen3_moe_ep": ("qwen3_moe_debug_cpu", ["--training.mixed_precision_param", "float32",
                                             "--parallelism.expert_parallel_degree", "2",
                                             "--training.disable_cuda_graphs"], MOE_ENV),
    "qwen3_moe": ("qwen3_moe_debug_cpu", ["--training.mixed_precision_param", "float32"], MOE_ENV),
}
# The MoE runs again with the activation checkpointing the config ships (off in the ones above).
MODELS.update({name + "_ac": (config + "_ac", args, env) for name, (config, args, env) in list(MODELS.items())
               if name.startswith("qwen3")})


def job_env(env=None):
    full = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    full["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "profiler", "python"), TRAINERS, full.get("PYTHONPATH", "")])
    return full


def run(cmd, log, env=None, check=True):
    return closed_loop.run(cmd, log, check, job_env(env))


def titan(a, name, plan=None, record=True):
    """Runs torchtitan once; returns (profile or None, the job's summary). Without `record`,
    FSDPMemTracker follows step --tracker-step (shardscope.mem_tracker, which follows the chunked
    loss's calls of the output head): its peak on rank 0 is the summary's "tracker_peak_bytes"."""
    summary = os.path.join(a.out, name + ".json")
    tracker = os.path.join(a.out, name + "_tracker_{rank}.json")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--standalone",
           os.path.join(TRAINERS, "titan_cpu_launch.py"), "--assets", os.path.join(a.out, "assets"), "--steps", str(a.steps),
           "--summary", summary]
    if not record:
        cmd += ["--mem-tracker-step", str(a.tracker_step), "--mem-tracker-out", tracker]
    config, titan_args, model_env = MODELS[a.model]
    cmd += ["--", "--module", "titan_cpu_config", "--config", config] + titan_args
    profile = os.path.join(a.out, name + ".ssdb") if record else None
    if record:
        cmd = [a.ss, "record", "--steps", a.window, "-o", profile, "--"] + cmd
    log = os.path.join(a.out, name + ".log")
    p = subprocess.run(cmd, env=job_env(dict(model_env, **({"SHARDSCOPE_PLAN": plan} if plan else {}))), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    with open(log, "w") as f:
        f.write(p.stdout)
    # torch's teardown after a finished training run sometimes aborts one rank ("terminate called
    # without an active exception"); the run counts when every step and the profile are there.
    s = None
    if os.path.exists(summary):
        with open(summary) as f:
            s = json.load(f)
    complete = s is not None and len(s["step_s"]) == a.steps and (profile is None or os.path.exists(profile))
    if p.returncode != 0 and not complete:
        sys.stderr.write(p.stdout[-4000:])
        raise SystemExit("failed (%d): %s" % (p.returncode, " ".join(cmd)))
    if p.returncode != 0:
        sys.stderr.write("%s: exit %d after all %d steps (teardown); kept, see %s\n" % (name, p.returncode, a.steps, log))
    if not record:
        with open(tracker.replace("{rank}", "0")) as f:
            s["tracker_peak_bytes"] = json.load(f)["peak"]["Total"]
    return profile, s


def unrecorded_ms(summary, tracked_step):
    """The job's own step wall time without `record`: the median of all steps but the first and
    the one FSDPMemTracker followed."""
    return 1000 * statistics.median([t for n, t in enumerate(summary["step_s"]) if n > 0 and n != tracked_step])


def ss_json(a, name, *args):
    # `plan` exits 2 when its plan does not fit the budget; its JSON still says so (fits_budget).
    return json.loads(run([a.ss] + list(args) + ["--format", "json"], os.path.join(a.out, name + ".log"), check=args[0] != "plan"))


def collectives_per_step(profile):
    """[sorted [(type, bytes)] of each step's all-gathers and reduce-scatters] of rank 0, steps in order."""
    return [v for _, v in sorted(closed_loop.collectives_per_step(profile, skip_first=False).items())]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="/tmp/shardscope_titan_loop")
    ap.add_argument("--ss", default=os.path.join(ROOT, "build", "app", "shardscope"))
    ap.add_argument("--model", choices=sorted(MODELS), default="llama3")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", type=int, default=9)
    ap.add_argument("--window", default="3:6", help="record --steps for A and the recorded B (the others timed)")
    ap.add_argument("--tracker-step", type=int, default=7, help="unrecorded A and B: the step FSDPMemTracker follows")
    ap.add_argument("--budget-margin", type=float, default=2.5,
                    help="automatic plan: budget = A's measured peak + this many of a block's gathered (bf16) size")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    plans, budget, rows, ok = None, None, [], True
    for rep in range(a.repeat):
        A, _ = titan(a, "A%d" % rep)
        _, a_free = titan(a, "Afree%d" % rep, record=False)
        replay = ss_json(a, "A%d_replay" % rep, "simulate", A, "--fit")
        row = {"A": {"measured_step_ms": replay["measured_step_time_ms"], "replayed_step_ms": replay["step_time_ms"],
                     "unrecorded_step_ms": unrecorded_ms(a_free, a.tracker_step), "unrecorded_peak_bytes": a_free["tracker_peak_bytes"],
                     "measured_peak_bytes": replay["measured_breakdown"]["peak_memory_bytes"],
                     "replayed_peak_bytes": replay["peak_memory_bytes"], "all_gathers": replay["all_gathers"]}, "plans": {}}
        if plans is None:
            blocks = [u["name"] for u in replay["units"] if u["name"].startswith("layers.")]
            largest = max(u["params"] for u in replay["units"] if u["name"] in blocks) * 2
            budget = int(replay["measured_breakdown"]["peak_memory_bytes"] + a.budget_margin * largest)
            plans = {}
            for name, args in (("manual", ["--modules", ",".join(blocks[-2:])]),
                               ("auto", ["--budget", str(budget), "--strategy", "cost", "--modules", ",".join(blocks)])):
                path = os.path.join(a.out, "plan_%s.json" % name)
                plans[name] = (path, ss_json(a, "plan_" + name, "plan", A, "-o", path, *args))
        for name, (path, planned) in plans.items():
            predicted_profile = os.path.join(a.out, "predicted_%s_%d.ssdb" % (name, rep))
            pred = ss_json(a, "pred_%s_%d" % (name, rep), "simulate", A, "--fit", "--plan", path, "-o", predicted_profile)
            pred_rec = ss_json(a, "pred_rec_%s_%d" % (name, rep), "simulate", A, "--fit", "--plan", path, "--as-profiled")
            B, _ = titan(a, "B_%s_%d" % (name, rep), plan=path)
            _, free = titan(a, "Bfree_%s_%d" % (name, rep), plan=path, record=False)
            free_ms = unrecorded_ms(free, a.tracker_step)
            meas = ss_json(a, "B_%s_%d_replay" % (name, rep), "simulate", B, "--fit", "--as-profiled")
            want = collectives_per_step(predicted_profile)[0]
            got = collectives_per_step(B)[1:]
            # All-gathers exactly (type and bytes each); reduce-scatters by bytes: torchtitan's
            # chunked loss reduces the output head's gradients apart from the norm's.
            gathers = lambda step: [c for c in step if c[0] == "all_gather"]
            scattered = lambda step: sum(b for t, b in step if t == "reduce_scatter")
            exact = all(gathers(g) == gathers(want) and scattered(g) == scattered(want) for g in got)
            ok = ok and exact
            row["plans"][name] = {
                "unsharded": planned.get("unsharded"), "collectives_exact": exact,
                "all_gathers": sum(1 for t, _ in want if t == "all_gather"),
                "reduce_scatters": sum(1 for t, _ in want if t == "reduce_scatter"), "bytes": sum(b for _, b in want),
                "predicted_step_ms": pred["step_time_ms"], "predicted_as_profiled_step_ms": pred_rec["step_time_ms"],
                "recorded_step_ms": meas["measured_step_time_ms"],
                "unrecorded_step_ms": free_ms,
                # The plan's effect on the step (B / A): predicted from A's calibrated replay, and
                # measured between the two unrecorded runs, so that neither the calibration nor
                # A's own unobserved steps enter it.
                "predicted_effect_pct": pct(pred["step_time_ms"], replay["step_time_ms"]),
                "unrecorded_effect_pct": pct(free_ms, row["A"]["unrecorded_step_ms"]),
                "predicted_peak_bytes": pred["peak_memory_bytes"],
                "recorded_peak_bytes": meas["measured_breakdown"]["peak_memory_bytes"],
                "unrecorded_peak_bytes": free["tracker_peak_bytes"],
            }
        rows.append(row)
    mean = lambda xs: sum(xs) / len(xs)
    summary = {"model": a.model, "repeats": a.repeat, "steps": a.steps, "budget_bytes": budget, "runs": rows, "plans": {}}
    Am, Ar = mean([r["A"]["measured_step_ms"] for r in rows]), mean([r["A"]["replayed_step_ms"] for r in rows])
    Apm, Apr = mean([r["A"]["measured_peak_bytes"] for r in rows]), mean([r["A"]["replayed_peak_bytes"] for r in rows])
    Af = mean([r["A"]["unrecorded_step_ms"] for r in rows])
    Apf = mean([r["A"]["unrecorded_peak_bytes"] for r in rows])
    summary["A"] = {"measured_step_ms": Am, "replayed_step_ms": Ar, "replay_error_pct": pct(Ar, Am),
                    "unrecorded_step_ms": Af, "unobserved_vs_unrecorded_pct": pct(Am, Af),
                    "measured_peak_bytes": Apm, "replayed_peak_bytes": Apr, "peak_error_pct": pct(Apr, Apm),
                    "unrecorded_peak_bytes": Apf, "peak_error_vs_unrecorded_pct": pct(Apr, Apf)}
    print("torchtitan %s (CPU, gloo, 2 ranks), %d interleaved repeats of %d steps" % (a.model, a.repeat, a.steps))
    print("  A replay: step %.1f vs %.1f ms measured (%+.2f %%), peak %.2f vs %.2f MiB (%+.2f %%; vs the unrecorded A's "
          "FSDPMemTracker %.2f MiB, %+.2f %%), %d all-gathers per step"
          % (Ar, Am, pct(Ar, Am), Apr / 2**20, Apm / 2**20, pct(Apr, Apm), Apf / 2**20, pct(Apr, Apf), rows[0]["A"]["all_gathers"]))
    print("  A unobserved step %.1f ms vs the same job unrecorded %.1f ms (%+.2f %%; per run %s)"
          % (Am, Af, pct(Am, Af), " ".join("%+.1f" % pct(r["A"]["measured_step_ms"], r["A"]["unrecorded_step_ms"]) for r in rows)))
    for name in plans:
        rs = [r["plans"][name] for r in rows]
        p_ms, pr_ms, rec_ms, free_ms = (mean([x[k] for x in rs]) for k in ("predicted_step_ms", "predicted_as_profiled_step_ms",
                                                                               "recorded_step_ms", "unrecorded_step_ms"))
        p_pk, rec_pk = mean([x["predicted_peak_bytes"] for x in rs]), mean([x["recorded_peak_bytes"] for x in rs])
        free_pk = mean([x["unrecorded_peak_bytes"] for x in rs])
        s = {"unsharded": rs[0]["unsharded"], "collectives_exact": all(x["collectives_exact"] for x in rs),
             "all_gathers": rs[0]["all_gathers"], "reduce_scatters": rs[0]["reduce_scatters"], "bytes": rs[0]["bytes"],
             "predicted_step_ms": p_ms, "recorded_step_ms": rec_ms, "unrecorded_step_ms": free_ms,
             "predicted_as_profiled_step_ms": pr_ms,
             "step_error_vs_recorded_pct": pct(pr_ms, rec_ms), "step_error_vs_unrecorded_pct": pct(p_ms, free_ms),
             "predicted_peak_bytes": p_pk, "recorded_peak_bytes": rec_pk, "peak_error_vs_recorded_pct": pct(p_pk, rec_pk),
             "unrecorded_peak_bytes": free_pk, "peak_error_vs_unrecorded_pct": pct(p_pk, free_pk),
             "peak_error_per_repeat_vs_unrecorded_pct": [pct(x["predicted_peak_bytes"], x["unrecorded_peak_bytes"]) for x in rs],
             "step_error_per_repeat_vs_unrecorded_pct": [pct(x["predicted_step_ms"], x["unrecorded_step_ms"]) for x in rs],
             "predicted_effect_pct": mean([x["predicted_effect_pct"] for x in rs]),
             "unrecorded_effect_pct": pct(free_ms, Af)}
        summary["plans"][name] = s
        print("  %-6s keep %-22s per step %d AG + %d RS, %d B (%s); step pred %.1f / unrecorded %.1f ms (%+.2f %%; per run %s); "
              "as profiled %.1f / recorded %.1f ms (%+.2f %%); peak pred %.2f / recorded %.2f MiB (%+.2f %%)"
              % (name, ",".join(s["unsharded"] or []) or "-", s["all_gathers"], s["reduce_scatters"], s["bytes"],
                 "exact" if s["collectives_exact"] else "DIFFERENT", p_ms, free_ms, s["step_error_vs_unrecorded_pct"],
                 " ".join("%+.1f" % e for e in s["step_error_per_repeat_vs_unrecorded_pct"]), pr_ms, rec_ms,
                 s["step_error_vs_recorded_pct"], p_pk / 2**20, rec_pk / 2**20, s["peak_error_vs_recorded_pct"]))
        print("         peak pred %.2f / unrecorded B's FSDPMemTracker %.2f MiB (%+.2f %%; per run %s)"
              % (p_pk / 2**20, free_pk / 2**20, s["peak_error_vs_unrecorded_pct"],
                 " ".join("%+.2f" % e for e in s["peak_error_per_repeat_vs_unrecorded_pct"])))
        print("         the plan's effect on the step: predicted %+.1f %%, unrecorded B / unrecorded A %+.1f %% (per run %s)"
              % (s["predicted_effect_pct"], s["unrecorded_effect_pct"], " ".join("%+.1f" % x["unrecorded_effect_pct"] for x in rs)))
    with open(os.path.join(a.out, "closed_loop_torchtitan.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
