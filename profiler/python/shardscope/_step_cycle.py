"""Which optimizer calls end a training step (hooks.Tracker's step clock).

A step used to end with every optimizer step, so a loop with two optimizers (Muon for the matrices
and AdamW for the rest, a GAN's generator and discriminator, torchtitan's container over the model
parts of a pipeline) counted two "steps" an iteration, one of them an optimizer call alone:
`record --steps A:B` cut the window mid-iteration, the unobserved steps alternated between 1 and
60 ms, and `simulate` failed on the profile ("no forward module range of an FSDP unit lies inside
a step"). A step now ends with the optimizer that steps last in the job's iteration:

* the first optimizer that ever steps is taken for the last, so that a loop with one optimizer
  ends step 0 at once, as before;
* an optimizer never seen before that steps right after a step ended (the second optimizer of
  the first iteration) belongs to that step (its range is numbered with it) and is the last from
  then on;
* an optimizer that steps a second time in one step means the iteration restarted before the last
  one stepped (GradScaler skipped its step; it was replaced): the step ended at the call before
  (its end is told late, when the next iteration's first optimizer starts). Missed twice in a row,
  the optimizer of that call is the last from then on.

Keys are the optimizers' ids, None for a step seen without its optimizer (torch < 2.0's wrapper):
that one ends a step each time. Only the outermost of nested calls counts (torchtitan's container
steps its optimizers from inside its own step)."""


class StepCycle:
    def __init__(self):
        self.last = None        # the optimizer whose step ends a training step
        self.known = set()      # every optimizer that has stepped
        self.stepped = set()    # those that stepped in the current training step
        self._previous = None   # the optimizer of the latest call that did not end a step
        self._misses = 0        # steps in a row that ended without `last` stepping
        self.continues_previous = False  # the call now running belongs to the step that just ended

    def begin(self, key):
        """An optimizer step begins. True when the training step ended at the previous call already
        (the caller ends it with that call's end time)."""
        restarted = key is not None and key in self.stepped and self._previous is not None
        if restarted:
            self._misses += 1
            if self._misses >= 2:
                self.last = self._previous
            self.stepped, self._previous = set(), None
        self.continues_previous = (key is not None and not restarted and not self.stepped and bool(self.known)
                                   and key not in self.known)
        return restarted

    def end(self, key):
        """An optimizer step ended. True when it ends the training step."""
        if self.continues_previous:
            self.continues_previous = False
            self.known.add(key)
            self.last = key
            return False
        if key is None:
            self.stepped, self._previous = set(), None
            return True
        self.known.add(key)
        self.stepped.add(key)
        if self.last is None:
            self.last = key
        if key == self.last:
            self.stepped, self._previous, self._misses = set(), None, 0
            return True
        self._previous = key
        return False
