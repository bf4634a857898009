#include "views/compare/compare_view.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>

#include "storage/errors.h"
#include "storage/profile_reader.h"
#include "views/compare/compare_filter_proxy.h"
#include "views/compare/compare_table_model.h"
#include "views/compare/lane_folding.h"
#include "views/compare/sort_arrow_header.h"
#include "views/timeline/timeline_widget.h"

namespace ss::compareview {

namespace {

QString measure(const char* what, const compare::Measure& m) {
  const auto e = m.error_pct();
  return QStringLiteral("%1: A %2 ms, B %3 ms (%4%5)")
      .arg(what)
      .arg(static_cast<double>(m.a) / 1e6, 0, 'f', 3)
      .arg(static_cast<double>(m.b) / 1e6, 0, 'f', 3)
      .arg(e ? QString::number(*e, 'f', 2) : QStringLiteral("n/a"))
      .arg(e ? QStringLiteral(" %") : QString());
}

QString window_text(const compare::Window& w) {
  return w.step ? QStringLiteral("rank %1, step %2").arg(w.rank).arg(*w.step) : QStringLiteral("rank %1, whole span").arg(w.rank);
}

// The end of the module range (of that phase, on that rank) that covers `t`: where a table row
// click should zoom to. nullopt when the rank has no such range.
std::optional<TimeNs> module_range_end(const Profile& p, int rank, const std::string& fqn, RangePhase phase, TimeNs t) {
  const std::int32_t module = p.find_module(fqn);
  const RankModel* r = p.rank(rank);
  if (module < 0 || !r) return std::nullopt;
  std::optional<TimeNs> end;
  for (std::int32_t ti : r->range_tracks) {
    const RangeTrack& track = p.range_tracks[static_cast<std::size_t>(ti)];
    for_each_in_window(track.events, track.max_duration, t, t, [&](const RangeEvent& e) {
      if (e.kind == RangeKind::Module && e.module == module && e.phase == phase && e.start <= t) end = std::max(end.value_or(e.end), e.end);
    });
  }
  return end;
}

// One step box: "auto" (the default rule: first step on both sides), then the rank's steps.
void fill_steps(QComboBox* box, const Profile& p, int rank, std::optional<std::int64_t> selected) {
  box->clear();
  box->addItem(QStringLiteral("auto"), QVariant());
  if (const RankModel* r = p.rank(rank))
    for (const StepRow& s : r->steps) box->addItem(QStringLiteral("step %1").arg(s.number), QVariant::fromValue<qlonglong>(s.number));
  const int i = selected ? box->findData(QVariant::fromValue<qlonglong>(*selected)) : 0;
  box->setCurrentIndex(i >= 0 ? i : 0);
}

void fill_ranks(QComboBox* box, const Profile& p, int selected) {
  box->clear();
  for (const RankModel& r : p.ranks) box->addItem(QStringLiteral("rank %1").arg(r.info.rank), r.info.rank);
  const int i = box->findData(selected);
  box->setCurrentIndex(i >= 0 ? i : 0);
}

}  // namespace

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* top = new QHBoxLayout;
  choose_ = new QPushButton(QStringLiteral("Compare with…"));
  choose_->setToolTip(QStringLiteral("Choose profile B: a simulation of A, or another run"));
  choose_->setEnabled(false);
  top->addWidget(choose_);
  rank_a_ = new QComboBox;
  step_a_ = new QComboBox;
  rank_b_ = new QComboBox;
  step_b_ = new QComboBox;
  for (auto [label, rank, step] : {std::tuple{"A:", rank_a_, step_a_}, std::tuple{"B:", rank_b_, step_b_}}) {
    top->addWidget(new QLabel(QString::fromUtf8(label)));
    top->addWidget(rank);
    top->addWidget(step);
    rank->setToolTip(QStringLiteral("Rank compared on this side"));
    step->setToolTip(QStringLiteral("Step the two sides are aligned at (auto: the first step both have)"));
  }
  save_ = new QPushButton(QStringLiteral("Save comparison…"));
  save_->setToolTip(QStringLiteral("Store the two profiles, the alignment, the Unshard panel's plan and notes in the workspace"));
  save_->setEnabled(false);
  top->addStretch(1);
  top->addWidget(save_);
  layout->addLayout(top);
  headline_ = new QLabel(QStringLiteral("Open a profile (A), then choose a second one (B) to compare with"));
  headline_->setWordWrap(true);
  headline_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(headline_);
  // What the table and the timelines show: modules on both sides only (one-sided modules have
  // nothing to compare against), CPU operator lanes folded so the GPU streams fit.
  auto* options = new QHBoxLayout;
  mismatch_ = new QLabel;
  mismatch_->setToolTip(QStringLiteral("Modules that run in one compared window only: renamed, added or removed between the runs, "
                                       "or outside the other side's window. Hidden from the table unless \"Show all modules\" is on."));
  mismatch_->hide();
  show_all_ = new QCheckBox(QStringLiteral("Show all modules"));
  show_all_->setToolTip(QStringLiteral("Also list modules that run on one side only (shown with \u2014 for the missing side)"));
  fold_cpu_ = new QCheckBox(QStringLiteral("Fold CPU operator lanes"));
  fold_cpu_->setToolTip(QStringLiteral("Draw the CPU lanes without module ranges (aten::*, FSDP runtime calls) thin, "
                                       "so that the GPU streams are visible; click a lane's label to open one"));
  fold_cpu_->setChecked(true);
  only_rank_ = new QCheckBox(QStringLiteral("Compared ranks only"));
  only_rank_->setToolTip(QStringLiteral("Fold every row of the ranks that are not compared, so each timeline shows its compared rank"));
  options->addWidget(mismatch_);
  options->addStretch(1);
  options->addWidget(show_all_);
  options->addWidget(fold_cpu_);
  options->addWidget(only_rank_);
  layout->addLayout(options);

