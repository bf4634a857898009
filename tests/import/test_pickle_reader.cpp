// The restricted pickle reader: Python's own pickles of plain data round-trip (protocols 2 to 5,
// big ints, floats to the bit, the memo); every global / reduce opcode is refused, naming the
// opcode and offset; every truncation and a set of hostile hand-made pickles end in PickleError.
// The pickles come from tests/import/fixtures/make_pickles.py, run by ctest first (fixture
// pickle_fixtures) with the project's Python, which also writes the expected renderings.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "profiler/import/snapshot/pickle_reader.h"
#include "tests/support/test_paths.h"

using ss::pickle::Document;
using ss::pickle::PickleError;
using ss::pickle::Value;
using namespace std::string_literals;

namespace {

std::string fixtures_dir() { return SHARDSCOPE_PICKLE_FIXTURES; }

std::string hex(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

// Little-endian two's complement bytes (pickle's LONG payload) in decimal, by long division.
std::string big_decimal(std::string_view le) {
  std::vector<unsigned char> mag(le.begin(), le.end());
  const bool negative = !mag.empty() && (mag.back() & 0x80);
  if (negative) {  // magnitude = ~x + 1
    unsigned carry = 1;
    for (auto& b : mag) {
      const unsigned v = static_cast<unsigned char>(~b) + carry;
      b = static_cast<unsigned char>(v & 0xff);
      carry = v >> 8;
    }
  }
  std::string digits;
  while (std::any_of(mag.begin(), mag.end(), [](unsigned char b) { return b != 0; })) {
    unsigned rem = 0;
    for (std::size_t i = mag.size(); i-- > 0;) {
      const unsigned cur = (rem << 8) | mag[i];
      mag[i] = static_cast<unsigned char>(cur / 10);
      rem = cur % 10;
    }
    digits += static_cast<char>('0' + rem);
  }
  if (digits.empty()) digits = "0";
  if (negative) digits += '-';
  std::reverse(digits.begin(), digits.end());
  return digits;
}

// The same canonical form as make_pickles.py's render().
std::string render(const Value& v) {
  switch (v.kind) {
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.boolean ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.integer);
    case Value::Kind::BigInt: return big_decimal(v.text);
    case Value::Kind::Float: {
      const auto bits = std::bit_cast<std::uint64_t>(v.real);
      std::string be;
      for (int k = 7; k >= 0; --k) be += static_cast<char>((bits >> (8 * k)) & 0xff);
      return "f:" + hex(be);
    }
    case Value::Kind::Str: return "s:" + hex(v.text);
    case Value::Kind::Bytes: return "b:" + hex(v.text);
    case Value::Kind::List:
    case Value::Kind::Tuple: {
      std::string out = v.kind == Value::Kind::List ? "[" : "(";
      for (std::size_t i = 0; i < v.items.size(); ++i) out += (i ? "," : "") + render(*v.items[i]);
      return out + (v.kind == Value::Kind::List ? "]" : ")");
    }
    case Value::Kind::Dict: {
      std::string out = "{";
      for (std::size_t i = 0; i < v.dict_size(); ++i) out += (i ? "," : "") + render(v.key(i)) + ":" + render(v.value(i));
      return out + "}";
    }
  }
  return "?";
}

std::vector<std::string> fixtures(const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(fixtures_dir())) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && e.path().extension() == ".pickle") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string sibling(const std::string& pickle_path, const std::string& ext) {
  return pickle_path.substr(0, pickle_path.size() - std::string(".pickle").size()) + ext;
}

