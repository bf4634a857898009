// What a result column's values mean, read from its name, so the CLI and the GUI format analysis
// tables the same way without each plugin describing its columns:
//   *_time_ns, start_ns, end_ns, first_start_ns, last_start_ns, from_ns, to_ns  -> a timestamp
//     (absolute profile ns in the result; shown as time since the profile's start)
//   other *_ns                                                                   -> a duration
//   *_bytes, bytes                                                               -> a size
//   *_pct, *_pct_*                                                               -> a percentage
// Anything else is shown as it is.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/readonly_query.h"  // SqlValue
#include "storage/types.h"

namespace ss::plugins {

enum class ColumnUnit { Plain, Timestamp, Duration, Bytes, Percent };

ColumnUnit column_unit(std::string_view column);

// The column's header as a person reads it: "peak_time_ns" -> "peak time", "idle_ns" -> "idle",
// "peak_bytes" -> "peak", "share_pct" -> "share %"; the unit goes in the cell.
std::string column_title(std::string_view column);

// A cell for reading: durations and timestamps in ns/us/ms/s, sizes in B..GiB, percentages with
// one decimal. `profile_begin` is the time base of timestamps (Profile::time_begin, the ruler's 0).
std::string format_cell(const SqlValue& v, ColumnUnit unit, TimeNs profile_begin);

// The exact value (for tooltips and exports): integers in full, with the unit name.
std::string exact_cell(const SqlValue& v, ColumnUnit unit, TimeNs profile_begin);

}  // namespace ss::plugins
