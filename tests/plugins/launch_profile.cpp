#include "tests/plugins/launch_profile.h"

#include "storage/profile_writer.h"
#include "storage/sqlite_handle.h"
#include "tests/plugins/hand_made_profiles.h"

namespace ss::test {

// Layout (times in us; x 1000 for ns):
//
// rank 0, GPU "NVIDIA A100-SXM4-80GB" (80 GiB), thread "main" (tid 100)
//   stream 7 (compute): kernel name [start,end) module, launched by cudaLaunchKernel over [call)
//     k1  A [10,30)   layers.0  call [0,5)       k6  C [110,130) layers.1  call [75,80)
//     k2  B [30,50)   layers.0  call [5,10)      k7  A [210,230) -         call [200,205)
//     k3  C [50,70)   layers.0  call [10,15)     k8  B [230,250) -         call [205,210)
//     k4  A [70,90)   layers.1  call [15,70)     k9  C [250,270) -         call [210,215)
//     k5  B [90,110)  layers.1  call [70,75)     k10 D [270,280) -         call [235,240)
//     (k4's call is the long one: the queue holds k1..k3 when it starts.)
//   stream 9 (copy), no launch records:
//     c1 "Memcpy HtoD (Pageable -> Device)"  1 000 000 B [20,120)
//     c2 "Memcpy HtoD (Pinned -> Device)"    2 500 000 B [130,230)
//     c3 "Memcpy DtoH (Device -> Pinned)"      500 000 B [300,350)
//     c4 "Memcpy DtoD (Device -> Device)"   10 000 000 B [400,410)
//     c5 "Memset (Device)" (memset)          4 000 000 B [420,422)
//   annotations on "main": step [0,300) > forward [0,100) > inner [12,17); step > backward [190,260)
//   GPU annotations: gpu_forward [10,130) on stream 7; copy_phase [0,360) on stream 9
// rank 1, no GPU name; stream 9 (copy), nsys names:
//     d1 "Memcpy Host-to-Device"  64 000 000 B [0,2000)
//     d2 "Memcpy Peer-to-Peer"   100 000 000 B [2000,2500)
//     d3 "Memset" (memset)              1 000 B [2600,2601)
//     d4 "Memcpy Device-to-Host"   size unknown [2700,2710)
void write_launch_profile(const std::string& path, bool with_launches) {
  constexpr TimeNs us = 1000;
  const Origin o = hand_made_origin("test_launch_analyses");
  {
    ProfileWriter w(path, o);
    const RowId root = w.add_module({kNoRow, "", "Model", 0, 0, true, kNoRow, "true"});
    const RowId l0 = w.add_module({root, "layers.0", "Block", 0, 0, true, kNoRow, "true"});
    const RowId l1 = w.add_module({root, "layers.1", "Block", 0, 0, true, kNoRow, "true"});
    RankInfo r0;
    r0.rank = 0;
    r0.gpu_name = "NVIDIA A100-SXM4-80GB";
    r0.gpu_memory_bytes = std::int64_t{80} << 30;
    w.add_rank(r0);
    RankInfo r1;
    r1.rank = 1;
    w.add_rank(r1);
    const RowId s7 = w.add_stream({0, 0, 7, StreamKind::Compute, "stream 7"});
    const RowId s9 = w.add_stream({0, 0, 9, StreamKind::Copy, "stream 9"});
    const RowId t0 = w.add_thread({0, 100, "main"});
    const auto launch_api = w.intern("cudaLaunchKernel");
    auto kernel = [&](const char* name, TimeNs a, TimeNs b, RowId module, TimeNs ca, TimeNs cb) {
      KernelRow k;
      k.rank = 0;
      k.stream = s7;
      k.start = a * us;
      k.end = b * us;
      k.name = w.intern(name);
      k.module = module;
      const RowId id = w.add_kernel(k);
      w.add_launch({id, 0, t0, ca * us, cb * us, launch_api});
    };
    kernel("A", 10, 30, l0, 0, 5);
    kernel("B", 30, 50, l0, 5, 10);
    kernel("C", 50, 70, l0, 10, 15);
    kernel("A", 70, 90, l1, 15, 70);
    kernel("B", 90, 110, l1, 70, 75);
    kernel("C", 110, 130, l1, 75, 80);
    kernel("A", 210, 230, kNoRow, 200, 205);
    kernel("B", 230, 250, kNoRow, 205, 210);
    kernel("C", 250, 270, kNoRow, 210, 215);
    kernel("D", 270, 280, kNoRow, 235, 240);
    auto copy = [&](int rank, RowId stream, const char* name, KernelCategory cat, std::int64_t bytes, TimeNs a,
                    TimeNs b) {
      KernelRow k;
      k.rank = rank;
      k.stream = stream;
      k.start = a * us;
      k.end = b * us;
      k.name = w.intern(name);
      k.category = cat;
      k.bytes = bytes;
      w.add_kernel(k);
    };
    copy(0, s9, "Memcpy HtoD (Pageable -> Device)", KernelCategory::Memcpy, 1'000'000, 20, 120);
    copy(0, s9, "Memcpy HtoD (Pinned -> Device)", KernelCategory::Memcpy, 2'500'000, 130, 230);
    copy(0, s9, "Memcpy DtoH (Device -> Pinned)", KernelCategory::Memcpy, 500'000, 300, 350);
    copy(0, s9, "Memcpy DtoD (Device -> Device)", KernelCategory::Memcpy, 10'000'000, 400, 410);
    copy(0, s9, "Memset (Device)", KernelCategory::Memset, 4'000'000, 420, 422);
    auto range = [&](RowId thread, RowId stream, TimeNs a, TimeNs b, const char* name, RangeKind kind, RowId parent,
                     int depth) {
      return w.add_range(
          {0, thread, stream, a * us, b * us, w.intern(name), kind, RangePhase::None, kNoRow, parent, depth});
    };
    const RowId step = range(t0, kNoRow, 0, 300, "step", RangeKind::Annotation, kNoRow, 0);
    const RowId fwd = range(t0, kNoRow, 0, 100, "forward", RangeKind::Annotation, step, 1);
    range(t0, kNoRow, 12, 17, "inner", RangeKind::Annotation, fwd, 2);
    range(t0, kNoRow, 190, 260, "backward", RangeKind::Annotation, step, 1);
    range(kNoRow, s7, 10, 130, "gpu_forward", RangeKind::GpuAnnotation, kNoRow, 0);
    range(kNoRow, s9, 0, 360, "copy_phase", RangeKind::GpuAnnotation, kNoRow, 0);
    const RowId s9r1 = w.add_stream({1, 1, 9, StreamKind::Copy, "stream 9"});
    copy(1, s9r1, "Memcpy Host-to-Device", KernelCategory::Memcpy, 64'000'000, 0, 2000);
    copy(1, s9r1, "Memcpy Peer-to-Peer", KernelCategory::Memcpy, 100'000'000, 2000, 2500);
    copy(1, s9r1, "Memset", KernelCategory::Memset, 1000, 2600, 2601);
    copy(1, s9r1, "Memcpy Device-to-Host", KernelCategory::Memcpy, 0, 2700, 2710);
    w.finish();
  }
  if (!with_launches) {
    sql::Db db(path, SQLITE_OPEN_READWRITE);
    db.exec("DROP VIEW launch_view; DROP TABLE launches");
  }
}

}  // namespace ss::test
