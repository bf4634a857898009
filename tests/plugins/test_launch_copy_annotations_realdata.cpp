// launch-stats, copy-bandwidth and annotations on real traces (../shared/data/traces), imported
// with `shardscope import`, against numbers computed independently from the imported profile
// with sqlite3 and python3 (the commands are in the comments; X.ssdb is the imported file).
#include <catch2/catch.hpp>

#include "plugins/host/plugin_host.h"
#include "storage/profile_reader.h"
#include "tests/cli/run_cli.h"
#include "tests/plugins/result_access.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::plugins;
using namespace ss::test;

namespace {

struct Imported {
  TempDir dir;
  Profile profile;
  explicit Imported(const std::string& relative) {
    INFO(relative);
    CliResult imp = run_cli({"import", trace(relative), "-o", dir.file("p.ssdb"), "-q"});
    INFO(imp.err);
    REQUIRE(imp.exit_code == 0);
    profile = load_profile(dir.file("p.ssdb"));
  }
};

AnalysisResult run_ok(const std::string& name, const Profile& p) {
  static PluginHost* host = [] {
    auto* h = new PluginHost;
    h->discover({SS_BUILTIN_PLUGIN_DIR});
    return h;
  }();
  AnalysisResult r = host->run(name, p);
  INFO(r.error);
  REQUIRE(r.ok);
  return r;
}

const std::vector<SqlValue>& kind_row(const ResultTable& t, int rank, const std::string& kind) {
  for (const auto& x : t.rows)
    if (int_at(t, x, "rank") == rank && text_at(t, x, "kind") == kind) return x;
  FAIL("no row for rank " << rank << " kind " << kind);
  throw std::logic_error("unreachable");
}

const std::vector<SqlValue>& stream_row(const ResultTable& t, int rank, std::int64_t stream) {
  for (const auto& x : t.rows)
    if (int_at(t, x, "rank") == rank && int_at(t, x, "stream") == stream) return x;
  FAIL("no row for rank " << rank << " stream " << stream);
  throw std::logic_error("unreachable");
}

// Per (rank, stream): launches, delay p50/p99/max, call p50/max and the maximum queue depth, from
//   python3 - X.ssdb <<'EOF'
//   import sqlite3, sys, math
//   db = sqlite3.connect(sys.argv[1]); by = {}
//   for r in db.execute("SELECT l.rank, s.native_id, l.start_ns, l.duration_ns, k.start_ns, k.start_ns + k.duration_ns"
//                       " FROM launches l JOIN kernels k ON k.id = l.kernel_id JOIN streams s ON s.id = k.stream_id"):
//       by.setdefault(r[:2], []).append(r[2:])
//   nr = lambda a, p: a[max(1, math.ceil(p / 100 * len(a))) - 1]
//   for key, v in sorted(by.items()):
//       d = sorted(ks - ls for ls, ld, ks, ke in v); c = sorted(ld for ls, ld, ks, ke in v)
//       depth = max(sum(1 for ls2, _, _, ke2 in v if ls2 <= ls < ke2) for ls, _, _, _ in v)  # brute force
//       print(key, len(v), nr(d, 50), nr(d, 99), d[-1], nr(c, 50), c[-1], depth)
//   EOF
struct StreamExpect {
  int rank;
  std::int64_t stream, launches, delay_p50, delay_p99, delay_max, call_p50, call_max, depth;
};

void check_streams(const AnalysisResult& r, const std::vector<StreamExpect>& expected) {
  const auto& t = table_of(r, "per_stream");
  CHECK(t.rows.size() == expected.size());
  for (const auto& e : expected) {
    INFO("rank " << e.rank << " stream " << e.stream);
    const auto& row = stream_row(t, e.rank, e.stream);
    CHECK(int_at(t, row, "launches") == e.launches);
    CHECK(int_at(t, row, "delay_p50_ns") == e.delay_p50);
    CHECK(int_at(t, row, "delay_p99_ns") == e.delay_p99);
    CHECK(int_at(t, row, "delay_max_ns") == e.delay_max);
    CHECK(int_at(t, row, "call_p50_ns") == e.call_p50);
    CHECK(int_at(t, row, "call_max_ns") == e.call_max);
    CHECK(int_at(t, row, "max_queue_depth") == e.depth);
  }
}

std::int64_t sum_column(const ResultTable& t, const std::string& c) {
  std::int64_t s = 0;
  for (const auto& row : t.rows) s += int_at(t, row, c);
  return s;
}

}  // namespace

