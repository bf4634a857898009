// Small pieces of the Kineto importer: exact us -> ns conversion, category matching, the
// innermost-range index used for attribution.
#include <catch2/catch.hpp>

#include <cctype>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "profiler/import/common/unrecorded_frees.h"
#include "profiler/import/common/innermost_range.h"
#include "profiler/import/common/input_file.h"
#include "profiler/import/import.h"
#include "profiler/import/kineto/kineto_import.h"
#include "profiler/import/kineto/kineto_parse.h"
#include "storage/errors.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::import;

TEST_CASE("microsecond tokens convert to exact nanoseconds", "[kineto]") {
  std::int64_t ns = 0;
  REQUIRE(kineto::parse_us_token_to_ns("4458676522690.655", ns));
  CHECK(ns == 4458676522690655);  // a double would lose the last digit here
  REQUIRE(kineto::parse_us_token_to_ns("1694128201435418", ns));  // unix-epoch us, exact
  CHECK(ns == 1694128201435418001 - 1);
  REQUIRE(kineto::parse_us_token_to_ns("1694128201435419", ns));
  CHECK(ns == 1694128201435419000);
  CHECK_FALSE(kineto::parse_us_token_to_ns("99999999999999999999", ns));  // beyond the clock
  REQUIRE(kineto::parse_us_token_to_ns("12", ns));
  CHECK(ns == 12000);
  REQUIRE(kineto::parse_us_token_to_ns("0.5", ns));
  CHECK(ns == 500);
  REQUIRE(kineto::parse_us_token_to_ns("1.23456", ns));
  CHECK(ns == 1235);  // rounded to the ns
  REQUIRE(kineto::parse_us_token_to_ns("-2.5", ns));
  CHECK(ns == -2500);
  REQUIRE(kineto::parse_us_token_to_ns("1.5e3 ", ns));
  CHECK(ns == 1500000);
  CHECK_FALSE(kineto::parse_us_token_to_ns("1e300", ns));
  CHECK_FALSE(kineto::parse_us_token_to_ns("", ns));
  CHECK_FALSE(kineto::parse_us_token_to_ns("abc", ns));
  // The edges of the exact path: 16 digits and 9e15 us, a 17th digit, a point without decimals,
  // decimals without a whole part, blanks after the number, nothing after the sign.
  REQUIRE(kineto::parse_us_token_to_ns("8999999999999999.9994", ns));
  CHECK(ns == 8999999999999999999);
  REQUIRE(kineto::parse_us_token_to_ns("9000000000000000", ns));  // through double: 9e15 is the limit
  CHECK(ns == 9000000000000000000);
  REQUIRE(kineto::parse_us_token_to_ns("12345678901234.5678", ns));
  CHECK(ns == 12345678901234568);
  CHECK_FALSE(kineto::parse_us_token_to_ns("12345678901234567", ns));  // 1.2e16 us: beyond the clock
  REQUIRE(kineto::parse_us_token_to_ns("1.", ns));
  CHECK(ns == 1000);
  REQUIRE(kineto::parse_us_token_to_ns(".5", ns));
  CHECK(ns == 500);
  REQUIRE(kineto::parse_us_token_to_ns("7.25 \n", ns));
  CHECK(ns == 7250);
  CHECK_FALSE(kineto::parse_us_token_to_ns("-", ns));
  CHECK_FALSE(kineto::parse_us_token_to_ns("1.5x", ns));
}

