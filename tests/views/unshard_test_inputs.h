// Inputs shared by the Unshard panel's and session's tests.
#pragma once

#include <string>

#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/step_simulator.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "storage/sqlite_handle.h"
#include "tests/support/test_paths.h"

namespace ss::test {

// What `shardscope simulate IN --plan P.json` computes (app/cli/cmd_simulate.cpp, same calls): by
// default on the cluster fitted to the profile's collectives; with `no_fit`, as `--no-fit`.
inline sim::SimResult simulate_cli_way(const std::string& profile, const std::string& plan_path, bool no_fit = false) {
  sim::SimInputRequest req;
  req.profile_path = profile;
  req.plan_path = plan_path;
  req.fit_if_available = !no_fit;
  sim::SimInputs in = sim::load_sim_inputs(req);
  return sim::simulate(sim::compile_step(in.model, in.plan, in.cluster), true);
}

// A profile the Unshard panel cannot simulate: the synthetic pattern (module ranges, steps,
// collectives) with no module marked as an FSDP unit, as a run recorded without fully_shard.
inline std::string profile_without_units(const TempDir& dir) {
  const std::string path = dir.file("no-units.ssdb");
  SyntheticSpec spec;
  spec.layers = 3;
  write_synthetic_profile(path, spec);
  sql::Db db(path, SQLITE_OPEN_READWRITE);
  db.exec("UPDATE modules SET is_fsdp_unit = 0, fsdp_unit_id = NULL");
  return path;
}

}  // namespace ss::test
