"""Loads the collector the way the CUDA driver and NVTX would (InitializeInjection), with SHARDSCOPE_OUTPUT_DIR set, then exits normally. Without a driver the collector must
say once why it is off and leave no file; with a GPU it records and its atexit handler must leave
a readable rank file. Either way the process exits 0: the collector never breaks the job.
usage: injection_probe.py LIBRARY OUTPUT_DIR"""
import ctypes
import os
import sys

lib = ctypes.CDLL(sys.argv[1])
os.environ["SHARDSCOPE_OUTPUT_DIR"] = sys.argv[2]  # read by the library at init (getenv)
rc = lib.InitializeInjection()
if rc != 1:
    print("InitializeInjection returned %d, expected 1" % rc)
    sys.exit(1)
print("probe done")
