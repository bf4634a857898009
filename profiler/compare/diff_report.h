// Renders a Comparison as text: an aligned table for people, CSV for spreadsheets and JSON for
// scripts. Shared by `shardscope diff` and the GUI's "copy / export table" actions.
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <string_view>

#include "profiler/compare/comparison.h"

namespace ss::compare {

enum class DiffBy { Module, Kernel, Collective };
enum class DiffFormat { Table, Csv, Json };

std::optional<DiffBy> diff_by_from_string(std::string_view s);
std::optional<DiffFormat> diff_format_from_string(std::string_view s);

struct ReportOptions {
  DiffBy by = DiffBy::Module;
  DiffFormat format = DiffFormat::Table;
  std::size_t top = 0;  // rows of the chosen table to print; 0 = all
};

// The headline comes first in every format: in the table as its own block, in CSV as '#'
// comment lines before the header, in JSON as the "headline" object.
void write_report(std::ostream& out, const Comparison& c, const ReportOptions& options);

}  // namespace ss::compare
