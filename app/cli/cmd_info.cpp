// shardscope info FILE [--format text|json]
#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <iostream>

#include "app/cli/arg_parser.h"
#include "app/cli/command.h"
#include "app/cli/comm_kernel_report.h"
#include "storage/cpu_device.h"
#include "storage/json_writer.h"
#include "storage/profile_summary.h"
#include "storage/units.h"

namespace ss::cli {
namespace {

std::int64_t category_total(const ProfileSummary& s) {
  std::int64_t t = 0;
  for (const auto& c : s.time_by_category) t += c.total_ns;
  return t;
}

void print_text(const ProfileSummary& s, const std::vector<CommKernelGroup>& comm) {
  auto& o = std::cout;
  o << "Profile      " << s.path << " (schema v" << s.schema_version << ")\n";
  o << "Origin       " << to_string(s.origin.kind);
  if (!s.origin.tool.empty()) o << " by " << s.origin.tool;
  if (!s.origin.source_format.empty()) o << " from " << s.origin.source_format;
  if (!s.origin.created_utc.empty()) o << ", " << s.origin.created_utc;
  o << "\n";
  if (!s.origin.notes.empty()) o << "             " << s.origin.notes << "\n";
  o << "Ranks        " << s.ranks.size() << "\n";
  for (const auto& r : s.ranks) {
    o << "  rank " << std::setw(4) << std::left << r.rank << std::right << (r.gpu_name.empty() ? "(GPU unknown)" : r.gpu_name);
    if (r.gpu_memory_bytes > 0) o << ", " << format_bytes(r.gpu_memory_bytes);
    if (!r.host.empty()) o << ", host " << r.host;
    if (r.pid > 0) o << ", pid " << r.pid;
    o << "\n";
  }
  o << "Time span    " << format_duration_ns(s.time_end - s.time_begin) << " (" << s.time_begin << " .. " << s.time_end
    << " ns)\n";
  o << "Steps        " << s.steps << "\n";
  const bool cpu_only = !s.ranks.empty() && std::all_of(s.ranks.begin(), s.ranks.end(), [](const RankInfo& r) { return is_cpu_device(r.gpu_name); });
  o << "Events       kernels " << s.kernels << ", copies " << s.copies << ", memsets " << s.memsets << " ("
    << s.gpu_activities << " " << (cpu_only ? "device" : "GPU") << " activities), collectives " << s.collectives << ", ranges " << s.ranges
    << ", modules " << s.modules << ", memory events " << s.memory_events << ", streams " << s.streams << "\n";
  if (s.fsdp_units > 0)
    o << "FSDP units   " << s.fsdp_units << " holding " << s.fsdp_unit_params << " parameters\n";
  if (s.backward_ranges == "units")
    o << "Backward     module ranges for the FSDP units only (record --backward-ranges units); forward per module\n";
  const std::int64_t total = category_total(s);
  if (!s.time_by_category.empty()) {
    o << (cpu_only ? "\nDevice (CPU) time by category\n" : "\nGPU time by category\n");
    for (const auto& c : s.time_by_category) {
      char line[160];
      std::snprintf(line, sizeof line, "  %-11s %10lld events  %14s  %5.1f%%\n", std::string(to_string(c.category)).c_str(),
                    static_cast<long long>(c.count), format_duration_ns(c.total_ns).c_str(),
                    total > 0 ? 100.0 * double(c.total_ns) / double(total) : 0.0);
      o << line;
    }
  }
  if (!s.top_kernels.empty()) {
    o << "\nTop " << s.top_kernels.size() << " kernels by total time\n";
    o << "     total        count     mean        name\n";
    for (const auto& k : s.top_kernels) {
      std::string name = k.name.size() > 90 ? k.name.substr(0, 87) + "..." : k.name;
      char line[256];
      std::snprintf(line, sizeof line, "  %12s %8lld  %12s  %s\n", format_duration_ns(k.total_ns).c_str(),
                    static_cast<long long>(k.count), format_duration_ns(k.count ? k.total_ns / k.count : 0).c_str(),
                    name.c_str());
      o << line;
    }
  }
  if (!comm.empty()) {
    o << "\nCommunication kernels by the rule that recognised them\n";
    o << "  family             name contains                 kernels          total\n";
    for (const auto& g : comm) {
      char line[256];
      std::snprintf(line, sizeof line, "  %-18s %-28s %8lld  %13s\n", g.family.c_str(), g.rule.c_str(),
                    static_cast<long long>(g.kernels), format_duration_ns(g.total_ns).c_str());
      o << line;
    }
  }
  if (!s.collective_totals.empty()) {
    const std::int64_t steps = std::max<std::int64_t>(s.steps, 1);
    o << "\nCollectives by type and size" << (s.steps > 0 ? " (per rank per step: those inside steps / rank / steps)" : "")
      << "\n";
    o << "  type              group           bytes each     count   per rank-step\n";
    std::int64_t outside = 0;
    for (const auto& c : s.collective_totals) {
      char line[256];
      const double in_steps = s.steps > 0 ? double(c.in_steps) : double(c.count);
      const double per = c.ranks > 0 ? in_steps / double(c.ranks) / double(steps) : 0.0;
      if (s.steps > 0) outside += c.count - c.in_steps;
      std::snprintf(line, sizeof line, "  %-16s  %-14s %12lld  %8lld  %10.2f", std::string(to_string(c.type)).c_str(),
                    c.group.substr(0, 14).c_str(), static_cast<long long>(c.bytes), static_cast<long long>(c.count), per);
      o << line;
      if (!c.ran_as.empty()) o << "   (ran as " << c.ran_as << ")";
      o << "\n";
    }
    if (outside > 0)
      o << "  " << outside << " collective(s) outside every step (initialisation before the first step) are counted, "
        << "not in the per rank-step column\n";
    if (std::any_of(s.collective_totals.begin(), s.collective_totals.end(), [](const CollectiveTotal& c) { return !c.ran_as.empty(); }))
      o << "  gloo runs FSDP's reduce-scatter as an all-reduce: its time is an all-reduce's of the full buffer\n";
  }
  for (const auto& m : s.memory_peaks) {
    if (&m == &s.memory_peaks.front()) o << "\nMemory peak per rank, and what was live at the peak\n";
    o << "  rank " << m.rank << ": " << format_bytes(m.peak_bytes) << " at " << format_duration_ns(m.time - s.time_begin)
      << "\n   ";
    for (int c = 0; c < kMemoryCategoryCount; ++c)
      if (m.by_category[c] != 0) o << " " << to_string(static_cast<MemoryCategory>(c)) << " " << format_bytes(m.by_category[c]);
    o << "\n";
  }
  if (!s.skipped.empty()) {
    o << "\nSkipped or dropped events\n";
    for (const auto& k : s.skipped) o << "  " << std::setw(10) << k.count << "  " << k.reason << "\n";
  }
}

void print_json(const ProfileSummary& s, const std::vector<CommKernelGroup>& comm) {
  JsonWriter j(std::cout);
  j.begin_object();
  j.kv("path", s.path).kv("schema_version", s.schema_version);
  j.key("origin").begin_object();
  j.kv("kind", std::string(to_string(s.origin.kind)))
      .kv("tool", s.origin.tool)
      .kv("tool_version", s.origin.tool_version)
      .kv("source_format", s.origin.source_format)
      .kv("source_files", s.origin.source_files)
      .kv("created_utc", s.origin.created_utc)
      .kv("notes", s.origin.notes);
  j.key("parameters").raw(s.origin.parameters_json.empty() ? "{}" : s.origin.parameters_json);
  j.end_object();
  j.kv("ranks", static_cast<std::int64_t>(s.ranks.size()));
  j.key("gpus").begin_array();
  for (const auto& r : s.ranks) j.value(r.gpu_name);
  j.end_array();
  j.key("rank_info").begin_array();
  for (const auto& r : s.ranks) {
    j.begin_object()
        .kv("rank", r.rank)
        .kv("gpu", r.gpu_name)
        .kv("gpu_memory_bytes", r.gpu_memory_bytes)
        .kv("host", r.host)
        .kv("pid", r.pid)
        .kv("device_index", r.device_index)
        .kv("world_size", r.world_size)
        .kv("clock_offset_ns", r.clock_offset_ns)
        .end_object();
  }
  j.end_array();
  j.kv("time_begin_ns", s.time_begin).kv("time_end_ns", s.time_end).kv("duration_ns", s.time_end - s.time_begin);
  j.kv("time_origin_unix_ns", s.time_origin_unix_ns);
  j.kv("kernels", s.kernels)
      .kv("copies", s.copies)
      .kv("memsets", s.memsets)
      .kv("gpu_activities", s.gpu_activities)
      .kv("collectives", s.collectives)
      .kv("ranges", s.ranges)
      .kv("modules", s.modules)
      .kv("memory_events", s.memory_events)
      .kv("steps", s.steps)
      .kv("streams", s.streams);
  j.key("time_by_category").begin_object();
  for (const auto& c : s.time_by_category) {
    j.key(to_string(c.category)).begin_object().kv("count", c.count).kv("total_ns", c.total_ns).end_object();
  }
  j.end_object();
  j.key("top_kernels").begin_array();
  for (const auto& k : s.top_kernels)
    j.begin_object().kv("name", k.name).kv("count", k.count).kv("total_ns", k.total_ns).end_object();
  j.end_array();
  j.kv("fsdp_units", s.fsdp_units).kv("fsdp_unit_params", s.fsdp_unit_params).kv("backward_ranges", s.backward_ranges);
  j.key("collective_totals").begin_array();
  for (const auto& c : s.collective_totals)
    j.begin_object()
        .kv("type", std::string(to_string(c.type)))
        .kv("group", c.group)
        .kv("bytes", c.bytes)
        .kv("count", c.count)
        .kv("ranks", c.ranks)
        .kv("ran_as", c.ran_as)
        .kv("in_steps", c.in_steps)
        .end_object();
  j.end_array();
  j.key("communication_kernels").begin_array();
  for (const auto& g : comm)
    j.begin_object().kv("family", g.family).kv("rule", g.rule).kv("kernels", g.kernels).kv("total_ns", g.total_ns).end_object();
  j.end_array();
  j.key("memory_peaks").begin_array();
  for (const auto& m : s.memory_peaks) {
    j.begin_object().kv("rank", m.rank).kv("peak_bytes", m.peak_bytes).kv("time_ns", m.time);
    j.key("by_category").begin_object();
    for (int c = 0; c < kMemoryCategoryCount; ++c) j.kv(std::string(to_string(static_cast<MemoryCategory>(c))), m.by_category[c]);
    j.end_object().end_object();
  }
  j.end_array();
  std::int64_t skipped_total = 0;
  for (const auto& k : s.skipped) skipped_total += k.count;
  j.key("skipped_events").begin_object().kv("total", skipped_total);
  j.key("by_reason").begin_array();
  for (const auto& k : s.skipped) j.begin_object().kv("reason", k.reason).kv("count", k.count).end_object();
  j.end_array().end_object();
  j.end_object();
}

}  // namespace

int cmd_info(const std::vector<std::string>& args) {
  ArgParser p("info", "Summarise a profile: ranks and GPUs, time span, steps, event counts, the kernels with the most\n"
                      "total time and GPU time by category. Reads the file without loading it whole.");
  p.positional("FILE", "a ShardScope profile (.ssdb)")
      .option("format", "FMT", "output format", "text", 0, {"text", "json"})
      .option("top", "N", "how many kernels to list by total time", "10");
  if (!p.parse(args)) return kExitOk;
  const long long top = p.get_int("top");
  if (top < 0 || top > 100000) throw UsageError("--top must be between 0 and 100000");
  ProfileSummary s = summarize_profile(p.positionals("FILE").front(), static_cast<int>(top));
  const auto comm = comm_kernel_groups(p.positionals("FILE").front());
  if (p.get("format") == "json")
    print_json(s, comm);
  else
    print_text(s, comm);
  return kExitOk;
}

}  // namespace ss::cli
