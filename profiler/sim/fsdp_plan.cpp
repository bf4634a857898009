#include "profiler/sim/fsdp_plan.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "profiler/sim/json_input.h"
#include "storage/json_writer.h"

namespace ss::sim {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

std::vector<std::string> string_list(element e, const std::string& where, const std::string& path) {
  array a;
  if (e.get_array().get(a)) json_fail(where, path, "an array of module names");
  std::vector<std::string> out;
  std::size_t i = 0;
  for (element x : a) {
    std::string_view s;
    if (x.get_string().get(s)) json_fail(where, path + "[" + std::to_string(i) + "]", "a module name (string)");
    out.emplace_back(s);
    ++i;
  }
  return out;
}

std::map<std::string, std::vector<std::string>> list_map(element e, const std::string& where, const std::string& path) {
  std::map<std::string, std::vector<std::string>> out;
  for (auto field : as_object(e, where, path)) {
    std::string k(field.key);
    out[k] = string_list(field.value, where, path + "." + k);
  }
  return out;
}

Parallelism parse_parallelism(object o, const std::string& where) {
  Parallelism par;
  auto degree = [&](const char* k, int& out) {
    if (auto v = get_int(o, k, where, "parallelism")) {
      if (*v < 1 || *v > kMaxParallelDegree) json_fail(where, std::string("parallelism.") + k, "an integer in [1, 1000000]");
      out = static_cast<int>(*v);
    }
  };
  degree("tp", par.tp);
  degree("cp", par.cp);
  degree("pp", par.pp);
  degree("pp_virtual", par.pp_virtual);
  degree("ep", par.ep);
  if (auto v = get_bool(o, "sequence_parallel", where, "parallelism")) par.sequence_parallel = *v;
  if (auto v = get_bool(o, "loss_parallel", where, "parallelism")) par.loss_parallel = *v;
  if (auto v = get_bool(o, "pp_fsdp_every_microbatch", where, "parallelism")) par.pp_fsdp_every_microbatch = *v;
  if (auto v = get_string(o, "cp_kind", where, "parallelism")) {
    if (!valid_cp_kind(*v)) json_fail(where, "parallelism.cp_kind", "\"ulysses\" or \"ring\"");
    par.cp_kind = *v;
  }
  if (auto v = get_string(o, "pp_schedule", where, "parallelism")) {
    if (!valid_pp_schedule(*v)) json_fail(where, "parallelism.pp_schedule", "\"1f1b\", \"gpipe\" or \"interleaved\"");
    par.pp_schedule = *v;
  }
  element e;
  if (!o["pp_split"].get(e)) {
    const char* what = "an array of the first unit of stages 1..pp-1: all positive indices in forward order, or all unit names";
    array a;
    if (e.get_array().get(a)) json_fail(where, "parallelism.pp_split", what);
    for (element x : a) {
      std::int64_t i;
      std::string_view name;
      if (!x.get_int64().get(i) && i >= 1 && par.pp_split_units.empty()) par.pp_split.push_back(static_cast<int>(i));
      else if (!x.get_string().get(name) && par.pp_split.empty()) par.pp_split_units.emplace_back(name);
      else json_fail(where, "parallelism.pp_split", what);
    }
  }
  return par;
}

}  // namespace

