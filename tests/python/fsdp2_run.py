"""Helpers for the tests that record real FSDP2 training on CPU (gloo, 2 ranks) with `shardscope record`."""
import os
import sqlite3
import subprocess
import sys

SOURCE_DIR = os.environ.get("SHARDSCOPE_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
SHARDSCOPE = os.environ.get("SHARDSCOPE_BIN", os.path.join(SOURCE_DIR, "build", "app", "shardscope"))
TRAIN = os.path.join(SOURCE_DIR, "scripts", "fsdp_train_sample.py")
sys.path.insert(0, os.path.join(SOURCE_DIR, "scripts"))


TRAIN_TP = os.path.join(SOURCE_DIR, "scripts", "fsdp_tp_train.py")


def torchrun(nproc, script, *train_args):
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=%d" % nproc,
            "--standalone", script, "--device", "cpu"] + list(train_args)


def record(out, *train_args, nproc=2, script=TRAIN, record_args=(), launcher=True):
    """Runs a trainer (default: the sample trainer) under `shardscope record` (with `record_args`,
    e.g. ["--steps", "3:6"]) with torchrun on CPU, or with `launcher=False` as a plain script that
    starts its ranks itself; returns its output."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    job = torchrun(nproc, script, *train_args) if launcher else [sys.executable, script, "--device", "cpu"] + list(train_args)
    cmd = [SHARDSCOPE, "record", "-o", out] + list(record_args) + ["--"] + job
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError("record failed (%d):\n%s" % (p.returncode, p.stdout[-4000:]))
    return p.stdout


def train(*train_args, nproc=2, script=TRAIN):
    """Runs a trainer with torchrun on CPU without ShardScope; returns its output."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    p = subprocess.run(torchrun(nproc, script, *train_args), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError("training failed (%d):\n%s" % (p.returncode, p.stdout[-4000:]))
    return p.stdout