TEST_CASE("categories of every generation", "[kineto]") {
  using kineto::Cat;
  CHECK(kineto::classify_category("kernel") == Cat::Kernel);
  CHECK(kineto::classify_category("Kernel") == Cat::Kernel);
  CHECK(kineto::classify_category("gpu_memcpy") == Cat::Memcpy);
  CHECK(kineto::classify_category("Memcpy") == Cat::Memcpy);
  CHECK(kineto::classify_category("Memset") == Cat::Memset);
  CHECK(kineto::classify_category("cuda_runtime") == Cat::Runtime);
  CHECK(kineto::classify_category("Runtime") == Cat::Runtime);
  CHECK(kineto::classify_category("cuda_driver") == Cat::Runtime);
  CHECK(kineto::classify_category("cpu_op") == Cat::CpuOp);
  CHECK(kineto::classify_category("Operator") == Cat::CpuOp);
  CHECK(kineto::classify_category("gpu_user_annotation") == Cat::GpuUserAnnotation);
  CHECK(kineto::classify_category("ac2g") == Cat::Flow);
  CHECK(kineto::classify_category("overhead") == Cat::Other);
  // Every name the importer knows, in any case; names one letter off or of the same length are not it.
  const std::vector<std::pair<std::string, Cat>> known = {
      {"kernel", Cat::Kernel},         {"gpu_memcpy", Cat::Memcpy},        {"memcpy", Cat::Memcpy},
      {"gpu_memset", Cat::Memset},     {"memset", Cat::Memset},            {"cuda_runtime", Cat::Runtime},
      {"runtime", Cat::Runtime},       {"cuda_driver", Cat::Runtime},      {"driver", Cat::Runtime},
      {"cpu_op", Cat::CpuOp},          {"operator", Cat::CpuOp},           {"user_annotation", Cat::UserAnnotation},
      {"gpu_user_annotation", Cat::GpuUserAnnotation},                     {"python_function", Cat::PythonFunction},
      {"python", Cat::PythonFunction}, {"cpu_instant_event", Cat::CpuInstant}, {"ac2g", Cat::Flow},
      {"fwdbwd", Cat::Flow},           {"async_cpu_to_gpu", Cat::Flow},    {"forward_backward", Cat::Flow}};
  for (const auto& [name, cat] : known) {
    INFO(name);
    std::string upper = name, mixed = name, off = name, longer = name + "s";
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    mixed[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(mixed[0])));
    off.back() = off.back() == 'x' ? 'y' : 'x';
    CHECK(kineto::classify_category(name) == cat);
    CHECK(kineto::classify_category(upper) == cat);
    CHECK(kineto::classify_category(mixed) == cat);
    CHECK(kineto::classify_category(off) == Cat::Other);
    CHECK(kineto::classify_category(longer) == Cat::Other);
    CHECK(kineto::classify_category(name.substr(1)) == Cat::Other);
  }
}

TEST_CASE("innermost range index", "[kineto]") {
  // outer [0,100) value 1; inner [10,20) value 2; inner [30,60) value 3 with [40,50) value 4.
  InnermostRangeIndex idx({{0, 100}, {10, 20}, {30, 60}, {40, 50}}, {1, 2, 3, 4});
  CHECK(idx.at(-1) == -1);
  CHECK(idx.at(0) == 1);
  CHECK(idx.at(10) == 2);
  CHECK(idx.at(19) == 2);
  CHECK(idx.at(20) == 1);  // [start, end)
  CHECK(idx.at(45) == 4);
  CHECK(idx.at(55) == 3);
  CHECK(idx.at(99) == 1);
  CHECK(idx.at(100) == -1);
  // Equal starts: the shorter range is the inner one.
  InnermostRangeIndex eq({{5, 50}, {5, 10}}, {7, 8});
  CHECK(eq.at(5) == 8);
  CHECK(eq.at(10) == 7);
  // Zero-length ranges contain nothing.
  InnermostRangeIndex zero({{5, 5}}, {9});
  CHECK(zero.at(5) == -1);
}