FsdpPlan parse_plan_json(const std::string& json, const std::string& where) {
  simdjson::dom::parser parser;
  object root = as_object(parse_json(parser, json, where), where, "");
  FsdpPlan p;
  element e;
  if (!root["unsharded"].get(e)) p.unsharded = string_list(e, where, "unsharded");
  if (!root["resharded"].get(e)) p.resharded = string_list(e, where, "resharded");
  if (!root["reshard_after_forward"].get(e)) {
    // {"layers.0": false, "layers.1": 8, "": true}: the per-module form of the three policies.
    for (auto field : as_object(e, where, "reshard_after_forward")) {
      std::string k(field.key);
      bool b;
      std::int64_t i;
      if (!field.value.get_bool().get(b)) {
        (b ? p.resharded : p.unsharded).push_back(k);
      } else if (!field.value.get_int64().get(i) && i >= 1) {
        if (i == 1) p.unsharded.push_back(k);  // a 1-rank slice is the whole tensor
        else p.reshard_degree[k] = static_cast<int>(i);
      } else {
        json_fail(where, "reshard_after_forward." + k, "true, false or an integer k >= 1");
      }
    }
  }
  if (!root["forward_prefetch"].get(e)) p.forward_prefetch = list_map(e, where, "forward_prefetch");
  if (!root["backward_prefetch"].get(e)) p.backward_prefetch = list_map(e, where, "backward_prefetch");
  if (!root["buckets"].get(e)) {
    array a;
    if (e.get_array().get(a)) json_fail(where, "buckets", "an array of arrays of module names");
    std::size_t i = 0;
    for (element b : a) p.buckets.push_back(string_list(b, where, "buckets[" + std::to_string(i++) + "]"));
  }
  if (!root["fsdp2_buckets"].get(e)) {
    array a;
    if (e.get_array().get(a)) json_fail(where, "fsdp2_buckets", "an array of arrays of module names");
    std::size_t i = 0;
    for (element b : a) p.fsdp2_buckets.push_back(string_list(b, where, "fsdp2_buckets[" + std::to_string(i++) + "]"));
  }
  if (!root["bucket_cap_mb"].get(e)) {
    for (auto field : as_object(e, where, "bucket_cap_mb")) {
      double d;
      std::int64_t i;
      std::string k(field.key);
      if (!field.value.get_double().get(d)) p.bucket_cap_mb[k] = d;
      else if (!field.value.get_int64().get(i)) p.bucket_cap_mb[k] = static_cast<double>(i);
      else json_fail(where, "bucket_cap_mb." + k, "a size in MB");
      if (p.bucket_cap_mb[k] <= 0) json_fail(where, "bucket_cap_mb." + k, "a positive size in MB");
    }
  }
  if (auto v = get_int(root, "zero_stage", where, "")) {
    if (*v != 2 && *v != 3) json_fail(where, "zero_stage", "2 or 3");
    p.zero_stage = static_cast<int>(*v);
  }
  if (auto v = get_int(root, "gradient_accumulation", where, "")) {
    if (*v < 1 || *v > kMaxMicroBatches) json_fail(where, "gradient_accumulation", "an integer in [1, 4096]");
    p.gradient_accumulation = static_cast<int>(*v);
  }
  if (auto v = get_bool(root, "sync_every_microbatch", where, "")) p.sync_every_microbatch = *v;
  if (auto v = get_bool(root, "reshard_after_backward", where, "")) p.reshard_after_backward = *v;
  if (auto v = get_int(root, "hsdp_replicate", where, "")) {
    if (*v < 1) json_fail(where, "hsdp_replicate", "an integer >= 1");
    p.hsdp_replicate = static_cast<int>(*v);
  }
  if (auto v = get_bool(root, "separate_reduce_scatter_group", where, "")) p.separate_reduce_scatter_group = *v;
  if (auto v = get_int(root, "world_size", where, "")) {
    if (*v < 0 || *v > 10'000'000) json_fail(where, "world_size", "an integer in [0, 10000000]");
    p.world_size = static_cast<int>(*v);
  }
  if (!root["activation_checkpointing"].get(e)) {
    // {"layers.0": "full", "*": "attention"}; a bare string applies to every non-root unit.
    std::string_view sv;
    if (!e.get_string().get(sv)) {
      if (sv != "none") p.checkpoint["*"] = std::string(sv);
    } else {
      for (auto field : as_object(e, where, "activation_checkpointing")) {
        std::string k(field.key);
        if (field.value.get_string().get(sv) || sv.empty())
          json_fail(where, "activation_checkpointing." + k, "\"none\", \"full\" or a sub-module name (selective)");
        p.checkpoint[k] = std::string(sv);
      }
    }
  }
  if (auto v = get_string(root, "offload", where, "")) {
    if (!valid_offload(*v)) json_fail(where, "offload", "\"none\", \"cpu\" or \"optimizer\"");
    p.offload = *v;
  }
  if (auto v = get_int(root, "offload_prefetch_depth", where, "")) {
    if (*v < 1 || *v > kMaxOffloadPrefetchDepth) json_fail(where, "offload_prefetch_depth", "an integer in [1, 1024]");
    p.offload_prefetch_depth = static_cast<int>(*v);
  }
  if (auto v = get_bool(root, "pipelined_optimizer", where, "")) p.pipelined_optimizer = *v;
  if (!root["parallelism"].get(e)) p.parallel = parse_parallelism(as_object(e, where, "parallelism"), where);
  return p;
}

