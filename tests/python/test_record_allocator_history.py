"""`shardscope record --memory history` without a GPU: per-tensor memory from the caching allocator's
history, attributed to the hooks' module ranges, the tensor facts and the allocator's FSDP ranges.

On a CUDA rank, profiler/python/shardscope/_cuda_memory.py turns on
torch.cuda.memory._record_memory_history at CUDA's lazy init and dumps the snapshot at exit; record
then reads it (profiler/collector/launcher/allocator_history.h). This machine has no CUDA, so the
job below runs a real model on CPU under record (real hooks, real sidecar ranges, real tensor facts
from the optimizer hooks) and hands _cuda_memory a stand-in for torch.cuda's three calls: the lazy
init queue, _record_memory_history and _dump_snapshot, which pickles the snapshot the job built as
torch builds one (device_traces entries with unix-µs times at the moments the job allocated
inside each module, external_annotations for an FSDP range). Every expected module, category and
size is stated by the job's own code below; the test checks what record made of it."""
import _torch_or_skip  # noqa: F401

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

import fsdp2_run as run

JOB = textwrap.dedent(r'''
    import os, pickle, sys, time
    import torch
    import torch.nn as nn
    from shardscope import _cuda_memory, hooks

    entries, annotations, queued = [], [], []
    calls = {}

    def now_us():
        time.sleep(0.002)  # events 2 ms apart: no two share a microsecond
        return time.time_ns() // 1000

    def alloc(addr, size):
        entries.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": now_us()})

    def free(addr, size):
        t = now_us()
        entries.append({"action": "free_requested", "addr": addr, "size": size, "stream": 0, "time_us": t})
        entries.append({"action": "free_completed", "addr": addr, "size": size, "stream": 0, "time_us": t})

    class FakeMemory:  # torch.cuda.memory's history calls
        @staticmethod
        def _record_memory_history(**kwargs):
            calls["record"] = kwargs

        @staticmethod
        def _dump_snapshot(path):
            with open(path, "wb") as f:
                pickle.dump({"segments": [], "device_traces": [entries], "external_annotations": annotations}, f)

    class FakeCuda:
        memory = FakeMemory
        initialized = False
        @staticmethod
        def _lazy_call(fn):
            queued.append(fn)
        @classmethod
        def is_initialized(cls):
            return cls.initialized

    class FakeTorch:
        cuda = FakeCuda

    ACT, TMP, AG, STATE = 0x7000, 0x7100, 0x7200, 0x7300

    class Block(nn.Module):
        def __init__(self, name):
            super().__init__()
            self.name = name
            self.lin = nn.Linear(16, 16)

        def forward(self, x):
            if self.name == "a":  # an activation: made in forward, freed in backward
                alloc(ACT, 8192)
            else:  # a temporary, and an FSDP all-gather buffer inside FSDP's own range
                alloc(TMP, 1024)
                free(TMP, 1024)
                annotations.append({"name": "FSDP::all_gather_copy_in", "stage": "START", "device": 0, "time_us": now_us()})
                alloc(AG, 2048)
                annotations.append({"name": "FSDP::all_gather_copy_in", "stage": "END", "device": 0, "time_us": now_us()})
                free(AG, 2048)
            return self.lin(x)

    class Sgd(torch.optim.SGD):
        def step(self, closure=None):  # inside the hooks' optimizer range
            if not self.state_made:
                alloc(STATE, 4096)
                self.state_made = True
            return super().step(closure)

    tracker = hooks._global.tracker  # installed by record's sitecustomize at `import torch`
    tracker.backend = _cuda_memory.start_if_asked(os.environ["SHARDSCOPE_OUTPUT_DIR"], tracker.backend, FakeTorch)
    assert "record" not in calls and len(queued) == 1, "the history must wait for CUDA's lazy init"
    FakeCuda.initialized = True
    queued.pop()()  # CUDA initialises: the history starts
    assert calls["record"]["enabled"] == "all" and calls["record"]["context"] is None, calls

    model = nn.Sequential()
    model.add_module("a", Block("a"))
    model.add_module("b", Block("b"))
    params = {n: p for n, p in model.named_parameters()}
    weights = {n: p.untyped_storage().data_ptr() for n, p in params.items() if n.endswith("weight")}
    for n, addr in weights.items():  # "model.to(device)": the parameters before any module range
        alloc(addr, 1024)
    opt = Sgd(model.parameters(), lr=0.1)
    opt.state_made = False
    for step in range(2):
        loss = model(torch.randn(4, 16)).pow(2).mean()
        loss.backward()
        free(ACT, 8192)  # after backward: its last user is gone
        opt.step()
        opt.zero_grad()
    with open(os.path.join(os.environ["SHARDSCOPE_OUTPUT_DIR"], "..", "weights.txt"), "w") as f:
        for n, addr in sorted(weights.items()):
            f.write("%s %d\n" % (n, addr))
''')