TEST_CASE("innermost range index: a lookup from the last one's step answers as a search does", "[kineto]") {
  std::mt19937 rng(5);
  std::vector<std::pair<TimeNs, TimeNs>> ranges;
  std::vector<std::int64_t> values;
  for (int i = 0; i < 300; ++i) {  // nested and overlapping ranges, some of zero length
    const TimeNs a = static_cast<TimeNs>(rng() % 10000);
    ranges.emplace_back(a, a + static_cast<TimeNs>(rng() % 400));
    values.push_back(i);
  }
  const InnermostRangeIndex idx(ranges, values);
  std::vector<TimeNs> queries;
  for (TimeNs t = -5; t < 10500; t += 3) queries.push_back(t);        // in time order, as a lane's events
  for (int i = 0; i < 2000; ++i) queries.push_back(static_cast<TimeNs>(rng() % 11000) - 100);  // then anywhere
  std::size_t hint = 0;
  for (TimeNs t : queries) {
    INFO(t);
    REQUIRE(idx.at(t, -7, hint) == idx.at(t, -7));
  }
  std::size_t far = 123456;  // any hint is only a guess
  CHECK(idx.at(5000, -7, far) == idx.at(5000, -7));
  const InnermostRangeIndex empty({}, {});
  std::size_t h = 0;
  CHECK(empty.at(3, -7, h) == -7);
}

TEST_CASE("unrecorded frees: a block never allocated again is freed where the total says", "[kineto][memory]") {
  using ss::import::AllocatorEvent;
  // Two all-gather-sized blocks; the older one's free is missing and its address never comes back.
  // At t=40 the allocator's total is 100 below the running sum: the oldest live 100-byte block
  // (address 1) was freed just before.
  std::vector<AllocatorEvent> ev{{10, 1, 100, 100, false, 0}, {20, 2, 100, 200, false, 1},
                                 {30, 3, 50, 250, false, 2}, {40, 4, 10, 160, false, 3}};
  const auto out = ss::import::add_unrecorded_frees(ev, 0);
  REQUIRE(out.size() == 5);
  CHECK(out[3].synthetic);
  CHECK(out[3].address == 1);
  CHECK(out[3].bytes == -100);
  CHECK(out[3].time == 40);
  std::int64_t level = 0;
  for (const auto& e : out) level += e.bytes;
  CHECK(level == 160);
  // Nothing missing: nothing added.
  CHECK(ss::import::add_unrecorded_frees({{10, 1, 100, 100, false, 0}, {20, 1, -100, 0, false, 1}}, 0).size() == 2);
}

