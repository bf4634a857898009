// The time window of recorded steps: what `analyze --steps A:B` and the Analyses dock's "Steps
// only" run on. A recording's time line also holds what ran before its first step (the model's
// initialisation: seconds for torchtitan, 57 % of a short CPU run's window, nearly all idle) and
// after its last; analyses over the whole time line report those as if they were training.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "storage/profile_model.h"

namespace ss::plugins {

// Lowest and highest recorded step number on the ranks (every rank when `ranks` is empty);
// nullopt when they have no recorded step (an imported trace without step markers).
std::optional<std::pair<std::int64_t, std::int64_t>> step_numbers(const Profile& profile, const std::vector<int>& ranks);

// The earliest start and latest end of steps first .. end-1 (end < 0: to the last) on the ranks;
// nullopt when none of those steps is recorded there.
std::optional<std::pair<TimeNs, TimeNs>> steps_window(const Profile& profile, std::int64_t first, std::int64_t end,
                                                      const std::vector<int>& ranks);

}  // namespace ss::plugins
