// The memory snapshot importer's pieces: frames -> module paths (both frame forms), and the whole
// import of a Python-made snapshot pickle (make_pickles.py's snapshot_like, at every protocol)
// and of refused / damaged pickles through import_files (ImportError, nothing written). The
// import's events and peaks against values computed from the dict are in
// tests/python/test_snapshot_import.py.
#include <catch2/catch.hpp>

#include "profiler/import/import.h"
#include "profiler/import/snapshot/snapshot_modules.h"
#include "tests/import/import_test_util.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::test;
using ss::import::snapshot::Frame;
using ss::import::snapshot::module_path_from_frames;

namespace {

std::string joined(const ss::import::snapshot::ModulePath& p) {
  std::string out;
  for (std::size_t i = 0; i < p.levels.size(); ++i) out += (i ? std::string(1, p.separator) : "") + p.levels[i].name;
  return out;
}

const Frame kCall{"/py/site-packages/torch/nn/modules/module.py", 1751, "_call_impl"};
const Frame kWrap{"/py/site-packages/torch/nn/modules/module.py", 1740, "_wrapped_call_impl"};

}  // namespace

TEST_CASE("forward frames name modules by the line that called them", "[snapshot]") {
  // Innermost first, as PyTorch records them: linear() in Attention.forward (model.py:51), called
  // from Block.forward at model.py:80, called from the training loop at train.py:30.
  const std::vector<Frame> frames = {{"/py/torch/nn/functional.py", 2000, "linear"},
                                     {"/src/model.py", 51, "forward"}, kCall, kWrap,
                                     {"/src/model.py", 80, "forward"}, kCall, kWrap,
                                     {"/src/train.py", 30, "main"}, {"/src/train.py", 99, "<module>"}};
  const auto p = module_path_from_frames(frames);
  CHECK(p.separator == '/');
  CHECK(joined(p) == "train.py:30/model.py:80");
  REQUIRE(p.levels.size() == 2);
  CHECK(p.levels[1].class_name == "forward in model.py");
  // A forward with no caller frame at all (a truncated stack) is named by its own file.
  CHECK(joined(module_path_from_frames({{"/src/model.py", 51, "forward"}})) == "model.py:forward");
  // No forward: no module.
  CHECK(module_path_from_frames({{"/src/train.py", 30, "main"}}).levels.empty());
  CHECK(module_path_from_frames({}).levels.empty());
}

TEST_CASE("the profiler's nn.Module frames name modules as the Kineto importer does", "[snapshot]") {
  const std::vector<Frame> frames = {{"none", 0, "<built-in function linear>"},
                                     {"none", 0, "torch/nn/modules/linear.py(130): forward"},
                                     {"none", 0, "nn.Module: Linear_12"},
                                     {"none", 0, "torch/nn/modules/container.py(254): forward"},
                                     {"none", 0, "nn.Module: Sequential_0"}};
  const auto p = module_path_from_frames(frames);
  CHECK(p.separator == '.');
  CHECK(joined(p) == "Sequential_0.Linear_12");
  CHECK(p.levels[1].class_name == "Linear");
  CHECK(ss::import::snapshot::class_of_module_label("Block") == "Block");
  CHECK(ss::import::snapshot::class_of_module_label("Layer_norm_3") == "Layer_norm");
}

TEST_CASE("a Python-made snapshot imports alike at every protocol", "[snapshot]") {
  TempDir dir;
  import::ImportOptions o;
  o.show_progress = false;
  for (int proto = 2; proto <= 5; ++proto) {
    INFO("protocol " << proto);
    const std::string in = std::string(SHARDSCOPE_PICKLE_FIXTURES) + "/rt_snapshot_like_p" + std::to_string(proto) + ".pickle";
    const std::string out = dir.file("p" + std::to_string(proto) + ".ssdb");
    REQUIRE(import::detect_format(in) == import::Format::TorchMemorySnapshot);
    import::import_files({in}, out, o);
    // One alloc of 512 B on device 0, inside the hook range ss:fwd:layers.0 (module layers.0),
    // 1 ns into the first µs; the block is live at snapshot time and was allocated in the trace.
    CHECK(query_int(out, "SELECT count(*) FROM memory_events") == 1);
    CHECK(query_int(out, "SELECT bytes FROM memory_events") == 512);
    CHECK(query_int(out, "SELECT time_ns FROM memory_events") == 1);
    CHECK(query_text(out, "SELECT m.fqn FROM memory_events e JOIN modules m ON m.id = e.module_id") == "layers.0");
    CHECK(query_int(out, "SELECT count(*) FROM ranges WHERE kind = 1") == 1);  // the hook range, a module range
    CHECK(query_int(out, "SELECT device_index FROM ranks WHERE rank = 0") == 0);
    CHECK(query_text(out, "SELECT value FROM meta WHERE key = 'snapshot.device0.reserved_bytes'") == "2097152");
    CHECK(query_text(out, "SELECT value FROM meta WHERE key = 'time_origin_unix_ns'") == "1732400000000000000");
  }
}

