"""`shardscope import` of PyTorch memory snapshots (torch.cuda.memory._dump_snapshot pickles).

The snapshots are dicts in the layout torch/csrc/cuda/Module.cpp's _cuda_memorySnapshot returns
(segments with blocks, device_traces with time_us and frames, external_annotations of
record_function ranges), pickled here with Python's pickle as _dump_snapshot does. This machine has
no CUDA, so torch.cuda.memory._snapshot() cannot run: the dicts are built here the way it builds
them, and one is made by torch itself from a CPU run (torch.cuda._memory_viz._profile_to_snapshot,
which memory_viz's own profile_plot uses). The expected memory events, peaks and module totals
are computed in this file from the dict, by the rules docs/importers.md gives, and compared with
what the importer wrote. A hostile pickle (os.system through __reduce__) is written, never loaded
here, and must be refused without running."""
import json
import os
import pickle
import sqlite3
import subprocess
import tempfile
import unittest

SOURCE_DIR = os.environ.get("SHARDSCOPE_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
SHARDSCOPE = os.environ.get("SHARDSCOPE_BIN", os.path.join(SOURCE_DIR, "build", "app", "shardscope"))

T0 = 1_732_400_000_000_000  # time_us: unix-epoch microseconds


def frame(filename, line, name):
    return {"filename": filename, "line": line, "name": name}


TRAIN = frame("/home/u/train.py", 30, "main")
CALL = frame("/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", 1751, "_call_impl")
WRAP = frame("/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", 1740, "_wrapped_call_impl")


def stack(*forwards):
    """Innermost-first frames of nested module forwards: forwards are (file, line) outermost first."""
    frames = [TRAIN]
    for f, line in forwards:
        frames = [frame(f, line, "forward"), CALL, WRAP] + frames
    return [frame("/usr/lib/python3.11/site-packages/torch/nn/functional.py", 2000, "linear")] + frames


# Module paths the frames above must give (docs/importers.md): each forward is named after the
# line that called it: the outermost by the training loop's line, the others by their parent's.
def expected_module(frames):
    labels = [f["name"][len("nn.Module: "):] for f in reversed(frames) if f["name"].startswith("nn.Module: ")]
    if labels:
        return ".".join(labels)
    levels = []
    outer_first = list(reversed(frames))
    for i, f in enumerate(outer_first):
        if f["name"] != "forward":
            continue
        callers = [c for c in reversed(outer_first[:i]) if not c["filename"].endswith("torch/nn/modules/module.py")]
        levels.append("%s:%d" % (os.path.basename(callers[0]["filename"]), callers[0]["line"]) if callers
                      else os.path.basename(f["filename"]) + ":forward")
    return "/".join(levels) if levels else None


class BlockModel:
    """The caching allocator's block of each traced request (CUDACachingAllocator.cpp, default
    settings): rounded up to 512 B; a request over 1 MiB takes its free block from the block's
    start, and the allocator splits the rest off only if more than 1 MiB would be left. The free
    block runs to the next live block or the segment's end (free neighbours merge)."""

    def __init__(self, snapshot, device, trace):
        settings = snapshot.get("allocator_settings")
        self.on = bool(settings) and not settings.get("expandable_segments") and settings.get("max_split_size", -1) == -1
        self.segments = {e["addr"]: e["addr"] + e["size"] for e in trace if e["action"] == "segment_alloc"}
        self.live = set()
        allocated = set()
        for e in trace:
            if e["action"] == "alloc":
                allocated.add(e["addr"])
            elif e["action"] == "free_completed" and e["addr"] not in allocated:
                self.live.add(e["addr"])
            elif e["action"] == "free_completed":
                allocated.discard(e["addr"])
        for seg in snapshot.get("segments", []):
            if seg["device"] == device:
                self.segments.setdefault(seg["address"], seg["address"] + seg["total_size"])
                addr = seg["address"]
                for b in seg["blocks"]:
                    a, addr = b.get("address", addr), b.get("address", addr) + b["size"]
                    if b["state"].startswith("active") and a not in allocated:
                        self.live.add(a)

    def alloc(self, addr, size):
        self.live.add(addr)
        if not self.on:
            return size
        block = max(512, -(-size // 512) * 512)
        if block <= 1 << 20:
            return block
        seg_end = next((end for start, end in self.segments.items() if start <= addr < end), None)
        if seg_end is None:
            return block
        free_end = min([a for a in self.live if addr < a < seg_end] + [seg_end])
        return free_end - addr if free_end - addr - block <= 1 << 20 else block


def expected(snapshot):
    """Per device: the memory events in order (before-the-trace allocations first) and the peak."""
    out = {}
    traces = snapshot.get("device_traces", [])
    devices = {d for d, t in enumerate(traces) if t} | {s["device"] for s in snapshot.get("segments", [])}
    for d in sorted(devices):
        trace = traces[d] if d < len(traces) else []
        live, before, during = {}, [], []
        blocks = BlockModel(snapshot, d, trace)
        for e in trace:
            if e["action"] == "alloc":
                if e["addr"] in live:
                    during.append((e["addr"], -live[e["addr"]][0], live[e["addr"]][1]))
                size = blocks.alloc(e["addr"], e["size"])
                live[e["addr"]] = (size, e.get("frames"))
                during.append((e["addr"], size, e.get("frames")))
            elif e["action"] == "segment_free":
                blocks.segments.pop(e["addr"], None)
            elif e["action"] == "free_completed":
                blocks.live.discard(e["addr"])
                if e["addr"] in live:
                    size, frames = live.pop(e["addr"])
                    during.append((e["addr"], -size, frames))
                else:
                    before.append((e["addr"], e["size"], e.get("frames")))
                    during.append((e["addr"], -e["size"], e.get("frames")))
        for seg in snapshot.get("segments", []):
            if seg["device"] != d:
                continue
            addr = seg["address"]
            for b in seg["blocks"]:
                a = b.get("address", addr)
                addr = a + b["size"]
                if b["state"] in ("active_allocated", "active_pending_free") and a not in live:
                    before.append((a, b["size"], b.get("frames")))
        level = peak = 0
        for _, size, _ in before + during:
            level += size
            peak = max(peak, level)
        by_module = {}
        for _, size, frames in before + during:
            if size > 0:
                m = expected_module(frames or [])
                by_module[m] = by_module.get(m, 0) + size
        out[d] = {"events": len(before) + len(during), "peak": peak, "before": len(before), "by_module": by_module}
    return out


def synthetic_snapshot():
    """Two devices, in the real layout. Device 0: a block allocated before the trace began and
    freed in it; a block still allocated at the end that the trace never allocated; frees
    requested then completed; segment growth; an OOM; allocations in nested module forwards and
    inside a ShardScope hook range (record_function "ss:fwd:layers.0")."""
    base = 0x7F00_0000_0000
    attn = stack(("/home/u/model.py", 80), ("/home/u/model.py", 51))
    mlp = stack(("/home/u/model.py", 80), ("/home/u/model.py", 52))
    head = stack(("/home/u/model.py", 81))
    t = T0
    tr0 = [
        {"action": "segment_alloc", "addr": base, "size": 20 << 20, "stream": 0, "time_us": t, "frames": head},
        {"action": "alloc", "addr": base, "size": 4 << 20, "stream": 0, "time_us": t, "frames": attn},
        {"action": "alloc", "addr": base + (4 << 20), "size": 2 << 20, "stream": 0, "time_us": t + 1, "frames": mlp},
        # freed in the trace, allocated before it began (its alloc fell out of the ring buffer)
        {"action": "free_requested", "addr": base + (12 << 20), "size": 1 << 20, "stream": 0, "time_us": t + 2, "frames": head},
        {"action": "free_completed", "addr": base + (12 << 20), "size": 1 << 20, "stream": 0, "time_us": t + 2, "frames": head},
        {"action": "alloc", "addr": base + (6 << 20), "size": 5 << 19, "stream": 0, "time_us": t + 3, "frames": head},
        {"action": "free_requested", "addr": base, "size": 4 << 20, "stream": 0, "time_us": t + 4, "frames": attn},
        {"action": "free_completed", "addr": base, "size": 4 << 20, "stream": 0, "time_us": t + 5, "frames": attn},
        {"action": "alloc", "addr": base, "size": 1 << 20, "stream": 0, "time_us": t + 5, "frames": mlp},
        {"action": "oom", "device_free": 0, "size": 1 << 30, "stream": 0, "time_us": t + 6, "frames": head},
        {"action": "alloc", "addr": base + (9 << 20), "size": 500, "stream": 7, "time_us": t + 7, "frames": []},
        {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": t + 8},
    ]
    for e in tr0:
        e.setdefault("compile_context", "N/A")
        e.setdefault("user_metadata", "")
    tr1 = [
        {"action": "alloc", "addr": base, "size": 8 << 20, "stream": 0, "time_us": t + 3, "frames": head},
        {"action": "alloc", "addr": base + (8 << 20), "size": 8 << 20, "stream": 0, "time_us": t + 3, "frames": head},
        {"action": "free_completed", "addr": base, "size": 8 << 20, "stream": 0, "time_us": t + 3, "frames": head},
        {"action": "alloc", "addr": base, "size": 4 << 20, "stream": 0, "time_us": t + 4, "frames": attn},
    ]
    seg0 = {"device": 0, "address": base, "total_size": 20 << 20, "allocated_size": 0, "active_size": 0,
            "requested_size": 0, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
            "is_expandable": False, "frames": head, "blocks": [
                {"address": base, "size": 1 << 20, "requested_size": 1 << 20, "state": "active_allocated", "frames": mlp},
                {"address": base + (1 << 20), "size": 3 << 20, "requested_size": 0, "state": "inactive", "frames": []},
                {"address": base + (4 << 20), "size": 2 << 20, "requested_size": 2 << 20, "state": "active_allocated", "frames": mlp},
                {"address": base + (6 << 20), "size": 5 << 19, "requested_size": 5 << 19, "state": "active_allocated", "frames": head},
                {"address": base + (17 << 19), "size": 1 << 19, "requested_size": 0, "state": "inactive", "frames": []},
                {"address": base + (9 << 20), "size": 512, "requested_size": 500, "state": "active_pending_free", "frames": []},
                {"address": base + (9 << 20) + 512, "size": (1 << 20) - 512, "requested_size": 0, "state": "inactive", "frames": []},
                # allocated before the trace and never freed: only the snapshot knows it
                {"address": base + (10 << 20), "size": 2 << 20, "requested_size": 2 << 20, "state": "active_allocated", "frames": attn},
                {"address": base + (12 << 20), "size": 8 << 20, "requested_size": 0, "state": "inactive", "frames": []},
            ]}
    seg1 = {"device": 1, "address": base, "total_size": 16 << 20, "allocated_size": 12 << 20, "active_size": 12 << 20,
            "requested_size": 12 << 20, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
            "is_expandable": False, "frames": [], "blocks": [
                {"address": base, "size": 4 << 20, "requested_size": 4 << 20, "state": "active_allocated", "frames": attn},
                {"address": base + (4 << 20), "size": 4 << 20, "requested_size": 0, "state": "inactive", "frames": []},
                {"address": base + (8 << 20), "size": 8 << 20, "requested_size": 8 << 20, "state": "active_allocated", "frames": head},
            ]}
    annotations = [
        {"name": "ss:fwd:layers.0", "stage": "START", "device": 1, "time_us": t + 4},
        {"name": "ss:fwd:layers.0", "stage": "END", "device": 1, "time_us": t + 5},
    ]
    return {"segments": [seg0, seg1], "device_traces": [tr0, tr1],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "expandable_segments": False,
                                   "garbage_collection_threshold": 0.0, "roundup_power2_divisions": {"1": 0}},
            "external_annotations": annotations}


class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + os.path.join(tempfile.gettempdir(), "shardscope-snapshot-pwned"),))


def run(*args):
    return subprocess.run([SHARDSCOPE, *args], capture_output=True, text=True)


def query(profile, sql, *params):
    with sqlite3.connect("file:%s?mode=ro" % profile, uri=True) as db:
        return db.execute(sql, params).fetchall()


class SnapshotImport(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def import_snapshot(self, snapshot, name="snap", protocol=pickle.DEFAULT_PROTOCOL):
        src = os.path.join(self.dir, name + ".pickle")
        with open(src, "wb") as f:
            pickle.dump(snapshot, f, protocol=protocol)  # as torch.cuda.memory._dump_snapshot does
        out = os.path.join(self.dir, name + ".ssdb")
        r = run("import", "-q", src, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("torch-memory-snapshot", r.stdout)
        return out

    def check_against_dict(self, snapshot, out):
        want = expected(snapshot)
        info = json.loads(run("info", out, "--format", "json").stdout)
        peaks = {p["rank"]: p["peak_bytes"] for p in info["memory_peaks"]}
        self.assertEqual(peaks, {d: w["peak"] for d, w in want.items()})
        for d, w in want.items():
            self.assertEqual(query(out, "SELECT count(*) FROM memory_events WHERE rank = ?", d)[0][0], w["events"])
            got = dict(query(out, "SELECT m.fqn, sum(e.bytes) FROM memory_events e LEFT JOIN modules m ON m.id = e.module_id"
                                  " WHERE e.rank = ? AND e.bytes > 0 GROUP BY m.fqn", d))
            self.assertEqual(got, w["by_module"], "device %d" % d)
        return want, info

    def test_synthetic_snapshot_events_peak_and_modules(self):
        snap = synthetic_snapshot()
        out = self.import_snapshot(snap)
        # The hook range names device 1's allocation inside it: module layers.0, not the frames'.
        s = synthetic_snapshot()
        s["external_annotations"] = []
        want = expected(s)
        hooked = want[1]["by_module"]
        attn_path = expected_module(stack(("/home/u/model.py", 80), ("/home/u/model.py", 51)))
        self.assertEqual(attn_path, "train.py:30/model.py:80")
        hooked[attn_path] -= 4 << 20
        hooked = {k: v for k, v in hooked.items() if v}
        hooked["layers.0"] = 4 << 20
        got = dict(query(out, "SELECT m.fqn, sum(e.bytes) FROM memory_events e LEFT JOIN modules m ON m.id = e.module_id"
                              " WHERE e.rank = 1 AND e.bytes > 0 GROUP BY m.fqn"))
        self.assertEqual(got, hooked)
        # Device 0 has no annotations: everything by frames, events and peak as computed here.
        info = json.loads(run("info", out, "--format", "json").stdout)
        self.assertEqual({p["rank"]: p["peak_bytes"] for p in info["memory_peaks"]}, {0: want[0]["peak"], 1: want[1]["peak"]})
        self.assertEqual(query(out, "SELECT count(*) FROM memory_events WHERE rank = 0")[0][0], want[0]["events"])
        self.assertEqual(want[0]["before"], 2)  # the block freed in the trace and the one only the snapshot holds
        # The nested forwards: model.py:80 (called by train.py:30) holds model.py:51 and model.py:52.
        parents = dict(query(out, "SELECT c.fqn, p.fqn FROM modules c JOIN modules p ON p.id = c.parent_id"))
        self.assertEqual(parents["train.py:30/model.py:80"], "train.py:30")
        # An allocation in the outer forward itself (executing model.py:81) is the outer module's.
        self.assertEqual(expected_module(stack(("/home/u/model.py", 81))), "train.py:30")
        self.assertIn("train.py:30", want[0]["by_module"])
        # One rank per device, the hook range on its record_function lane, the summary in meta.
        self.assertEqual(sorted(r for (r,) in query(out, "SELECT rank FROM ranks")), [0, 1])
        self.assertEqual(query(out, "SELECT count(*) FROM ranges WHERE rank = 1 AND kind = 1")[0][0], 1)
        meta = dict(query(out, "SELECT key, value FROM meta WHERE key LIKE 'snapshot.%'"))
        self.assertEqual(meta["snapshot.device0.ooms"], "1")
        self.assertEqual(meta["snapshot.device0.reserved_bytes"], str(20 << 20))
        self.assertEqual(meta["snapshot.device1.allocated_bytes"], str(12 << 20))
        # allocator_settings' scalars (not the nested roundup_power2_divisions dict).
        self.assertEqual(meta["snapshot.allocator.max_split_size"], "-1")
        self.assertEqual(meta["snapshot.allocator.expandable_segments"], "False")
        self.assertEqual(meta["snapshot.allocator.PYTORCH_CUDA_ALLOC_CONF"], "")
        self.assertNotIn("snapshot.allocator.roundup_power2_divisions", meta)
        # The clock: time_us are unix-epoch µs; the first one is the profile's time 0.
        origin = dict(query(out, "SELECT key, value FROM meta"))["time_origin_unix_ns"]
        self.assertEqual(int(origin), T0 * 1000)

    def test_every_protocol_gives_the_same_profile(self):
        snap = synthetic_snapshot()
        snap["external_annotations"] = []  # modules by frames alone, as expected() computes them
        rows = []
        for proto in (2, 3, 4, 5):
            out = self.import_snapshot(snap, "p%d" % proto, protocol=proto)
            rows.append(query(out, "SELECT e.rank, e.time_ns, e.address, e.bytes, e.category, m.fqn FROM memory_events e"
                                   " LEFT JOIN modules m ON m.id = e.module_id ORDER BY e.id"))
            self.check_against_dict(snap, out)
        for r in rows[1:]:
            self.assertEqual(r, rows[0])

    def test_bytes_are_the_allocators_blocks_as_max_memory_allocated_counts_them(self):
        # Figures by hand from CUDACachingAllocator's rules. Segment A (20 MiB): a request of 19 MiB
        # + 100 B rounds to 19 MiB + 512; the 1 MiB - 512 left is not split off: the block is all
        # 20 MiB. Segment B (20 MiB): 8 MiB leaves 12 MiB, split: 8 MiB. 700 B: small pool, 1,024.
        A, B, mib = 0x7000_0000_0000, 0x7000_0200_0000, 1 << 20
        trace = [{"action": "segment_alloc", "addr": A, "size": 20 * mib, "stream": 0, "time_us": T0},
                 {"action": "alloc", "addr": A, "size": 19 * mib + 100, "stream": 0, "time_us": T0 + 1},
                 {"action": "segment_alloc", "addr": B, "size": 20 * mib, "stream": 0, "time_us": T0 + 2},
                 {"action": "alloc", "addr": B, "size": 8 * mib, "stream": 0, "time_us": T0 + 3},
                 {"action": "alloc", "addr": B + 8 * mib, "size": 700, "stream": 0, "time_us": T0 + 4}]

        def block(addr, size, requested):
            return {"address": addr, "size": size, "requested_size": requested, "state": "active_allocated"}

        def snapshot(settings, a_block=20 * mib):
            segments = [{"device": 0, "address": A, "total_size": 20 * mib, "stream": 0, "segment_type": "large",
                         "blocks": [block(A, a_block, 19 * mib + 100)]},
                        {"device": 0, "address": B, "total_size": 20 * mib, "stream": 0, "segment_type": "large",
                         "blocks": [block(B, 8 * mib, 8 * mib), block(B + 8 * mib, 1024, 700)]}]
            return {"segments": segments, "device_traces": [trace], "allocator_settings": settings}

        def figures(name, snap):
            out = self.import_snapshot(snap, name)
            sizes = [b for (b,) in query(out, "SELECT bytes FROM memory_events WHERE bytes > 0 ORDER BY time_ns")]
            meta = dict(query(out, "SELECT key, value FROM meta WHERE key LIKE 'snapshot.device0.block%'"))
            return sizes, meta

        default = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "expandable_segments": False}
        sizes, meta = figures("default", snapshot(default))
        self.assertEqual(sizes, [20 * mib, 8 * mib, 1024])
        self.assertEqual(meta, {"snapshot.device0.block_sizes": "allocator blocks",
                                "snapshot.device0.block_sizes_checked": "3", "snapshot.device0.block_sizes_differing": "0"})
        # The snapshot's own blocks check the figures: one that disagrees is counted, not hidden.
        _, meta = figures("disagrees", snapshot(default, a_block=19 * mib + 512))
        self.assertEqual(meta["snapshot.device0.block_sizes_differing"], "1")
        # Expandable segments have no fixed end: rounding only.
        sizes, meta = figures("expandable", snapshot(dict(default, expandable_segments=True)))
        self.assertEqual(sizes, [19 * mib + 512, 8 * mib, 1024])
        self.assertEqual(meta["snapshot.device0.block_sizes"], "allocator blocks (512-B rounding)")
        # Settings that change the rounding, or no settings (not the allocator's own history): as traced.
        for name, settings in (("power2", dict(default, PYTORCH_CUDA_ALLOC_CONF="roundup_power2_divisions:4")),
                               ("no_settings", None)):
            snap = snapshot(settings)
            if settings is None:
                del snap["allocator_settings"]
            sizes, meta = figures(name, snap)
            self.assertEqual(sizes, [19 * mib + 100, 8 * mib, 700], name)
            self.assertEqual(meta["snapshot.device0.block_sizes"], "requested", name)

    def test_snapshot_without_a_trace_is_the_blocks_at_snapshot_time(self):
        snap = synthetic_snapshot()
        del snap["device_traces"]
        del snap["external_annotations"]
        out = self.import_snapshot(snap)
        want, _ = self.check_against_dict(snap, out)
        self.assertEqual(want[0]["peak"], (1 << 20) + (2 << 20) + (5 << 19) + 512 + (2 << 20))

    def test_made_by_torch_from_a_cpu_run(self):
        try:
            import torch
            from torch.cuda._memory_viz import _profile_to_snapshot
        except Exception as e:  # no torch in this environment
            self.skipTest("torch not importable: %r" % e)
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(16, 32)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True,
                                    record_shapes=True, with_stack=True) as prof:
            for _ in range(2):
                model(x).sum().backward()
                opt.step()
                opt.zero_grad()
        snap = _profile_to_snapshot(prof)
        out = self.import_snapshot(snap, "torch_made")
        want, info = self.check_against_dict(snap, out)
        fqns = {f for (f,) in query(out, "SELECT fqn FROM modules")}
        self.assertLessEqual({"Sequential_0", "Sequential_0.Linear_0", "Sequential_0.Linear_1"}, fqns)
        classes = dict(query(out, "SELECT fqn, class_name FROM modules"))
        self.assertEqual(classes["Sequential_0.Linear_0"], "Linear")
        # The memory profiler's categories carry over (activations of the forward, gradients).
        cats = {k for p in info["memory_peaks"] for k, v in p["by_category"].items() if v}
        self.assertIn("activation", cats)

    def test_hostile_and_damaged_pickles_are_refused_and_write_nothing(self):
        marker = os.path.join(tempfile.gettempdir(), "shardscope-snapshot-pwned")
        if os.path.exists(marker):
            os.remove(marker)
        snap = synthetic_snapshot()
        snap["device_traces"][0].append({"action": "alloc", "addr": 1, "size": 1, "frames": Evil()})
        cases = {
            "evil": (pickle.dumps(snap, protocol=4), "STACK_GLOBAL"),  # written, never loaded here
            "evil_p2": (pickle.dumps(Evil(), protocol=2), "GLOBAL"),
            "truncated": (pickle.dumps(synthetic_snapshot(), protocol=4)[:-100], "truncated"),
            "not_a_snapshot": (pickle.dumps({"hello": [1, 2]}, protocol=4), "not a PyTorch memory snapshot"),
            "wrong_type": (pickle.dumps({"segments": [{"device": 0, "total_size": "big"}]}, protocol=4), "'total_size' is a str"),
            "negative_size": (pickle.dumps({"device_traces": [[{"action": "alloc", "addr": 1, "size": -5}]]}, protocol=4),
                              "'size' is negative"),
        }
        for name, (blob, message) in cases.items():
            src = os.path.join(self.dir, name + ".pickle")
            with open(src, "wb") as f:
                f.write(blob)
            out = os.path.join(self.dir, name + ".ssdb")
            r = run("import", "-q", src, "-o", out)
            self.assertEqual(r.returncode, 2, name + ": " + r.stderr)
            self.assertIn(message, r.stderr, name)
            self.assertFalse(os.path.exists(out), name)
        self.assertFalse(os.path.exists(marker), "the pickle's os.system ran")


if __name__ == "__main__":
    unittest.main()
