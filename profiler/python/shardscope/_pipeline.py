"""Pipeline parallelism (torch.distributed.pipelining) as the module hooks see it: a model's stage
is called from its PipelineStage, driven by a schedule. torchtitan builds each stage as a pruned
copy of the whole model (the same class, the blocks it does not run deleted), so a rank holding
two stages (its interleaved schedules) calls two roots whose modules keep the model's names.

Found on the call stack when a stage's root is first called (once per root): no patching of
torch, nothing done per call."""
import sys

_STAGE_FILE = "pipelining/stage.py"
_SCHEDULE_FILE = "pipelining/schedules.py"
_MAX_FRAMES = 64


class Pipeline:
    """What a rank's stages tell: the schedule, the pipeline's stages and ranks, this rank's
    stages, the micro-batches a step."""

    def __init__(self):
        self.schedule = ""
        self.stages = 0  # virtual stages of the whole pipeline
        self.ranks = 1  # the pipeline group's ranks
        self.local = set()  # this rank's stage indices
        self.microbatches = 0

    def add(self, stage, schedule):
        self.stages = max(self.stages, int(getattr(stage, "num_stages", 0) or 0))
        self.ranks = max(self.ranks, int(getattr(stage, "group_size", 1) or 1))
        index = getattr(stage, "stage_index", None)
        if index is not None:
            self.local.add(int(index))
        if schedule is not None:
            self.schedule = type(schedule).__name__
            self.microbatches = int(getattr(schedule, "_n_microbatches", 0) or 0)

    def describe(self):
        """The meta value, e.g. "ScheduleInterleaved1F1B stages=4 ranks=2 local=0,2 microbatches=2"."""
        return "%s stages=%d ranks=%d local=%s microbatches=%d" % (
            self.schedule or "unknown", self.stages, self.ranks, ",".join(str(i) for i in sorted(self.local)),
            self.microbatches)


def stage_on_stack():
    """(stage, schedule or None) of the pipeline stage calling the current module, or None when no
    PipelineStage is on the call stack."""
    stage = schedule = None
    frame = sys._getframe(1)
    for _ in range(_MAX_FRAMES):
        if frame is None:
            break
        name = frame.f_code.co_filename.replace("\\", "/")
        if stage is None and name.endswith(_STAGE_FILE):
            owner = frame.f_locals.get("self")
            if owner is not None and hasattr(owner, "stage_index") and hasattr(owner, "num_stages"):
                stage = owner
        elif stage is not None and name.endswith(_SCHEDULE_FILE):
            owner = frame.f_locals.get("self")
            if owner is not None and hasattr(owner, "_n_microbatches"):
                schedule = owner
                break
        frame = frame.f_back
    return None if stage is None else (stage, schedule)
