// shardscope analyze --list
// shardscope analyze NAME FILE [--format table|json] [--from NS --to NS | --steps A:B] [--ranks 0,1]
// Runs an analysis plugin (plugins/, docs/plugins.md) on a profile. Exit codes: 0 ok, 1 usage
// or unknown analysis (the list is printed), 2 bad input (profile, window, ranks), 3 the
// analysis failed (its error is printed; the host itself survives a throwing plugin).
#include <algorithm>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "app/cli/arg_parser.h"
#include "app/cli/command.h"
#include "profiler/collector/core/step_window.h"
#include "plugins/host/plugin_host.h"
#include "plugins/host/result_format.h"
#include "plugins/host/steps_window.h"
#include "storage/errors.h"
#include "storage/profile_reader.h"
#include "storage/units.h"

namespace ss::cli {
namespace {

void print_list(const plugins::PluginHost& host, std::ostream& o, bool verbose) {
  o << "Analyses:\n";
  std::size_t width = 4;
  for (const auto& d : host.plugins()) width = std::max(width, d.name.size());
  for (const auto& d : host.plugins())
    o << "  " << d.name << std::string(width - d.name.size() + 2, ' ') << d.title << "\n";
  if (host.plugins().empty()) o << "  (none found)\n";
  if (!host.problems().empty()) {
    o << "\nNot loaded:\n";
    for (const auto& p : host.problems()) o << "  " << p.path << ": " << p.message << "\n";
  }
  if (verbose) {
    o << "\nSearched (in order; SHARDSCOPE_PLUGIN_PATH first):\n";
    for (const auto& d : host.searched_dirs()) o << "  " << d << "\n";
    o << "\nDetails:\n";
    for (const auto& d : host.plugins()) o << "  " << d.name << " (" << d.path << ")\n      " << d.description << "\n";
  }
}

std::vector<int> parse_ranks(const std::string& text) {
  std::vector<int> ranks;
  std::stringstream s(text);
  std::string part;
  while (std::getline(s, part, ',')) {
    char* end = nullptr;
    long v = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 0 || v > 10'000'000)
      throw UsageError("--ranks needs a comma-separated list of rank numbers, not '" + text + "'");
    ranks.push_back(static_cast<int>(v));
  }
  if (ranks.empty()) throw UsageError("--ranks needs at least one rank");
  return ranks;
}

// The window of `--steps` (A:B, A:, :B or N) on the selected ranks (plugins/host/steps_window.h).
// Prints why and returns nullopt when the profile has no such steps (bad input, exit 2).
std::optional<std::pair<TimeNs, TimeNs>> steps_option_window(const Profile& profile, const std::string& text,
                                                             const std::vector<int>& ranks) {
  std::optional<collector::StepWindow> w = collector::parse_step_window(text);
  if (!w && !text.empty() && text.find(':') == std::string::npos)
    w = collector::parse_step_window(text + ":" + std::to_string(std::strtoll(text.c_str(), nullptr, 10) + 1));
  if (!w) throw UsageError("--steps: expected N, A:B (steps A to B-1), A: or :B, not '" + text + "'");
  const auto numbers = plugins::step_numbers(profile, ranks);
  if (!numbers) {
    std::cerr << "shardscope analyze: error: --steps: the profile has no recorded steps" << (ranks.empty() ? "" : " on those ranks")
              << " (an imported trace without step markers?); use --from / --to\n";
    return std::nullopt;
  }
  const auto window = plugins::steps_window(profile, w->first, w->end, ranks);
  if (!window)
    std::cerr << "shardscope analyze: error: --steps " << text << ": no such step; the profile's steps are " << numbers->first
              << " to " << numbers->second << "\n";
  return window;
}

}  // namespace

