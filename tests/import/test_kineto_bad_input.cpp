// Bad input: a clear ImportError (file, position, what was expected), exit code 2 from the CLI,
// and no output file (nor a temporary one) left behind.
#include <catch2/catch.hpp>

#include <cstdio>

#include "app/cli/command.h"
#include "profiler/import/import.h"
#include "tests/import/import_test_util.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::test;

namespace {

std::string fixture(const std::string& name) { return source_dir() + "/tests/import/fixtures/" + name; }

// Imports `inputs` expecting failure; returns the message. Checks that the output folder holds
// only the inputs afterwards.
std::string import_error(TempDir& dir, const std::vector<std::string>& inputs) {
  const auto before = list_dir(dir.path());
  const std::string out = dir.file("out.ssdb");
  import::ImportOptions o;
  o.show_progress = false;
  std::string message;
  try {
    import::import_files(inputs, out, o);
  } catch (const import::ImportError& e) {
    message = e.what();
  }
  CHECK_FALSE(message.empty());
  CHECK(list_dir(dir.path()) == before);  // no out.ssdb, no temporary file
  return message;
}

std::string write_json(TempDir& dir, const std::string& name, const std::string& json) {
  const std::string p = dir.file(name);
  write_file(p, json);
  return p;
}

const std::string kOkEvent =
    R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0, "args": {"stream": 7}})";

}  // namespace

TEST_CASE("truncated gzip", "[kineto][bad]") {
  TempDir dir;
  const std::string gz = gzip_bytes(read_file(fixture("fsdp_rank1.json")));
  const auto p = dir.file("cut.json.gz");
  write_file(p, gz.substr(0, gz.size() / 2));
  const auto m = import_error(dir, {p});
  CHECK_THAT(m, Catch::Contains("cut.json.gz") && Catch::Contains("truncated gzip"));
}

TEST_CASE("corrupt gzip", "[kineto][bad]") {
  TempDir dir;
  std::string gz = gzip_bytes(read_file(fixture("fsdp_rank1.json")));
  for (std::size_t i = 20; i < 60; ++i) gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  const auto p = dir.file("bad.json.gz");
  write_file(p, gz);
  const auto m = import_error(dir, {p});
  CHECK_THAT(m, Catch::Contains("bad.json.gz") && Catch::Contains("gzip"));
  CHECK_THAT(m, Catch::Contains("corrupt") || Catch::Contains("truncated"));
}

TEST_CASE("gzip whose CRC does not match", "[kineto][bad]") {
  TempDir dir;
  std::string gz = gzip_bytes(read_file(fixture("fsdp_rank1.json")));
  gz[gz.size() - 6] = static_cast<char>(gz[gz.size() - 6] ^ 1);  // CRC32 in the trailer
  const auto p = dir.file("crc.json.gz");
  write_file(p, gz);
  CHECK_THAT(import_error(dir, {p}), Catch::Contains("corrupt gzip"));
}

TEST_CASE("invalid JSON names the byte offset", "[kineto][bad]") {
  TempDir dir;
  const auto p = write_json(dir, "bad.json", R"({"traceEvents": [)" + kOkEvent + R"(, {"ph": "X", "name": }]})");
  const auto m = import_error(dir, {p});
  CHECK_THAT(m, Catch::Contains("bad.json") && Catch::Contains("invalid JSON") && Catch::Contains("byte"));
}

TEST_CASE("truncated JSON", "[kineto][bad]") {
  TempDir dir;
  const std::string json = read_file(fixture("fsdp_rank1.json"));
  const auto p = write_json(dir, "cut.json", json.substr(0, json.size() * 2 / 3));
  const auto m = import_error(dir, {p});
  CHECK_THAT(m, Catch::Contains("cut.json") && Catch::Contains("JSON"));
  // Cut between events, inside an event, inside a string: said as a cut file, at its end (the
  // parser's place in a document that ended early read "at byte 0").
  for (const std::string cut : {std::string(R"({"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "k", "ts": 12)"),
                                std::string(R"({"schemaVersion": 1, "traceEvents": [)"),
                                std::string(R"({"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "k", "ts)")}) {
    INFO(cut);
    const auto q = write_json(dir, "cut60.json", cut);
    const auto m60 = import_error(dir, {q});
    CHECK_THAT(m60, Catch::Contains("cut60.json") && Catch::Contains("truncated?") &&
                        Catch::Contains("at byte " + std::to_string(cut.size())));
    CHECK_THAT(m60, !Catch::Contains("at byte 0"));
  }
}

TEST_CASE("trailing garbage after the document", "[kineto][bad]") {
  TempDir dir;
  const auto p = write_json(dir, "tail.json", R"({"traceEvents": []} {"x": 1})");
  CHECK_THAT(import_error(dir, {p}), Catch::Contains("trailing"));
}