namespace {

// The rule by total as first written (a std::set of live block indices per size): the oracle for
// the faster bookkeeping in unrecorded_frees.cpp, which must place the same frees.
std::vector<ss::import::AllocatorEvent> free_by_total_reference(std::vector<ss::import::AllocatorEvent> events,
                                                                std::int64_t baseline) {
  std::vector<ss::import::AllocatorEvent> out;
  std::unordered_map<std::int64_t, std::size_t> live;
  std::map<std::int64_t, std::set<std::size_t>> by_size;
  std::int64_t level = baseline;
  std::set<std::int64_t> freed_here;
  for (const auto& e : events) {
    if (e.bytes < 0 && live.count(e.address) == 0 && freed_here.erase(e.address)) continue;
    if (e.bytes > 0) freed_here.erase(e.address);
    const std::int64_t gap = level + e.bytes - e.total_allocated;
    if (e.total_allocated >= 0 && gap > 0) {
      auto it = by_size.find(gap);
      if (it != by_size.end() && !it->second.empty()) {
        const std::size_t idx = *it->second.begin();
        auto f = out[idx];
        f.bytes = -f.bytes;
        f.time = e.time;
        f.total_allocated = -1;
        f.synthetic = true;
        live.erase(f.address);
        freed_here.insert(f.address);
        it->second.erase(it->second.begin());
        level += f.bytes;
        out.push_back(f);
      }
    }
    level += e.bytes;
    if (e.bytes > 0) {
      live[e.address] = out.size();
      by_size[e.bytes].insert(out.size());
    } else if (e.bytes < 0) {
      if (auto it = live.find(e.address); it != live.end()) {
        by_size[out[it->second].bytes].erase(it->second);
        live.erase(it);
      }
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace

TEST_CASE("unrecorded frees by total: the same frees as a set per size", "[kineto][memory]") {
  using ss::import::AllocatorEvent;
  std::mt19937 rng(11);
  std::size_t placed_by_total = 0;  // the rule under test must have run
  for (int round = 0; round < 300; ++round) {
    // A random allocator stream: a few addresses (reuse), three sizes, frees the profiler missed
    // (the total still falls), totals sometimes unknown, frees recorded late after a reuse.
    std::vector<AllocatorEvent> ev;
    std::map<std::int64_t, std::int64_t> held;  // address -> bytes, as the allocator has it
    std::int64_t total = 0;
    for (int i = 0; i < 200; ++i) {
      // Few addresses: missed frees show as reuse; many: as the total alone (blocks never reused).
      const std::int64_t addr = static_cast<std::int64_t>(rng() % (round % 2 ? 12 : 400));
      const bool known = rng() % 5 != 0;
      if (round % 2 == 0 && !held.empty() && rng() % 2 == 0) {  // free some held block
        auto victim = std::next(held.begin(), static_cast<std::ptrdiff_t>(rng() % held.size()));
        total -= victim->second;
        if (rng() % 4 != 0) ev.push_back({i, victim->first, -victim->second, known ? total : -1, false, ev.size()});
        held.erase(victim);
      } else if (auto it = held.find(addr); it != held.end() && rng() % 3 != 0) {
        total -= it->second;
        if (rng() % 4 != 0)  // recorded
          ev.push_back({i, addr, -it->second, known ? total : -1, false, ev.size()});
        held.erase(it);
      } else if (!held.count(addr)) {
        const std::int64_t bytes = std::int64_t{50} << (rng() % 3);
        total += bytes;
        held[addr] = bytes;
        ev.push_back({i, addr, bytes, known ? total : -1, false, ev.size()});
      } else {  // a free recorded again, late
        ev.push_back({i, addr, -held[addr], -1, false, ev.size()});
      }
    }
    const std::int64_t baseline = static_cast<std::int64_t>(rng() % 3) * 50;
    const auto reused = ss::import::add_reused_address_frees(ev, baseline);
    const auto expected = free_by_total_reference(reused, baseline);
    const auto got = ss::import::add_unrecorded_frees(ev, baseline);
    placed_by_total += expected.size() - reused.size();
    REQUIRE(got.size() == expected.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      INFO("round " << round << " event " << k);
      CHECK(got[k].time == expected[k].time);
      CHECK(got[k].address == expected[k].address);
      CHECK(got[k].bytes == expected[k].bytes);
      CHECK(got[k].synthetic == expected[k].synthetic);
      CHECK(got[k].source == expected[k].source);
    }
  }
  CHECK(placed_by_total > 300);  // 637 with this seed
}

// The next rank files are read and parsed on helper threads (ReusableBuffers::read_ahead) while
// the current one is written: what they hand over equals a parse on the import's own thread, and
// a broken file gives the same error when it is taken.
TEST_CASE("a file parsed ahead on the helper thread", "[kineto]") {
  const test::TempDir dir;
  auto write = [&](const std::string& name, const std::string& text) {
    test::write_file(dir.file(name), text);
    return dir.file(name);
  };
  const std::string good_text =
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm \u00e9", "pid": 0, "tid": 7, "ts": 1.5, "dur": 2},)"
      R"( {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 1, "dur": 3, "args": {"External id": 9}},)"
      R"( {"ph": "f", "id": 1, "ts": 2, "cat": "ac2g", "name": "ac2g"}]})";
  const std::string good = write("good.json", good_text);
  const std::string broken = write("broken.json", R"({"traceEvents": [{"ph": "X", "name": "k" "ts": 1}]})");

  std::string direct_json = good_text;
  direct_json.reserve(direct_json.size() + kInputPadding);
  kineto::KinetoParser direct;
  const kineto::KinetoTrace a = direct.parse(direct_json, good, false);

  kineto::ReusableBuffers buffers;
  CHECK_FALSE(buffers.take_read_ahead(good));  // nothing read ahead yet
  buffers.ahead = 2;
  buffers.upcoming = {good, broken};
  buffers.read_ahead();  // both in flight, each in buffers of its own
  CHECK_FALSE(buffers.take_read_ahead(broken));  // taken in order only: `good` comes first
  REQUIRE(buffers.take_read_ahead(good));
  REQUIRE(buffers.current->trace.has_value());
  const kineto::KinetoTrace& b = *buffers.current->trace;
  REQUIRE(a.events.size() == 2);
  REQUIRE(b.events.size() == a.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    CHECK(b.events[i].name == a.events[i].name);
    CHECK(b.events[i].ts == a.events[i].ts);
    CHECK(b.events[i].dur == a.events[i].dur);
    CHECK(b.events[i].external_id == a.events[i].external_id);
  }
  CHECK(b.events[0].name == "gemm \u00e9");
  CHECK(b.skipped == a.skipped);

  std::string direct_error, ahead_error;
  std::string broken_json = R"({"traceEvents": [{"ph": "X", "name": "k" "ts": 1}]})";
  broken_json.reserve(broken_json.size() + kInputPadding);
  try {
    direct.parse(broken_json, broken, false);
  } catch (const ImportError& e) {
    direct_error = e.what();
  }
  try {
    buffers.take_read_ahead(broken);
  } catch (const ImportError& e) {
    ahead_error = e.what();
  }
  CHECK_FALSE(direct_error.empty());
  CHECK(ahead_error == direct_error);
}

TEST_CASE("a read buffer reused from file to file holds exactly each file", "[kineto]") {
  // The importer reads every rank file into the same buffers; a reused buffer is not zeroed
  // first, so a smaller file must not leave the bigger one's bytes in view, and a bigger one
  // must get all its bytes and the padding simdjson needs.
  const test::TempDir dir;
  auto write = [&](const std::string& name, const std::string& text) {
    test::write_file(dir.file(name), text);
    return dir.file(name);
  };
  const std::string big(100000, 'b'), small = "small", bigger = std::string(300000, 'c') + "end";
  const std::string big_path = write("big.json", big), small_path = write("small.json", small),
                    bigger_path = write("bigger.json", bigger), empty_path = write("empty.json", "");
  std::string buffer;
  for (const auto& [path, text] : std::vector<std::pair<std::string, std::string>>{
           {big_path, big}, {small_path, small}, {bigger_path, bigger}, {empty_path, ""}, {big_path, big}}) {
    bool gz = true;
    read_input_file_into(path, buffer, {}, &gz);
    CHECK_FALSE(gz);
    CHECK(buffer == text);
    CHECK(buffer.capacity() >= buffer.size() + kInputPadding);
  }
  CHECK_THROWS_AS(read_input_file_into(dir.file("missing.json"), buffer), ProfileError);
  CHECK(buffer.empty());
}

TEST_CASE("skip reasons are counted per reason however often they repeat", "[kineto]") {
  std::string json = R"({"traceEvents": [)";
  for (int i = 0; i < 50; ++i) json += R"({"ph": "f", "id": 1, "ts": 2, "cat": "ac2g", "name": "ac2g"},)";
  for (int i = 0; i < 30; ++i) json += R"({"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 2, "ts": 1, "dur": 1},)";
  for (int i = 0; i < 20; ++i) json += R"({"ph": "i", "name": "other", "pid": 1, "tid": 2, "ts": 1},)";
  json += R"({"ph": "s", "id": 1, "ts": 2, "cat": "ac2g", "name": "ac2g"}]})";
  json.reserve(json.size() + kInputPadding);
  kineto::KinetoParser parser;
  const kineto::KinetoTrace t = parser.parse(json, "t.json", false);
  CHECK(t.events.empty());
  REQUIRE(t.skipped.size() == 3);
  CHECK(t.skipped.at("flow arrow (ac2g/fwdbwd; kernels are linked by correlation id instead)") == 51);
  CHECK(t.skipped.at("python_function (Python stack frame)") == 30);
  CHECK(t.skipped.at("instant event other than [memory]") == 20);
}

TEST_CASE("integer fields accept every JSON form of an integer", "[kineto]") {
  // [memory] "Bytes" in each form: (JSON text, expected bytes; 0 = left unset, as for a value that is no integer).
  const std::vector<std::pair<std::string, std::int64_t>> forms = {
      {"1024", 1024},
      {"-77", -77},
      {"0", 0},
      {"-0", 0},
      {"123456789012345678", 123456789012345678},
      {"1234567890123456789", 1234567890123456789},
      {"-9223372036854775808", INT64_MIN},
      {"12345678901234567890", static_cast<std::int64_t>(12345678901234567890ull)},  // uint64: the bits
      {"1.5", 2},                                      // an integral-ish double: rounded
      {"1e3", 1000},
      {"\"42\"", 42},                                  // a numeric string
      {"1024 \n\t", 1024},                             // blanks before the comma
      {"true", 0},
      {"[1]", 0},
      {"1e300", 0},
  };
  std::string json = R"({"traceEvents": [)";
  for (std::size_t i = 0; i < forms.size(); ++i)
    json += std::string(i ? "," : "") + R"({"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 1, "args": {"Bytes": )" +
            forms[i].first + R"(, "Addr": 7}})";
  json += "]}";
  json.reserve(json.size() + kInputPadding);
  kineto::KinetoParser parser;
  const kineto::KinetoTrace t = parser.parse(json, "t.json", false);
  REQUIRE(t.events.size() == forms.size());
  for (std::size_t i = 0; i < forms.size(); ++i) {
    INFO(forms[i].first);
    REQUIRE(t.events[i].mem >= 0);
    CHECK(t.mems[static_cast<std::size_t>(t.events[i].mem)].bytes == forms[i].second);
    CHECK(t.mems[static_cast<std::size_t>(t.events[i].mem)].addr == 7);
  }
}

TEST_CASE("pid and tid read the same whether their text repeats or changes", "[kineto]") {
  // (pid JSON, tid JSON, expected pid, expected tid); kAbsent where the text is no id.
  const std::int64_t none = kineto::kAbsent;
  using Event = std::tuple<std::string, std::string, std::int64_t, std::int64_t>;
  const std::vector<Event> events = {
      {"7", "100", 7, 100},         {"7", "100", 7, 100},          {"7", "101", 7, 101},
      {"\"Spans\"", "101", none, 101}, {"\"Spans\"", "101", none, 101}, {"\"stream 9\"", "\"stream 9\"", 9, 9},
      {"\"stream 9\"", "\"stream 9\"", 9, 9}, {"7 ", "100", 7, 100},  {"-1", "1e2", -1, 100},
      {"-1", "1e2", -1, 100},       {"true", "7", none, 7},        {"7", "100", 7, 100}};
  std::string json = R"({"traceEvents": [)";
  for (std::size_t i = 0; i < events.size(); ++i)
    json += std::string(i ? "," : "") + R"({"ph": "X", "cat": "cpu_op", "name": "op", "pid": )" + std::get<0>(events[i]) +
            R"(, "tid": )" + std::get<1>(events[i]) + R"(, "ts": 1, "dur": 1})";
  json += "]}";
  json.reserve(json.size() + kInputPadding);
  kineto::KinetoParser parser;
  const kineto::KinetoTrace t = parser.parse(json, "t.json", false);
  REQUIRE(t.events.size() == events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    INFO(i << ": pid " << std::get<0>(events[i]) << " tid " << std::get<1>(events[i]));
    CHECK(t.events[i].pid == std::get<2>(events[i]));
    CHECK(t.events[i].tid == std::get<3>(events[i]));
  }
}
