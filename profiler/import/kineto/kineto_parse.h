// Streams one Kineto JSON document (already inflated, padded) through simdjson's On-Demand API
// into a KinetoTrace: no DOM of the whole file is built; each event becomes one RawEvent.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "profiler/import/kineto/kineto_trace.h"

namespace ss::import::kineto {

class KinetoParser {
 public:
  KinetoParser();
  ~KinetoParser();
  KinetoParser(const KinetoParser&) = delete;
  KinetoParser& operator=(const KinetoParser&) = delete;

  // `json.capacity()` must exceed json.size() by kInputPadding (read_input_file does this).
  // Throws ImportError naming `label` and the byte offset of the problem. The returned trace's
  // string views stay valid until the next parse() or the parser's destruction.
  // `inflated`: the bytes came out of gzip (offsets then count inflated bytes).
  KinetoTrace parse(const std::string& json, const std::string& label, bool inflated,
                    const std::function<void(std::uint64_t done)>& progress = {});

  // Hands a trace that is no longer needed back, so that the next parse() reuses its event
  // records' allocation.
  void recycle(KinetoTrace&& trace);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Exact conversion of a JSON number token in microseconds ("4458676522690.655", "12", "1.5e3")
// to integer nanoseconds. Returns false for anything that is not a finite number in range.
bool parse_us_token_to_ns(std::string_view token, std::int64_t& ns);

}  // namespace ss::import::kineto
