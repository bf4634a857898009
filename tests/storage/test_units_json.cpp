// Sizes, durations and JSON output (escaping and invalid UTF-8 must still parse).
#include <catch2/catch.hpp>

#include <simdjson.h>

#include <sstream>

#include "storage/json_writer.h"
#include "storage/units.h"

using namespace ss;

TEST_CASE("parse_bytes understands SI and binary units", "[storage][units]") {
  CHECK(parse_bytes("70GiB") == 70LL * 1024 * 1024 * 1024);
  CHECK(parse_bytes("70 GiB") == 70LL * 1024 * 1024 * 1024);
  CHECK(parse_bytes("1.5GB") == 1'500'000'000LL);
  CHECK(parse_bytes("512MiB") == 512LL * 1024 * 1024);
  CHECK(parse_bytes("4096") == 4096);
  CHECK(parse_bytes("2e3") == 2000);
  CHECK_FALSE(parse_bytes("seventy").has_value());
  CHECK_FALSE(parse_bytes("70 parsecs").has_value());
  CHECK_FALSE(parse_bytes("-5GiB").has_value());
  CHECK_FALSE(parse_bytes("").has_value());
  CHECK_FALSE(parse_bytes("1e30").has_value());
}

TEST_CASE("durations and sizes format readably", "[storage][units]") {
  CHECK(format_duration_ns(812) == "812 ns");
  CHECK(format_duration_ns(12'400) == "12.4 us");
  CHECK(format_duration_ns(3'210'000) == "3.210 ms");
  CHECK(format_duration_ns(1'500'000'000) == "1.500 s");
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(70LL * 1024 * 1024 * 1024) == "70 GiB");
}

TEST_CASE("JSON writer output parses, with escapes and invalid UTF-8 replaced", "[storage][json]") {
  std::ostringstream out;
  JsonWriter j(out);
  const std::string nasty = std::string("quote\" back\\ nl\n tab\t ctrl\x01 ok-utf8 \xc3\xa9 bad \xff\xfe end");
  j.begin_object()
      .kv("s", nasty)
      .kv("i", static_cast<std::int64_t>(-42))
      .kv("d", 0.25)
      .kv("inf", 1.0 / 0.0)
      .kv("b", true);
  j.key("a").begin_array().value(1).value("x").null().end_array();
  j.key("empty").begin_object().end_object();
  j.key("raw").raw(R"({"k": [1, 2]})");
  j.end_object();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(parser.parse(out.str()).get(doc) == simdjson::SUCCESS);
  std::string_view s;
  REQUIRE(doc["s"].get(s) == simdjson::SUCCESS);
  CHECK(s == "quote\" back\\ nl\n tab\t ctrl\x01 ok-utf8 \xc3\xa9 bad \xef\xbf\xbd\xef\xbf\xbd end");
  CHECK(int64_t(doc["i"]) == -42);
  CHECK(double(doc["d"]) == 0.25);
  CHECK(doc["inf"].is_null());
  CHECK(bool(doc["b"]));
  CHECK(doc["a"].get_array().size() == 3);
  CHECK(int64_t(doc["raw"]["k"].at(1)) == 2);
}

TEST_CASE("parse_duration_ns reads ns and time units", "[storage][units]") {
  CHECK(parse_duration_ns("1500") == 1500);
  CHECK(parse_duration_ns("12.5ms") == 12'500'000);
  CHECK(parse_duration_ns("300 us") == 300'000);
  CHECK(parse_duration_ns("2s") == 2'000'000'000);
  CHECK(parse_duration_ns("7ns") == 7);
  CHECK_FALSE(parse_duration_ns("-1ms").has_value());
  CHECK_FALSE(parse_duration_ns("5 parsecs").has_value());
  CHECK_FALSE(parse_duration_ns("").has_value());
  CHECK_FALSE(parse_duration_ns("1e30s").has_value());
}