  auto* split = new QSplitter(Qt::Vertical);
  auto add_timeline = [split](QLabel*& caption, timeline::TimelineWidget*& tl) {
    auto* box = new QWidget;
    auto* v = new QVBoxLayout(box);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(1);
    caption = new QLabel;
    tl = new timeline::TimelineWidget;
    tl->setMinimumHeight(120);
    v->addWidget(caption);
    v->addWidget(tl, 1);
    split->addWidget(box);
  };
  add_timeline(caption_a_, timeline_a_);
  add_timeline(caption_b_, timeline_b_);
  timeline_a_->set_placeholder("A: the profile open in the main window (File > Open)");
  timeline_b_->set_placeholder("B: press \"Compare with...\" above to choose the profile to compare with");
  model_ = new CompareTableModel(this);
  proxy_ = new CompareFilterProxy(this);
  proxy_->setSourceModel(model_);
  table_ = new QTableView;
  table_->setHorizontalHeader(new SortArrowHeader(table_));
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(CompareTableModel::ColDelta, Qt::DescendingOrder);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(CompareTableModel::ColModule, QHeaderView::Stretch);
  table_->verticalHeader()->hide();
  table_->setAlternatingRowColors(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 3);
  split->setStretchFactor(2, 2);
  layout->addWidget(split, 1);

  connect(choose_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Compare with profile"), QFileInfo(path_a_).absolutePath(),
                                                      QStringLiteral("ShardScope profiles (*.ssdb *.sqlite *.db);;All files (*)"));
    if (!path.isEmpty()) compare_with_in_background(path);
  });
  connect(this, &CompareView::compareFailed, this, [this](const QString& message) { headline_->setText(QStringLiteral("Cannot compare: ") + message); });
  connect(save_, &QPushButton::clicked, this, &CompareView::saveRequested);
  // A rank change offers that rank's steps; any box change re-aligns.
  for (QComboBox* box : {rank_a_, step_a_, rank_b_, step_b_})
    connect(box, &QComboBox::activated, this, [this, box] {
      if (box == rank_a_ && a_) fill_steps(step_a_, *a_, rank_a_->currentData().toInt(), std::nullopt);
      if (box == rank_b_ && b_) fill_steps(step_b_, *b_, rank_b_->currentData().toInt(), std::nullopt);
      if (!set_alignment(alignment_from_boxes())) {
        headline_->setText(QStringLiteral("Cannot align: ") + error_);
        fill_choices();  // back to the alignment still shown
      }
    });
  // A click, or the arrow keys moving the current row, moves the timelines to that module.
  connect(table_, &QTableView::clicked, this, [this](const QModelIndex& index) { show_module_row(proxy_->mapToSource(index).row()); });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    if (current.isValid()) show_module_row(proxy_->mapToSource(current).row());
  });
  connect(show_all_, &QCheckBox::toggled, proxy_, &CompareFilterProxy::set_show_all);
  connect(fold_cpu_, &QCheckBox::toggled, this, [this] { apply_folding(); });
  connect(only_rank_, &QCheckBox::toggled, this, [this] { apply_folding(); });
  connect(timeline_a_, &timeline::TimelineWidget::viewportChanged, this, [this] { mirror(true); });
  connect(timeline_b_, &timeline::TimelineWidget::viewportChanged, this, [this] { mirror(false); });
}

