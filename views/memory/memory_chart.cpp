#include "views/memory/memory_chart.h"

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QGraphicsLineItem>
#include <QLabel>
#include <QLineSeries>
#include <QMouseEvent>
#include <QScatterSeries>
#include <QValueAxis>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "storage/units.h"
#include "views/memory/module_tree_model.h"

namespace ss::memview {

namespace {

// One colour per category, the same in every chart (the legend and the readout use them too).
QColor category_color(int category) {
  switch (static_cast<MemoryCategory>(category)) {
    case MemoryCategory::ShardedParameter: return QColor(66, 133, 244);
    case MemoryCategory::UnshardedParameter: return QColor(138, 180, 248);
    case MemoryCategory::Gradient: return QColor(251, 140, 0);
    case MemoryCategory::OptimizerState: return QColor(171, 71, 188);
    case MemoryCategory::Activation: return QColor(67, 160, 71);
    case MemoryCategory::AllGatherBuffer: return QColor(0, 172, 193);
    case MemoryCategory::ReduceScatterBuffer: return QColor(141, 110, 99);
    case MemoryCategory::Temporary: return QColor(158, 158, 158);
    case MemoryCategory::Unknown: break;
  }
  return QColor(97, 97, 97);
}

// The chart view with its mouse input handed to the MemoryChart (hover line, click to time).
class Canvas : public QChartView {
 public:
  std::function<void(QPoint)> on_move, on_click;
  std::function<void()> on_leave;

