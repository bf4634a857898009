// shardscope simulate IN [--model M.json] [--cluster C.json] [--plan P.json] [-o SIM.ssdb]
//                        [--world N] [--fit] [--format text|json]
#include <cmath>
#include <iostream>
#include <sstream>

#include "app/cli/arg_parser.h"
#include "app/cli/command.h"
#include "app/cli/sim_input_args.h"
#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/sim_report.h"
#include "profiler/sim/simulated_profile.h"
#include "profiler/sim/step_simulator.h"
#include "storage/json_writer.h"

namespace ss::cli {
namespace {

void write_fit(JsonWriter& j, const sim::FitReport& f) {
  j.key("fit").begin_object();
  for (int c = 0; c < sim::kCollCount; ++c) {
    if (f.samples[c] == 0) continue;
    j.key(sim::coll_key(static_cast<sim::Coll>(c)))
        .begin_object()
        .kv("samples", f.samples[c])
        .kv("alpha_us", f.alpha_us[c])
        .kv("busbw_GBps", f.busbw_GBps[c])
        .kv("rms_error_us", f.rms_error_us[c])
        .end_object();
  }
  j.end_object();
}

std::string parameters_json(const sim::SimInputs& in) {
  std::ostringstream s;
  JsonWriter j(s, false);
  j.begin_object();
  j.key("plan").raw(sim::plan_to_json(in.plan));
  j.key("cluster").raw(sim::cluster_to_json(in.cluster));
  j.key("model").begin_object().kv("source", in.source).kv("units", static_cast<std::int64_t>(in.model.units.size()))
      .kv("params", in.model.total_params()).end_object();
  j.end_object();
  return s.str();
}

}  // namespace

int cmd_simulate(const std::vector<std::string>& args) {
  ArgParser p("simulate", "Simulate one FSDP2 training step for a representative rank: replay a profile's measured compute\n"
                          "(or a model description's estimated compute) with a cluster cost model for all-gather and\n"
                          "reduce-scatter, following FSDP2's ordering rules. Optionally write the simulated timeline as a\n"
                          "profile. With a measured or imported profile, reports the error against its step time.");
  p.positional("IN", "a profile to replay (omit with --model)", false)
      .option("model", "M.json", "model description instead of a profile (resources/models/)")
      .option("cluster", "C.json", "cluster model (resources/clusters/); default: measured H100 figures")
      .option("plan", "P.json", "what-if plan: unsharded modules, prefetch, buckets, ZeRO stage, HSDP ...")
      .option("output", "SIM.ssdb", "write the simulated profile here", "", 'o')
      .option("world", "N", "world size (overrides the cluster's and the profile's)", "0")
      .option("format", "FMT", "output format", "text", 0, {"text", "json"})
      .flag("fit", "fit the cluster's latency and bandwidth to the profile's measured collectives")
      .flag("units", "list every unit (costs and memory at the peak)");
  if (!p.parse(args)) return kExitOk;
  sim::SimInputRequest req = sim_input_request(p);

  sim::SimInputs in = sim::load_sim_inputs(req);
  sim::CompiledStep step = sim::compile_step(in.model, in.plan, in.cluster);
  sim::SimResult r = sim::simulate(step, true);
  const bool measured = in.from_profile && (in.origin == OriginKind::Measured || in.origin == OriginKind::Imported);
  const bool comparable = in.from_profile && in.measured_step_ns > 0;
  const double err = comparable ? 100.0 * (double(r.step_ns) - double(in.measured_step_ns)) / double(in.measured_step_ns) : 0;

  if (!p.get("output").empty()) {
    sim::SimulatedProfileInfo info{in.source, in.gpu_name, parameters_json(in)};
    sim::write_simulated_profile(p.get("output"), in.model, step, r, info);
  }
  if (p.get("format") == "json") {
    JsonWriter j(std::cout);
    j.begin_object().kv("source", in.source).kv("origin", in.from_profile ? std::string(to_string(in.origin)) : "model");
    sim::write_result_fields(j, step, r, true);
    if (comparable) {
      // For synthetic inputs the comparison is reported but is not an accuracy figure.
      j.kv("measured_step_time_ms", sim::to_ms(in.measured_step_ns)).kv("error_pct", err).kv("measured", measured);
      sim::write_measured_fields(j, in);
    }
    if (in.fitted) write_fit(j, in.fit);
    j.key("cluster").raw(sim::cluster_to_json(in.cluster));
    j.key("plan").raw(sim::plan_to_json(in.plan));
    if (!p.get("output").empty()) j.kv("output", p.get("output"));
    j.end_object();
    std::cout << "\n";
  } else {
    std::cout << "Input        " << in.source << (in.from_profile ? " (profile, " + std::string(to_string(in.origin)) + ")" : " (model description)") << "\n";
    std::cout << "Cluster      " << in.cluster.name << ", " << in.cluster.device << ", " << in.cluster.gpus_per_node
              << " GPUs/node" << (in.fitted ? ", fitted to the profile's collectives" : "") << "\n";
    sim::print_result_text(std::cout, step, r, p.flag_set("units"));
    if (comparable) {
      char line[160];
      std::snprintf(line, sizeof line, "Measured     %.3f ms; simulated %+.2f%%%s\n", sim::to_ms(in.measured_step_ns), err,
                    measured ? "" : " (input is not a measurement)");
      std::cout << line;
      sim::print_measured_text(std::cout, in);
    }
    if (!p.get("output").empty()) std::cout << "Wrote        " << p.get("output") << "\n";
  }
  return kExitOk;
}

}  // namespace ss::cli