void CompareView::set_profile(std::shared_ptr<const Profile> a, const QString& path_a) {
  a_ = std::move(a);
  path_a_ = path_a;
  timeline_a_->set_profile(a_);
  apply_folding();
  fold_on_show_ = !isVisible();
  caption_a_->setText(QStringLiteral("A: %1").arg(QFileInfo(path_a_).fileName()));
  reset();
}

void CompareView::reset() {
  ++generation_;  // a B still being read was chosen for the previous A: dropped when it arrives
  b_.reset();
  path_b_.clear();
  comparison_.reset();
  alignment_ = {};
  offset_ = 0;
  fit_on_show_ = false;
  model_->set_rows({});
  mismatch_->hide();
  timeline_b_->set_profile(nullptr);
  caption_b_->setText(QStringLiteral("B: choose a profile to compare with"));
  choose_->setEnabled(a_ != nullptr && !reading_);
  save_->setEnabled(false);
  for (QComboBox* box : {rank_a_, step_a_, rank_b_, step_b_}) box->clear();
  headline_->setText(a_ ? QStringLiteral("A = %1; choose B to compare with").arg(QFileInfo(path_a_).fileName())
                        : QStringLiteral("Open a profile (A), then choose a second one (B) to compare with"));
}

void CompareView::apply_folding() {
  for (bool b_side : {false, true}) {
    timeline::TimelineWidget* tl = b_side ? timeline_b_ : timeline_a_;
    if (!tl->controller()) continue;
    FoldOptions o;
    o.cpu_operator_lanes = fold_cpu_->isChecked();
    if (only_rank_->isChecked() && comparison_) o.only_rank = b_side ? comparison_->alignment.b.rank : comparison_->alignment.a.rank;
    apply_folds(*tl->controller(), o);
    // Folded, a pane also fits its rows to its height (every rank's communication, no row cut
    // at the bottom): the panes are a third of the window each.
    if (o.cpu_operator_lanes) {
      tl->controller()->set_size(static_cast<float>(tl->width()), static_cast<float>(tl->height()));
      tl->controller()->fit_rows_to_height();
    }
    tl->update();
  }
}

bool CompareView::compare_with(const QString& path_b, const compare::Alignment& alignment) {
  if (!a_) {
    error_ = QStringLiteral("no profile open");
    return false;
  }
  ++generation_;  // the latest request wins over a background read still running
  std::shared_ptr<const Profile> b;
  QApplication::setOverrideCursor(Qt::WaitCursor);
  try {
    b = std::make_shared<const Profile>(load_profile(path_b.toStdString()));
  } catch (const ProfileError& e) {
    QApplication::restoreOverrideCursor();
    error_ = QString::fromStdString(e.what());
    return false;
  }
  QApplication::restoreOverrideCursor();
  return run(b, path_b, alignment);
}

