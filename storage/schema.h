// The profile schema, version 1: one definition used to create files and to validate them.
// docs/profile-format.md documents every table and column; keep the two in step.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ss::schema {

inline constexpr int kVersion = 1;
inline constexpr std::string_view kFormatName = "shardscope-profile";
// PRAGMA application_id: "SSDP" in ASCII, so `file` and our reader can recognise a profile.
inline constexpr int kApplicationId = 0x53534450;

struct Column {
  std::string_view name;
  std::string_view decl;  // SQL type and constraints
  // Added to its table after the table shipped: files written before it lack the column, which
  // then reads as NULL (readers check for it), so old profiles stay valid without a version bump.
  bool optional = false;
};

struct Table {
  std::string_view name;
  std::vector<Column> columns;
  std::string_view suffix = {};  // e.g. " WITHOUT ROWID" or a table constraint
  // Added after version 1 shipped: files written before it lack the table and read as if it were
  // empty, so old profiles stay readable without a version bump (older readers ignore it).
  bool optional = false;
};

const std::vector<Table>& tables();
// Convenience views (names joined in, end times computed); not required when reading.
const std::vector<std::pair<std::string_view, std::string_view>>& views();

std::string create_table_sql(const Table& t);

}  // namespace ss::schema
