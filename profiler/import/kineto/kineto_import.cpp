// import_kineto: read (inflating .json.gz), parse with simdjson On-Demand, write rows.
#include <filesystem>

#include "profiler/import/common/input_file.h"
#include "profiler/import/import.h"
#include "profiler/import/kineto/kineto_build.h"
#include "profiler/import/kineto/kineto_import.h"
#include "profiler/import/kineto/kineto_parse.h"

namespace ss::import {

void import_kineto(const std::string& path, ImportContext& ctx) {
  if (!ctx.kineto_buffers) ctx.kineto_buffers = std::make_shared<kineto::ReusableBuffers>();
  kineto::ReusableBuffers& buffers = *ctx.kineto_buffers;
  // Progress is in bytes of the file on disk: reading counts as the first half, parsing the second.
  std::uint64_t file_size = 0;
  const bool taken = buffers.take_read_ahead(path);
  // The next files are read and parsed on helper threads from now on, also while this one is
  // still being read here (the first file of several: every core busy from the start).
  buffers.read_ahead();
  kineto::ReusableBuffers::Slot& in = *buffers.current;
  kineto::KinetoTrace trace;
  if (taken) {
    std::error_code ec;
    file_size = std::filesystem::file_size(path, ec);
    if (ec || file_size == 0) file_size = in.json.size() + 1;
    ctx.progress(path, file_size, file_size);  // read and parsed ahead
    trace = std::move(*in.trace);
    in.trace.reset();
  } else {
    read_input_file_into(
        path, in.json,
        [&](std::uint64_t done, std::uint64_t total) {
          file_size = total;
          ctx.progress(path, done / 2, total);
        },
        &in.gz);
    const double json_size = in.json.empty() ? 1.0 : static_cast<double>(in.json.size());
    trace = in.parser->parse(in.json, path, in.gz, [&](std::uint64_t offset) {
      const double half = static_cast<double>(file_size) / 2.0;
      ctx.progress(path, static_cast<std::uint64_t>(half + half * static_cast<double>(offset) / json_size), file_size);
    });
  }
  kineto::write_trace(trace, path, ctx);
  in.parser->recycle(std::move(trace));
}

namespace kineto {

void ReusableBuffers::read_ahead() {
  for (const std::string& path : upcoming) {
    if (in_flight_.size() >= ahead) return;
    bool started = false;
    for (const InFlight& f : in_flight_) started = started || f.path == path;
    if (started) continue;
    std::unique_ptr<Slot> slot;
    if (!spare_.empty()) {
      slot = std::move(spare_.back());  // a finished file's buffers: no allocation
      spare_.pop_back();
    } else {
      slot = std::make_unique<Slot>();
    }
    Slot* s = slot.get();
    // No progress reports off the import's thread; a cancel waits for these parses to end.
    std::future<void> done = std::async(std::launch::async, [s, path] {
      read_input_file_into(path, s->json, {}, &s->gz);
      s->trace = s->parser->parse(s->json, path, s->gz);
    });
    in_flight_.push_back(InFlight{path, std::move(slot), std::move(done)});
  }
}

bool ReusableBuffers::take_read_ahead(const std::string& path) {
  if (in_flight_.empty() || in_flight_.front().path != path) return false;
  InFlight f = std::move(in_flight_.front());
  in_flight_.pop_front();
  f.done.get();  // the read's or parse's ImportError / ProfileError, as on this thread
  spare_.push_back(std::move(current));
  current = std::move(f.slot);
  return true;
}

void import_kineto_bytes(std::string bytes, const std::string& label, ImportContext& ctx) {
  const bool gz = is_gzip(bytes);
  std::string json = inflate_if_gzip(std::move(bytes), label);
  KinetoParser parser;
  KinetoTrace trace = parser.parse(json, label, gz);
  write_trace(trace, label, ctx);
}

}  // namespace kineto
}  // namespace ss::import