TEST_CASE("JSON that is not a trace", "[kineto][bad]") {
  TempDir dir;
  const auto p = write_json(dir, "config.json", R"({"model": "llama", "layers": 32})");
  CHECK_THAT(import_error(dir, {p}), Catch::Contains("config.json") && Catch::Contains("traceEvents"));
  const auto q = write_json(dir, "num.json", "[1, 2, 3]");
  CHECK_THAT(import_error(dir, {q}), Catch::Contains("not a JSON object"));
  const auto r = write_json(dir, "events.json", R"({"traceEvents": {"a": 1}})");
  CHECK_THAT(import_error(dir, {r}), Catch::Contains("not an array"));
}

TEST_CASE("events missing required fields", "[kineto][bad]") {
  TempDir dir;
  const auto no_dur = write_json(dir, "nodur.json",
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 5.0}]})");
  const auto m = import_error(dir, {no_dur});
  CHECK_THAT(m, Catch::Contains("nodur.json") && Catch::Contains("'dur'") && Catch::Contains("gemm") &&
                    Catch::Contains("byte 17"));
  const auto no_ph = write_json(dir, "noph.json", R"({"traceEvents": [{"name": "x", "ts": 1}]})");
  CHECK_THAT(import_error(dir, {no_ph}), Catch::Contains("'ph'"));
  const auto bad_ts = write_json(dir, "badts.json", R"({"traceEvents": [{"ph": "X", "name": "x", "ts": "soon", "dur": 1}]})");
  CHECK_THAT(import_error(dir, {bad_ts}), Catch::Contains("'ts'"));
  const auto no_stream = write_json(dir, "nostream.json",
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}]})");
  CHECK_THAT(import_error(dir, {no_stream}), Catch::Contains("device/stream"));
}

TEST_CASE("negative durations", "[kineto][bad]") {
  TempDir dir;
  const auto p = write_json(dir, "neg.json",
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5.0, "dur": -1.5}]})");
  CHECK_THAT(import_error(dir, {p}), Catch::Contains("neg.json") && Catch::Contains("negative duration"));
}

TEST_CASE("two files claiming the same rank", "[kineto][bad]") {
  TempDir dir;
  const std::string t = R"({"distributedInfo": {"rank": 3}, "traceEvents": [)" + kOkEvent + "]}";
  const auto a = write_json(dir, "a.json", t);
  const auto b = write_json(dir, "b.json", t);
  const auto m = import_error(dir, {a, b});
  CHECK_THAT(m, Catch::Contains("rank 3") && Catch::Contains("a.json") && Catch::Contains("b.json"));
}

TEST_CASE("empty and unknown files", "[kineto][bad]") {
  TempDir dir;
  const auto e = write_json(dir, "empty.json", "");
  CHECK_THAT(import_error(dir, {e}), Catch::Contains("unknown format"));
  const auto ws = write_json(dir, "ws.json", "   \n  {");
  CHECK_THAT(import_error(dir, {ws}), Catch::Contains("ws.json"));
}

TEST_CASE("the import command exits 2 on bad input and writes nothing", "[kineto][bad][cli]") {
  TempDir dir;
  const auto p = write_json(dir, "neg.json",
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "x", "pid": 1, "tid": 1, "ts": 5.0, "dur": -1}]})");
  const auto before = list_dir(dir.path());
  const auto* cmd = [] {
    for (const auto& c : cli::commands())
      if (std::string(c.name) == "import") return &c;
    return static_cast<const cli::Command*>(nullptr);
  }();
  REQUIRE(cmd != nullptr);
  CHECK(cli::run_command(*cmd, {p, "-q", "-o", dir.file("out.ssdb")}) == cli::kExitBadInput);
  CHECK(list_dir(dir.path()) == before);
  // And it succeeds (exit 0) on a good fixture.
  CHECK(cli::run_command(*cmd, {fixture("modules.json"), "-q", "-o", dir.file("ok.ssdb")}) == cli::kExitOk);
  CHECK(query_int(dir.file("ok.ssdb"), "SELECT count(*) FROM kernels") == 5);
}

