#include "views/memory/memory_chart.h"

#include <QAreaSeries>
#include <QChart>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>

#include "views/memory/module_tree_model.h"

namespace ss::memview {

MemoryChart::MemoryChart(QWidget* parent) : QChartView(parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumHeight(220);
  chart()->setTitle("Memory over time");
}

QString MemoryChart::title_text() const { return chart()->title(); }

void MemoryChart::set_data(const Profile& profile, const ModuleMemoryStats& stats) {
  auto* c = new QChart();
  const MemorySeries& s = stats.series;
  const double gib = 1024.0 * 1024 * 1024;
  const double t0 = static_cast<double>(profile.time_begin);
  auto* ax = new QValueAxis();
  ax->setTitleText("time (ms)");
  auto* ay = new QValueAxis();
  ay->setTitleText("allocated (GiB)");
  c->addAxis(ax, Qt::AlignBottom);
  c->addAxis(ay, Qt::AlignLeft);
  // Follow the application's palette (dark or light).
  if (palette().color(QPalette::Window).lightness() < 128) c->setTheme(QChart::ChartThemeDark);
  if (s.times.empty()) {
    c->setTitle(QString("Rank %1: the profile has no memory events").arg(stats.rank));
    setChart(c);
    return;
  }
  std::vector<double> below(s.times.size(), 0.0);
  double top = 0;
  for (int cat = 0; cat < kMemoryCategoryCount; ++cat) {
    if (!s.present[static_cast<std::size_t>(cat)]) continue;
    auto* lower = new QLineSeries();
    auto* upper = new QLineSeries();
    const auto& values = s.by_category[static_cast<std::size_t>(cat)];
    for (std::size_t i = 0; i < s.times.size(); ++i) {
      const double x = (static_cast<double>(s.times[i]) - t0) / 1e6;
      lower->append(x, below[i]);
      below[i] += static_cast<double>(values[i]) / gib;
      upper->append(x, below[i]);
      top = std::max(top, below[i]);
    }
    auto* area = new QAreaSeries(upper, lower);
    area->setName(QString::fromStdString(std::string(to_string(static_cast<MemoryCategory>(cat)))));
    area->setPen(Qt::NoPen);
    c->addSeries(area);
    area->attachAxis(ax);
    area->attachAxis(ay);
  }
  auto* peak = new QScatterSeries();
  peak->setName("peak");
  peak->setMarkerSize(10);
  peak->setColor(Qt::red);
  peak->append((static_cast<double>(s.peak_time) - t0) / 1e6, static_cast<double>(s.peak_bytes) / gib);
  c->addSeries(peak);
  peak->attachAxis(ax);
  peak->attachAxis(ay);
  ax->setRange(0, (static_cast<double>(profile.time_end) - t0) / 1e6);
  ay->setRange(0, std::max(top, static_cast<double>(s.peak_bytes) / gib) * 1.1 + 1e-9);
  QString module = s.peak_module >= 0 ? QString::fromStdString(profile.modules[static_cast<std::size_t>(s.peak_module)].fqn) : QString("no module");
  if (module.isEmpty()) module = "(root)";
  c->setTitle(QString("Rank %1: peak %2 at %3 ms in %4")
                  .arg(stats.rank)
                  .arg(format_bytes(s.peak_bytes))
                  .arg((static_cast<double>(s.peak_time) - t0) / 1e6, 0, 'f', 3)
                  .arg(module));
  c->legend()->setAlignment(Qt::AlignBottom);
  setChart(c);
}

}  // namespace ss::memview
