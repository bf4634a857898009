// shardscope export FILE --format perfetto|csv -o OUT
#include <iostream>

#include "app/cli/arg_parser.h"
#include "app/cli/command.h"
#include "profiler/export/export.h"

namespace ss::cli {

int cmd_export(const std::vector<std::string>& args) {
  ArgParser p("export", "Export a profile for other tools. perfetto: Chrome-trace JSON (.json or .json.gz) that\n"
                        "ui.perfetto.dev and chrome://tracing open - a process per rank, a thread per stream and per\n"
                        "range lane, collectives with their args, a GPU memory counter. csv: one CSV per table in a\n"
                        "directory. Outputs appear only when complete.");
  p.positional("FILE", "a ShardScope profile (.ssdb)")
      .option("format", "FMT", "output format", "perfetto", 'f', {"perfetto", "csv"})
      .option("output", "OUT", "output file (perfetto) or directory (csv)", "", 'o');
  if (!p.parse(args)) return kExitOk;
  if (p.get("output").empty()) throw UsageError("missing -o OUT");
  const std::string in = p.positionals("FILE").front();
  if (p.get("format") == "perfetto") {
    const auto s = exporting::export_perfetto(in, p.get("output"));
    std::cout << "wrote " << p.get("output") << ": " << s.kernel_events << " kernel events, " << s.range_events
              << " ranges, " << s.counter_events << " memory counter points, " << s.step_events << " steps\n";
  } else {
    const auto files = exporting::export_csv(in, p.get("output"));
    std::cout << "wrote " << files.size() << " CSV files to " << p.get("output") << "\n";
  }
  return kExitOk;
}

}  // namespace ss::cli