FsdpPlan load_plan_file(const std::string& path) { return parse_plan_json(read_text_file(path), path); }

bool plan_file_sets(const std::string& path, const char* key) {
  simdjson::dom::parser parser;
  const std::string text = read_text_file(path);
  object root = as_object(parse_json(parser, text, path), path, "");
  element e;
  return !root[key].get(e);
}

std::string plan_to_json(const FsdpPlan& p) {
  std::ostringstream s;
  JsonWriter j(s, false);
  auto list = [&](const std::vector<std::string>& v) {
    j.begin_array();
    for (const auto& x : v) j.value(x);
    j.end_array();
  };
  j.begin_object();
  j.key("unsharded");
  list(p.unsharded);
  if (!p.resharded.empty()) {
    j.key("resharded");
    list(p.resharded);
  }
  if (!p.reshard_degree.empty()) {
    j.key("reshard_after_forward").begin_object();
    for (const auto& [k, v] : p.reshard_degree) j.kv(k, v);
    j.end_object();
  }
  for (const auto* m : {&p.forward_prefetch, &p.backward_prefetch}) {
    if (m->empty()) continue;
    j.key(m == &p.forward_prefetch ? "forward_prefetch" : "backward_prefetch").begin_object();
    for (const auto& [k, v] : *m) {
      j.key(k);
      list(v);
    }
    j.end_object();
  }
  if (!p.buckets.empty()) {
    j.key("buckets").begin_array();
    for (const auto& b : p.buckets) list(b);
    j.end_array();
  }
  if (!p.fsdp2_buckets.empty()) {
    j.key("fsdp2_buckets").begin_array();
    for (const auto& b : p.fsdp2_buckets) list(b);
    j.end_array();
  }
  if (!p.bucket_cap_mb.empty()) {
    j.key("bucket_cap_mb").begin_object();
    for (const auto& [k, v] : p.bucket_cap_mb) j.kv(k, v);
    j.end_object();
  }
  j.kv("zero_stage", p.zero_stage)
      .kv("gradient_accumulation", p.gradient_accumulation)
      .kv("sync_every_microbatch", p.sync_every_microbatch)
      .kv("hsdp_replicate", p.hsdp_replicate)
      .kv("separate_reduce_scatter_group", p.separate_reduce_scatter_group);
  if (p.world_size > 0) j.kv("world_size", p.world_size);
  // New knobs only when set, so plans without them are written exactly as before.
  if (!p.reshard_after_backward) j.kv("reshard_after_backward", false);
  if (!p.checkpoint.empty()) {
    j.key("activation_checkpointing").begin_object();
    for (const auto& [k, v] : p.checkpoint) j.kv(k, v);
    j.end_object();
  }
  if (p.offload != "none") j.kv("offload", p.offload);
  if (p.offload_prefetch_depth != 1) j.kv("offload_prefetch_depth", p.offload_prefetch_depth);
  if (p.pipelined_optimizer) j.kv("pipelined_optimizer", true);
  if (!(p.parallel == Parallelism{})) {
    const Parallelism& q = p.parallel;
    j.key("parallelism").begin_object();
    j.kv("tp", q.tp).kv("sequence_parallel", q.sequence_parallel).kv("loss_parallel", q.loss_parallel).kv("cp", q.cp).kv("cp_kind", q.cp_kind);
    j.kv("pp", q.pp).kv("pp_schedule", q.pp_schedule).kv("pp_virtual", q.pp_virtual).kv("ep", q.ep);
    if (q.pp_fsdp_every_microbatch) j.kv("pp_fsdp_every_microbatch", true);
    if (!q.pp_split.empty() || !q.pp_split_units.empty()) {
      j.key("pp_split").begin_array();
      for (int i : q.pp_split) j.value(i);
      for (const auto& name : q.pp_split_units) j.value(name);
      j.end_array();
    }
    j.end_object();
  }
  j.end_object();
  return s.str();
}