def shardscope(*args):
    p = subprocess.run([SHARDSCOPE] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError("shardscope %s failed (%d): %s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def query(profile, sql, *params):
    db = sqlite3.connect("file:%s?mode=ro" % profile, uri=True)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def parameter_gradients_at_optimizer(profile, rank=0):
    """[bytes of the parameters' gradients live on the rank when each step's optimizer step starts],
    steps in order: the gradient blocks live then that outlive the step (zero_grad frees them in
    the next one, or never), each naming a module at its allocation (torchtitan's chunked loss's
    scalar gradients name none). A block whose free gloo's worker thread made, which the trace does not
    record, is freed by the importer at its step's last instant at the latest (lost_frees.h): not
    one (SimpleFSDP's reduce input of a norm weight, in some runs)."""
    def live(until):
        blocks = {}
        for row, address, nbytes, category, module in query(profile, "SELECT id, address, bytes, category, module FROM "
                                                             "memory_view WHERE rank = ? AND time_ns <= ? ORDER BY "
                                                             "time_ns, id", rank, until):
            if nbytes > 0:
                blocks[address] = (row, nbytes if category == "gradient" and module is not None else 0)
            else:
                blocks.pop(address, None)
        return set(blocks.values())

    out = []
    for t0, t1 in query(profile, "SELECT start_ns, start_ns + duration_ns FROM steps WHERE rank = ? ORDER BY number", rank):
        (at,), = query(profile, "SELECT min(start_ns) FROM range_view WHERE rank = ? AND phase = 'optimizer' AND name "
                       "LIKE 'Optimizer.step#%' AND start_ns >= ? AND start_ns < ?", rank, t0, t1)
        out.append(sum(nbytes for _, nbytes in live(at) & live(t1 - 1)))
    return out


def live_memory_at_forward(profile, module, rank=0):
    """{memory category: bytes} live on the rank when the module's first forward range starts (the
    events at that instant included: its pre-forward's copy-out and frees): FSDPMemTracker's "After
    Pre-Forward" of that module, in a profile (a simulated one)."""
    (start,), = query(profile, "SELECT min(start_ns) FROM range_view WHERE rank = ? AND module = ? AND phase = 'forward'",
                      rank, module)
    return dict(query(profile, "SELECT e.label, sum(m.bytes) FROM memory_events m JOIN enums e ON e.type = "
                      "'memory_category' AND e.value = m.category WHERE m.rank = ? AND m.time_ns <= ? GROUP BY 1",
                      rank, start))


def module_backward_starts(profile, module, rank=0):
    """Start times of the module's backward ranges, in order (a simulated bucket's ranges name its
    first member: one range per member, the last member's first)."""
    return [t for t, in query(profile, "SELECT start_ns FROM range_view WHERE rank = ? AND module = ? AND kind = 'module' "
                              "AND phase = 'backward' ORDER BY start_ns", rank, module)]


def gradient_bytes_made(profile, after, until, rank=0):
    """Bytes of gradients allocated less freed on the rank in (after, until]."""
    (b,), = query(profile, "SELECT coalesce(sum(bytes), 0) FROM memory_view WHERE rank = ? AND category = 'gradient' "
                  "AND time_ns > ? AND time_ns <= ?", rank, after, until)
    return b


def fsdp_collectives_per_step(profile, rank, fsdp_group_only=False):
    """{step number: sorted [(type label, bytes)]} of the all-gathers and reduce-scatters in each step;
    with fsdp_group_only, those over the group the hooks recorded as FSDP's (meta rank<R>.fsdp_group),
    leaving out sequence parallelism's beside tensor parallelism."""
    group = ""
    if fsdp_group_only:
        (group,), = query(profile, "SELECT value FROM meta WHERE key = ?", "rank%d.fsdp_group" % rank)
    out = {}
    for n, t0, t1 in query(profile, "SELECT number, start_ns, start_ns + duration_ns FROM steps WHERE rank = ? ORDER BY number", rank):
        rows = query(profile, "SELECT e.label, c.bytes FROM collectives c JOIN enums e ON e.type = 'collective_type' "
                     "AND e.value = c.type LEFT JOIN process_groups g ON g.id = c.process_group_id WHERE c.rank = ? "
                     "AND c.start_ns >= ? AND c.start_ns < ? AND e.label IN ('all_gather', 'reduce_scatter') "
                     "AND (? = '' OR g.name = ?)", rank, t0, t1, group, group)
        out[n] = sorted(rows)
    return out


def tiny_unit_params():
    """Parameters of each FSDP unit of the trainer's --tiny model: {"": root's own, "layers.i": ...}."""
    import fsdp_train_sample as t

    model = t.Llama(256, 64, 2, 4, 128)  # the --tiny sizes: vocab, dim, layers, heads, hidden
    layers = {"layers.%d" % i: sum(p.numel() for p in l.parameters()) for i, l in enumerate(model.layers)}
    total = sum(p.numel() for p in model.parameters())
    return dict(layers, **{"": total - sum(layers.values())})


def collectives_by_group(profile, rank, step):
    """{(type label, group ranks as "[0,1]" or None): [count, bytes]} of one rank's step."""
    out = {}
    for label, ranks, n, b in query(
            profile, "SELECT e.label, g.ranks, count(*), sum(c.bytes) FROM collectives c JOIN enums e ON e.type = "
            "'collective_type' AND e.value = c.type LEFT JOIN process_groups g ON g.id = c.process_group_id JOIN steps s "
            "ON s.rank = c.rank AND s.number = ? WHERE c.rank = ? AND c.start_ns >= s.start_ns AND c.start_ns < "
            "s.start_ns + s.duration_ns GROUP BY 1, 2", step, rank):
        out[(label, ranks)] = [n, b]
    return out


TINY_MODEL = os.path.join(SOURCE_DIR, "resources", "models", "fsdp-sample-tiny.json")


def simulate_profile(profile, directory, name, plan):
    """`shardscope simulate PROFILE --plan` with a plan (a dict): (its JSON report, {(type label,
    simulated group name): [count, bytes]} of the simulated rank's step)."""
    import json

    plan_path = os.path.join(directory, name + "_plan.json")
    with open(plan_path, "w") as f:
        json.dump(plan, f)
    out = os.path.join(directory, name + "_sim.ssdb")
    report = json.loads(shardscope("simulate", profile, "--plan", plan_path, "--format", "json", "-o", out))
    return report, simulated_collectives(out)


def simulated_collectives(path):
    ops = {}
    for label, g, n, b in query(path, "SELECT e.label, g.name, count(*), sum(c.bytes) FROM collectives c JOIN enums e ON "
                                "e.type = 'collective_type' AND e.value = c.type LEFT JOIN process_groups g ON "
                                "g.id = c.process_group_id GROUP BY 1, 2"):
        ops[(label, g)] = [n, b]
    return ops


def simulate_model(directory, name, plan, world):
    """`shardscope simulate --model` of the trainers' --tiny model with a plan (a dict): (its JSON
    report, {(type label, simulated group name): [count, bytes]} of the simulated rank's step)."""
    import json

    plan_path = os.path.join(directory, name + "_plan.json")
    with open(plan_path, "w") as f:
        json.dump(plan, f)
    out = os.path.join(directory, name + "_sim.ssdb")
    report = json.loads(shardscope("simulate", "--model", TINY_MODEL, "--plan", plan_path, "--world", str(world),
                                   "--format", "json", "-o", out))
    return report, simulated_collectives(out)