TEST_CASE("hostile values: clock overflow, absurd module names", "[kineto][bad]") {
  TempDir dir;
  const auto far = write_json(dir, "far.json",
      R"({"baseTimeNanoseconds": 9000000000000000000, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "x", "pid": 1, "tid": 1, "ts": 8999999999999999.0, "dur": 1}]})");
  CHECK_THAT(import_error(dir, {far}), Catch::Contains("far.json") && Catch::Contains("out of range"));
  const auto long_dur = write_json(dir, "dur.json",
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1.0, "dur": 1.0},)"
      R"({"ph": "X", "cat": "cpu_op", "name": "x", "pid": 1, "tid": 1, "ts": 1.0, "dur": 8999999999999999.0}]})");
  CHECK_THAT(import_error(dir, {long_dur}), Catch::Contains("out of range"));
  std::string fqn(5000, 'a');
  for (std::size_t i = 1; i < fqn.size(); i += 2) fqn[i] = '.';
  const auto deep = write_json(dir, "deep.json",
      R"J({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "FSDP::pre_forward ()J" + fqn +
          R"J()", "pid": 1, "tid": 1, "ts": 1.0, "dur": 1.0}]})J");
  CHECK_THAT(import_error(dir, {deep}), Catch::Contains("module name longer"));
  std::string nested = R"({"traceEvents": [)";
  for (int i = 0; i < 300; ++i) {
    if (i) nested += ",";
    nested += R"({"ph": "X", "cat": "python_function", "name": "nn.Module: M_)" + std::to_string(i) +
              R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(i) + R"(, "dur": )" + std::to_string(1000 - 2 * i) + "}";
  }
  const auto nest = write_json(dir, "nest.json", nested + "]}");
  CHECK_THAT(import_error(dir, {nest}), Catch::Contains("nested deeper"));
}

TEST_CASE("import then export from the command line", "[kineto][cli]") {
  TempDir dir;
  auto find = [](const char* name) {
    for (const auto& c : cli::commands())
      if (std::string(c.name) == name) return &c;
    return static_cast<const cli::Command*>(nullptr);
  };
  const auto* imp = find("import");
  const auto* exp = find("export");
  REQUIRE(imp != nullptr);
  REQUIRE(exp != nullptr);
  const std::string prof = dir.file("fsdp.ssdb");
  REQUIRE(cli::run_command(*imp, {fixture("fsdp_rank1.json"), "-q", "-o", prof}) == cli::kExitOk);
  CHECK(cli::run_command(*exp, {prof, "--format", "perfetto", "-o", dir.file("t.json")}) == cli::kExitOk);
  CHECK(read_file(dir.file("t.json")).find("\"collective\":\"all_gather\"") != std::string::npos);
  CHECK(cli::run_command(*exp, {prof, "--format", "csv", "-o", dir.file("csv")}) == cli::kExitOk);
  CHECK(read_file(dir.file("csv/collectives.csv")).rfind("id,rank,kernel_id,type,bytes", 0) == 0);
  // Exporting something that is not a profile: exit 2, nothing written.
  const auto before = list_dir(dir.path());
  CHECK(cli::run_command(*exp, {fixture("fsdp_rank1.json"), "-o", dir.file("bad.json")}) == cli::kExitBadInput);
  CHECK(list_dir(dir.path()) == before);
  CHECK(cli::run_command(*exp, {prof, "--format", "xml", "-o", dir.file("x")}) == cli::kExitUsage);
}

// Flow arrows' values are not read (they are not imported), but their objects are still walked:
// broken JSON inside one is an error as anywhere else.
TEST_CASE("broken JSON inside a flow arrow", "[kineto][bad]") {
  TempDir dir;
  for (const std::string flow : {R"({"ph": "f",, "id": 1})", R"({"ph": "s" "id": 1})", R"({"ph": "t", "id" 1})"}) {
    INFO(flow);
    const auto p = write_json(dir, "flow.json", R"({"traceEvents": [)" + flow + ", " + kOkEvent + "]}");
    const auto m = import_error(dir, {p});
    CHECK_THAT(m, Catch::Contains("flow.json") && Catch::Contains("invalid JSON"));
    std::remove(p.c_str());
  }
  // A well-formed one is skipped and counted.
  const auto p = write_json(dir, "ok.json",
                            R"({"traceEvents": [{"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 1.5, "cat": "ac2g",)"
                            R"( "name": "ac2g", "bp": "e"}, )" + kOkEvent + "]}");
  import::ImportOptions o;
  o.show_progress = false;
  const auto s = import::import_files({p}, dir.file("ok.ssdb"), o);
  CHECK(s.kernels == 1);
  CHECK(s.rows.skipped_events == 1);
}

// The next rank file is read on a helper thread while the current one is parsed: its read error
// still comes out, naming that file, and nothing is written.
TEST_CASE("a bad second rank file, read ahead", "[kineto][bad]") {
  TempDir dir;
  const std::string json = read_file(fixture("fsdp_rank1.json"));
  const auto good = dir.file("rank0.json");
  write_file(good, json);
  const std::string gz = gzip_bytes(json);
  const auto cut = dir.file("rank1.json.gz");
  write_file(cut, gz.substr(0, gz.size() / 2));
  const auto m = import_error(dir, {good, cut});
  CHECK_THAT(m, Catch::Contains("rank1.json.gz") && Catch::Contains("truncated gzip"));
  // A third file after the bad one changes nothing.
  const auto third = dir.file("rank2.json");
  write_file(third, json);
  const auto m2 = import_error(dir, {good, cut, third});
  CHECK_THAT(m2, Catch::Contains("rank1.json.gz") && Catch::Contains("truncated gzip"));
}
