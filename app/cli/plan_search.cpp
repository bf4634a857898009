#include "app/cli/plan_search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

#include "app/cli/command.h"
#include "app/cli/sim_input_args.h"
#include "profiler/sim/device_table.h"
#include "profiler/sim/model_description.h"
#include "profiler/sim/plan_file.h"
#include "profiler/sim/search.h"
#include "profiler/sim/sim_report.h"
#include "storage/json_writer.h"
#include "storage/units.h"

namespace ss::cli {
namespace {

// Options a search chooses itself: giving them too would be ignored, so they are refused.
void refuse_fixed_knobs(const ArgParser& p) {
  for (const char* o : {"strategy", "modules", "evidence", "parallel", "micro-batches", "checkpoint-all", "offload", "offload-prefetch"})
    if (p.has(o))
      throw UsageError(std::string("--search chooses the mesh, micro-batches, checkpointing, offload and unshard set itself: drop --") + o);
  for (const char* f : {"checkpoint", "offload-if-needed", "pipelined-optimizer"})
    if (p.flag_set(f)) throw UsageError(std::string("--search chooses checkpointing, offload and the unshard set itself: drop --") + f);
}

std::string cp_label(const sim::Parallelism& q) {
  if (q.cp == 1) return "1";
  return std::to_string(q.cp) + (q.cp_kind == "ring" ? " ring" : " uly");
}

void write_config_json(JsonWriter& j, int rank, const sim::SearchConfig& c) {
  const sim::Parallelism& q = c.plan.parallel;
  const sim::SimResult& r = c.result;
  j.begin_object().kv("rank", rank).kv("dp", c.dp).kv("tp", q.tp).kv("sequence_parallel", q.sequence_parallel).kv("cp", q.cp)
      .kv("cp_kind", q.cp_kind).kv("pp", q.pp).kv("pp_schedule", q.pp_schedule).kv("ep", q.ep)
      .kv("micro_batches", c.plan.gradient_accumulation).kv("sequences_per_step", c.sequences).kv("checkpoint", c.checkpoint)
      .kv("offload", c.plan.offload).kv("unsharded_units", c.unsharded).kv("step_time_ms", sim::to_ms(r.step_ns))
      .kv("sequences_per_s", c.sequences_per_s);
  if (c.tokens_per_s > 0) j.kv("tokens_per_s", c.tokens_per_s);
  if (c.mfu > 0) j.kv("mfu", c.mfu);
  j.kv("peak_memory_bytes", r.peak_bytes);
  j.key("breakdown").begin_object().kv("compute_ms", sim::to_ms(r.compute_busy_ns)).kv("recompute_ms", sim::to_ms(r.recompute_ns))
      .kv("exposed_fsdp_comm_ms", sim::to_ms(r.exposed_comm_ns)).kv("model_parallel_exposed_ms", sim::to_ms(r.model_parallel_exposed_ns))
      .kv("pipeline_bubble_ms", sim::to_ms(r.bubble_ns)).end_object();
  j.key("peak_by_category").begin_object();
  for (int k = 0; k < sim::kMemCatCount; ++k)
    if (r.peak_by_category[static_cast<std::size_t>(k)] != 0)
      j.kv(sim::mem_cat_key(static_cast<sim::MemCat>(k)), r.peak_by_category[static_cast<std::size_t>(k)]);
  j.end_object();
  j.key("plan").raw(sim::plan_to_json(c.plan));
  j.end_object();
}

void print_table(std::ostream& o, const sim::SearchResult& res, bool tokens) {
  char line[512];
  std::snprintf(line, sizeof line, "%-4s %5s %3s %3s %-7s %3s %-3s %4s %-9s %-9s %4s %11s %11s %6s %10s | %10s %9s %9s %9s\n", "rank", "dp",
                "tp", "pp", "cp", "ep", "SP", "mb", "ckpt", "offload", "uns", "step ms", tokens ? "tokens/s" : "seq/s", "MFU", "peak",
                "compute ms", "FSDP exp", "MP exp", "bubble");
  o << line;
  int rank = 0;
  for (const auto& c : res.configs) {
    const sim::Parallelism& q = c.plan.parallel;
    const sim::SimResult& r = c.result;
    const std::string mfu = c.mfu > 0 ? [&] {
      char b[16];
      std::snprintf(b, sizeof b, "%.1f%%", 100 * c.mfu);
      return std::string(b);
    }()
                                      : std::string("-");
    std::snprintf(line, sizeof line, "%-4d %5d %3d %3d %-7s %3d %-3s %4d %-9s %-9s %4d %11.1f %11.0f %6s %10s | %10.1f %9.1f %9.1f %9.1f\n",
                  ++rank, c.dp, q.tp, q.pp, cp_label(q).c_str(), q.ep, q.sequence_parallel ? "on" : "-", c.plan.gradient_accumulation,
                  c.checkpoint.c_str(), c.plan.offload.c_str(), c.unsharded, sim::to_ms(r.step_ns),
                  tokens ? c.tokens_per_s : c.sequences_per_s, mfu.c_str(), format_bytes(r.peak_bytes).c_str(), sim::to_ms(r.compute_busy_ns),
                  sim::to_ms(r.exposed_comm_ns), sim::to_ms(r.model_parallel_exposed_ns), sim::to_ms(r.bubble_ns));
    o << line;
  }
}

// The best plan as a plan file: its keys at top level (so `simulate --plan` reads it), the
// prediction, and the FSDP2 Python.
std::string best_plan_file(const sim::SearchConfig& c, std::int64_t budget) {
  return sim::plan_file_json(c.plan, c.result, c.result.peak_bytes <= budget, nullptr, "search", budget);
}

}  // namespace

void add_search_options(ArgParser& p) {
  p.flag("search", "search (dp, tp, pp, cp) x checkpointing x offload x micro-batches x unshard set under the budget and\n"
                   "print the fastest configurations (tp / cp / ep need --model; docs/simulator.md \"Search\")")
      .option("global-batch", "G", "with --search: sequences per optimizer step, kept fixed (micro-batches = G / (dp x micro_batch));\n"
                                   "without it the micro-batch count is free ({1, pp, 2pp, 4pp}; 1 without a pipeline) and the ranking is by throughput")
      .option("top", "N", "with --search: configurations to list", "10")
      .option("threads", "N", "with --search: threads simulating configurations (0: one per core)", "0")
      .option("plan-top", "K", "with --search: plan the unshard set of at most K configurations (default: every one that could make the list)")
      .option("max-tp", "N", "with --search: largest tensor-parallel degree (default: GPUs per node)")
      .flag("json", "with --search: the ranked configurations as a JSON array, each with its plan (for simulate --plan)");
}

int run_plan_search(const ArgParser& p, sim::SimInputRequest req) {
  refuse_fixed_knobs(p);
  // Checkpointing is searched as a plan knob: the model is built without the description's own,
  // and every listed plan names its choice ("*"), which `simulate --plan` then applies instead.
  req.description_checkpointing = false;
  sim::SimInputs in = sim::load_sim_inputs(req);
  sim::SearchShape shape;
  std::string ckpt_note;
  if (in.description) {
    const sim::ModelDescription& d = *in.description;
    if (d.activation_checkpointing != "none")
      ckpt_note = "the description's activation_checkpointing \"" + d.activation_checkpointing +
                  "\" is searched over like any other choice (each plan states its own)";
    shape = sim::search_shape(d, in.model, in.cluster.device);
  }

  sim::SearchRequest sr;
  std::string budget_from;
  if (p.has("budget")) {
    auto b = parse_bytes(p.get("budget"));
    if (!b || *b <= 0) throw UsageError("--budget: '" + p.get("budget") + "' is not a size (e.g. 70GiB, 512MiB, 8e10)");
    sr.budget_bytes = *b;
  } else {
    const auto dev = sim::find_device(in.cluster.device);
    if (!dev)
      throw UsageError("no --budget, and the device '" + in.cluster.device + "' is not in the device table to take its memory from: give --budget");
    sr.budget_bytes = static_cast<std::int64_t>(dev->memory_GiB * double(1LL << 30));
    budget_from = " (the " + dev->name + "'s memory; --budget to change)";
  }
  if (p.has("global-batch")) {
    const long long g = p.get_int("global-batch");
    if (g < 1 || g > 100'000'000) throw UsageError("--global-batch must be between 1 and 100000000 sequences");
    sr.global_batch = static_cast<int>(g);
  }
  const long long top = p.get_int("top"), threads = p.get_int("threads");
  if (top < 1 || top > 1000) throw UsageError("--top must be between 1 and 1000");
  if (threads < 0 || threads > 256) throw UsageError("--threads must be between 0 (one per core) and 256");
  sr.top = static_cast<int>(top);
  // Configurations are independent: on the 2-core build machine 2 threads take 0.6 s where 1 takes
  // 1.2 s for Llama-3 70B on 1,024 GPUs (docs/benchmarks.md).
  sr.threads = threads > 0 ? static_cast<int>(threads) : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
  if (p.has("plan-top")) {
    const long long k = p.get_int("plan-top");
    if (k < 0 || k > 100000) throw UsageError("--plan-top must be between 0 and 100000");
    sr.unshard_top_k = static_cast<int>(k);
  }
  if (p.has("max-tp")) {
    const long long t = p.get_int("max-tp");
    if (t < 1 || t > 1'000'000) throw UsageError("--max-tp must be at least 1");
    sr.max_tp = static_cast<int>(t);
  }
  // Progress on stderr once a search has run for a second, then about every second.
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  sr.progress = [&](int done, int total, int sims) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::seconds(1)) return;
    last = now;
    std::cerr << "search: " << done << " / " << total << " configuration families, " << sims << " simulations, "
              << std::chrono::duration<double>(now - start).count() << " s\n";
  };
  sr.progress_every = 64;

  const sim::SearchResult res = sim::search_configs(in.model, shape, in.plan, in.cluster, sr);
  const int world = in.plan.world_size > 0 ? in.plan.world_size : in.cluster.world_size;
  const bool json = p.flag_set("json") || p.get("format") == "json";
  std::ostringstream counts;
  counts << res.enumerated << " configurations: " << res.invalid << " invalid, " << res.pruned_static << " over the budget on static memory, "
         << res.pruned_bound << " slower than the best by their lower bound, " << res.dominated
         << " not tried (less checkpointing or offload fits), " << res.simulated << " simulated (" << res.fitting << " fit); unshard set planned for "
         << res.planned << " (" << res.planner_simulations << " simulations); " << res.seconds << " s";
  if (res.unplanned_contenders > 0)
    counts << "; " << res.unplanned_contenders << " further down might have made the list with an unshard set (a larger --plan-top plans them)";
  if (!p.get("output").empty() && !res.configs.empty())
    sim::write_file_atomically(p.get("output"), best_plan_file(res.configs.front(), sr.budget_bytes));

  if (json) {
    JsonWriter j(std::cout);
    j.begin_array();
    int rank = 0;
    for (const auto& c : res.configs) write_config_json(j, ++rank, c);
    j.end_array();
    std::cout << "\n";
    std::cerr << "search: " << counts.str() << "\n";
    if (res.configs.empty()) std::cerr << "search: " << res.reason << "\n";
  } else {
    std::cout << "Input        " << in.source << (shape.known ? "" : " (a profile: dp, pp, checkpointing, offload and micro-batches only)")
              << "\nWorld        " << world << " GPUs, " << in.cluster.gpus_per_node << " per node (" << in.cluster.name << ")\n"
              << "Budget       " << format_bytes(sr.budget_bytes) << " per rank" << budget_from << "\n";
    if (sr.global_batch > 0)
      std::cout << "Batch        " << sr.global_batch << " sequences per step (fixed: micro-batches = G / (dp x " << shape.micro_batch
                << ")); ranked by step time\n";
    else
      std::cout << "Batch        free: micro-batches in {1, pp, 2pp, 4pp} (1 without a pipeline), " << (shape.known ? std::to_string(shape.micro_batch) : std::string("the recorded"))
                << " sequence(s) each; ranked by throughput (--global-batch G fixes the tokens per step)\n";
    std::cout << "Searched     " << counts.str() << "\n";
    if (!ckpt_note.empty()) std::cout << "Note         " << ckpt_note << "\n";
    for (const auto& n : res.notes) std::cout << "Note         " << n << "\n";
    if (res.configs.empty()) {
      std::cout << "Nothing fits: " << res.reason << "\n";
    } else {
      std::cout << "\n";
      print_table(std::cout, res, shape.seq_len > 0);
      std::cout << "\nmb: micro-batches per step; uns: units kept unsharded (cost planner); compute includes recompute and the optimizer;\n"
                   "FSDP exp / MP exp: exposed FSDP and model-parallel communication; bubble: the pipeline's idle time (ms).\n"
                   "--json lists each configuration's plan for `simulate --plan`.\n";
    }
    if (!p.get("output").empty() && !res.configs.empty()) std::cout << "Wrote        " << p.get("output") << " (rank 1)\n";
  }
  return res.configs.empty() ? kExitBadInput : kExitOk;
}

}  // namespace ss::cli