 protected:
  void mouseMoveEvent(QMouseEvent* e) override {
    if (on_move) on_move(e->position().toPoint());
    QChartView::mouseMoveEvent(e);
  }
  void mousePressEvent(QMouseEvent* e) override {
    if (e->button() == Qt::LeftButton && on_click) on_click(e->position().toPoint());
    QChartView::mousePressEvent(e);
  }
  void leaveEvent(QEvent* e) override {
    if (on_leave) on_leave();
    QChartView::leaveEvent(e);
  }
};

// A time since the profile's start, by the project's unit rules ("87.4 ms", "1.371 s").
QString since_text(TimeNs t, TimeNs begin) { return QString::fromStdString(format_duration_ns(t - begin)); }

}  // namespace

MemoryChart::MemoryChart(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  readout_ = new QLabel;
  readout_->setTextFormat(Qt::RichText);
  readout_->setWordWrap(true);
  readout_->setMinimumHeight(3 * fontMetrics().height());
  readout_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  auto* canvas = new Canvas;
  canvas->setRenderHint(QPainter::Antialiasing);
  canvas->setMouseTracking(true);
  canvas->viewport()->setMouseTracking(true);
  canvas->setMinimumHeight(200);
  canvas->on_move = [this](QPoint p) { mouse_moved(p); };
  canvas->on_leave = [this] { mouse_left(); };
  canvas->on_click = [this](QPoint p) {
    if (const auto t = time_at(p)) emit timeClicked(*t);
  };
  view_ = canvas;
  legend_ = new QLabel;
  legend_->setTextFormat(Qt::RichText);
  legend_->setWordWrap(true);
  layout->addWidget(readout_);
  layout->addWidget(view_, 1);
  layout->addWidget(legend_);
  cursor_ = new QGraphicsLineItem;
  cursor_->setZValue(1000);
  cursor_->hide();
  view_->scene()->addItem(cursor_);
  clear(QStringLiteral("Memory over time"));
}

namespace {
QChart* themed_chart(const QWidget* w) {
  auto* c = new QChart();
  // Follow the application's palette (dark or light).
  if (w->palette().color(QPalette::Window).lightness() < 128) c->setTheme(QChart::ChartThemeDark);
  c->legend()->hide();  // the legend is a label under the chart: it wraps instead of eliding
  c->setMargins(QMargins(4, 4, 8, 4));
  return c;
}
}  // namespace

void MemoryChart::clear(const QString& message) {
  has_data_ = false;
  series_ = {};
  shown_ = {};
  events_.reset();
  areas_.clear();
  module_series_.clear();
  band_upper_ = nullptr;
  module_fqn_.clear();
  module_ = {};
  legend_names_.clear();
  auto* c = themed_chart(this);
  c->setTitle(message);
  ax_ = ay_ = nullptr;
  QChart* old = view_->chart();
  view_->setChart(c);
  delete old;
  cursor_->hide();
  readout_->clear();
  legend_->clear();
  legend_html_.clear();
}

void MemoryChart::changeEvent(QEvent* e) {
  QWidget::changeEvent(e);
  if (e->type() == QEvent::PaletteChange && !has_data_ && !ax_) clear(view_->chart()->title());
}

QString MemoryChart::title_text() const { return view_->chart()->title(); }
QString MemoryChart::readout_text() const { return readout_->text(); }
QStringList MemoryChart::legend_names() const { return legend_names_; }

void MemoryChart::set_ticks(QValueAxis* axis, double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const Ticks t = nice_ticks(lo, hi, target);
  // Qt Charts lays out one item per tick at every change, so the range and the step must never
  // be out of step: the new range with the old step of a deep zoom is millions of ticks (seconds
  // to minutes frozen, and gigabytes, after Ctrl+0). The step grows only with the range, so a
  // growing step goes first and a shrinking one after the range: never more ticks than before.
  if (t.step >= axis->tickInterval()) {
    axis->setTickInterval(t.step);
    axis->setRange(lo, hi);
  } else {
    axis->setRange(lo, hi);
    axis->setTickInterval(t.step);
  }
  axis->setTickType(QValueAxis::TicksDynamic);
  axis->setTickAnchor(0);
  axis->setMinorTickCount(0);
  axis->setLabelFormat(QStringLiteral("%.%1f").arg(t.decimals));
}

void MemoryChart::set_data(const Profile& profile, const ModuleMemoryStats& stats) {
  clear(QString());
  QChart* c = view_->chart();
  series_ = stats.series;
  shown_ = series_;
  events_ = stats.events;
  const MemorySeries& s = series_;
  t_begin_ = profile.time_begin;
  t_end_ = profile.time_end;
  ax_ = new QValueAxis();
  ay_ = new QValueAxis();
  c->addAxis(ax_, Qt::AlignBottom);
  c->addAxis(ay_, Qt::AlignLeft);
  // The time axis counts ms, or s from 10 s up (a 400 s profile reads 0..400, not 0..400000).
  const TimeNs span = std::max(t_end_, s.times.empty() ? t_end_ : s.times.back()) - t_begin_;
  x_unit_ = span >= 10'000'000'000 ? XUnit{1e9, "s"} : XUnit{1e6, "ms"};
  ax_->setTitleText(QStringLiteral("time since profile start (%1)").arg(QLatin1String(x_unit_.name)));
  const double span_x = x_of(t_begin_ + span);
  if (s.times.empty()) {
    unit_ = byte_unit_for(0);
    ay_->setTitleText(QStringLiteral("memory (%1)").arg(unit_.name));
    set_ticks(ax_, 0, span_x, 8);
    set_ticks(ay_, 0, 1, 4);
    c->setTitle(QStringLiteral("Rank %1: the profile has no memory events").arg(stats.rank));
    readout_->setText(QStringLiteral("No memory events on this rank"));
    return;
  }
  std::int64_t top_bytes = s.peak_bytes;
  for (std::size_t i = 0; i < s.times.size(); ++i) {
    std::int64_t sum = 0;
    for (const auto& cat : s.by_category) sum += cat[i];
    top_bytes = std::max(top_bytes, sum);
  }
  unit_ = byte_unit_for(top_bytes);
  ay_->setTitleText(QStringLiteral("memory (%1)").arg(unit_.name));
  std::vector<double> below(s.times.size(), 0.0);
  QString legend;
  for (int cat = 0; cat < kMemoryCategoryCount; ++cat) {
    if (!s.present[static_cast<std::size_t>(cat)]) continue;
    auto* lower = new QLineSeries();
    auto* upper = new QLineSeries();
    const auto& values = s.by_category[static_cast<std::size_t>(cat)];
    for (std::size_t i = 0; i < s.times.size(); ++i) {
      const double x = x_of(s.times[i]);
      lower->append(x, below[i]);
      below[i] += static_cast<double>(values[i]) / unit_.bytes;
      upper->append(x, below[i]);
    }
    areas_.push_back({cat, {upper, lower}});
    auto* area = new QAreaSeries(upper, lower);
    const QString name = QString::fromUtf8(category_label(static_cast<MemoryCategory>(cat)));
    area->setName(name);
    area->setPen(Qt::NoPen);
    area->setBrush(category_color(cat));
    c->addSeries(area);
    area->attachAxis(ax_);
    area->attachAxis(ay_);
    legend_names_ << name;
    legend += QStringLiteral("<span style='color:%1'>&#9632;</span>&nbsp;%2&nbsp;&nbsp; ").arg(category_color(cat).name(), name.toHtmlEscaped().replace(QLatin1Char(' '), QStringLiteral("&nbsp;")).replace(QLatin1Char('-'), QStringLiteral("&#8209;")));
  }
  auto* peak = new QScatterSeries();
  peak->setName(QStringLiteral("Peak"));
  peak->setMarkerSize(10);
  peak->setColor(Qt::red);
  peak->append(x_of(s.peak_time), static_cast<double>(s.peak_bytes) / unit_.bytes);
  c->addSeries(peak);
  peak->attachAxis(ax_);
  peak->attachAxis(ay_);
  legend += QStringLiteral("<span style='color:red'>&#9679;</span>&nbsp;Peak");
  legend_html_ = legend;
  legend_->setText(legend);
  set_ticks(ax_, 0, span_x, 8);
  y_top_ = nice_ceiling(static_cast<double>(top_bytes) / unit_.bytes * 1.05);
  set_ticks(ay_, 0, y_top_, 6);
  QString module = s.peak_module >= 0 ? QString::fromStdString(profile.modules[static_cast<std::size_t>(s.peak_module)].fqn)
                                      : QStringLiteral("no module range");
  if (s.peak_module >= 0 && module.isEmpty()) module = QStringLiteral("(root)");
  c->setTitle(QStringLiteral("Rank %1: peak %2 at %3 in %4").arg(stats.rank).arg(format_bytes(s.peak_bytes), since_text(s.peak_time, t_begin_), module));
  readout_->setText(QStringLiteral("Hover the chart for the memory at a time; click to move the timeline there"));
  has_data_ = true;
}

void MemoryChart::set_time_range(TimeNs t0, TimeNs t1) {
  if (!ax_ || t1 <= t0) return;
  if (has_data_) {
    const TimeNs full = std::max<TimeNs>(1, (series_.times.empty() ? t_end_ : std::max(t_end_, series_.times.back())) - t_begin_);
    if (events_ && (t1 - t0) * 2 < full)
      show_series(sample_window(*events_, t0, t1));
    else if (shown_.times.size() != series_.times.size() || shown_.times != series_.times)
      show_series(series_);
  }
  set_ticks(ax_, x_of(t0), x_of(t1), 8);
  update_bands();
  cursor_->hide();
}

void MemoryChart::update_bands() {
  if (!band_upper_ || !ax_) return;
  // The bands of the window the axis shows, merged below a pixel.
  const TimeNs t0 = time_of_x(ax_->min()), t1 = time_of_x(ax_->max()) + 1;
  const double width_px = std::max(200.0, view_->chart()->plotArea().width());
  QList<QPointF> points;
  for (const auto& [s, e] : visible_runs(module_.running, t0, t1, static_cast<double>(t1 - t0) / width_px)) {
    const double x0 = x_of(s), x1 = x_of(e);
    points << QPointF(x0, 0) << QPointF(x0, y_top_) << QPointF(x1, y_top_) << QPointF(x1, 0);
  }
  band_upper_->replace(points);
}

void MemoryChart::show_series(const MemorySeries& s) {
  shown_ = s;
  std::vector<double> below(s.times.size(), 0.0);
  for (auto& [cat, lines] : areas_) {
    QList<QPointF> upper, lower;
    upper.reserve(static_cast<qsizetype>(s.times.size()));
    lower.reserve(static_cast<qsizetype>(s.times.size()));
    const auto& values = s.by_category[static_cast<std::size_t>(cat)];
    for (std::size_t i = 0; i < s.times.size(); ++i) {
      const double x = x_of(s.times[i]);
      lower.append(QPointF(x, below[i]));
      below[i] += static_cast<double>(values[i]) / unit_.bytes;
      upper.append(QPointF(x, below[i]));
    }
    lines.first->replace(upper);
    lines.second->replace(lower);
  }
}

void MemoryChart::set_module(const QString& fqn, const ModuleSeries& m) {
  QChart* c = view_->chart();
  for (QAbstractSeries* s : module_series_) {
    c->removeSeries(s);
    delete s;
  }
  module_series_.clear();
  band_upper_ = nullptr;
  module_fqn_.clear();
  module_ = {};
  legend_->setText(legend_html_);
  if (!has_data_ || m.module < 0) return;
  module_fqn_ = fqn;
  module_ = m;
  const QColor accent = palette().color(QPalette::Window).lightness() < 128 ? QColor(255, 235, 59) : QColor(216, 27, 96);
  // When the module runs: translucent bands over the whole height (for the window shown: see
  // update_bands).
  if (!m.running.empty()) {
    band_upper_ = new QLineSeries();
    update_bands();
    auto* band = new QAreaSeries(band_upper_);
    band->setName(fqn + QStringLiteral(" running"));
    QColor fill = accent;
    fill.setAlpha(45);
    band->setBrush(fill);
    band->setPen(Qt::NoPen);
    module_series_.push_back(band);
  }
  // The bytes attributed to the module (and its children).
  if (!m.times.empty()) {
    auto* line = new QLineSeries();
    line->setName(fqn);
    for (std::size_t i = 0; i < m.times.size(); ++i) line->append(x_of(m.times[i]), static_cast<double>(m.bytes[i]) / unit_.bytes);
    QPen pen(accent);
    pen.setWidthF(2);
    line->setPen(pen);
    module_series_.push_back(line);
  }
  // The module's two entries go in the readout line above the chart, not the legend: a third
  // legend line would be drawn over the time axis' title.
  legend_->setText(legend_html_);
  for (QAbstractSeries* s : module_series_) {
    c->addSeries(s);
    s->attachAxis(ax_);
    s->attachAxis(ay_);
  }
  readout_->setText(QStringLiteral("<span style='color:%6'>&#9473;</span> <b>%1</b>: peak %2 attributed at %3; "
                                   "<span style='color:%6'>&#9646;</span> running %4 time%5 on this rank")
                        .arg(fqn.toHtmlEscaped(), format_bytes(m.peak_bytes), since_text(m.peak_time, t_begin_))
                        .arg(m.running.size())
                        .arg(m.running.size() == 1 ? "" : "s")
                        .arg(accent.name()));
}

std::optional<TimeNs> MemoryChart::time_at(QPoint pos) const {
  if (!ax_) return std::nullopt;
  const QChart* c = view_->chart();
  const QPointF at = c->mapFromScene(view_->mapToScene(pos));
  const QRectF plot = c->plotArea();
  if (!plot.contains(at) || plot.width() <= 0) return std::nullopt;
  return time_of_x(ax_->min() + (at.x() - plot.left()) / plot.width() * (ax_->max() - ax_->min()));
}

QPoint MemoryChart::point_of(TimeNs t) const {
  if (!ax_) return {};
  const QChart* c = view_->chart();
  const QRectF plot = c->plotArea();
  const double x = plot.left() + (x_of(t) - ax_->min()) / (ax_->max() - ax_->min()) * plot.width();
  return view_->mapFromScene(c->mapToScene(QPointF(x, plot.center().y())));
}

void MemoryChart::hover_time(TimeNs t) {
  if (!has_data_) return;
  const MemoryReadout r = readout_at(shown_, t);
  QString text = QStringLiteral("<b>%1</b>").arg(since_text(t, t_begin_));
  if (!r.valid) {
    readout_->setText(text + QStringLiteral(": before the first memory event"));
  } else {
    text += QStringLiteral(" &nbsp;total <b>%1</b>").arg(format_bytes(r.total));
    for (int cat = kMemoryCategoryCount - 1; cat >= 0; --cat)  // top of the stack first
      if (series_.present[static_cast<std::size_t>(cat)] && r.by_category[static_cast<std::size_t>(cat)] != 0)
        text += QStringLiteral(" &nbsp;<span style='color:%1'>&#9632;</span> %2 %3")
                    .arg(category_color(cat).name(), QString::fromUtf8(category_label(static_cast<MemoryCategory>(cat))),
                         format_bytes(r.by_category[static_cast<std::size_t>(cat)]));
    const auto it = std::upper_bound(module_.times.begin(), module_.times.end(), t);
    if (it != module_.times.begin())
      text += QStringLiteral(" &nbsp;| <b>%1</b> %2").arg(module_fqn_.toHtmlEscaped(), format_bytes(module_.bytes[static_cast<std::size_t>(it - module_.times.begin() - 1)]));
    readout_->setText(text);
  }
  // The vertical line at t.
  QChart* c = view_->chart();
  const QRectF plot = c->plotArea();
  const double at = x_of(t);
  if (at < ax_->min() || at > ax_->max() || plot.width() <= 0) {
    cursor_->hide();
    return;
  }
  const double x = plot.left() + (at - ax_->min()) / (ax_->max() - ax_->min()) * plot.width();
  cursor_->setLine(QLineF(c->mapToScene(QPointF(x, plot.top())), c->mapToScene(QPointF(x, plot.bottom()))));
  cursor_->setPen(QPen(palette().color(QPalette::WindowText), 1, Qt::DashLine));
  cursor_->show();
}

void MemoryChart::mouse_moved(QPoint pos) {
  if (const auto t = time_at(pos)) hover_time(*t);
}

void MemoryChart::mouse_left() { cursor_->hide(); }

}  // namespace ss::memview