namespace {

struct ShardCall {
  std::vector<std::string> modules;  // one module, or a bucket's
  std::string policy;                // reshard_after_forward as Python: False, True or k
};

// The fully_shard calls a plan makes, innermost first (FSDP2 takes the parameters of the innermost
// call): one per bucket of two or more modules (kept unsharded if a member is, else the largest
// member's k, else True: the simulator's rule) and one per other module the plan names.
std::vector<ShardCall> fully_shard_calls(const FsdpPlan& p) {
  std::map<std::string, std::string> policy;
  for (const auto& [m, k] : p.reshard_degree) policy[m] = std::to_string(k);
  for (const auto& m : p.unsharded) policy[m] = "False";
  std::vector<ShardCall> calls;
  std::set<std::string> bucketed;
  for (const auto& b : p.fsdp2_buckets.empty() ? p.buckets : p.fsdp2_buckets) {
    if (b.size() < 2) continue;
    ShardCall c{b, "True"};
    int k = 0;
    for (const auto& m : b) {
      bucketed.insert(m);
      auto it = policy.find(m);
      if (it == policy.end()) continue;
      if (it->second == "False") c.policy = "False";
      else k = std::max(k, std::stoi(it->second));
    }
    if (c.policy != "False" && k >= 2) c.policy = std::to_string(k);
    calls.push_back(std::move(c));
  }
  // The other modules as the plan lists them: kept unsharded, then the 1/k ones.
  std::vector<ShardCall> singles;
  for (const auto& m : p.unsharded)
    if (!bucketed.count(m)) singles.push_back({{m}, "False"});
  for (const auto& [m, k] : p.reshard_degree)
    if (!bucketed.count(m) && policy[m] != "False") singles.push_back({{m}, std::to_string(k)});
  calls.insert(calls.begin(), singles.begin(), singles.end());
  auto depth = [](const ShardCall& c) {
    long d = -1;
    for (const auto& m : c.modules) d = std::max(d, m.empty() ? -1L : static_cast<long>(std::count(m.begin(), m.end(), '.')));
    return d;
  };
  std::stable_sort(calls.begin(), calls.end(), [&](const ShardCall& a, const ShardCall& b) { return depth(a) > depth(b); });
  return calls;
}

}  // namespace

namespace {

// The model a planned module belongs to, as record named them: one of `second_models` (a second
// FSDP model in the recorded process, named by its class: "FSDPNet", its units "FSDPNet.layers.0")
// or "" (the first model called), and the module's name relative to that model.
std::pair<std::string, std::string> model_of(const std::string& m, const std::vector<std::string>& second_models) {
  for (const auto& r : second_models) {
    if (m == r) return {r, ""};
    if (m.rfind(r + ".", 0) == 0) return {r, m.substr(r.size() + 1)};
  }
  return {"", m};
}

}  // namespace

