#include "app/cli/sim_input_args.h"

namespace ss::cli {

sim::SimInputRequest sim_input_request(const ArgParser& p) {
  sim::SimInputRequest req;
  const auto& pos = p.positionals("IN");
  if (!pos.empty()) req.profile_path = pos.front();
  req.model_path = p.get("model");
  if (req.profile_path.empty() == req.model_path.empty()) throw UsageError("give either a profile IN or --model M.json");
  req.cluster_path = p.get("cluster");
  req.plan_path = p.get("plan");
  req.fit = p.flag_set("fit");
  const long long world = p.get_int("world");
  if (world < 0 || world > 10'000'000) throw UsageError("--world must be between 1 and 10000000");
  req.world_override = static_cast<int>(world);
  return req;
}

}  // namespace ss::cli
