// shardscope simulate IN [--model M.json] [--cluster C.json] [--plan P.json] [-o SIM.ssdb]
//                        [--world N] [--fit | --no-fit] [--format text|json]
// A profile with collectives and no --cluster is simulated on the default cluster fitted to its
// collectives (--no-fit: the preset as is). The output says which cluster was used and warns when
// the replay of the profile as recorded is more than 10 % from its measured step, and why.
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
#include "storage/cpu_device.h"
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

// Which cluster was used, in words: where it came from and whether (and why not) it was fitted.
std::string cluster_used(const sim::SimInputs& in, const sim::SimInputRequest& req, bool no_fit) {
  std::string s = in.cluster.name + (req.cluster_path.empty() ? " (built-in preset)" : " (" + req.cluster_path + ")");
  if (!in.from_profile) return s;
  if (in.fitted) {
    std::string counts;
    for (int c = 0; c < sim::kCollCount; ++c) {
      if (in.fit.samples[c] == 0) continue;
      std::string key = sim::coll_key(static_cast<sim::Coll>(c));
      for (char& ch : key)
        if (ch == '_') ch = '-';
      counts += (counts.empty() ? "" : ", ") + std::to_string(in.fit.samples[c]) + " " + key;
    }
    s += ", fitted to the profile's collectives (" + (counts.empty() ? std::string("none usable") : counts) +
         (req.fit                     ? "; --fit)"
          : req.cluster_path.empty() ? "; the default, --no-fit for the preset as is)"
                                     : "; the default for a file without collective costs, --no-fit for the built-in ones)");
  } else if (in.fit_samples_available == 0) {
    s += ", not fitted: the profile has no collectives to fit it to";
  } else if (no_fit) {
    s += ", not fitted (--no-fit)";
  } else {
    s += ", not fitted (--cluster given; add --fit to fit it to the profile's collectives)";
  }
  return s;
}

}  // namespace