std::string plan_to_python(const FsdpPlan& p, const std::vector<std::string>& second_models) {
  std::ostringstream s;
  // With two models in the profile the function takes the one to shard (root=, as apply_plan does)
  // and each model's calls name its modules relative to it: "FSDPNet.layers.1" is layers.1 of the
  // model passed with root="FSDPNet" (before, model.get_submodule("FSDPNet.layers.1") failed on it).
  const bool several = !second_models.empty();
  std::map<std::string, std::ostringstream> per_model;  // root -> its lines, several models only
  auto body = [&](const std::string& module) -> std::ostream& {
    return several ? per_model[model_of(module, second_models).first] : static_cast<std::ostream&>(s);
  };
  auto name = [&](const std::string& module) { return several ? model_of(module, second_models).second : module; };
  s << "# Generated by shardscope plan. Call after building the model and before wrapping the rest:\n"
       "# FSDP2 takes the parameters of the innermost fully_shard call, so apply this first.\n"
       "from torch.distributed.fsdp import fully_shard\n\n"
    << (several ? "def apply_shardscope_plan(model, root=\"\", **fully_shard_kwargs):\n"
                : "def apply_shardscope_plan(model, **fully_shard_kwargs):\n");
  if (several) {
    s << "    # The profile holds " << second_models.size() + 1 << " FSDP models: \"\" (the first called)";
    for (const auto& r : second_models) s << ", " << JsonWriter::quoted(r);
    s << ".\n    # Call this for each model you shard, with root= its name there (the names below are relative to it).\n";
  }
  bool any = false;
  if (!p.parallel.is_1d()) {
    // The mesh and the model-parallel wrapping come before fully_shard and need the launcher's
    // world; they are described, not generated (torchtitan's parallelize_llama does them).
    const Parallelism& q = p.parallel;
    s << "    # parallelism: mesh (pp=" << q.pp << ", dp_shard, cp=" << q.cp << ", tp=" << q.tp << "), tp innermost;\n"
      << "    #   tensor parallel: parallelize_module(block, mesh[\"tp\"], Colwise q/k/v, w1/w3, Rowwise o, w2"
      << (q.sequence_parallel ? ", SequenceParallel norms" : "") << ")\n";
    if (q.cp > 1) s << "    #   context parallel (" << q.cp_kind << ") over mesh[\"cp\"]\n";
    if (q.pp > 1)
      s << "    #   pipeline: " << q.pp * q.pp_virtual << " stages, schedule " << q.pp_schedule << " (torch.distributed.pipelining), "
        << p.gradient_accumulation << " micro-batches\n";
    if (q.ep > 1) s << "    #   expert parallel: experts split over " << q.ep << " ranks of dp_shard x cp\n";
    s << "    #   then fully_shard over mesh[\"dp_shard\", \"cp\"] (flattened) as below\n";
  }
  if (std::any_of(p.checkpoint.begin(), p.checkpoint.end(), [](const auto& kv) { return kv.second != "none"; })) {
    // Checkpoint wrappers go in before fully_shard, so FSDP's hooks wrap the checkpointed module.
    // Whole named units are wrapped in place; "*" and selective globs need the model's structure,
    // which shardscope.plan.apply_checkpointing resolves (then it takes every entry).
    bool only_full = true;
    std::map<std::string, std::string> entries;  // per model
    for (const auto& [m, v] : p.checkpoint) {
      if (v == "none") continue;
      only_full = only_full && v == "full" && m != "*";
      std::string& e = entries[several ? model_of(m, second_models).first : ""];
      e += (e.empty() ? "" : ", ") + JsonWriter::quoted(name(m)) + ": " + JsonWriter::quoted(v);
    }
    if (only_full) {
      s << "    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper\n\n"
           "    def _checkpoint(name):  # before fully_shard: FSDP then wraps the checkpointed module\n"
           "        parent, _, child = name.rpartition(\".\")\n"
           "        owner = model.get_submodule(parent) if parent else model\n"
           "        setattr(owner, child, checkpoint_wrapper(getattr(owner, child)))\n\n";
      for (const auto& [m, v] : p.checkpoint)
        if (v == "full") body(m) << "    _checkpoint(" << JsonWriter::quoted(name(m)) << ")\n";
    } else {
      s << "    from shardscope.plan import apply_checkpointing\n";
      for (const auto& [root, e] : entries)
        body(root) << "    apply_checkpointing(model, {\"activation_checkpointing\": {" << e << "}})\n";
    }
  }
  if (p.offload == "cpu") {
    s << "    from torch.distributed.fsdp import CPUOffloadPolicy\n"
         "    fully_shard_kwargs = dict(fully_shard_kwargs, offload_policy=CPUOffloadPolicy())\n";
  } else if (p.offload == "optimizer") {
    s << "    # optimizer-state offload is not an FSDP2 policy: use a CPU optimizer (e.g. DeepSpeed CPUAdam)\n";
  }
  for (const auto& call : fully_shard_calls(p)) {
    std::ostream& o = body(call.modules.front());  // a bucket is one model's
    o << "    fully_shard(";
    if (call.modules.size() > 1) o << "[";
    for (std::size_t i = 0; i < call.modules.size(); ++i)
      o << (i ? ", " : "") << "model.get_submodule(" << JsonWriter::quoted(name(call.modules[i])) << ")";
    if (call.modules.size() > 1) o << "]";
    o << ", reshard_after_forward=" << call.policy << ", **fully_shard_kwargs)"
      << (call.modules.size() > 1 ? "  # one all-gather for the bucket\n" : "\n");
    any = true;
  }
  for (const auto& [root, lines] : per_model) {
    s << "    if root == " << JsonWriter::quoted(root) << ":\n";
    std::istringstream in(lines.str());
    for (std::string line; std::getline(in, line);) s << "    " << line << "\n";
  }
  if (!p.bucket_cap_mb.empty() && p.fsdp2_buckets.empty())
    s << "    # bucket_cap_mb is not applied here: the buckets the caps form depend on the model's forward order;\n"
         "    # `shardscope plan -o` and the GUI's export write them as fsdp2_buckets, which this code then applies\n";
  if (!any) s << "    pass  # the plan keeps every module resharded (FSDP2 default)\n";
  s << "\n# Or, with the shardscope Python package:\n"
       "#   from shardscope.plan import apply_plan\n"
    << (several ? "#   apply_plan(model, \"plan.json\", root=\"\", mesh=mesh)  # root= as above\n"
                : "#   apply_plan(model, \"plan.json\", mesh=mesh)\n")
    << "# FSDP1 (FullyShardedDataParallel) takes the unsharded modules when it wraps the model:\n"
       "#   from shardscope.plan import fsdp1_wrap_policy\n"
    << (several ? "#   model = FSDP(model, auto_wrap_policy=fsdp1_wrap_policy(model, \"plan.json\", {Block}, root=\"\"))\n"
                : "#   model = FSDP(model, auto_wrap_policy=fsdp1_wrap_policy(model, \"plan.json\", {Block}))\n");
  return s.str();
}

