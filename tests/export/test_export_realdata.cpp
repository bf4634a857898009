// A real trace imported and exported to Perfetto JSON: the export parses and holds one event per
// kernel row of the profile.
#include <catch2/catch.hpp>

#include "profiler/export/export.h"
#include "profiler/import/import.h"
#include "tests/export/perfetto_check.h"
#include "tests/import/import_test_util.h"

using namespace ss;
using namespace ss::test;

TEST_CASE("kineto-v100-dlrm-8ranks exported to Perfetto", "[export][realdata]") {
  TempDir dir;
  std::vector<std::string> inputs;
  for (int r = 0; r < 8; ++r) {
    for (const auto& f : list_dir(trace("kineto-v100-dlrm-8ranks")))
      if (f.rfind("worker" + std::to_string(r) + "_", 0) == 0) inputs.push_back(trace("kineto-v100-dlrm-8ranks/" + f));
  }
  REQUIRE(inputs.size() == 8);
  const std::string prof = dir.file("v100.ssdb");
  import::ImportOptions o;
  o.show_progress = false;
  import::import_files(inputs, prof, o);
  const std::string out = dir.file("v100.json.gz");
  exporting::export_perfetto(prof, out);
  const PerfettoCounts c = count_perfetto(out, true);
  // python3 -c "import json,gzip,glob; print(sum(sum(e.get('cat') in ('kernel','gpu_memcpy','gpu_memset') for e in json.load(gzip.open(f))['traceEvents']) for f in glob.glob('kineto-v100-dlrm-8ranks/*.gz')))"  -> 2244
  CHECK(c.kernel_events == 2244);
  CHECK(c.kernel_events == query_int(prof, "SELECT count(*) FROM kernels"));
  CHECK(c.process_names == 8);
  CHECK(c.collective_args == 64);  // 8 NCCL kernels per rank (5 SendRecv + 3 AllReduce)
}
