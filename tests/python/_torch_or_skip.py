"""Imported first by the torch tests: without torch the whole test process exits 77, which ctest
reports as skipped (SKIP_RETURN_CODE), except under SHARDSCOPE_REQUIRE_TORCH=1 (scripts/test.sh
and CI, which install torch into .venv): there a missing torch is a failure."""
import os
import sys

try:
    import torch  # noqa: F401
except Exception as e:  # ImportError, or a broken install
    required = os.environ.get("SHARDSCOPE_REQUIRE_TORCH") == "1"
    sys.stderr.write("%s: torch is not importable by %s (%r)\n" % ("FAIL" if required else "SKIP", sys.executable, e))
    sys.exit(1 if required else 77)