int cmd_analyze(const std::vector<std::string>& args) {
  ArgParser p("analyze",
              "Run an analysis plugin on a profile: temporal breakdown, communication overlap per FSDP unit, top\n"
              "kernels, idle gaps, stragglers, memory peak, and any plugin found in the plugin directories\n"
              "(docs/plugins.md, docs/analyses.md).");
  p.positional("NAME", "the analysis to run (see --list)", false)
      .positional("FILE", "a ShardScope profile (.ssdb)", false)
      .flag("list", "list the analyses found, the plugins refused and why, and the directories searched")
      .option("format", "FMT", "output format", "table", 0, {"table", "json"})
      .option("from", "TIME", "start of the time window since the profile's start (ns, or with a unit: 12.5ms, 300us, 2s)")
      .option("to", "TIME", "end of the time window since the profile's start (ns, or with a unit)")
      .option("steps", "A:B",
              "the window of recorded steps A to B-1 (N: step N alone; A: or :B open), leaving out the\n"
              "initialisation before the first step and anything after the last")
      .option("ranks", "LIST", "only these ranks, e.g. 0,1")
      .multi_option("plugin-dir", "DIR", "also load plugins from DIR (searched first)");
  if (!p.parse(args)) return kExitOk;

  plugins::PluginHost host;
  std::vector<std::string> dirs = p.get_all("plugin-dir");
  for (const auto& d : plugins::default_plugin_dirs()) dirs.push_back(d);
  host.discover(dirs);

  if (p.flag_set("list")) {
    if (!p.positionals("NAME").empty()) throw UsageError("--list takes no NAME or FILE");
    print_list(host, std::cout, true);
    return kExitOk;
  }
  if (p.positionals("NAME").empty()) throw UsageError("missing NAME (see 'shardscope analyze --list')");
  const std::string name = p.positionals("NAME").front();
  if (!host.find(name)) {
    std::cerr << "shardscope analyze: unknown analysis '" << name << "'\n";
    print_list(host, std::cerr, false);
    return kExitUsage;
  }
  if (p.positionals("FILE").empty()) throw UsageError("missing FILE");
  const std::string file = p.positionals("FILE").front();

  plugins::Selection sel;
  auto time_option = [&](const char* option) -> std::optional<TimeNs> {
    if (!p.has(option)) return std::nullopt;
    const auto t = parse_duration_ns(p.get(option));
    if (!t) throw UsageError(std::string("--") + option + ": not a time: '" + p.get(option) + "' (ns, or 12.5ms, 300us, 2s)");
    return *t;
  };
  const auto from_since_start = time_option("from"), to_since_start = time_option("to");
  if (p.has("ranks")) sel.ranks = parse_ranks(p.get("ranks"));

  if (p.has("steps") && (from_since_start || to_since_start)) throw UsageError("--steps and --from / --to both set a window: give one");

  Profile profile = load_profile(file);  // ProfileError -> exit 2 with the file and the reason
  // The window is given on the timeline's time base (since the profile's start); plugins see
  // the profile's own clock.
  if (from_since_start) sel.from = profile.time_begin + *from_since_start;
  if (to_since_start) sel.to = profile.time_begin + *to_since_start;
  const TimeNs from = sel.from.value_or(profile.time_begin), to = sel.to.value_or(profile.time_end);
  if (from > to) {
    std::cerr << "shardscope analyze: error: empty window: --from " << format_duration_ns(from - profile.time_begin)
              << " is after --to " << format_duration_ns(to - profile.time_begin) << "\n";
    return kExitBadInput;
  }
  for (int r : sel.ranks) {
    if (!profile.rank(r)) {
      std::cerr << "shardscope analyze: error: " << file << " has no rank " << r << " (ranks:";
      for (const auto& rm : profile.ranks) std::cerr << " " << rm.info.rank;
      std::cerr << ")\n";
      return kExitBadInput;
    }
  }

  if (p.has("steps")) {
    const auto window = steps_option_window(profile, p.get("steps"), sel.ranks);
    if (!window) return kExitBadInput;
    std::tie(sel.from, sel.to) = *window;
  }

  plugins::AnalysisResult result = host.run(name, profile, sel);
  if (!result.ok) {
    std::cerr << "shardscope analyze: error: " << result.error << "\n";
    for (const auto& l : result.log) std::cerr << "  log: " << l << "\n";
    return kExitInternal;
  }
  if (p.get("format") == "json")
    plugins::write_result_json(result, profile.time_begin, std::cout);
  else {
    if (p.has("steps"))
      std::cout << "(window: steps " << p.get("steps") << ", " << format_duration_ns(*sel.from - profile.time_begin) << " to "
                << format_duration_ns(*sel.to - profile.time_begin) << ")\n";
    plugins::write_result_text(result, profile.time_begin, std::cout);
  }
  return kExitOk;
}

}  // namespace ss::cli
