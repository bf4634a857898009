#!/usr/bin/env python3
"""Independent check of the `temporal`, `overlap` and `idle-gaps` analyses on a profile.

Recomputes, straight from the profile's SQLite tables (python3 + sqlite3 only, no ShardScope
code), per rank:
  window      first kernel start .. last kernel end
  compute     length of the union of compute kernels            (kernels.category = 0)
  comm_only   NCCL kernel time with no compute kernel running   (category 1, minus compute)
  idle        window minus the union of all kernels
  coll_total  union of the rows of the collectives table
  coll_exposed  that union minus compute
  gaps        gaps >= 5 us between kernels on the compute stream (the stream with the most
              compute-kernel time): count, total, and the total of those that NCCL kernels cover
              for at least half of their length ("waiting on collective", first rule)
and for the whole profile:
  straggler_lag  sum over collectives matched across ranks by (process group, sequence) of
              latest start - earliest start, leaving out sends and receives, groups whose
              participants are not one operation (types or, where every rank holds one size,
              bytes differ) and, on ranks with recorded steps, matches no participant started
              inside a step
Unions are computed with a +1/-1 event sweep (a different method from the plugins' sorted
interval merge). Then runs `shardscope analyze ... --format json` and compares every number.

Usage: scripts/check_analyses.py PATH/TO/shardscope PROFILE.ssdb [--quiet]
Exit 0 when everything matches, 1 on a mismatch, 2 on bad input.
"""
import json
import sqlite3
import subprocess
import sys
from collections import defaultdict

MIN_GAP_NS = 5000


def sweep_length(intervals, lo=None, hi=None):
    """Length covered by the union of [start, end) intervals, optionally clipped to [lo, hi)."""
    events = []
    for s, e in intervals:
        if lo is not None:
            s, e = max(s, lo), min(e, hi)
        if e > s:
            events.append((s, 1))
            events.append((e, -1))
    events.sort()
    depth, total, since = 0, 0, 0
    for t, d in events:
        if depth > 0:
            total += t - since
        depth += d
        since = t
    return total


def sweep_minus(a, b):
    """Length of union(a) not covered by union(b): a sweep with two counters."""
    events = [(s, 0, 1) for s, e in a if e > s] + [(e, 0, -1) for s, e in a if e > s]
    events += [(s, 1, 1) for s, e in b if e > s] + [(e, 1, -1) for s, e in b if e > s]
    events.sort()
    da = db = 0
    total = since = 0
    for t, which, d in events:
        if da > 0 and db == 0:
            total += t - since
        if which == 0:
            da += d
        else:
            db += d
        since = t
    return total


def busy_runs(intervals):
    """Maximal busy runs of the union, from the sweep (for gap finding)."""
    events = sorted([(s, 1) for s, e in intervals if e > s] + [(e, -1) for s, e in intervals if e > s])
    runs, depth, start = [], 0, None
    for t, d in events:
        if depth == 0 and d == 1:
            start = t
        depth += d
        if depth == 0:
            runs.append((start, t))
    return runs