TEST_CASE("a frame line of 2^64 - 1 (PyTorch's unknown line) imports; wider ints stay refused", "[snapshot]") {
  // Before: "'line' does not fit in 64 bits" for the whole file, as for a real snapshot.
  TempDir dir;
  import::ImportOptions o;
  o.show_progress = false;
  const std::string fixtures = SHARDSCOPE_PICKLE_FIXTURES;
  for (int proto = 2; proto <= 5; ++proto) {
    INFO("protocol " << proto);
    const std::string out = dir.file("unknown_line_p" + std::to_string(proto) + ".ssdb");
    import::import_files({fixtures + "/rt_snapshot_unknown_line_p" + std::to_string(proto) + ".pickle"}, out, o);
    CHECK(query_int(out, "SELECT count(*) FROM memory_events") == 1);
    // The allocation's module is named by the line that called model.py's forward: unknown.
    CHECK(query_text(out, "SELECT m.fqn FROM memory_events e JOIN modules m ON m.id = e.module_id") == "train.py:?");
  }
  for (const std::string name : {"line_2_64", "line_below_int64"}) {
    INFO(name);
    const std::string in = fixtures + "/rt_snapshot_" + name + "_p4.pickle";
    std::string message;
    try {
      import::import_files({in}, dir.file(name + ".ssdb"), o);
    } catch (const import::ImportError& e) {
      message = e.what();
    }
    CHECK(message.find("'line' does not fit in 64 bits") != std::string::npos);
    CHECK(message.find(in) != std::string::npos);
  }
  CHECK(module_path_from_frames({{"/src/model.py", 51, "forward"}, {"/src/train.py", ss::import::snapshot::kUnknownLine, "main"}})
            .levels.at(0).name == "train.py:?");
}

TEST_CASE("FSDP2's record_function ranges give the unit and the all-gather buffer", "[snapshot]") {
  TempDir dir;
  import::ImportOptions o;
  o.show_progress = false;
  const std::string out = dir.file("fsdp.ssdb");
  import::import_files({std::string(SHARDSCOPE_PICKLE_FIXTURES) + "/rt_fsdp_snapshot_p4.pickle"}, out, o);
  auto module_of = [&](int bytes) {
    return query_text(out, "SELECT coalesce(m.fqn, '<none>') FROM memory_events e LEFT JOIN modules m ON m.id = e.module_id"
                           " WHERE e.bytes = " + std::to_string(bytes));
  };
  CHECK(module_of(1024) == "layers.0");  // inside pre_forward and FSDP::all_gather
  CHECK(module_of(2048) == "layers.0");  // the unit's forward: between its pre_forward and post_forward
  CHECK(module_of(4096) == "<none>");    // after post_forward, no frames
  CHECK(query_int(out, "SELECT category FROM memory_events WHERE bytes = 1024") ==
        static_cast<int>(MemoryCategory::AllGatherBuffer));
  CHECK(query_int(out, "SELECT is_fsdp_unit FROM modules WHERE fqn = 'layers.0'") == 1);
  CHECK(query_text(out, "SELECT p.fqn FROM modules c JOIN modules p ON p.id = c.parent_id WHERE c.fqn = 'layers'") == "");
  // The three FSDP ranges (kind 2) and the unit's forward (a module range, kind 1, 0 .. 6.999 µs).
  CHECK(query_int(out, "SELECT count(*) FROM ranges WHERE kind = 2") == 3);
  CHECK(query_int(out, "SELECT count(*) FROM ranges WHERE kind = 1") == 1);
  CHECK(query_int(out, "SELECT duration_ns FROM ranges WHERE kind = 1") == 6999);
}

TEST_CASE("refused and damaged snapshot pickles end in ImportError and write nothing", "[snapshot]") {
  TempDir dir;
  import::ImportOptions o;
  o.show_progress = false;
  const std::string fixtures = SHARDSCOPE_PICKLE_FIXTURES;
  const std::string good = read_file(fixtures + "/rt_snapshot_like_p4.pickle");
  struct Case {
    std::string name, bytes, expect;
  };
  const std::vector<Case> cases = {
      {"evil", read_file(fixtures + "/refuse_os_system_inside_snapshot_p4.pickle"), "opcode STACK_GLOBAL"},
      {"truncated", good.substr(0, good.size() / 2), "truncated"},
      {"scalar", std::string("\x80\x04K\x05.", 5), "holds a int, not a memory snapshot"},
      {"not_snapshot", std::string("\x80\x04}.", 4), "not a PyTorch memory snapshot"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const std::string in = dir.file(c.name + ".pickle");
    write_file(in, c.bytes);
    const auto before = list_dir(dir.path());
    std::string message;
    try {
      import::import_files({in}, dir.file(c.name + ".ssdb"), o);
    } catch (const import::ImportError& e) {
      message = e.what();
    }
    CHECK(message.find(c.expect) != std::string::npos);
    CHECK(message.find(in) != std::string::npos);
    CHECK(list_dir(dir.path()) == before);
  }
}
