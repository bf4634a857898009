// `diff` on the real before/after pair: Nsight Systems exports of one FSDP job on two H100s
// (../shared/data/traces/nsys-h100-fsdp-2gpu/mfu_2gpu_{before,after}.sqlite), imported with the
// nsys importer, then compared by module. Rows are checked against SQL / Python on the imported
// files (`shardscope import X.sqlite -o X.ssdb` first); docs/compare.md shows the same numbers.
//
// The exports hold no ProfilerStep ranges, so both sides use their rank-0 whole span; they also
// captured different windows of training (A has forward ranges of blocks 3-18, B of blocks 9-22),
// so modules present on one side only lead the table. Blocks 17 and 18 are on both sides.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "profiler/compare/comparison.h"
#include "profiler/import/import.h"
#include "storage/profile_reader.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::compare;

namespace {
const ModuleDiff* find_row(const Comparison& c, const std::string& fqn, RangePhase phase) {
  for (const auto& m : c.modules)
    if (m.fqn == fqn && m.phase == phase) return &m;
  return nullptr;
}
}  // namespace

TEST_CASE("diff of the real nsys before/after pair by module", "[compare][realdata]") {
  test::TempDir dir;
  const auto before = dir.file("before.ssdb"), after = dir.file("after.ssdb");
  import::ImportOptions quiet;
  quiet.show_progress = false;
  import::import_files({test::trace("nsys-h100-fsdp-2gpu/mfu_2gpu_before.sqlite")}, before, quiet);
  import::import_files({test::trace("nsys-h100-fsdp-2gpu/mfu_2gpu_after.sqlite")}, after, quiet);
  const Comparison c = compare_profiles(load_profile(before), load_profile(after), {});

  // Window = rank 0's kernel span (its length is the headline's step time):
  //   sqlite3 X.ssdb "SELECT min(start_ns), max(start_ns+duration_ns) FROM kernels WHERE rank=0"
  //   before: 28194 .. 299877006 (299848812 ns), after: -9682 .. 299241533 (299251215 ns)
  // Lengths are asserted, not the ends, which depend on where the importer puts time 0.
  CHECK_FALSE(c.alignment.a.step.has_value());
  CHECK_FALSE(c.alignment.b.step.has_value());
  CHECK(c.headline.step_time.a == 299848812);
  CHECK(c.headline.step_time.b == 299251215);

  // Module rows, checked by hand with (M = 17 or 18, X = before or after):
  //   sqlite3 X.ssdb "WITH w AS (SELECT min(start_ns) s, max(start_ns+duration_ns) e FROM kernels WHERE rank=0)
  //     SELECT count(*), sum(min(r.end_ns, w.e) - max(r.start_ns, w.s)) FROM range_view r, w
  //     WHERE r.rank=0 AND r.kind='module' AND r.phase='forward'
  //       AND r.module='blocks.M._checkpoint_wrapped_module' AND r.end_ns > w.s AND r.start_ns < w.e"
  //   blocks.17 forward: before 1 range, 16301455 ns; after 1 range, 26173318 ns (+60.56 %)
  //   blocks.18 forward: before 1 range, 24990795 ns; after 1 range, 19420830 ns (-22.29 %)
  // (One range per side, so the union is the range's clipped duration.)
  const ModuleDiff* b17 = find_row(c, "blocks.17._checkpoint_wrapped_module", RangePhase::Forward);
  REQUIRE(b17 != nullptr);
  CHECK(b17->count_a == 1);
  CHECK(b17->count_b == 1);
  CHECK(b17->time.a == 16301455);
  CHECK(b17->time.b == 26173318);
  CHECK(*b17->time.error_pct() == Approx(60.5582).epsilon(1e-5));
  const ModuleDiff* b18 = find_row(c, "blocks.18._checkpoint_wrapped_module", RangePhase::Forward);
  REQUIRE(b18 != nullptr);
  CHECK(b18->time.a == 24990795);
  CHECK(b18->time.b == 19420830);

  // Communication and exposed communication on rank 0, computed independently (union of
  // collective kernels, minus its overlap with the union of compute kernels):
  //   python3 -c "import sqlite3; db=sqlite3.connect('X.ssdb')
  //   def u(r):
  //     o=[]
  //     for s,e in sorted(r):
  //       if o and s<=o[-1][1]: o[-1][1]=max(o[-1][1],e)
  //       elif e>s: o.append([s,e])
  //     return o
  //   K=lambda c: u(db.execute('select start_ns,start_ns+duration_ns from kernels where rank=0 and category=?',(c,)).fetchall())
  //   comp,coll=K(0),K(1); t=sum(e-s for s,e in coll)
  //   print(t, t-sum(max(0,min(e1,e2)-max(s1,s2)) for s1,e1 in coll for s2,e2 in comp), sum(e-s for s,e in comp))"
  //   before: 17172652 17172652 253690832   after: 9989016 9989016 227484352
  // (No NCCL kernel of this job overlaps a compute kernel on rank 0: all of it is exposed.)
  CHECK(c.headline.communication.a == 17172652);
  CHECK(c.headline.exposed_communication.a == 17172652);
  CHECK(c.headline.exposed_communication.b == 9989016);
  CHECK(c.headline.compute.a == 253690832);
  CHECK(c.headline.compute.b == 227484352);
  // Sorted by absolute delta, largest first.
  for (std::size_t i = 1; i < c.modules.size(); ++i)
    CHECK(std::llabs(c.modules[i - 1].time.delta()) >= std::llabs(c.modules[i].time.delta()));
}