TEST_CASE("launch, copy and annotation analyses on the A100 DDP Kineto trace", "[plugins][realdata]") {
  Imported im("kineto-a100-ddp/nccl_data.json.gz");
  check_streams(run_ok("launch-stats", im.profile), {{0, 7, 3753, 12246, 483753, 969786, 9143, 75688, 11},
                                                     {0, 40, 21, 13870, 614750, 614750, 11862, 27509, 1}});

  // sqlite3 X.ssdb "SELECT n.value, count(*), sum(k.bytes), sum(k.duration_ns) FROM kernels k
  //   JOIN strings n ON n.id = k.name_id WHERE k.category IN (2,3) GROUP BY 1"
  //   Memcpy DtoD (Device -> Device)|960|307323096|2262781
  //   Memset (Device)|114|409141005|390717
  AnalysisResult c = run_ok("copy-bandwidth", im.profile);
  const auto& k = table_of(c, "per_kind");
  CHECK(k.rows.size() == 2);
  CHECK(int_at(k, kind_row(k, 0, "DtoD"), "copies") == 960);
  CHECK(int_at(k, kind_row(k, 0, "DtoD"), "bytes") == 307323096);
  CHECK(int_at(k, kind_row(k, 0, "DtoD"), "busy_ns") == 2262781);
  CHECK(real_at(k, kind_row(k, 0, "DtoD"), "bandwidth_gbps") == Approx(307323096.0 / 2262781));
  CHECK(int_at(k, kind_row(k, 0, "memset"), "bytes") == 409141005);
  CHECK(int_at(k, kind_row(k, 0, "memset"), "busy_ns") == 390717);
  // "NVIDIA A100-PG509-200" with 39.4 GiB: the 40 GB A100, HBM2 1555 GB/s.
  CHECK(real_at(k, kind_row(k, 0, "memset"), "peak_gbps") == Approx(1555.0));

  // sqlite3 X.ssdb "SELECT count(*), sum(k.duration_ns) FROM launches l JOIN kernels k ON k.id = l.kernel_id
  //   JOIN ranges r ON r.thread_id = l.thread_id AND r.kind = 0 JOIN strings n ON n.id = r.name_id
  //   AND n.value = 'DistributedDataParallel.forward'
  //   WHERE l.start_ns >= r.start_ns AND l.start_ns < r.start_ns + r.duration_ns"   -> 1356|38768022
  // (no annotation range starts inside a DistributedDataParallel.forward range, so it is innermost);
  // sqlite3 X.ssdb "SELECT count(*), sum(duration_ns) FROM kernels"                -> 3774|165185838
  AnalysisResult a = run_ok("annotations", im.profile);
  const auto& pa = table_of(a, "per_annotation");
  const auto& ddp = row_where(pa, "annotation", "DistributedDataParallel.forward");
  CHECK(int_at(pa, ddp, "kernels") == 1356);
  CHECK(int_at(pa, ddp, "by_launch") == 1356);
  CHECK(int_at(pa, ddp, "gpu_ns") == 38768022);
  CHECK(sum_column(pa, "kernels") == 3774);
  CHECK(sum_column(pa, "gpu_ns") == 165185838);
  const auto& pm = table_of(a, "per_module");
  REQUIRE(pm.rows.size() == 1);  // the Kineto trace has no module ranges
  CHECK(int_at(pm, pm.rows[0], "gpu_ns") == 165185838);
  CHECK(!table_of(a, "sequences").rows.empty());
}

