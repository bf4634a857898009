// Exports a profile for other tools: Chrome-trace JSON that ui.perfetto.dev and chrome://tracing
// open, and CSV (one file per table). Outputs appear only when complete (atomic rename).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ss::exporting {

struct PerfettoStats {
  std::int64_t kernel_events = 0;
  std::int64_t range_events = 0;
  std::int64_t counter_events = 0;
  std::int64_t step_events = 0;
};

// One process per rank (process_name metadata), a thread per stream, a thread per CPU range lane
// and per GPU annotation lane, module ranges, collectives with their args (type, bytes, group,
// sequence), a "GPU memory allocated" counter track. `out` ending in .gz is gzip-compressed.
PerfettoStats export_perfetto(const std::string& profile, const std::string& out);

// Writes DIR/<table>.csv for every table of the profile schema: a header row, then RFC 4180
// records (fields with comma, quote, CR or LF are quoted, quotes doubled; NULL is empty).
// Returns the files written.
std::vector<std::string> export_csv(const std::string& profile, const std::string& dir);

// RFC 4180 quoting of one field.
std::string csv_field(std::string_view s);

}  // namespace ss::exporting
