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
  kineto::ReusableBuffers::Slot& in = buffers.current;
  const bool taken = buffers.take_read_ahead(path);
  // The next file is read and parsed on the helper thread from now on, also while this one is
  // still being read here (the first file of several: both cores busy from the start).
  if (!buffers.upcoming.empty()) buffers.read_ahead(buffers.upcoming);
  if (taken) {
    std::error_code ec;
    file_size = std::filesystem::file_size(path, ec);
    if (ec || file_size == 0) file_size = in.json.size() + 1;
    ctx.progress(path, file_size, file_size);  // read and parsed ahead
  } else {
    read_input_file_into(
        path, in.json,
        [&](std::uint64_t done, std::uint64_t total) {
          file_size = total;
          ctx.progress(path, done / 2, total);
        },
        &in.gz);
  }
  kineto::KinetoTrace trace;
  if (in.trace) {
    trace = std::move(*in.trace);
    in.trace.reset();
  } else {
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

void ReusableBuffers::read_ahead(const std::string& path) {
  if (next_read_.valid()) return;  // one read in flight at a time
  next_path_ = path;
  next_read_ = std::async(std::launch::async, [this, path] {
    read_input_file_into(path, next_.json, {}, &next_.gz);
    next_.trace = next_.parser->parse(next_.json, path, next_.gz);  // no progress reports off the import's thread
  });
}

bool ReusableBuffers::take_read_ahead(const std::string& path) {
  if (!next_read_.valid() || next_path_ != path) return false;
  std::future<void> read = std::move(next_read_);
  read.get();  // the read's ImportError / ProfileError, as a read on this thread would throw it
  std::swap(current, next_);  // the finished file's buffers become the next read's: no allocation
  return true;
}

ParsedKineto read_and_parse(const std::string& path) {
  bool gz = false;
  ParsedKineto out;
  out.json = std::make_unique<std::string>(read_input_file(path, {}, &gz));
  out.parser = std::make_unique<KinetoParser>();
  out.trace = out.parser->parse(*out.json, path, gz);
  return out;
}

void write_parsed(const ParsedKineto& parsed, const std::string& path, ImportContext& ctx) {
  write_trace(parsed.trace, path, ctx);
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