TEST_CASE("launch, copy and annotation analyses on the nsys H100 FSDP trace", "[plugins][realdata]") {
  Imported im("nsys-h100-fsdp-2gpu/mfu_2gpu_before.sqlite");
  check_streams(run_ok("launch-stats", im.profile), {{0, 7, 2620, 315392, 10293114, 12983617, 5759, 1502826, 56},
                                                     {1, 15, 2648, 235392, 9674781, 11226197, 6310, 1400319, 53}});

  // sqlite3 X.ssdb "SELECT k.rank, n.value, count(*), sum(k.bytes), sum(k.duration_ns) FROM kernels k
  //   JOIN strings n ON n.id = k.name_id WHERE k.category IN (2,3) GROUP BY 1, 2"
  //   0|Memcpy Device-to-Device|493|4023067136|2831071    1|Memcpy Device-to-Device|493|4023067136|2834360
  //   0|Memcpy Host-to-Device|17|136|13408                1|Memcpy Host-to-Device|17|136|13248
  //   0|Memset|133|532|109824                             1|Memset|136|544|103584
  AnalysisResult c = run_ok("copy-bandwidth", im.profile);
  const auto& k = table_of(c, "per_kind");
  CHECK(k.rows.size() == 6);
  struct E {
    int rank;
    const char* kind;
    std::int64_t copies, bytes, busy;
  };
  for (const E& e :
       {E{0, "DtoD", 493, 4023067136, 2831071}, E{0, "HtoD", 17, 136, 13408}, E{0, "memset", 133, 532, 109824},
        E{1, "DtoD", 493, 4023067136, 2834360}, E{1, "HtoD", 17, 136, 13248}, E{1, "memset", 136, 544, 103584}}) {
    INFO(e.rank << " " << e.kind);
    const auto& row = kind_row(k, e.rank, e.kind);
    CHECK(int_at(k, row, "copies") == e.copies);
    CHECK(int_at(k, row, "bytes") == e.bytes);
    CHECK(int_at(k, row, "busy_ns") == e.busy);
    // The nsys export carries no GPU name here: no peak, no percentage.
    CHECK(std::holds_alternative<std::monostate>(row[column_index(k, "achieved_pct_of_peak")]));
  }

  // sqlite3 X.ssdb "... n.value = 'flash_attn::_flash_attn_forward' ..." (the query above) -> 66|256586234;
  // sqlite3 X.ssdb "SELECT m.fqn, count(*), sum(k.duration_ns) FROM kernels k JOIN modules m
  //   ON m.id = k.module_id GROUP BY k.module_id ORDER BY 3 DESC LIMIT 1"
  //   -> blocks.18._checkpoint_wrapped_module|314|34654666
  // sqlite3 X.ssdb "SELECT count(*), sum(duration_ns) FROM kernels" -> 5299|541106145
  AnalysisResult a = run_ok("annotations", im.profile);
  const auto& pa = table_of(a, "per_annotation");
  const auto& fa = row_where(pa, "annotation", "flash_attn::_flash_attn_forward");
  CHECK(int_at(pa, fa, "kernels") == 66);
  CHECK(int_at(pa, fa, "gpu_ns") == 256586234);
  CHECK(sum_column(pa, "gpu_ns") == 541106145);
  const auto& pm = table_of(a, "per_module");
  CHECK(text_at(pm, pm.rows[0], "module") == "blocks.18._checkpoint_wrapped_module");
  CHECK(int_at(pm, pm.rows[0], "kernels") == 314);
  CHECK(int_at(pm, pm.rows[0], "gpu_ns") == 34654666);
  CHECK(sum_column(pm, "kernels") == 5299);
}
