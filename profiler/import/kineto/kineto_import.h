// Kineto import from bytes already in memory (fuzzing, tests); import_kineto (import.h) reads a file.
#pragma once

#include "profiler/import/kineto/kineto_parse.h"
#include "profiler/import/kineto/kineto_trace.h"

#include <future>
#include <memory>
#include <optional>

#include <string>

#include "profiler/import/import.h"

namespace ss::import::kineto {

// `bytes` may be gzip-compressed; `label` names the input in error messages.
void import_kineto_bytes(std::string bytes, const std::string& label, ImportContext& ctx);

// A file read and parsed, not yet written: several rank files of one job are read and parsed on
// worker threads while the profile is written in input order (import_files). The trace's names
// point into `json` and into the parser's string buffer, so all three travel together.
struct ParsedKineto {
  std::unique_ptr<std::string> json;
  std::unique_ptr<KinetoParser> parser;
  KinetoTrace trace;
};
ParsedKineto read_and_parse(const std::string& path);

// What import_kineto keeps from one input to the next (ImportContext::kineto_buffers): the JSON
// text's buffer and the parser with its index and event records. Allocating them afresh for each
// of several rank files cost ~10% of the import in page faults. Two sets alternate: while one
// file is attributed and its rows handed to the writer, the next one is read and parsed on a
// helper thread. With the writer's thread that is a three-stage pipeline whose stages take
// about the same time per file (docs/benchmarks.md), so two cores are kept busy.
struct ReusableBuffers {
  struct Slot {
    std::string json;
    std::unique_ptr<KinetoParser> parser = std::make_unique<KinetoParser>();
    bool gz = false;
    std::optional<KinetoTrace> trace;  // parsed ahead; its names point into `json` and the parser
  };
  Slot current;

  std::string upcoming;  // the caller names the input that comes next; import_kineto reads it ahead
  void read_ahead(const std::string& path);
  // True when `path` was read ahead: it is then in `current` (swapped in), parsed. Rethrows the
  // read's or the parse's error.
  bool take_read_ahead(const std::string& path);

 private:
  Slot next_;
  std::string next_path_;
  std::future<void> next_read_;  // declared last: joined before the slot it fills is freed
};
 // no progress reports (any thread)
void write_parsed(const ParsedKineto& parsed, const std::string& path, ImportContext& ctx);

}  // namespace ss::import::kineto