void CompareView::compare_with_in_background(const QString& path_b, const compare::Alignment& alignment) {
  if (!a_ || reading_) {
    error_ = a_ ? QStringLiteral("still reading the previous profile B") : QStringLiteral("no profile open");
    emit compareFailed(error_);
    return;
  }
  reading_ = true;
  choose_->setEnabled(false);
  headline_->setText(QStringLiteral("Reading %1 …").arg(QFileInfo(path_b).fileName()));
  struct Outcome {
    std::shared_ptr<const Profile> profile;
    QString error;
  };
  auto outcome = std::make_shared<Outcome>();
  QThread* worker = QThread::create([outcome, file = path_b.toStdString()] {
    try {
      outcome->profile = std::make_shared<const Profile>(load_profile(file));
    } catch (const std::exception& e) {  // ProfileError, or out of memory on a huge file
      outcome->error = QString::fromStdString(e.what());
    }
  });
  connect(worker, &QThread::finished, worker, &QObject::deleteLater);  // also if this view is gone
  connect(worker, &QThread::finished, this, [this, outcome, path_b, alignment, generation = generation_] {
    reading_ = false;
    choose_->setEnabled(a_ != nullptr);
    if (generation != generation_) return;  // another A was opened meanwhile
    if (!outcome->profile) {
      error_ = outcome->error;
      emit compareFailed(error_);
      return;
    }
    if (!run(outcome->profile, path_b, alignment)) emit compareFailed(error_);
  });
  worker->start();
}

bool CompareView::set_alignment(const compare::Alignment& alignment) {
  if (!b_) {
    error_ = QStringLiteral("no profile B to align with");
    return false;
  }
  return run(b_, path_b_, alignment);
}

bool CompareView::run(const std::shared_ptr<const Profile>& b, const QString& path_b, const compare::Alignment& alignment) {
  try {
    compare::Comparison c = compare::compare_profiles(*a_, *b, alignment);
    c.path_a = path_a_.toStdString();
    c.path_b = path_b.toStdString();
    comparison_ = std::move(c);
  } catch (const std::exception& e) {  // CompareError (rank or step missing) or ProfileError
    error_ = QString::fromStdString(e.what());
    return false;
  }
  if (b != b_) timeline_b_->set_profile(b);
  b_ = b;
  path_b_ = path_b;
  alignment_ = alignment;
  const compare::Comparison& c = *comparison_;
  model_->set_rows(c.modules);
  const QString mismatch = one_sided_text(count_one_sided(c.modules));
  mismatch_->setText(QStringLiteral("\u26A0 ") + mismatch + (mismatch.isEmpty() ? QString() : QStringLiteral(" (the windows differ: renamed, added or removed modules)")));
  mismatch_->setVisible(!mismatch.isEmpty());
  headline_->setText(QStringLiteral("A = %1, B = %2, aligned at %3\n%4;  %5")
                         .arg(QFileInfo(path_a_).fileName(), QFileInfo(path_b_).fileName(),
                              QString::fromStdString(c.alignment.description), measure("step time", c.headline.step_time),
                              measure("exposed comm.", c.headline.exposed_communication)));
  caption_a_->setText(QStringLiteral("A: %1 (%2)").arg(QFileInfo(path_a_).fileName(), window_text(c.alignment.a)));
  caption_b_->setText(QStringLiteral("B: %1 (%2)").arg(QFileInfo(path_b_).fileName(), window_text(c.alignment.b)));
  fill_choices();
  save_->setEnabled(true);
  apply_folding();  // the compared ranks may have changed
  fold_on_show_ = !isVisible();
  show_window();
  fit_on_show_ = !timeline_a_->isVisible();
  emit comparisonChanged();
  return true;
}

void CompareView::fill_choices() {
  if (!a_ || !b_ || !comparison_) return;
  const compare::ResolvedAlignment& r = comparison_->alignment;
  for (QComboBox* box : {rank_a_, step_a_, rank_b_, step_b_}) box->blockSignals(true);
  fill_ranks(rank_a_, *a_, r.a.rank);
  fill_ranks(rank_b_, *b_, r.b.rank);
  fill_steps(step_a_, *a_, r.a.rank, alignment_.step_a);
  fill_steps(step_b_, *b_, r.b.rank, alignment_.step_b);
  for (QComboBox* box : {rank_a_, step_a_, rank_b_, step_b_}) box->blockSignals(false);
}

