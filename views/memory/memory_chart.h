// Memory over time, stacked by category (Qt Charts), with the peak marked and the module running
// at the peak named in the title.
#pragma once

#include <QChartView>

#include "storage/profile_model.h"
#include "views/memory/module_memory_stats.h"

namespace ss::memview {

class MemoryChart : public QChartView {
  Q_OBJECT
 public:
  explicit MemoryChart(QWidget* parent = nullptr);
  void set_data(const Profile& profile, const ModuleMemoryStats& stats);
  QString title_text() const;
};

}  // namespace ss::memview
