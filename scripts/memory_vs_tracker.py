#!/usr/bin/env python3
"""Compares a recorded profile's memory peak in one step with PyTorch's FSDPMemTracker on that step.

    memory_vs_tracker.py PROFILE.ssdb TRACKER_RANK{rank}.json [--step N] [--json OUT]

The tracker (torch.distributed._tools.fsdp2_mem_tracker) counts the tensors that the training
thread's dispatched ops create, plus the parameters, optimizer state and inputs it is told about
when it starts. The profile counts every allocation of the device's allocator. Four kinds of
memory are real but invisible to the tracker, and are reported separately here:
  - comm lane:   buffers gloo's worker threads allocate (memory events on a comm stream);
  - in c10d op:  staging buffers allocated inside a c10d collective op on the training thread
                 (not a dispatched op's output);
  - held over:   reduce-scatter inputs alive when the step starts (FSDP2 keeps the last unit's
                 until the next step's reduce-scatter wait; the tracker starts after it was made);
  - held by c10d Work: an all-gather output after FSDP's copy-out dropped it (the tracker counts it
                 freed then) while gloo's Work object still holds it (freed later, on gloo's thread;
                 later still when the CPU is contended).
"tracker-visible" is the profile's memory less those four; it is what is compared (error in %).
Reads the profile read-only with sqlite3; prints a table, or writes JSON with --json.
"""
import argparse
import bisect
import json
import sqlite3
import sys

TRACKER_TO_OURS = {
    "Sharded Param": "sharded_parameter",
    "Unsharded Param": "unsharded_parameter",
    "Sharded Grad": "gradient",
    "Unsharded Grad": "gradient",
    "Activation": "activation",
    "Inputs": "activation",
    "Temp": "temporary",
    "All Gather": "all_gather_buffer",
    "Reduce Scatter": "reduce_scatter_buffer",
    "OptState": "optimizer_state",
    "Buffer": "unknown",
}


class CopIndex:
    """Intervals of c10d ops per rank (the training thread's collective calls)."""

    def __init__(self, db, rank):
        rows = db.execute(
            "SELECT r.start_ns, r.start_ns + r.duration_ns FROM ranges r JOIN strings s ON s.id = r.name_id "
            "WHERE r.rank = ? AND s.value LIKE 'c10d::%' ORDER BY r.start_ns", (rank,)).fetchall()
        self.starts = [r[0] for r in rows]
        self.ends = [r[1] for r in rows]

    def inside(self, t):
        i = bisect.bisect_right(self.starts, t) - 1
        return i >= 0 and t <= self.ends[i]


def release_times(db, rank):
    """Ends of FSDP::all_gather_copy_out ranges: where FSDP drops the all-gather output."""
    rows = db.execute("SELECT r.start_ns, r.start_ns + r.duration_ns FROM ranges r JOIN strings s ON s.id = r.name_id "
                      "WHERE r.rank = ? AND s.value LIKE 'FSDP::all_gather_copy_out%' ORDER BY r.start_ns", (rank,)).fetchall()
    return [r[0] for r in rows], [r[1] for r in rows]


