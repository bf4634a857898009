// Kineto import from bytes already in memory (fuzzing, tests); import_kineto (import.h) reads a file.
#pragma once

#include "profiler/import/kineto/kineto_parse.h"
#include "profiler/import/kineto/kineto_trace.h"

#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "profiler/import/import.h"

namespace ss::import::kineto {

// `bytes` may be gzip-compressed; `label` names the input in error messages.
void import_kineto_bytes(std::string bytes, const std::string& label, ImportContext& ctx);

// What import_kineto keeps from one input to the next (ImportContext::kineto_buffers): the JSON
// text's buffer and the parser with its index and event records. Allocating them afresh for each
// of several rank files cost ~10% of the import in page faults, so a few sets ("slots") are
// reused. While one file is attributed and its rows handed to the writer thread, the next
// `ahead` files are read and parsed on helper threads, each into a slot of its own: with the
// writer's thread a three-stage pipeline (one file ahead on 2 cores, more with more cores;
// import_files decides, docs/benchmarks.md).
struct ReusableBuffers {
  struct Slot {
    std::string json;
    std::unique_ptr<KinetoParser> parser = std::make_unique<KinetoParser>();
    bool gz = false;
    std::optional<KinetoTrace> trace;  // parsed ahead; its names point into `json` and the parser
  };
  std::unique_ptr<Slot> current = std::make_unique<Slot>();  // the file being imported

  std::size_t ahead = 1;              // files read and parsed ahead at most
  std::vector<std::string> upcoming;  // the Kineto inputs after the current one, in order (import_files)
  // Starts reading and parsing the first `ahead` of `upcoming` that are not in flight yet.
  void read_ahead();
  // True when `path` is the oldest file in flight: it is then `current`, parsed (the previous
  // current slot is kept for a later file). Rethrows the read's or the parse's error.
  bool take_read_ahead(const std::string& path);

 private:
  struct InFlight {
    std::string path;
    std::unique_ptr<Slot> slot;
    std::future<void> done;  // declared after the slot it fills: joined before the slot is freed
  };
  std::vector<std::unique_ptr<Slot>> spare_;
  std::deque<InFlight> in_flight_;  // declared last: joined before the spare slots are freed
};

}  // namespace ss::import::kineto
