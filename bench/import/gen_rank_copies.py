#!/usr/bin/env python3
"""Writes N rank copies of a real Kineto trace for the multi-file import benchmark: copy i gets
distributedInfo rank i of N and its timestamps shifted by i x 10 us (as ranks' clocks differ).
  gen_rank_copies.py TRACE.json[.gz] OUT_DIR N"""
import gzip
import json
import os
import sys


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    src, out, n = argv[1], argv[2], int(argv[3])
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rt") as f:
        doc = json.load(f)
    os.makedirs(out, exist_ok=True)
    events = doc["traceEvents"]
    for i in range(n):
        d = dict(doc)
        d["distributedInfo"] = dict(doc.get("distributedInfo", {}), rank=i, world_size=n)
        shift = i * 10
        d["traceEvents"] = [dict(e, ts=e["ts"] + shift) if isinstance(e.get("ts"), (int, float)) else e for e in events]
        path = os.path.join(out, "rank%d.json" % i)
        with open(path, "w") as f:
            json.dump(d, f)
        print(path, os.path.getsize(path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
