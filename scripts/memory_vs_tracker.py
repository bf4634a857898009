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

# What FSDPMemTracker is told when it starts (the module's parameters, the optimizer's state): of
# the blocks made before the tracked step, only these are in its view.
AT_TRACKER_ENTRY = ("sharded_parameter", "optimizer_state")

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


def _step_window(db, rank, step):
    row = db.execute("SELECT start_ns, duration_ns FROM steps WHERE rank = ? AND number = ?", (rank, step)).fetchone()
    if row is None:
        raise SystemExit("rank %d has no step %d" % (rank, step))
    return row[0], row[0] + row[1]


def tracker_view_deltas(db, rank, t0, t1):
    """Level changes up to t1, sorted: (time, all delta, tracker-visible delta, category, excluded
    (kind, delta) or None). t0 is the step's start (what the tracker cannot have seen made)."""
    cats = dict(db.execute("SELECT value, label FROM enums WHERE type = 'memory_category'").fetchall())
    comm = {r[0] for r in db.execute("SELECT id FROM streams WHERE kind = 2")}
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
    deltas = []
    for ta, tf, b, cat, why in blocks:
        deltas.append((ta, b, 0, cat, None))
        deltas.append((tf, -b, 0, cat, None))
        if why is None and ta < t0 and cat not in AT_TRACKER_ENTRY:
            why = "before the tracker"
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
    return deltas


def step_peak(db, rank, step):
    t0, t1 = _step_window(db, rank, step)
    # 3. Sweep: peaks inside the step.
    level = {"all": 0, "visible": 0}
    by_cat, excluded = {}, {}
    best = {"all": (-1, None, None), "visible": (-1, None, None)}
    for t, d_all, d_vis, cat, ex in tracker_view_deltas(db, rank, t0, t1):
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


# FSDPMemTracker's snapshots at an FSDP unit's hooks, and where each is in a trace: the start or
# the end of FSDP2's own range for that unit ("FSDP::pre_forward (layers.1)"; the root's has no
# name in parentheses). Points the program defines, unlike a peak, whose moment can move between
# two nearly equal levels with the timing of gloo's threads.
TRACKER_POINTS = {
    "Before Pre-Forward": ("FSDP::pre_forward", 0), "After Pre-Forward": ("FSDP::pre_forward", 1),
    "Before Post-Forward": ("FSDP::post_forward", 0), "After Post-Forward": ("FSDP::post_forward", 1),
    "Before Pre-Backward": ("FSDP::pre_backward", 0), "After Pre-Backward": ("FSDP::pre_backward", 1),
}


# The forward's points: every tracker category there is fixed by the program (the same bytes in
# every run, recorded or not), except the communication buffers, which gloo's worker threads may
# hold a little longer than FSDP does (program_fixed leaves them out).
FORWARD_POINTS = ("After Pre-Forward", "Before Post-Forward")
COMM_BUFFERS = ("all_gather_buffer", "reduce_scatter_buffer")


def program_fixed(by_category):
    """The categories of a snapshot whose bytes the program fixes at a defined point."""
    return {k: v for k, v in by_category.items() if v and k not in COMM_BUFFERS}


def fsdp_range_times(db, rank, step, name, fqn):
    """(start, end) of each FSDP range `name` of unit `fqn` in the step, in time order."""
    t0, t1 = _step_window(db, rank, step)
    label = name if not fqn else "%s (%s)" % (name, fqn)
    return db.execute("SELECT r.start_ns, r.start_ns + r.duration_ns FROM ranges r JOIN strings s ON s.id = r.name_id "
                      "WHERE r.rank = ? AND s.value = ? AND r.start_ns >= ? AND r.start_ns < ? ORDER BY r.start_ns",
                      (rank, label, t0, t1)).fetchall()


def visible_at(db, rank, step, times):
    """The tracker-visible bytes per category at each of `times` (inside the step), after every
    event at that instant."""
    t0, _ = _step_window(db, rank, step)
    out, by_cat = [], {}
    deltas = tracker_view_deltas(db, rank, t0, max(times))
    i = 0
    for t in sorted(times):
        while i < len(deltas) and deltas[i][0] <= t:
            _, _, d_vis, cat, _ = deltas[i]
            if d_vis:
                by_cat[cat] = by_cat.get(cat, 0) + d_vis
            i += 1
        out.append((t, {k: v for k, v in by_cat.items() if v}))
    order = {t: v for t, v in out}
    return [order[t] for t in times]


def tracker_categories(snapshot):
    """A tracker snapshot ({"Sharded Param": bytes, ...}) in the profile's category names."""
    out = {}
    for k, v in snapshot.items():
        if k != "Total" and v:
            name = TRACKER_TO_OURS.get(k, k)
            out[name] = out.get(name, 0) + v
    return out


def compare_at_points(profile, tracker_pattern, states=("After Pre-Forward",)):
    """For every rank, FSDP unit and tracker state in `states`: the tracker's snapshot and the
    profile's tracker-visible memory at the same point (the end or start of the unit's FSDP range
    in the tracked step), by category. Returns [{rank, unit, state, tracker, profile}]."""
    db = sqlite3.connect("file:%s?mode=ro" % profile, uri=True)
    out = []
    for (rank,) in db.execute("SELECT DISTINCT rank FROM memory_events ORDER BY rank").fetchall():
        with open(tracker_pattern.replace("{rank}", str(rank))) as f:
            tr = json.load(f)
        for unit, snaps in sorted(tr.get("modules", {}).items()):
            for state in states:
                name, end = TRACKER_POINTS[state]
                calls = snaps.get(state, [])
                times = [r[end] for r in fsdp_range_times(db, rank, tr["step"], name, unit)]
                if not calls or len(times) != len(calls):
                    continue
                for snap, level in zip(calls, visible_at(db, rank, tr["step"], times)):
                    out.append({"rank": rank, "unit": unit, "state": state,
                                "tracker": tracker_categories(next(iter(snap.values()))), "profile": level})
    return out


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
