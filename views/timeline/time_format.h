// Time text for the timeline: durations, ruler ticks whose precision follows the zoom, and times
// since the profile's start (the ruler's 0). Qt-free so the logic tests check the labels.
#pragma once

#include <string>

#include "storage/types.h"

namespace ss::timeline {

// A duration: "12.345 ms", "3.20 us", "850 ns" (sign kept).
std::string format_ns(double ns);

// A readable tick step: 1, 2 or 5 times a power of ten, at least `target` ns (and >= 1 ns).
double nice_step(double target);

// A ruler label for time `t` (ns since the origin) on ticks `step` ns apart: the unit follows
// the step (s, ms, us or ns) and the decimals are just enough for neighbouring ticks to differ,
// so a deep zoom reads "65.0951 ms", "65.0952 ms" instead of "65.095 ms" twice.
std::string format_tick(double t, double step);

// Whether the label of time `t` on ticks `step` apart would need more than four integer digits
// ("1211651.14 us": a deep zoom far from the origin). The ruler then writes one tick in full
// (format_compound) and the ticks after it as offsets from that one ("+10 ns"), as Perfetto does.
bool tick_needs_base(double t, double step);

// A time in full, unit by unit from the largest down to the step's: "1 s 211 ms 651 us 140 ns".
std::string format_compound(double t, double step);

// A time since the profile's start, never negative for an event of the profile: times before
// `begin` (the margin left of the profile) read 0.
std::string format_since(TimeNs t, TimeNs begin);

}  // namespace ss::timeline
