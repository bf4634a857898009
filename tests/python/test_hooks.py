"""The module hooks on CPU with Debian's torch: names, nesting, phases, checkpointing, optimizer
steps, module sizes, global install through sitecustomize."""
import _torch_or_skip  # noqa: F401  (exits 77 without torch)

import gc
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import torch
import torch.nn as nn
import torch.utils.checkpoint as checkpoint

import shardscope
from shardscope import hooks
from shardscope._names import parse_message
from shardscope.backends import RecordingBackend

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.normpath(os.path.join(HERE, "..", "..", "profiler", "python"))


class Block(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.attn = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        return x + self.mlp(torch.relu(self.attn(x)))


class Model(nn.Module):
    def __init__(self, layers=2, ckpt=False, keyword_calls=False):
        super().__init__()
        self.embed = nn.Embedding(16, 8)
        self.layers = nn.ModuleList([Block() for _ in range(layers)])
        self.head = nn.Linear(8, 16, bias=False)
        self.ckpt = ckpt
        self.keyword_calls = keyword_calls  # layer(x=x), as diffusers calls its blocks

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = checkpoint.checkpoint(layer, x) if self.ckpt else layer(x=x) if self.keyword_calls else layer(x)
        return self.head(x).float().pow(2).mean()


def run_step(model, backend, ckpt_steps=1):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    handle = shardscope.annotate(model, backend=backend, optimizer=opt)
    try:
        for _ in range(ckpt_steps):
            loss = model(torch.randint(0, 16, (2, 5)))
            loss.backward()
            opt.step()
            opt.zero_grad()
    finally:
        handle.remove()


def by_phase(backend, phase):
    return [m[7:] for m in backend.messages() if m.startswith("ss:%s:" % phase)]


def contains(outer, inner):
    return outer[2] <= inner[2] and inner[3] <= outer[3]


class HookTests(unittest.TestCase):
    def test_forward_names_and_order(self):
        b = RecordingBackend()
        run_step(Model(), b)
        fwd = by_phase(b, "fwd")
        self.assertEqual(
            fwd,
            ["", "embed", "layers.0", "layers.0.attn", "layers.0.mlp", "layers.0.mlp.0", "layers.0.mlp.1",
             "layers.0.mlp.2", "layers.1", "layers.1.attn", "layers.1.mlp", "layers.1.mlp.0", "layers.1.mlp.1",
             "layers.1.mlp.2", "head"])

    def test_forward_ranges_nest(self):
        b = RecordingBackend()
        run_step(Model(), b)
        r = {x[0]: x for x in b.ranges}
        self.assertTrue(contains(r["ss:fwd:"], r["ss:fwd:layers.1"]))
        self.assertTrue(contains(r["ss:fwd:layers.1"], r["ss:fwd:layers.1.mlp.2"]))
        self.assertFalse(contains(r["ss:fwd:layers.0"], r["ss:fwd:layers.1"]))

    def test_a_block_called_with_its_input_as_a_keyword(self):
        # Its input's gradient ends its backward range, as for a positional input: before the
        # block below it begins (it had run to the end of the backward pass, over layers.0's).
        for keyword_calls in (False, True):
            b = RecordingBackend()
            run_step(Model(keyword_calls=keyword_calls), b)
            r = {x[0]: x for x in b.ranges}
            self.assertLessEqual(r["ss:bwd:layers.1"][3], r["ss:bwd:layers.0"][2], keyword_calls)
            self.assertFalse(contains(r["ss:bwd:layers.1"], r["ss:bwd:layers.0.attn"]), keyword_calls)

    def test_backward_phase_reverse_order(self):
        b = RecordingBackend()
        run_step(Model(), b)
        bwd = by_phase(b, "bwd")
        # Every module whose output needs a gradient gets one backward range, in reverse layer order.
        self.assertIn("layers.0.attn", bwd)
        self.assertLess(bwd.index("layers.1"), bwd.index("layers.0"))
        self.assertLess(bwd.index("head"), bwd.index("layers.1"))
        r = {x[0]: x for x in b.ranges}
        self.assertTrue(contains(r["ss:bwd:layers.1"], r["ss:bwd:layers.1.attn"]))
        # A module returning its last child's output (mlp, a Sequential) shares that tensor with the
        # child: its backward range must begin first, so that it contains the child's (the innermost
        # range, which gets the kernels, is the one that began last).
        self.assertTrue(contains(r["ss:bwd:layers.1.mlp"], r["ss:bwd:layers.1.mlp.2"]))
        self.assertTrue(contains(r["ss:bwd:layers.1.mlp"], r["ss:bwd:layers.1.mlp.0"]))
        # Backward starts after forward ended.
        self.assertGreater(r["ss:bwd:layers.1"][2], r["ss:fwd:"][3])
        self.assertEqual(by_phase(b, "rcp"), [])

    def test_a_module_returning_its_input_ends_at_once(self):
        model = nn.Sequential(nn.Linear(4, 4), nn.Identity(), nn.Linear(4, 4))
        b = RecordingBackend()
        handle = shardscope.annotate(model, backend=b)
        model(torch.randn(2, 4)).sum().backward()
        handle.remove()
        r = {x[0]: x for x in b.ranges}
        # Identity's input is its output: its range ends when that gradient arrives, before the first
        # Linear's backward, not at the end of the backward pass.
        self.assertLessEqual(r["ss:bwd:1"][3], r["ss:bwd:0"][2])
        self.assertTrue(contains(r["ss:bwd:"], r["ss:bwd:2"]))

    def test_activation_checkpointing_is_recompute(self):
        b = RecordingBackend()
        run_step(Model(ckpt=True), b)
        rcp = by_phase(b, "rcp")
        self.assertEqual(sorted(rcp), sorted(["layers.0", "layers.0.attn", "layers.0.mlp", "layers.0.mlp.0",
                                              "layers.0.mlp.1", "layers.0.mlp.2", "layers.1", "layers.1.attn",
                                              "layers.1.mlp", "layers.1.mlp.0", "layers.1.mlp.1", "layers.1.mlp.2"]))
        # Recompute of layers.1 precedes its backward, which precedes layers.0's recompute.
        order = b.messages()
        self.assertLess(order.index("ss:rcp:layers.1"), order.index("ss:bwd:layers.1"))
        self.assertLess(order.index("ss:bwd:layers.1"), order.index("ss:rcp:layers.0"))
        # The recomputed graph still gives backward ranges for the checkpointed modules.
        self.assertIn("layers.0.attn", by_phase(b, "bwd"))

    def test_checkpointing_with_early_stop_leaks_nothing(self):
        # Non-reentrant checkpointing stops a recomputation by raising inside the module once the
        # tensors backward needs exist; the hooks must close that range and drop the inputs they
        # held, or every step's graph stays alive (found on an H200: 29.6 GB recorded vs 5.9 GB).
        # Both ways of hooking: per model (annotate) and global (record's install), whose
        # always_call hook torch calls without the keyword arguments after the forward raised.
        def live_elements_per_step(with_hooks):
            torch.manual_seed(0)
            model = Model(layers=3)
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            b = RecordingBackend()
            handle = (None if not with_hooks else shardscope.annotate(model, backend=b, optimizer=opt)
                      if with_hooks == "annotate" else hooks.install(b))
            if with_hooks == "install":  # the loop never calls the model itself: name it as a root
                handle.tracker.register_root(model, name="")
            counts = []
            try:
                for _ in range(4):
                    x = model.embed(torch.randint(0, 16, (4, 6)))
                    for layer in model.layers:
                        x = checkpoint.checkpoint(layer, x, use_reentrant=False)
                    model.head(x).pow(2).mean().backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                    del x
                    gc.collect()
                    counts.append(sum(o.numel() for o in gc.get_objects() if isinstance(o, torch.Tensor)))
            finally:
                if handle is not None:
                    handle.remove() if with_hooks == "annotate" else hooks.uninstall()
            return counts, b

        without, _ = live_elements_per_step(False)
        for way in ("annotate", "install"):
            with_hooks, b = live_elements_per_step(way)
            self.assertEqual(with_hooks, without, way)
            self.assertEqual(b.open, {}, way)  # every recompute range was closed
            self.assertEqual(by_phase(b, "rcp").count("layers.2"), 4, way)

    def test_optimizer_steps_are_numbered(self):
        b = RecordingBackend()
        run_step(Model(), b, ckpt_steps=3)
        self.assertEqual([m for m in b.messages() if m.startswith("ss:opt:")], ["ss:opt:0", "ss:opt:1", "ss:opt:2"])
        for m in b.messages():
            self.assertIsNotNone(parse_message(m), m)

    def test_no_ranges_after_remove(self):
        b = RecordingBackend()
        m = Model()
        handle = shardscope.annotate(m, backend=b)
        handle.remove()
        m(torch.randint(0, 16, (2, 5))).backward()
        self.assertEqual(b.ranges, [])


    def test_the_jobs_own_tensor_hooks_still_work(self):
        # The backward hooks go into the tensors' hook dicts without a handle (hooks._grad_events):
        # the job's hooks on the same tensors must still run in order, change the gradient, and be
        # removable by their handles, and the gradients must be those of the job without ShardScope.
        def grads(with_hooks):
            torch.manual_seed(0)
            model = Model()
            b = RecordingBackend()
            handle = shardscope.annotate(model, backend=b) if with_hooks else None
            seen = []
            x = model.layers[0].attn(model.embed(torch.randint(0, 16, (2, 5))))
            kept = x.register_hook(lambda g: seen.append("kept") or g * 2)
            removed = x.register_hook(lambda g: seen.append("removed"))
            removed.remove()
            model.head(model.layers[1](x)).pow(2).mean().backward()
            if handle is not None:
                handle.remove()
            return seen, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}, b

        seen, with_hooks, b = grads(True)
        self.assertEqual(seen, ["kept"])
        _, without, _ = grads(False)
        self.assertEqual(sorted(with_hooks), sorted(without))
        self.assertEqual(len(without), 10)  # embed 1, layers.0.attn 2, layers.1 6, head 1 (layers.0.mlp unused)
        for name, g in with_hooks.items():
            self.assertTrue(torch.equal(g, without[name]), name)
        # The doubled gradient went through the ranges too: layers.0.attn's backward was opened
        # and closed (its input, the embedding's output, needs no grad: closed at the end).
        self.assertIn("layers.0.attn", by_phase(b, "bwd"))
        self.assertIn("layers.1", by_phase(b, "bwd"))

    def test_a_tensor_subclass_gets_the_real_register_hook(self):
        calls = []

        class Logged(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if func is torch.Tensor.register_hook:
                    calls.append("register_hook")
                return super().__torch_function__(func, types, args, kwargs or {})

        b = RecordingBackend()
        tracker = hooks.Tracker(b)
        t = (torch.ones(3, requires_grad=True) * 2).as_subclass(Logged)
        hooks._grad_events(t, tracker).opens.append(hooks._BackwardState(0, "sub"))
        t.sum().backward()
        self.assertEqual(calls, ["register_hook"])
        self.assertEqual(b.messages(), ["ss:bwd:sub"])
    def test_module_sizes(self):
        m = Model()
        count, nbytes = hooks.module_params(m.layers[0])
        # Linear(8,8) + Linear(8,16) + Linear(16,8), weights and biases, float32
        expected = (8 * 8 + 8) + (8 * 16 + 16) + (16 * 8 + 8)
        self.assertEqual(count, expected)
        self.assertEqual(nbytes, 4 * expected)
        self.assertEqual(hooks.fsdp_info(m.layers[0]), (False, ""))


class ModuleHooksFollowTheCaptureWindow(unittest.TestCase):
    """install()'s global module hooks are removed outside `record --steps A:B`'s window once the
    model is named, and are back for the window (_window.CaptureWindow)."""

    def run_window(self, first, end, steps=6):
        from shardscope import _window

        b = RecordingBackend()
        handle = hooks.install(b)
        model = Model()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        window = _window.CaptureWindow(first, end, handle.tracker, None, None)
        handle.tracker.step_end_callbacks.append(window.on_step_end)
        on = []
        mm = torch.nn.modules.module
        try:
            for _ in range(steps):
                model(torch.randint(0, 16, (2, 5))).backward()
                opt.step()
                opt.zero_grad()
                on.append((handle.tracker.module_hooks.on, len(mm._global_forward_pre_hooks),
                           getattr(torch.nn.Module.__call__, "_shardscope", False)))
        finally:
            hooks.uninstall()
        self.assertEqual(len(mm._global_forward_pre_hooks), 0)
        self.assertEqual(len(mm._global_forward_hooks), 0)
        self.assertFalse(getattr(torch.nn.Module.__call__, "_shardscope", False))
        return b, on

    def test_a_later_window(self):
        b, on = self.run_window(2, 4)
        # After each step: off once step 0 named the model, on for steps 2 and 3, off after them.
        self.assertEqual([o[0] for o in on], [False, True, True, False, False, False])
        self.assertEqual(on, [(x, int(x), x) for x, _, _ in on])  # the hooks and the __call__ wrapper both
        # Module ranges for the window's two steps only, fully named (the names from step 0 kept).
        self.assertEqual(by_phase(b, "fwd").count("layers.1.mlp.2"), 2)
        self.assertEqual(by_phase(b, "bwd").count("layers.0.attn"), 2)
        self.assertEqual([m for m in b.messages() if m.startswith("ss:opt:")], ["ss:opt:%d" % n for n in range(6)])

    def test_the_default_window_from_step_0(self):
        b, on = self.run_window(0, 3)
        self.assertEqual([o[0] for o in on], [True, True, False, False, False, False])
        self.assertEqual(by_phase(b, "fwd").count("head"), 3)

    def test_every_step(self):
        _, on = self.run_window(0, None)
        self.assertTrue(all(o[0] for o in on))

    def test_another_librarys_call_wrapper_over_ours(self):
        # A library that wraps Module.__call__ after us: switching our hooks off cannot take our
        # wrapper out from under its, and switching them on must not add ours a second time.
        handle = hooks.install(RecordingBackend())
        ours = torch.nn.Module.__call__
        def theirs(self, *args, **kwargs):
            return ours(self, *args, **kwargs)
        theirs.__wrapped__ = ours
        try:
            torch.nn.Module.__call__ = theirs
            handle.tracker.module_hooks.switch(False)
            handle.tracker.module_hooks.switch(True)
            self.assertIs(torch.nn.Module.__call__, theirs)
        finally:
            hooks.uninstall()
            torch.nn.Module.__call__ = ours.__wrapped__  # as the library would undo its own
        self.assertFalse(getattr(torch.nn.Module.__call__, "_shardscope", False))


class StepsOfLoopsWithSeveralOptimizers(unittest.TestCase):
    """A training step ends with the optimizer that steps last in the job's iteration
    (shardscope/_step_cycle.py): each optimizer step had ended one, so a loop with two optimizers
    counted two steps an iteration (one an optimizer call alone), and `simulate` refused its profile
    ("no forward module range of an FSDP unit lies inside a step")."""

    def run_loop(self, make_optimizers, iterations=4, skip=lambda it, opt_index: False):
        b = RecordingBackend()
        handle = hooks.install(b)
        ends = []
        handle.tracker.step_end_callbacks.append(lambda n, end_ns, opts: ends.append((n, [id(o) for o in opts])))
        model = Model()
        optimizers = make_optimizers(model)
        try:
            for it in range(iterations):
                model(torch.randint(0, 16, (2, 5))).backward()
                for k, opt in enumerate(optimizers):
                    if not skip(it, k):
                        opt.step()
                for opt in optimizers:
                    opt.zero_grad()
        finally:
            hooks.uninstall()
        return [m for m in b.messages() if m.startswith("ss:opt:")], ends, optimizers

    @staticmethod
    def two(model):  # the matrices and the rest, as Muon + AdamW loops split them
        matrices = [p for p in model.parameters() if p.ndim == 2]
        rest = [p for p in model.parameters() if p.ndim != 2]
        return [torch.optim.SGD(matrices, lr=0.01), torch.optim.AdamW(rest, lr=0.01)]

    def test_one_optimizer_ends_every_step(self):
        ranges, ends, (opt,) = self.run_loop(lambda m: [torch.optim.SGD(m.parameters(), lr=0.01)])
        self.assertEqual(ranges, ["ss:opt:%d" % n for n in range(4)])
        self.assertEqual(ends, [(n, [id(opt)]) for n in range(4)])

    def test_two_optimizers_one_step_an_iteration(self):
        ranges, ends, (first, second) = self.run_loop(self.two)
        # The second optimizer of the first iteration, seen after step 0 ended, belongs to it; from
        # then on a step ends with the second one.
        self.assertEqual(ranges, ["ss:opt:%d" % n for n in range(4) for _ in range(2)])
        self.assertEqual(ends, [(0, [id(first)]), (1, [id(second), id(first)]), (2, [id(first), id(second)]),
                                (3, [id(first), id(second)])])

    def test_the_last_optimizer_replaced(self):
        # The second optimizer steps no more from iteration 2 on (a new one, or none, in its place):
        # steps end late twice, then with the first one at once.
        ranges, ends, _ = self.run_loop(self.two, iterations=6, skip=lambda it, k: it >= 2 and k == 1)
        self.assertEqual([n for n, _ in ends], [0, 1, 2, 3, 4, 5])
        self.assertEqual(ranges, ["ss:opt:0", "ss:opt:0", "ss:opt:1", "ss:opt:1"] + ["ss:opt:%d" % n for n in range(2, 6)])

    def test_a_container_stepping_its_optimizers_counts_once(self):
        # torchtitan's OptimizersContainer: an Optimizer whose step() steps each of its own.
        class Container(torch.optim.Optimizer):
            def __init__(self, optimizers):
                self.optimizers = optimizers
                torch.optim.Optimizer.__init__(self, [p for o in optimizers for g in o.param_groups for p in g["params"]], {})

            def step(self, closure=None):
                for o in self.optimizers:
                    o.step()

        ranges, ends, (container,) = self.run_loop(lambda m: [Container(self.two(m))])
        self.assertEqual(ranges, ["ss:opt:%d" % n for n in range(4)])
        inner = container.optimizers
        self.assertEqual(ends, [(n, [id(container)] + [id(o) for o in inner]) for n in range(4)])

    def test_the_last_optimizer_skipped_once(self):
        # (GradScaler skips a step with inf gradients.) Iteration 2 has no second step: the first
        # optimizer stepping again in iteration 3 tells that step 2 had ended with it; the steps
        # after it end with the second again.
        ranges, ends, _ = self.run_loop(self.two, iterations=5, skip=lambda it, k: it == 2 and k == 1)
        self.assertEqual([n for n, _ in ends], [0, 1, 2, 3, 4])
        self.assertEqual(ranges, ["ss:opt:0", "ss:opt:0", "ss:opt:1", "ss:opt:1", "ss:opt:2", "ss:opt:3",
                                  "ss:opt:3", "ss:opt:4", "ss:opt:4"])


class SidecarAndAutostartTests(unittest.TestCase):
    def test_sitecustomize_installs_global_hooks_and_writes_sidecar(self):
        script = textwrap.dedent("""
            import torch, torch.nn as nn
            m = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            for _ in range(2):
                m(torch.randn(3, 4)).sum().backward()
                opt.step()
        """)
        with tempfile.TemporaryDirectory() as out:
            env = dict(os.environ)
            env["PYTHONPATH"] = os.path.join(PYDIR, "shardscope", "_site") + ":" + PYDIR
            env["SHARDSCOPE_OUTPUT_DIR"] = out
            env["RANK"] = "3"
            env["LOCAL_RANK"] = "1"
            env.pop("SHARDSCOPE_COLLECTOR", None)
            p = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            files = sorted(os.listdir(out))
            # No GPU: the sidecar, and torch.profiler's CPU trace holding the same ranges.
            self.assertEqual(len(files), 2, files)
            self.assertRegex(files[0], r"^shardscope_rank3_lrank1_pid\d+\.kineto\.json$")
            self.assertRegex(files[1], r"^shardscope_rank3_lrank1_pid\d+\.modules\.tsv$")
            with open(os.path.join(out, files[0])) as f:
                trace = json.load(f)
            names = [e.get("name") for e in trace["traceEvents"] if e.get("cat") == "user_annotation"]
            self.assertEqual(names.count("ss:fwd:"), 2)
            self.assertEqual(names.count("ss:opt:1"), 1)
            # Tensor facts: the parameters' storages (4 tensors: two weights, two biases), once.
            facts = [n for n in names if n.startswith("ss:mem:unsharded_parameter:")]
            self.assertEqual(len(facts), 4, facts)
            memory = [e for e in trace["traceEvents"] if e.get("name") == "[memory]"]
            self.assertGreater(len(memory), 0)
            with open(os.path.join(out, files[1])) as f:
                lines = [l.rstrip("\n").split("\t") for l in f if not l.startswith("#")]
            modules = {l[1]: l for l in lines if l[0] == "module"}
            self.assertEqual(set(modules), {"", "0", "1", "2"})
            self.assertEqual(modules["0"][2], "Linear")
            self.assertEqual(int(modules["0"][3]), 20)
            self.assertEqual(int(modules[""][4]), 4 * (20 + 5))
            ranges = [l[4] for l in lines if l[0] == "range"]
            self.assertEqual(ranges.count("ss:fwd:"), 2)
            self.assertEqual(ranges.count("ss:bwd:0"), 2)
            self.assertIn("ss:opt:1", ranges)
            meta = {l[1]: l[2] for l in lines if l[0] == "meta"}
            self.assertEqual(meta["ranges"], "sidecar+kineto")
            self.assertEqual(meta["rank"], "3")

    def test_forked_child_does_not_duplicate_lines(self):
        from shardscope._sidecar import SidecarWriter

        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "s.modules.tsv")
            w = SidecarWriter(path)
            w.range(1, 10, 20, "ss:fwd:a")  # buffered, not yet written
            pid = os.fork()
            if pid == 0:
                w.range(2, 30, 40, "ss:fwd:child")
                w.close()
                os._exit(0)
            os.waitpid(pid, 0)
            w.close()
            with open(path) as f:
                lines = f.read().splitlines()
            self.assertEqual(lines, ["# shardscope-sidecar 1", "range\t1\t10\t20\tss:fwd:a"])

    def test_without_output_dir_nothing_happens(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.join(PYDIR, "shardscope", "_site") + ":" + PYDIR
        env.pop("SHARDSCOPE_OUTPUT_DIR", None)
        p = subprocess.run([sys.executable, "-c", "import sys; print('torch' in sys.modules)"], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "False")  # sitecustomize must not import torch itself


if __name__ == "__main__":
    unittest.main()
