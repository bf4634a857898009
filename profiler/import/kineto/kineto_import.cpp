// import_kineto: read (inflating .json.gz), parse with simdjson On-Demand, write rows.
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
  bool gz = false;
  std::uint64_t file_size = 0;
  std::string& json = buffers.json;
  read_input_file_into(
      path, json,
      [&](std::uint64_t done, std::uint64_t total) {
        file_size = total;
        ctx.progress(path, done / 2, total);
      },
      &gz);
  const double json_size = json.empty() ? 1.0 : static_cast<double>(json.size());
  kineto::KinetoTrace trace = buffers.parser.parse(json, path, gz, [&](std::uint64_t offset) {
    const double half = static_cast<double>(file_size) / 2.0;
    ctx.progress(path, static_cast<std::uint64_t>(half + half * static_cast<double>(offset) / json_size), file_size);
  });
  kineto::write_trace(trace, path, ctx);
  buffers.parser.recycle(std::move(trace));
}

namespace kineto {

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
