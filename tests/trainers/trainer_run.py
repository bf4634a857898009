"""Helpers of the trainers tests: run torchtitan (titan_cpu_launch.py) or the Lightning script
under `shardscope record` on 2 CPU ranks (or `world`), and read what the job counted (job_counts.py)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("SHARDSCOPE_SOURCE_DIR", os.path.abspath(os.path.join(HERE, "..", "..")))
SHARDSCOPE = os.environ.get("SHARDSCOPE_BIN", os.path.join(SOURCE_DIR, "build", "app", "shardscope"))
WORLD = 2


def torchrun(script, *args, world=WORLD):
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=%d" % world,
            "--standalone", os.path.join(HERE, script)] + list(args)


def titan(assets, summary, steps, config, *titan_args, world=WORLD, launcher_args=()):
    """torchtitan through titan_cpu_launch.py (`launcher_args`: its own options, e.g. --mem-tracker-step)."""
    return torchrun("titan_cpu_launch.py", "--assets", assets, "--steps", str(steps), "--summary", summary,
                    *launcher_args, "--", "--module", "titan_cpu_config", "--config", config, *titan_args, world=world)


def run(cmd, profile=None, env=None, record_args=()):
    """(exit code, output) of the command, under `shardscope record -o profile [record_args]` when a
    profile is given."""
    full = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    full["PYTHONPATH"] = os.pathsep.join([os.path.join(SOURCE_DIR, "profiler", "python"), HERE, full.get("PYTHONPATH", "")])
    if profile:
        cmd = [SHARDSCOPE, "record", "-o", profile] + list(record_args) + ["--"] + cmd
    p = subprocess.run(cmd, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    return p.returncode, p.stdout


def summary(path):
    with open(path) as f:
        s = json.load(f)
    s["collectives"] = [sorted(tuple(c) for c in step) for step in s["collectives"]]
    return s
