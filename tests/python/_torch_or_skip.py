"""Imported first by the torch tests: without torch the whole test process exits 77, which ctest
reports as skipped (SKIP_RETURN_CODE)."""
import sys

try:
    import torch  # noqa: F401
except Exception as e:  # ImportError, or a broken install
    sys.stderr.write("SKIP: torch is not importable by %s (%r)\n" % (sys.executable, e))
    sys.exit(77)