int cmd_simulate(const std::vector<std::string>& args) {
  ArgParser p("simulate", "Simulate one FSDP2 training step for a representative rank: replay a profile's measured compute\n"
                          "(or a model description's estimated compute) with a cluster cost model for all-gather and\n"
                          "reduce-scatter, following FSDP2's ordering rules. Optionally write the simulated timeline as a\n"
                          "profile. With a measured or imported profile, reports the error against its step time, and warns\n"
                          "when the replay of the profile as recorded is more than 10% off, with the likely reasons.");
  p.positional("IN", "a profile to replay (omit with --model)", false)
      .option("model", "M.json", "model description instead of a profile (resources/models/)")
      .option("cluster", "C.json", "cluster model (resources/clusters/); default: measured H100 figures")
      .option("plan", "P.json", "what-if plan: unsharded modules, prefetch, buckets, ZeRO stage, HSDP ...")
      .option("output", "SIM.ssdb", "write the simulated profile here", "", 'o')
      .option("world", "N", "world size (overrides the cluster's and the profile's)", "0")
      .option("format", "FMT", "output format", "text", 0, {"text", "json"})
      .flag("fit", "fit the cluster's latency and bandwidth to the profile's measured collectives (the default without\n--cluster, or with a cluster file that has no collective costs)")
      .flag("no-fit", "use the cluster (built-in or --cluster) as it is, not fitted to the profile's collectives")
      .flag("units", "list every unit (costs and memory at the peak)")
      .flag("as-profiled", kAsProfiledHelp);
  add_plan_knob_options(p);
  if (!p.parse(args)) return kExitOk;
  sim::SimInputRequest req = sim_input_request(p);
  const bool no_fit = p.flag_set("no-fit");
  if (no_fit && req.fit) throw UsageError("--fit and --no-fit exclude each other");
  // A profile's own collectives say more about its cluster than a preset does: fit by default,
  // unless the user chose a cluster file with collective costs (then --fit fits that one).
  req.fit_if_available = !no_fit && !req.fit;

  sim::SimInputs in = sim::load_sim_inputs(req);
  const bool knobs = apply_plan_knobs(p, in.plan);
  sim::CompiledStep step = sim::compile_step(in.model, in.plan, in.cluster);
  sim::SimResult r = sim::simulate(step, true);
  const bool measured = in.from_profile && (in.origin == OriginKind::Measured || in.origin == OriginKind::Imported);
  // The step the simulation is judged against: the unobserved one (the job without the profiler)
  // when the profile has some and the replay is calibrated to them, else the profiled one.
  const TimeNs reference_ns = in.reference_step_ns();
  const bool comparable = in.from_profile && reference_ns > 0;
  const double err = comparable ? 100.0 * (double(r.step_ns) - double(reference_ns)) / double(reference_ns) : 0;
  // The replay: the profile's own plan at its own world size on this cluster (the step above
  // unless --plan or --world changed it), judged against the measured step.
  sim::ReplayCheck replay;
  if (comparable) {
    const bool own_world = in.profile_world <= 0 || in.cluster.world_size == in.profile_world;
    if (!req.plan_path.empty() || knobs || !own_world) {
      sim::ClusterModel c = in.cluster;
      if (in.profile_world > 0) c.world_size = in.profile_world;
      replay = sim::check_replay(in, sim::simulate(sim::compile_step(in.model, in.recorded_plan, c)), in.fitted);
    } else {
      replay = sim::check_replay(in, r, in.fitted);
    }
  }
  const std::string used = cluster_used(in, req, no_fit);

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
      j.kv("measured_step_time_ms", sim::to_ms(reference_ns)).kv("error_pct", err).kv("measured", measured);
      sim::write_measured_fields(j, in);
      sim::write_calibration_fields(j, in);
      j.kv("replay_step_time_ms", sim::to_ms(replay.replay_ns)).kv("replay_error_pct", replay.error_pct);
      if (replay.far) {
        j.kv("warning", replay.warning);
        j.key("warning_reasons").begin_array();
        for (const auto& why : replay.reasons) j.value(why);
        j.end_array();
      }
      sim::write_collective_check(j, replay.collectives);
    }
    if (in.fitted) write_fit(j, in.fit);
    j.kv("cluster_used", used).kv("cluster_fitted", in.fitted);
    j.key("cluster").raw(sim::cluster_to_json(in.cluster));
    j.key("plan").raw(sim::plan_to_json(in.plan));
    if (!p.get("output").empty()) j.kv("output", p.get("output"));
    j.end_object();
    std::cout << "\n";
  } else {
    std::cout << "Input        " << in.source << (in.from_profile ? " (profile, " + std::string(to_string(in.origin)) + ")" : " (model description)") << "\n";
    const bool cpu = is_cpu_device(in.cluster.device);
    std::cout << "Cluster      " << used << "; " << in.cluster.device << ", " << in.cluster.gpus_per_node
              << (cpu ? " ranks/host\n" : " GPUs/node\n");
    sim::print_result_text(std::cout, step, r, p.flag_set("units"), cpu);
    if (comparable) {
      char line[160];
      std::snprintf(line, sizeof line, "Measured     %.3f ms%s; simulated %+.2f%%%s\n", sim::to_ms(reference_ns),
                    in.calibrated ? " (unobserved step)" : "", err, measured ? "" : " (input is not a measurement)");
      std::cout << line;
      sim::print_measured_text(std::cout, in);
      sim::print_calibration_text(std::cout, in);
      if (replay.far) std::cout << "WARNING      " << replay.warning << "\n";
      if (!replay.collectives.match) std::cout << "WARNING      " << replay.collectives.warning << "\n";
    }
    if (!p.get("output").empty()) std::cout << "Wrote        " << p.get("output") << "\n";
  }
  return kExitOk;
}

}  // namespace ss::cli
