// shardscope diff A B [--by module|kernel|collective] [--format table|csv|json]
//                     [--step-a N] [--step-b N] [--rank R] [--rank-b R] [--top N]
//                     [--save WORKSPACE --name NAME [--notes TEXT] [--plan FILE]]
// shardscope diff --open WORKSPACE [--name NAME]   (reopen a saved comparison; without --name: list)
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <sstream>

#include "app/cli/arg_parser.h"
#include "app/cli/command.h"
#include "profiler/compare/comparison.h"
#include "profiler/compare/diff_report.h"
#include "profiler/compare/workspace.h"
#include "storage/profile_reader.h"

namespace ss::cli {
namespace {

std::optional<std::int64_t> optional_int(const ArgParser& p, const std::string& name) {
  if (!p.has(name)) return std::nullopt;
  return p.get_int(name);
}

int checked_rank(long long r, const char* option) {
  if (r < 0 || r > 1'000'000) throw UsageError(std::string("--") + option + " must be between 0 and 1000000");
  return static_cast<int>(r);
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ProfileError(ProfileErrorKind::Io, "cannot read plan file '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void list_saved(const compare::Workspace& ws) {
  const auto all = ws.list();
  if (all.empty()) {
    std::cout << "workspace " << ws.path() << " holds no saved comparisons\n";
    return;
  }
  for (const auto& c : all) {
    std::string why;
    const bool ok = compare::check_profile(c.a, &why) == compare::ProfileState::Unchanged &&
                    compare::check_profile(c.b, &why) == compare::ProfileState::Unchanged;
    std::cout << c.name << "\n  A " << c.a.path << "\n  B " << c.b.path << "\n  saved " << c.updated_utc
              << (c.plan_json.empty() ? "" : ", with a plan") << (ok ? "" : "\n  warning: " + why) << "\n";
    if (!c.notes.empty()) std::cout << "  notes: " << c.notes << "\n";
  }
}

}  // namespace

int cmd_diff(const std::vector<std::string>& args) {
  ArgParser p("diff",
              "Compare two profiles (measured vs simulated, or run A vs run B) on one rank over an aligned step:\n"
              "the step time and exposed communication of each, then a table per module and phase, per kernel\n"
              "name or per collective, sorted by the largest difference. A is the reference: delta = B - A,\n"
              "error % = 100 * (B - A) / A. Definitions: docs/compare.md.");
  p.positional("A", "the reference profile (measured, or the run before a change)", false)
      .positional("B", "the profile to compare (simulated, or the run after)", false)
      .option("by", "TABLE", "which table to print", "module", 0, {"module", "kernel", "collective"})
      .option("format", "FMT", "output format", "table", 0, {"table", "csv", "json"})
      .option("step-a", "N", "step number on A (default: the first step common to both)")
      .option("step-b", "N", "step number on B (default: the same as --step-a)")
      .option("rank", "R", "rank to compare (on both sides unless --rank-b is given)", "0")
      .option("rank-b", "R", "rank on B when it differs from A's")
      .option("top", "N", "rows of the table to print (0 = all; default 25 for table, all for csv/json)")
      .option("save", "WORKSPACE", "save this comparison (profiles, alignment, notes, plan) in a workspace file")
      .option("open", "WORKSPACE", "reopen a comparison saved in a workspace file (with --name; without: list them)")
      .option("name", "NAME", "name of the saved comparison (--save, --open)")
      .option("notes", "TEXT", "notes to keep with a saved comparison")
      .option("plan", "FILE", "a plan (JSON) to keep with a saved comparison")
      .flag("timings", "print how long loading, comparing and rendering took (stderr)");
  if (!p.parse(args)) return kExitOk;

  const auto format = *compare::diff_format_from_string(p.get("format"));
  compare::ReportOptions report{*compare::diff_by_from_string(p.get("by")), format,
                                format == compare::DiffFormat::Table ? 25u : 0u};
  if (p.has("top")) {
    const long long top = p.get_int("top");
    if (top < 0) throw UsageError("--top must be 0 (all) or a positive number of rows");
    report.top = static_cast<std::size_t>(top);
  }

  std::string path_a, path_b;
  compare::Alignment alignment;
  if (p.has("open")) {
    if (p.has("save")) throw UsageError("--open and --save cannot be combined");
    if (!p.positionals("A").empty()) throw UsageError("--open takes the profiles from the workspace; give no A B");
    for (const char* o : {"step-a", "step-b", "rank", "rank-b", "notes", "plan"})
      if (p.has(o)) throw UsageError(std::string("--open reopens the comparison as saved; --") + o + " cannot change it");
    compare::Workspace ws(p.get("open"), compare::Workspace::Mode::OpenExisting);
    if (!p.has("name")) {
      list_saved(ws);
      return kExitOk;
    }
    const compare::SavedComparison saved = ws.get(p.get("name"));
    compare::verify_profiles(saved);  // missing or changed profile: exit 2 with the reason
    path_a = saved.a.path;
    path_b = saved.b.path;
    alignment = saved.alignment;
  } else {
    if (p.positionals("A").empty() || p.positionals("B").empty()) throw UsageError("missing A and B (two profiles)");
    path_a = p.positionals("A").front();
    path_b = p.positionals("B").front();
    alignment.step_a = optional_int(p, "step-a");
    alignment.step_b = optional_int(p, "step-b");
    alignment.rank_a = checked_rank(p.get_int("rank"), "rank");
    alignment.rank_b = p.has("rank-b") ? checked_rank(p.get_int("rank-b"), "rank-b") : alignment.rank_a;
    if (p.has("save") && !p.has("name")) throw UsageError("--save needs --name NAME");
    for (const char* o : {"name", "notes", "plan"})
      if (p.has(o) && !p.has("save")) throw UsageError(std::string("--") + o + " goes with --save WORKSPACE");
  }

  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  LoadOptions load;
  load.memory = false;  // the comparison needs kernels, ranges, collectives and steps only
  // The two loads are independent: run B's on a second thread (the load is most of the time).
  auto loading_b = std::async(std::launch::async, [&] { return load_profile(path_b, load); });
  const Profile a = load_profile(path_a, load);
  const Profile b = loading_b.get();
  const auto t1 = Clock::now();
  const compare::Comparison c = compare::compare_profiles(a, b, alignment);
  const auto t2 = Clock::now();

  if (p.has("save")) {
    compare::Workspace ws(p.get("save"));
    ws.save(compare::make_saved_comparison(p.get("name"), path_a, path_b, alignment,
                                           p.has("plan") ? read_text_file(p.get("plan")) : std::string(),
                                           p.get("notes")));
    std::cerr << "saved comparison '" << p.get("name") << "' in " << p.get("save") << "\n";
  }

  // Render fully before writing, so an error never leaves half a table on stdout.
  std::ostringstream out;
  compare::write_report(out, c, report);
  std::cout << out.str();
  if (p.flag_set("timings")) {
    auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    char line[160];
    std::snprintf(line, sizeof line, "timings: load %.1f ms, compare %.1f ms, render %.1f ms\n", ms(t1 - t0),
                  ms(t2 - t1), ms(Clock::now() - t2));
    std::cerr << line;
  }
  return kExitOk;
}

}  // namespace ss::cli
