// What an analysis plugin hands back, as plain C++ values the CLI prints and the GUI's Analyses
// dock shows: tables, findings with a place to jump to, timeline markers and counter tracks.
// Qt-free on purpose (the CLI builds without Qt).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "storage/readonly_query.h"  // SqlValue
#include "storage/types.h"

namespace ss::plugins {

// The part of the profile an analysis looks at. Absent bounds mean the profile's whole span; an
// empty rank list means every rank.
struct Selection {
  std::optional<TimeNs> from;
  std::optional<TimeNs> to;
  std::vector<int> ranks;
};

struct ResultTable {
  std::string name;
  std::vector<std::string> columns;
  std::vector<std::vector<SqlValue>> rows;
};

enum class Severity { Info = 0, Warning = 1, Problem = 2 };
const char* to_string(Severity s);

struct Finding {
  Severity severity = Severity::Info;
  std::string message;
  std::optional<std::pair<TimeNs, TimeNs>> range;  // where to jump
  int rank = -1;                                   // -1: no particular rank
};

struct Marker {
  TimeNs start = 0;
  TimeNs end = 0;
  int rank = -1;  // -1: every rank
  std::string label;
};

struct CounterTrack {
  std::string name;
  int rank = -1;
  std::string unit;
  std::vector<std::pair<TimeNs, double>> points;
};

struct AnalysisResult {
  std::string analysis;  // plugin name
  bool ok = false;
  std::string error;     // when !ok: what went wrong (error returned, exception escaped, ...)
  std::vector<ResultTable> tables;
  std::vector<Finding> findings;
  std::vector<Marker> markers;
  std::vector<CounterTrack> counters;
  std::vector<std::string> log;

  const ResultTable* table(const std::string& name) const {
    for (const auto& t : tables)
      if (t.name == name) return &t;
    return nullptr;
  }
};

}  // namespace ss::plugins
