// Frees the profiler lost where nothing in the trace tells when they happened (CPU runs).
//
// gloo's worker thread keeps c10d's Work object, and with it the collective's tensors (FSDP's
// all-gather output, its reduce-scatter input, the copy of that input gloo makes to all-reduce it),
// while it runs the work. When the training thread lets go of such a tensor first, the block is
// freed on the worker thread, outside the profiler's thread state: torch.profiler records no
// free, and its CPU "Total Allocated" does not fall either (ProfiledCPUMemoryReporter::Delete does
// nothing there), so the unrecorded-free repair (unrecorded_frees.h) finds it only when the
// address is allocated again, placed at that reuse, and not at all when it never is: the block
// then looks alive to the end of the trace. Which blocks this hits is thread timing: in a
// torchtitan MoE run on 2 ranks, 0 to 3 buffers of 6.3 MB per rank and run, moving a step's
// measured peak by up to 7 %.
//
// The program frees such a block at the same point of every step. The block made at the same
// place of another step (same size, made in the same occurrence of the same FSDP or module range
// within the same parent range) and freed, recorded, within that step gives the point: its free's
// range, occurrence and position in it. The lost free is put at that point of the block's own
// step, when that is earlier than where the reuse put it. The position is the same fraction of
// the range, kept on the same side of each of the thread's allocations in the range as in the
// other step (where both ranges hold as many): a peak is reached at an allocation, so a free on
// the right side of every allocation gives every peak as the program had it, whatever its time.
// Where the block's step is laid out differently (the first step, before FSDP2 prefetches) and
// no such point falls after the block was made, but every recorded block of its size made in that
// range is freed within its own step, the lost free is put at its step's end: the latest it can
// have been.
//
// A block made inside the collective call itself (c10d::_reduce_scatter_base_ on gloo clones the
// input on the training thread and all-reduces the clone) is held by that Work alone: lost, it was
// freed once the worker's run of the work had returned (ProcessGroupGloo::runLoop drops the Work
// there), which the trace has, and the training thread had let go of the Work, which the point
// from another step stands for. Where no step gives a point, the run's end, not the step's: where
// every step lost it (user_loop.py --nested, rank 0, one recording in eight beside a busy CPU), it
// had stayed alive to its step's end. The training thread drops such a Work 36 to 240 us after
// the run's end where its free is recorded (median about 100 us; the same loop).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "profiler/import/common/innermost_range.h"
#include "profiler/import/common/unrecorded_frees.h"
#include "storage/types.h"

namespace ss::import {

// One thread's FSDP and module ranges within the steps, and its allocations: where a time is in
// the program, and the time of the same place in another step.
class ProgramPoints {
 public:
  struct Range {
    TimeNs start = 0, end = 0;
    std::uint32_t name = 0;  // any id naming the range (the same name in every step)
  };
  // A place in a step: inside a range (the innermost one), at a fraction of it; else after the
  // step's range that ended last before it, by a time; else at a fraction of the step itself.
  struct Point {
    int step = 0;            // index into the steps
    std::uint32_t name = 0;  // the range it is in or after
    std::uint32_t parent = 0;  // the name of the range around that one (kNone: none)
    int occurrence = 0;      // of that name, in that parent's name, within the step
    double fraction = 0;     // inside: 0 at the range's start, 1 at its end
    TimeNs after_end = -1;   // outside: how long after the range's end (-1: inside)
    // Inside: the thread's allocations in the range made before the point, and in all (-1: not known).
    int allocations_before = -1, allocations_inside = -1;
  };
  static constexpr std::uint32_t kNone = 0xffffffff;
  // `steps` in time order, not overlapping; ranges of one thread, nested or apart; the times of the
  // thread's allocations.
  ProgramPoints(std::vector<std::pair<TimeNs, TimeNs>> steps, std::vector<Range> ranges,
                std::vector<TimeNs> allocations = {});

  std::optional<Point> at(TimeNs t) const;
  // The time of `p` (its name, occurrence and fraction) in the step `p.step`, if that has it;
  // between the same two of the range's allocations as `p`, where the range holds as many.
  std::optional<TimeNs> time_of(const Point& p) const;

 private:
  int step_at(TimeNs t) const;
  // The range at `p`'s place (its step, parent, name and occurrence), if its step has one.
  const Range* range_at(const Point& p) const;
  // The allocations in [start, end): their first index in allocations_ and their count.
  std::pair<std::size_t, std::size_t> allocations_in(TimeNs start, TimeNs end) const;
  std::vector<std::pair<TimeNs, TimeNs>> steps_;
  std::vector<Range> ranges_;
  std::vector<TimeNs> allocations_;
  std::vector<int> occurrence_;          // by range
  std::vector<int> step_;                // by range
  std::vector<std::uint32_t> parent_;    // by range: the name of the range around it
  std::vector<std::size_t> by_end_;      // ranges by end time
  InnermostRangeIndex innermost_;
  std::map<std::tuple<int, std::uint32_t, std::uint32_t, int>, std::size_t> by_place_;  // (step, parent, name, occurrence) -> range
};

// A collective a training thread issued and gloo's worker ran: the issuing op's span on that
// thread (its lane in place_lost_frees) and when the worker's run of it ended.
struct GlooRun {
  int lane = -1;
  TimeNs issue_start = 0, issue_end = 0;
  TimeNs done = 0;
};

// `events` in time order, as add_unrecorded_frees returns them; `lane_of_source[e.source]` is the
// ProgramPoints (an index into `lanes`) of the thread that made event e, or -1 (gloo's worker
// threads: their own staging buffers are freed inside the work, recorded). Returns the events with
// each lost free placed (a new synthetic free, or a reuse's moved earlier), in time order;
// `placed` counts them. `alive` (address, time), sorted: the hooks' tensor facts, each naming the
// block at that address then as one of the job's tensors (a parameter, a gradient, an optimizer
// state); a block named between its allocation and its free is not a lost one. Why: an optimizer's
// state is made in the first step and never freed, like a lost free's block, and blocks of its
// sizes made at that place (a foreach AdamW's intermediates) are freed in their step; without the
// facts, a user's loop lost its whole optimizer state at the first step's end. `runs`: the
// collectives gloo's workers ran (any order); a lost block made inside one's issuing op is freed
// no earlier than that run's end (`placed_at_run_end` counts those placed there, of `placed`).
std::vector<AllocatorEvent> place_lost_frees(std::vector<AllocatorEvent> events, const std::vector<ProgramPoints>& lanes,
                                             const std::vector<int>& lane_of_source, std::int64_t* placed,
                                             const std::vector<std::pair<std::int64_t, TimeNs>>& alive = {},
                                             std::vector<GlooRun> runs = {}, std::int64_t* placed_at_run_end = nullptr);

}  // namespace ss::import