def compute_expected(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    kernels = defaultdict(list)  # rank -> (stream, start, end, category)
    for rank, stream, start, dur, cat in db.execute(
            "SELECT rank, stream_id, start_ns, duration_ns, category FROM kernels"):
        kernels[rank].append((stream, start, start + dur, cat))
    colls = defaultdict(list)
    for rank, start, dur in db.execute("SELECT rank, start_ns, duration_ns FROM collectives"):
        colls[rank].append((start, start + dur))
    out = {}
    for rank, ks in sorted(kernels.items()):
        lo = min(k[1] for k in ks)
        hi = max(k[2] for k in ks)
        compute = [(s, e) for _, s, e, c in ks if c == 0]
        nccl = [(s, e) for _, s, e, c in ks if c == 1]
        allk = [(s, e) for _, s, e, _ in ks]
        per_stream = defaultdict(int)
        for st, s, e, c in ks:
            if c == 0:
                per_stream[st] += e - s
        r = {
            "window": hi - lo,
            "compute": sweep_length(compute),
            "comm_only": sweep_minus(nccl, compute),
            "idle": (hi - lo) - sweep_length(allk),
            "coll_total": sweep_length(colls[rank], lo, hi),
            "coll_exposed": sweep_minus([(max(s, lo), min(e, hi)) for s, e in colls[rank]], compute),
        }
        gaps_n = gaps_total = gaps_coll = 0
        if per_stream:
            # Ties: the plugin keeps the first stream in its order; equal totals are rare.
            cs = max(per_stream, key=lambda st: per_stream[st])
            runs = busy_runs([(s, e) for st, s, e, _ in ks if st == cs])
            edges = [lo] + [x for run in runs for x in run] + [hi]
            for i in range(0, len(edges), 2):
                g0, g1 = edges[i], edges[i + 1]
                if g1 - g0 < MIN_GAP_NS:
                    continue
                gaps_n += 1
                gaps_total += g1 - g0
                if 2 * sweep_length(nccl, g0, g1) >= g1 - g0:
                    gaps_coll += g1 - g0
        r.update(gaps=gaps_n, gaps_total=gaps_total, gaps_waiting_collective_majority=gaps_coll)
        out[rank] = r
    # A participant is inside a step when its rank has none recorded or its start is in one of them.
    groups = db.execute("SELECT GROUP_CONCAT(c.type), GROUP_CONCAT(COALESCE(c.bytes, 0)), MAX(c.start_ns) - MIN(c.start_ns),"
                        " MAX(NOT EXISTS (SELECT 1 FROM steps s WHERE s.rank = c.rank) OR EXISTS (SELECT 1 FROM steps s"
                        " WHERE s.rank = c.rank AND c.start_ns >= s.start_ns AND c.start_ns < s.start_ns + s.duration_ns))"
                        " FROM collectives c WHERE c.sequence >= 0 GROUP BY COALESCE(c.process_group_id, -1), c.sequence"
                        " HAVING COUNT(*) > 1").fetchall()
    lag = 0
    for types, sizes, group_lag, in_step in groups:
        types = [int(t) for t in types.split(",")]
        sizes = {int(b) for b in sizes.split(",")} - {0}
        p2p = set(types) <= {8, 9}  # a send and a receive: one of each
        if p2p and (len(types) != 2 or types[0] == types[1]):
            continue  # not one operation
        if not p2p and len(set(types)) > 1:
            continue
        if (p2p or 1 <= types[0] <= 5) and len(sizes) > 1:
            continue  # one size on every rank, or not one operation
        if in_step and not p2p:
            lag += group_lag
    out["all"] = {"straggler_lag": lag}
    return out


def analyze(shardscope, name, path):
    p = subprocess.run([shardscope, "analyze", name, path, "--format", "json"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"check_analyses: 'shardscope analyze {name}' failed ({p.returncode}): {p.stderr.strip()}")
    doc = json.loads(p.stdout)
    tables = {}
    for t in doc["tables"]:
        tables[t["name"]] = [dict(zip(t["columns"], row)) for row in t["rows"]]
    return tables


def reported(shardscope, path):
    temporal = {r["rank"]: r for r in analyze(shardscope, "temporal", path)["breakdown"]}
    overlap = {r["rank"]: r for r in analyze(shardscope, "overlap", path)["per_rank"]}
    idle = analyze(shardscope, "idle-gaps", path)
    out = {}
    for rank, t in temporal.items():
        o = overlap.get(rank, {"collective_ns": 0, "exposed_ns": 0})
        rows = [g for g in idle["gaps"] if g["rank"] == rank]
        summary = [s for s in idle["summary"] if s["rank"] == rank]
        out[rank] = {
            "window": t["window_ns"], "compute": t["compute_ns"], "comm_only": t["communication_ns"],
            "idle": t["idle_ns"], "coll_total": o["collective_ns"], "coll_exposed": o["exposed_ns"],
            "gaps": sum(s["gaps"] for s in summary), "gaps_total": sum(s["idle_ns"] for s in summary),
            # The plugin's first rule: NCCL during >= half of the gap (listed gaps only: <= 500).
            "gaps_waiting_collective_majority": sum(
                g["duration_ns"] for g in rows if 2 * g["collective_overlap_ns"] >= g["duration_ns"]),
        }
        if len(idle["gaps"]) >= 500:
            out[rank].pop("gaps_waiting_collective_majority")  # the gap list is truncated
    strag = analyze(shardscope, "stragglers", path)
    out["all"] = {"straggler_lag": sum(r["total_lag_ns"] for r in strag["per_rank"])}
    return out


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    shardscope, path = argv[1], argv[2]
    quiet = "--quiet" in argv
    try:
        expected = compute_expected(path)
    except sqlite3.Error as e:
        print(f"check_analyses: {path}: {e}", file=sys.stderr)
        return 2
    got = reported(shardscope, path)
    bad = 0
    for rank in sorted(expected, key=str):
        for key, want in expected[rank].items():
            have = got.get(rank, {}).get(key)
            if have is None:
                continue
            ok = have == want
            bad += not ok
            if not quiet or not ok:
                print(f"rank {rank!s:>3} {key:<34} independent {want:>14}  plugin {have:>14}  {'ok' if ok else 'MISMATCH'}")
    print(f"check_analyses: {path}: {'all numbers match' if bad == 0 else f'{bad} mismatches'}")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