compare::Alignment CompareView::alignment_from_boxes() const {
  compare::Alignment al;
  al.rank_a = rank_a_->currentData().toInt();
  al.rank_b = rank_b_->currentData().toInt();
  if (step_a_->currentData().isValid()) al.step_a = step_a_->currentData().toLongLong();
  if (step_b_->currentData().isValid()) al.step_b = step_b_->currentData().toLongLong();
  return al;
}

// Both timelines on the compared windows: A shows its window; B follows through the link, and
// both rulers count from the aligned instant.
void CompareView::show_window() {
  const compare::ResolvedAlignment& r = comparison_->alignment;
  offset_ = r.b_to_a_offset();
  timeline_a_->set_time_origin(r.a.start);
  timeline_b_->set_time_origin(r.b.start);
  timeline_b_->showRange(r.b.start, r.b.end, r.b.rank);  // scrolls B to its rank's tracks
  timeline_a_->showRange(r.a.start, std::max(r.a.end, r.a.start + (r.b.end - r.b.start)), r.a.rank);
}

void CompareView::show_module_row(int row) {
  if (!comparison_ || row < 0 || row >= static_cast<int>(comparison_->modules.size())) return;
  fit_on_show_ = false;
  const compare::ModuleDiff& m = comparison_->modules[static_cast<std::size_t>(row)];
  const compare::ResolvedAlignment& r = comparison_->alignment;
  auto end_of = [&](const Profile& p, const compare::Window& w, TimeNs first, TimeNs total, std::int64_t count) {
    return module_range_end(p, w.rank, m.fqn, m.phase, first).value_or(first + total / std::max<std::int64_t>(count, 1));
  };
  if (m.first_a && m.first_b) {
    offset_ = *m.first_a - *m.first_b;  // aligned at the module's start on both sides
    timeline_a_->set_time_origin(*m.first_a);
    timeline_b_->set_time_origin(*m.first_b);
    const TimeNs len = std::max(end_of(*a_, r.a, *m.first_a, m.time.a, m.count_a) - *m.first_a,
                                end_of(*b_, r.b, *m.first_b, m.time.b, m.count_b) - *m.first_b);
    timeline_b_->showRange(*m.first_b, *m.first_b + len, r.b.rank);
    timeline_a_->showRange(*m.first_a, *m.first_a + len, r.a.rank);
  } else if (m.first_a) {  // only one side has it: that side moves there, the other follows the link
    timeline_a_->showRange(*m.first_a, end_of(*a_, r.a, *m.first_a, m.time.a, m.count_a), r.a.rank);
  } else if (m.first_b) {
    timeline_b_->showRange(*m.first_b, end_of(*b_, r.b, *m.first_b, m.time.b, m.count_b), r.b.rank);
  }
}

void CompareView::click_table_row(int view_row) {
  if (view_row < 0 || view_row >= proxy_->rowCount()) return;
  table_->selectRow(view_row);
  show_module_row(proxy_->mapToSource(proxy_->index(view_row, 0)).row());
}

void CompareView::mirror(bool from_a) {
  if (mirroring_ || !b_ || !comparison_) return;
  timeline::TimelineWidget* src = from_a ? timeline_a_ : timeline_b_;
  timeline::TimelineWidget* dst = from_a ? timeline_b_ : timeline_a_;
  if (!src->controller() || !dst->controller()) return;
  const timeline::Viewport& v = src->controller()->viewport();
  const double shift = static_cast<double>(offset_);
  mirroring_ = true;
  dst->set_view(from_a ? v.start_ns - shift : v.start_ns + shift, v.ns_per_px);
  mirroring_ = false;
}

void CompareView::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  QTimer::singleShot(0, this, [this] {
    // Shown for the first time since its profiles changed: the panes have their height now.
    if (fold_on_show_) {
      fold_on_show_ = false;
      apply_folding();
    }
    if (!fit_on_show_ || !comparison_) return;  // a row click since then has placed the view
    fit_on_show_ = false;
    show_window();
  });
}

QString CompareView::headline_text() const { return headline_->text(); }
QString CompareView::mismatch_text() const { return mismatch_->isVisibleTo(this) ? mismatch_->text() : QString(); }

}  // namespace ss::compareview