std::string error_of(std::string_view bytes) {
  try {
    ss::pickle::parse(bytes, "input");
  } catch (const PickleError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("Python's pickles of plain data round-trip at protocols 2 to 5", "[pickle]") {
  const auto files = fixtures("rt_");
  REQUIRE(files.size() >= 50);  // every value x 4 protocols + bytes at 3..5: the generator ran
  for (const auto& f : files) {
    INFO(f);
    const std::string bytes = ss::test::read_file(f);
    const Document d = ss::pickle::parse(bytes, f);
    REQUIRE(d.root);
    CHECK(render(*d.root) == ss::test::read_file(sibling(f, ".txt")));
    const std::string name = std::filesystem::path(f).filename().string();
    CHECK(d.protocol == name[name.size() - std::string(".pickle").size() - 1] - '0');
  }
}

TEST_CASE("the memo shares one value between its references", "[pickle]") {
  const std::string bytes = ss::test::read_file(fixtures_dir() + "/rt_memo_shared_p4.pickle");
  const Document d = ss::pickle::parse(bytes, "memo");
  const Value* a = d.root->get("a");
  const Value* c = d.root->get("c");
  REQUIRE(a);
  REQUIRE(c);
  CHECK(a == d.root->get("b"));  // the same list object, stored once
  REQUIRE(c->items.size() == 2);
  CHECK(c->items[0] == a);
  CHECK(c->items[1] == a);
  // A list filled after it was memoized (EMPTY_LIST, BINPUT, BINGET, APPEND): both references see it.
  const std::string hand = "\x80\x02]q\x00h\x00K\x01" "a\x86."s;
  const Document h = ss::pickle::parse(hand, "hand");
  REQUIRE(h.root->kind == Value::Kind::Tuple);
  REQUIRE(h.root->items.size() == 2);
  CHECK(h.root->items[0] == h.root->items[1]);
  REQUIRE(h.root->items[0]->items.size() == 1);
  CHECK(h.root->items[0]->items[0]->integer == 1);
}

TEST_CASE("every global and reduce opcode is refused, naming the opcode and its offset", "[pickle]") {
  const auto files = fixtures("refuse_");
  REQUIRE(files.size() >= 9);
  for (const auto& f : files) {
    INFO(f);
    const std::string err = error_of(ss::test::read_file(f));
    const std::string opcode = ss::test::read_file(sibling(f, ".expect"));
    CHECK(contains(err, "opcode " + opcode + " ("));
    CHECK(contains(err, "pickle byte "));
  }
  // The os.system pickle is refused at its global, before its REDUCE could ever be reached.
  const std::string evil = ss::test::read_file(fixtures_dir() + "/refuse_os_system_reduce_p4.pickle");
  CHECK(contains(error_of(evil), "refused"));
  CHECK(contains(error_of(evil), "nothing in the file is ever executed"));

  // Each refused opcode on its own, after a valid prefix (so none is reached by accident).
  const std::string prefix = "\x80\x04";
  const std::vector<std::pair<std::string, std::string>> ops = {
      {"c", "GLOBAL"},  {"\x93", "STACK_GLOBAL"}, {"i", "INST"},  {"o", "OBJ"},      {"\x81", "NEWOBJ"},
      {"\x92", "NEWOBJ_EX"}, {"R", "REDUCE"},     {"b", "BUILD"}, {"P", "PERSID"},   {"Q", "BINPERSID"},
      {"\x82", "EXT1"}, {"\x83", "EXT2"},         {"\x84", "EXT4"}};
  for (const auto& [op, name] : ops) {
    INFO(name);
    const std::string err = error_of(prefix + "N" + op + ".");
    CHECK(contains(err, "opcode " + name + " ("));
    CHECK(contains(err, "pickle byte 3:"));
    CHECK(contains(err, "refused"));
  }
}

TEST_CASE("every truncation of a valid pickle is an error, never a crash", "[pickle]") {
  std::vector<std::string> files = fixtures("rt_");
  // Every prefix of the pickles up to 4 KB (the larger ones repeat the same opcodes).
  std::erase_if(files, [](const std::string& f) { return std::filesystem::file_size(f) > 4096; });
  REQUIRE(files.size() >= 30);
  std::size_t prefixes = 0;
  for (const auto& f : files) {
    const std::string bytes = ss::test::read_file(f);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      INFO(f << " cut at " << n << " of " << bytes.size());
      CHECK_THROWS_AS(ss::pickle::parse(std::string_view(bytes).substr(0, n), f), PickleError);
      ++prefixes;
    }
  }
  CHECK(prefixes > 5000);
}

TEST_CASE("hostile and damaged pickles get a clear error", "[pickle]") {
  using S = std::string;
  struct Case {
    S bytes;
    S expect;
  };
  const std::vector<Case> cases = {
      {""s, "empty input"},
      {"\x80\x06N."s, "protocol 6 is not supported"},
      {"\x80\x01N."s, "protocol 1 is not supported"},
      // A length field far beyond the input: refused before anything is allocated.
      {"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f"s, "truncated"},
      {"\x80\x04\x8e\xff\xff\xff\xff\xff\xff\xff\xff"s, "truncated"},
      {"\x80\x04\x95\xff\xff\xff\xff\xff\xff\xff\xffN."s, "frame of"},
      {"\x80\x02\x8b\xff\xff\xff\xff."s, "negative length"},
      {"\x80\x02h\x05."s, "memo key 5 was never stored"},
      {"\x80\x02}K\x01" "a."s, "expects a list below its items, found a dict"},
      {"\x80\x02]K\x01K\x02s."s, "expects a dict below its items, found a list"},
      {"\x80\x02NN."s, "2 values on the stack"},
      {"\x80\x02(N."s, "expected exactly one"},
      {"\x80\x02" "a."s, "stack underflow"},
      {"\x80\x02\x86."s, "stack underflow"},
      {"\x80\x02t."s, "no MARK"},
      {"\x80\x02\xff."s, "unknown opcode 0xff"},
      {"\x80\x02X\x02\x00\x00\x00\xc3\x28."s, "not valid UTF-8"},
      {"\x80\x02I1\n."s, "protocol 0/1 text opcode"},
      {"\x80\x02N"s, "without a STOP"},
      // A list that contains itself through the memo has no finite form.
      {"\x80\x02]q\x00h\x00" "a."s, "contains itself"},
      {"\x80\x02]q\x00h\x00\x85" "a."s, "contains itself"},
  };
  for (const auto& c : cases) {
    INFO(c.expect);
    const std::string err = error_of(c.bytes);
    CHECK(contains(err, c.expect));
    CHECK(contains(err, "'input'"));
  }
}

TEST_CASE("plain values decode exactly", "[pickle]") {
  // LONG1 of 8 bytes 0xff..ff is -1; of 9 bytes (2**64 - 1 with a 0 sign byte) a big int.
  const Document a = ss::pickle::parse("\x80\x02\x8a\x08\xff\xff\xff\xff\xff\xff\xff\xff."s, "a");
  CHECK(a.root->kind == Value::Kind::Int);
  CHECK(a.root->integer == -1);
  const Document b = ss::pickle::parse("\x80\x02\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00."s, "b");
  CHECK(b.root->kind == Value::Kind::BigInt);
  CHECK(render(*b.root) == "18446744073709551615");
  // as_uint64: 0 .. 2^64 - 1 in any of its encodings, nothing outside.
  std::uint64_t u = 0;
  CHECK((b.root->as_uint64(u) && u == UINT64_MAX));
  CHECK(!a.root->as_uint64(u));  // -1
  CHECK((ss::pickle::parse("\x80\x02K\x07."s, "k").root->as_uint64(u) && u == 7));
  CHECK((ss::pickle::parse("\x80\x02\x8a\x0a\x05\x00\x00\x00\x00\x00\x00\x80\x00\x00."s, "padded").root->as_uint64(u) &&
         u == 0x8000000000000005ull));                                                                       // 2^63 + 5, zero-padded
  CHECK(!ss::pickle::parse("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01."s, "2^64").root->as_uint64(u));
  CHECK(!ss::pickle::parse("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\xff."s, "-2^63").root->as_uint64(u));
  CHECK(!ss::pickle::parse("\x80\x02N."s, "none").root->as_uint64(u));
  // Duplicate dict keys: the last one set wins, as in Python.
  const Document d = ss::pickle::parse("\x80\x02}(X\x01\x00\x00\x00kK\x01X\x01\x00\x00\x00kK\x02u."s, "d");
  REQUIRE(d.root->get("k"));
  CHECK(d.root->get("k")->integer == 2);
  // A sparse memo key (LONG_BINPUT 1000); MEMOIZE then stores under len(memo) = 1, as Python
  // does (pickle.loads gives (None, 7)). A key of 2**31 - 1 is one entry too, not a table of
  // 2 billion slots (CPython's unpickler raises MemoryError on it).
  for (const std::string& key : {"\xe8\x03\x00\x00"s, "\xff\xff\xff\x7f"s}) {
    const Document m = ss::pickle::parse("\x80\x04Nr"s + key + "0K\x07\x94" "0j"s + key + "h\x01\x86."s, "m");
    REQUIRE(m.root->items.size() == 2);
    CHECK(m.root->items[0]->kind == Value::Kind::None);
    CHECK(m.root->items[1]->integer == 7);
  }
  // Trailing bytes after STOP are ignored, as pickle.load does.
  CHECK(ss::pickle::parse("\x80\x02N.garbage"s, "t").root->kind == Value::Kind::None);
}