std::string plan_to_torchtitan(const FsdpPlan& p, const std::string& plan_file, bool every_unit_unsharded) {
  std::ostringstream s;
  const std::string file = plan_file.empty() ? std::string("plan.json") : plan_file;
  s << "# torchtitan (unedited): in the config registry function you pass to --module/--config\n"
       "from shardscope.torchtitan import parallelize_hook\n"
       "parallelize_hook(config.model_spec, plan="
    << JsonWriter::quoted(file) << ")  # set_reshard_after_forward after its parallelize step\n";
  if (every_unit_unsharded && p.reshard_degree.empty())
    s << "# or torchtitan's own option: --parallelism.fsdp_reshard_after_forward never\n";
  const bool any_ckpt = std::any_of(p.checkpoint.begin(), p.checkpoint.end(), [](const auto& kv) { return kv.second != "none"; });
  if (any_ckpt) {
    auto all = p.checkpoint.find("*");
    if (all != p.checkpoint.end() && p.checkpoint.size() == 1 && all->second == "full")
      s << "# checkpointing: torchtitan's own --activation_checkpoint full does the same (then drop it from the plan)\n";
    else
      s << "# checkpointing: the hook wraps the planned modules before parallelize; set --activation_checkpoint none\n";
  }
  return s.str();
}

}  // namespace ss::sim
