"""Imported first by the trainers tests: without torch, torchtitan or lightning the test process
exits 77 (ctest: skipped), except under SHARDSCOPE_REQUIRE_TORCH=1 (scripts/test.sh, CI, which
install them from scripts/python-requirements.txt), where that is a failure."""
import os
import sys

for _name in ("torch", "torchtitan", "lightning"):
    try:
        __import__(_name)
    except Exception as e:  # ImportError, or a broken install
        required = os.environ.get("SHARDSCOPE_REQUIRE_TORCH") == "1"
        sys.stderr.write("%s: %s is not importable by %s (%r)\n" % ("FAIL" if required else "SKIP", _name, sys.executable, e))
        sys.exit(1 if required else 77)
