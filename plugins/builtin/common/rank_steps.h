// The recorded training steps of each rank, for analyses that must tell the steps apart from
// what ran outside them (a model's initialisation, a checkpoint load, evaluation between steps).
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/intervals.h"

namespace ss::analysis {

class RankSteps {
 public:
  explicit RankSteps(const ss::plugin::Host& host);
  // The step holding t on the rank, [start, end); the whole time line on a rank without recorded
  // steps (an imported trace); nullopt when the rank has steps and t is outside every one.
  std::optional<Interval> window(int rank, std::int64_t t) const;
  bool in_step(int rank, std::int64_t t) const { return window(rank, t).has_value(); }
  bool has_steps(int rank) const { return steps_.count(rank) > 0; }
  // Length of iv inside the rank's steps (0 on a rank without steps).
  std::int64_t length_inside(int rank, Interval iv) const;

 private:
  std::map<int, std::vector<Interval>> steps_;  // by start
};

}  // namespace ss::analysis