class RecordAllocatorHistory(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_history_")
        job = os.path.join(cls.dir, "job.py")
        with open(job, "w") as f:
            f.write(JOB)
        cls.profile = os.path.join(cls.dir, "out", "run.ssdb")
        os.makedirs(os.path.dirname(cls.profile))
        env = dict(os.environ, SHARDSCOPE_CPU_TRACE="0", OMP_NUM_THREADS="1")
        p = subprocess.run([run.SHARDSCOPE, "record", "--memory", "history", "-o", cls.profile, "--", sys.executable, job],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        cls.output = p.stdout
        if p.returncode != 0:
            raise AssertionError("record failed (%d):\n%s" % (p.returncode, p.stdout[-4000:]))
        with open(os.path.join(cls.dir, "out", "weights.txt")) as f:
            cls.weights = {n: int(a) for n, a in (line.split() for line in f)}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def events(self):
        return run.query(self.profile, "SELECT m.time_ns, m.address, m.bytes, e.label, md.fqn FROM memory_events m "
                         "JOIN enums e ON e.type = 'memory_category' AND e.value = m.category "
                         "LEFT JOIN modules md ON md.id = m.module_id ORDER BY m.time_ns, m.id")

    def allocations(self, address):
        return [(b, cat, fqn) for _, a, b, cat, fqn in self.events() if a == address and b > 0]

    def test_the_history_replaces_nothing_the_job_sees_and_is_used(self):
        self.assertNotIn("warning", self.output)
        meta = dict(run.query(self.profile, "SELECT key, value FROM meta WHERE key LIKE 'rank0.collector.%'"))
        self.assertEqual(meta["rank0.collector.memory_source"], "allocator-history")
        # 2 weights; per step an activation, a temporary and an all-gather buffer with their frees; 1 state.
        self.assertEqual(meta["rank0.collector.history.events"], str(2 + 2 * 6 + 1))
        self.assertGreaterEqual(int(meta["rank0.collector.history.tensor_facts"]), 4)  # weights and biases
        self.assertTrue(all(t >= 0 for t, *_ in self.events()), "the clock starts at the first allocation")

    def test_parameters_take_the_facts_module_and_category(self):
        for name, addr in self.weights.items():
            module = name[: -len(".weight")]  # "a.lin": the module that holds the parameter
            self.assertEqual(self.allocations(addr), [(1024, "unsharded_parameter", module)], name)

    def test_forward_allocations_belong_to_the_running_module(self):
        self.assertEqual(self.allocations(0x7000), [(8192, "activation", "a")] * 2)
        self.assertEqual(self.allocations(0x7100), [(1024, "temporary", "b")] * 2)

    def test_the_allocators_fsdp_range_gives_the_category(self):
        self.assertEqual(self.allocations(0x7200), [(2048, "all_gather_buffer", "b")] * 2)

    def test_optimizer_state(self):
        self.assertEqual(self.allocations(0x7300), [(4096, "optimizer_state", None)])

    def test_frees_and_peak(self):
        events = self.events()
        for addr in (0x7000, 0x7100, 0x7200):  # every free belongs to its allocation
            frees = [(b, cat, fqn) for _, a, b, cat, fqn in events if a == addr and b < 0]
            self.assertEqual([(-b, cat, fqn) for b, cat, fqn in frees], self.allocations(addr))
        level = peak = 0
        for _, _, b, _, _ in events:
            level += b
            peak = max(peak, level)
        # Peak: in step 1's forward, both weights, the optimizer state made in step 0, a's
        # activation and b's all-gather buffer.
        self.assertEqual(peak, 2 * 1024 + 4096 + 8192 + 2048)
        self.assertEqual(level, 2 * 1024 + 4096)  # weights and the optimizer state live at the end


BAD_JOB = textwrap.dedent(r'''
    import os
    import torch
    from shardscope import _cuda_memory, _rank

    model = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    stem = os.path.join(os.environ["SHARDSCOPE_OUTPUT_DIR"], _rank.stem(_rank.identity()))
    with open(stem + _cuda_memory.SNAPSHOT_SUFFIX, "wb") as f:
        f.write(b"\x80\x04 a rank killed while dumping its snapshot")
''')


class DamagedHistory(unittest.TestCase):
    def test_a_damaged_snapshot_leaves_the_rank_as_recorded(self):
        d = tempfile.mkdtemp(prefix="ss_history_bad_")
        try:
            job = os.path.join(d, "job.py")
            with open(job, "w") as f:
                f.write(BAD_JOB)
            profile = os.path.join(d, "run.ssdb")
            env = dict(os.environ, SHARDSCOPE_CPU_TRACE="0", OMP_NUM_THREADS="1")
            p = subprocess.run([run.SHARDSCOPE, "record", "--memory", "history", "-o", profile, "--", sys.executable, job],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout)
            self.assertRegex(p.stdout, r"warning: shardscope_rank\S*\.cuda_memory\.pickle: .*that rank is merged without it")
            self.assertEqual(run.query(profile, "SELECT count(*) FROM steps"), [(1,)])
            self.assertEqual(run.query(profile, "SELECT count(*) FROM memory_events"), [(0,)])
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