def step_peak(db, rank, step):
    cats = dict(db.execute("SELECT value, label FROM enums WHERE type = 'memory_category'").fetchall())
    comm = {r[0] for r in db.execute("SELECT id FROM streams WHERE kind = 2")}
    row = db.execute("SELECT start_ns, duration_ns FROM steps WHERE rank = ? AND number = ?", (rank, step)).fetchone()
    if row is None:
        raise SystemExit("rank %d has no step %d" % (rank, step))
    t0, t1 = row[0], row[0] + row[1]
    c10d = CopIndex(db, rank)
    copy_out_starts, copy_out_ends = release_times(db, rank)
    never = float("inf")
    # 1. Blocks: (alloc time, free time, bytes, category, why the tracker cannot see it).
    blocks, open_ = [], {}
    q = "SELECT time_ns, address, bytes, category, stream_id FROM memory_events WHERE rank = ? ORDER BY time_ns, bytes"
    for t, addr, b, c, stream in db.execute(q, (rank,)):
        if t > t1:
            break
        if b > 0:
            why = "comm lane" if stream in comm else "in c10d op" if c10d.inside(t) else None
            open_[addr] = len(blocks)
            blocks.append([t, never, b, cats[c], why])
        elif addr in open_:
            blocks[open_.pop(addr)][1] = t
    # 2. The tracker's view of each block: when it ends, and what it is called.
    deltas = []  # (time, all delta, visible delta, category, excluded kind)
    for ta, tf, b, cat, why in blocks:
        deltas.append((ta, b, 0, cat, None))
        deltas.append((tf, -b, 0, cat, None))
        if why is None and cat == "reduce_scatter_buffer" and ta < t0 < tf:
            why = "held over"
        if why is not None:
            deltas.append((ta, 0, 0, cat, (why, b)))
            deltas.append((tf, 0, 0, cat, (why, -b)))
            continue
        visible_end = tf
        if cat == "all_gather_buffer":  # FSDP drops it after its copy-out; c10d's Work may hold it longer
            i = bisect.bisect_left(copy_out_starts, ta)
            if i < len(copy_out_ends) and copy_out_ends[i] < tf:
                visible_end = copy_out_ends[i]
                deltas.append((visible_end, 0, 0, cat, ("held by c10d Work", b)))
                deltas.append((tf, 0, 0, cat, ("held by c10d Work", -b)))
        deltas.append((ta, 0, b, cat, None))
        deltas.append((visible_end, 0, -b, cat, None))
    deltas.sort(key=lambda d: (d[0], d[1] + d[2]))
    # 3. Sweep: peaks inside the step.
    level = {"all": 0, "visible": 0}
    by_cat, excluded = {}, {}
    best = {"all": (-1, None, None), "visible": (-1, None, None)}
    for t, d_all, d_vis, cat, ex in deltas:
        if t > t1:
            break
        level["all"] += d_all
        level["visible"] += d_vis
        if d_vis:
            by_cat[cat] = by_cat.get(cat, 0) + d_vis
        if ex:
            excluded[ex[0]] = excluded.get(ex[0], 0) + ex[1]
        if t >= t0:
            for k in ("all", "visible"):
                if level[k] > best[k][0]:
                    best[k] = (level[k], t - t0, (dict(by_cat), {w: v for w, v in excluded.items() if v}))
    return {
        "rank": rank,
        "step": step,
        "peak_all_bytes": best["all"][0],
        "peak_visible_bytes": best["visible"][0],
        "peak_visible_time_in_step_ns": best["visible"][1],
        "visible_by_category_at_peak": {k: v for k, v in best["visible"][2][0].items() if v},
        "excluded_at_all_peak": best["all"][2][1],
    }


def compare(profile, tracker_pattern, step=None):
    db = sqlite3.connect("file:%s?mode=ro" % profile, uri=True)
    out = []
    for (rank,) in db.execute("SELECT DISTINCT rank FROM memory_events ORDER BY rank").fetchall():
        with open(tracker_pattern.replace("{rank}", str(rank))) as f:
            tr = json.load(f)
        s = tr["step"] if step is None else step
        dev = next(iter(tr["devices"].values()))
        ours = step_peak(db, rank, s)
        theirs = {}
        for k, v in dev.items():
            if k != "Total":
                theirs[TRACKER_TO_OURS.get(k, k)] = theirs.get(TRACKER_TO_OURS.get(k, k), 0) + v
        ours["tracker_peak_bytes"] = dev["Total"]
        ours["tracker_by_category_at_peak"] = {k: v for k, v in theirs.items() if v}
        ours["error_pct"] = 100.0 * (ours["peak_visible_bytes"] - dev["Total"]) / dev["Total"]
        out.append(ours)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile")
    ap.add_argument("tracker", help="the tracker's JSON per rank, with {rank} in the name")
    ap.add_argument("--step", type=int, help="default: the step the tracker ran")
    ap.add_argument("--json", help="write the comparison here")
    a = ap.parse_args()
    rows = compare(a.profile, a.tracker, a.step)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    for r in rows:
        print("rank %d step %d: measured peak %d B (all allocations), %d B tracker-visible; FSDPMemTracker %d B; error %+.2f %%"
              % (r["rank"], r["step"], r["peak_all_bytes"], r["peak_visible_bytes"], r["tracker_peak_bytes"], r["error_pct"]))
        print("   not visible to the tracker at the all-allocations peak:", r["excluded_at_all_peak"] or "nothing")
        print("   measured at peak:", r["visible_by_category_at_peak"])
        print("   tracker at peak: ", r["tracker_by_category_at_peak"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
