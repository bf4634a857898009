// Reads an exported Chrome-trace JSON (plain or gzipped) and counts what it holds.
#pragma once

#include <simdjson.h>
#include <zlib.h>

#include <map>
#include <string>

#include "tests/support/test_paths.h"

namespace ss::test {

struct PerfettoCounts {
  std::int64_t kernel_events = 0;     // "X" events carrying args.kernel_id
  std::int64_t collective_args = 0;   // ... of which with collective / bytes / sequence args
  std::int64_t with_group = 0;        // ... and a process group
  std::int64_t range_events = 0;      // "X" events carrying args.range_id
  std::int64_t counter_events = 0;    // "C"
  std::int64_t process_names = 0;     // "M" process_name
  std::int64_t thread_names = 0;      // "M" thread_name
  std::map<std::string, std::int64_t> by_cat;
};

inline std::string gunzip_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  gzclose(f);
  return out;
}

inline PerfettoCounts count_perfetto(const std::string& path, bool gz = false) {
  const std::string text = gz ? gunzip_file(path) : read_file(path);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(text);  // throws on invalid JSON
  PerfettoCounts c;
  for (simdjson::dom::object e : doc["traceEvents"].get_array()) {
    const std::string_view ph = e["ph"].get_string();
    if (ph == "M") {
      const std::string_view name = e["name"].get_string();
      if (name == "process_name") ++c.process_names;
      if (name == "thread_name") ++c.thread_names;
    } else if (ph == "C") {
      ++c.counter_events;
    } else if (ph == "X") {
      simdjson::dom::object args;
      if (e["args"].get(args)) continue;
      ++c.by_cat[std::string(e["cat"].get_string().value())];
      if (!args["kernel_id"].error()) {
        ++c.kernel_events;
        if (!args["collective"].error() && !args["bytes"].error() && !args["sequence"].error()) ++c.collective_args;
        if (!args["process_group"].error()) ++c.with_group;
      }
      if (!args["range_id"].error()) ++c.range_events;
    }
  }
  return c;
}

}  // namespace ss::test
