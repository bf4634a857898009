// shardscope import FILE... -o OUT.ssdb
#include <malloc.h>

#include <iostream>

#include "app/cli/arg_parser.h"
#include "app/cli/command.h"
#include "profiler/common/comm_kernels.h"
#include "profiler/import/import.h"

namespace ss::cli {

int cmd_import(const std::vector<std::string>& args) {
  ArgParser p("import", "Import PyTorch profiler (Kineto) JSON traces (.json, .json.gz), Nsight Systems SQLite exports\n"
                        "and PyTorch memory snapshots (torch.cuda.memory._dump_snapshot pickles, read without executing\n"
                        "anything; one rank per device) into one profile. Several files of one job (one per rank)\n"
                        "merge onto one clock. The format is detected from each file's content. On bad input nothing\n"
                        "is written (exit 2).");
  p.positional("FILE", "input traces", true, true)
      .option("output", "OUT", "profile to write (.ssdb)", "", 'o')
      .flag("quiet", "no progress lines on stderr", 'q')
      .option("comm-kernels", "RULES",
              "more communication-kernel rules: a text file, one 'FAMILY NAME-SUBSTRING [TYPE]' per line\n"
              "(also SHARDSCOPE_COMM_KERNELS; built-in: NCCL, DeepEP, NVSHMEM, MSCCL++, custom all-reduce)");
  if (!p.parse(args)) return kExitOk;
  if (p.get("output").empty()) throw UsageError("missing -o OUT.ssdb");
  if (p.has("comm-kernels")) {
    try {
      add_user_comm_kernel_rules_file(p.get("comm-kernels"));
    } catch (const std::runtime_error& e) {
      std::cerr << "shardscope import: error: " << e.what() << "\n";
      return kExitBadInput;
    }
  }
  // This process only imports and exits: keep freed memory in the heap for the next rank file's
  // buffers instead of handing it back to the kernel and faulting fresh zeroed pages in again
  // (glibc's defaults trim the heap above 128 KiB free and mmap blocks above 128 KiB-32 MiB).
  // ~30 ms of CPU on 8 rank files (docs/benchmarks.md); the GUI's imports keep the defaults.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 16 << 20);
  import::ImportOptions options;
  options.show_progress = !p.flag_set("quiet");
  const auto& inputs = p.positionals("FILE");
  const import::ImportSummary s = import::import_files(inputs, p.get("output"), options);
  // The counts the writer kept: reading the profile back would cost a few % of the import.
  const ProfileWriter::Counts& sum = s.rows;
  const std::int64_t skipped = sum.skipped_events;
  std::string formats;
  for (const auto& [path, f] : s.inputs) {
    std::string n = import::to_string(f);
    if (formats.find(n) == std::string::npos) formats += (formats.empty() ? "" : ",") + n;
  }
  std::cout << "imported " << s.inputs.size() << " file" << (s.inputs.size() == 1 ? "" : "s") << " (" << formats
            << ") into " << p.get("output") << ": " << sum.ranks << " rank" << (sum.ranks == 1 ? "" : "s")
            << ", " << sum.kernels << " kernels, " << sum.copies << " copies, " << sum.memsets << " memsets, " << sum.collectives << " collectives, " << sum.ranges << " ranges, "
            << sum.modules << " modules, " << sum.memory_events << " memory events, " << sum.steps << " steps; "
            << skipped << " events skipped (shardscope info " << p.get("output") << ")\n";
  return kExitOk;
}

}  // namespace ss::cli
