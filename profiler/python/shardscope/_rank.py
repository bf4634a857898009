"""Per-rank file stem, identical to the C++ collector's (profiler/collector/core/rank_identity.cpp)."""
import os

_RANK_VARS = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")
_LOCAL_VARS = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK")
_WORLD_VARS = ("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")


def _first_int(env, names):
    for n in names:
        v = env.get(n)
        if v is None:
            continue
        try:
            return int(v)
        except ValueError:
            continue
    return None


def identity(env=None, pid=None):
    env = os.environ if env is None else env
    return {
        "rank": _first_int(env, _RANK_VARS),
        "local_rank": _first_int(env, _LOCAL_VARS),
        "world_size": _first_int(env, _WORLD_VARS) or 0,
        "restart": _first_int(env, ("TORCHELASTIC_RESTART_COUNT",)) or 0,
        "pid": os.getpid() if pid is None else pid,
    }


def stem(ident):
    def num(v):
        return "x" if v is None or v < 0 else str(v)

    s = "shardscope_rank%s_lrank%s_pid%d" % (num(ident["rank"]), num(ident["local_rank"]), ident["pid"])
    if ident["restart"] > 0:
        s += "_restart%d" % ident["restart"]
    return s


SIDECAR_SUFFIX = ".modules.tsv"

# The pid of a recording rank, inherited by every process it starts (profiler/collector/core/
# rank_identity.h, kEnvRankPid): a DataLoader worker under the "spawn" start method imports torch
# with the rank's RANK and would otherwise record as one more rank of the job.
RANK_PID_VAR = "SHARDSCOPE_RANK_PID"


def started_by_a_rank(env=None, pid=None):
    mark = (os.environ if env is None else env).get(RANK_PID_VAR)
    return bool(mark) and mark != str(os.getpid() if pid is None else pid)


def mark_as_rank():
    """Called in a process known to be a rank: what it starts from now on records nothing."""
    os.environ[RANK_PID_VAR] = str(os.getpid())
