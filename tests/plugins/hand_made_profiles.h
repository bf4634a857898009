// Small profiles written by hand with ProfileWriter, whose analysis results can be worked out
// on paper (the arithmetic is in test_builtin_analyses.cpp next to each assertion).
#pragma once

#include <string>

#include "storage/types.h"

namespace ss::test {

// The origin every hand-made profile carries: synthetic, "hand-made", written by `tool`.
Origin hand_made_origin(const std::string& tool);

// Two ranks, times in microseconds (x 1000 ns), see hand_made_profiles.cpp for the layout.
void write_two_rank_profile(const std::string& path);

// One rank whose kernels carry their launch calls (the `launches` table), for the idle-gap
// causes that launch times decide; layout in hand_made_profiles.cpp.
void write_launch_profile(const std::string& path);

// Two ranks and one step whose critical path crosses ranks through an all-gather, plus a third
// rank-free case bound by a late launch; layout and the path worked out in hand_made_profiles.cpp.
void write_critical_path_profile(const std::string& path);

// One rank, two steps, collectives before, inside and between them (layout in
// hand_made_profiles.cpp): what a collective outside every step is attributed to.
void write_steps_profile(const std::string& path);

// Two ranks, one step each, collectives before and inside the steps and a send / receive pair
// (layout in hand_made_profiles.cpp): what the stragglers analysis counts.
void write_two_rank_steps_profile(const std::string& path);

}  // namespace ss::test
