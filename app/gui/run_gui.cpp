#include "app/gui/run_gui.h"

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QStatusBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeView>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <vector>

#include "app/gui/main_window.h"
#include "app/gui/opengl_check.h"
#include "app/gui/time_frames.h"
#include "profiler/sim/cluster_model.h"
#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/json_input.h"
#include "profiler/sim/step_simulator.h"
#include "storage/errors.h"
#include "views/analyses/analyses_dock.h"
#include "views/memory/memory_chart.h"
#include "views/memory/memory_view.h"
#include "views/memory/module_tree_model.h"
#include "views/timeline/timeline_widget.h"
#include "views/compare/comparisons_dock.h"
#include "views/compare/compare_view.h"
#include "views/unshard/unshard_panel.h"
#include "views/unshard/unshard_session.h"
#include "views/unshard/unshard_unit_model.h"

namespace ss::gui {

namespace {

// A representative state for the screenshots: a collective selected (with its arrows to the
// other ranks), a time range aggregated, and a module selected in the memory tree.
void stage_demo(MainWindow& w) {
  auto* c = w.timeline()->controller();
  if (!c) return;
  w.memory_view()->tree()->expandToDepth(1);
  // The third collective kernel of rank 0 with a sequence number (so it links to other ranks),
  // else the longest kernel.
  const auto& p = *w.profile();
  int seen = 0;
  std::int64_t kernel_id = -1;
  for (const auto& col : p.collectives)
    if (col.rank == p.ranks.front().info.rank && col.kernel_id >= 0 && col.sequence >= 0 && seen++ < 3) kernel_id = col.kernel_id;
  timeline::EventRef best;
  TimeNs longest = -1;
  for (std::size_t t = 0; t < p.stream_tracks.size(); ++t)
    for (std::size_t i = 0; i < p.stream_tracks[t].events.size(); ++i) {
      const auto& e = p.stream_tracks[t].events[i];
      const bool wanted = kernel_id >= 0 ? static_cast<std::int64_t>(e.id) == kernel_id : e.end - e.start > longest;
      if (wanted) {
        longest = e.end - e.start;
        best = {timeline::TrackKind::Stream, static_cast<std::int32_t>(t), static_cast<std::uint32_t>(i)};
      }
    }
  if (best.valid()) c->select(best, true);
  // Widen the view around the selected collective so neighbouring kernels and modules show.
  timeline::Viewport& vp = c->viewport();
  if (c->selected().valid()) {
    const auto e = timeline::event_info(p, c->selected());
    const double span = static_cast<double>(w.profile()->time_end - w.profile()->time_begin);
    vp.fit(static_cast<double>(e.start) - span * 0.04, static_cast<double>(e.end) + span * 0.08);
  }
  // Aggregate the middle third of the view with a right drag, as a user would.
  const float x0 = timeline::kLabelWidth + static_cast<float>(vp.width_px) * 0.35f;
  const float x1 = timeline::kLabelWidth + static_cast<float>(vp.width_px) * 0.6f;
  c->mouse_press(x0, timeline::kRulerHeight + 5, timeline::MouseButton::Right, false);
  c->mouse_move(x1, 2000);
  c->mouse_release(x1, 2000, timeline::MouseButton::Right);
  c->mouse_move(-1, -1);
  w.timeline()->update();
}

// Keeps the last three layers unsharded through the panel's model (each an undoable toggle); with
// measured per-unit figures (--cluster), plans buckets instead.
void stage_unshard(unshard::UnshardPanel& panel) {
  auto* s = panel.session();
  auto* m = panel.model();
  if (!s || !m) return;
  // With measured per-unit figures (--cluster units.json), what they are for: Plan buckets.
  if (const sim::ClusterModel c = s->cluster(); c.fsdp_unit_forward_us > 0 || c.fsdp_unit_backward_us > 0) {
    for (auto* b : panel.findChildren<QPushButton*>())
      if (b->text() == QStringLiteral("Plan buckets")) b->click();
    return;
  }
  int toggled = 0;
  for (int u = s->unit_count() - 1; u >= 0 && toggled < 3; --u)
    if (!s->unit_fixed(u) && m->setData(m->index_of_unit(u), Qt::Checked, Qt::CheckStateRole)) ++toggled;
  if (auto i = m->index_of_unit(s->unit_count() - 1); i.isValid()) panel.tree()->scrollTo(i);
}

// The what-if screenshot, staged as a user would: "Checkpoint all" set to the first sub-module
// (selective, e.g. attention; full where the model has none), then the first two units of the
// step shown (with a pipeline, the stage shown) checkpointed fully in the tree's column.
void stage_whatif(unshard::UnshardPanel& panel) {
  auto* s = panel.session();
  auto* m = panel.model();
  if (!s || !m) return;
  auto* all = panel.checkpoint_all_box();
  const int mode = all->count() > 3 ? 3 : all->findData(QStringLiteral("full"));  // prompt, none, full, first sub-module
  if (mode > 0) {
    all->setCurrentIndex(mode);
    emit all->activated(mode);
  }
  const auto& p = s->prediction();
  std::vector<char> shown(p.step.units.size(), 0);
  for (const auto& op : p.result.ops)
    if (op.kind == sim::OpKind::Compute && op.exec >= 0 && static_cast<std::size_t>(op.exec) < shown.size()) shown[static_cast<std::size_t>(op.exec)] = 1;
  int done = 0, first = -1;
  for (int u = 0; u < s->unit_count() && done < 2; ++u) {
    const int e = static_cast<std::size_t>(u) < p.step.exec_of_unit.size() ? p.step.exec_of_unit[static_cast<std::size_t>(u)] : -1;
    if (e < 0 || !shown[static_cast<std::size_t>(e)] || s->checkpoint_choices(u).size() < 2) continue;
    const QModelIndex i = m->index_of_unit(u);
    if (m->setData(i.siblingAtColumn(unshard::UnshardUnitModel::ColCheckpoint), QStringLiteral("full"), Qt::EditRole)) {
      ++done;
      if (first < 0) first = u;
    }
  }
  if (first >= 0) panel.tree()->scrollTo(m->index_of_unit(first), QAbstractItemView::PositionAtCenter);
}

bool save(const QImage& image, const QString& path) {
  if (image.isNull() || !image.save(path, "PNG")) {
    std::cerr << "shardscope gui: could not write " << path.toStdString() << "\n";
    return false;
  }
  std::cerr << "wrote " << path.toStdString() << "\n";
  return true;
}

}  // namespace

namespace {
constexpr const char* kGuiUsage =
    "Usage: shardscope gui [FILE] [--compare B] [--plan P.json] [--cluster C.json] [--light] [--screenshot DIR]\n"
    "                      [--time-first-frame] [--time-frames N]\n"
    "       shardscope gui --model M.json [--world N] [--plan P.json] [--cluster C.json] [--light] [--screenshot DIR]\n"
    "       shardscope FILE [options]\n\n"
    "Opens the desktop app, on FILE when given.\n\n"
    "Options:\n"
    "  --compare B         compare FILE with profile B in the Compare view\n"
    "  --cluster C.json    the Unshard tab's cluster: a cluster file, or measured figures alone\n"
    "                      (shardscope.measure_host, measure_fsdp_units: per-unit cost, which the\n"
    "                      buckets' saving needs) added to the profile's fitted cluster\n"
    "  --light             start with the light palette\n"
    "  --model M.json      open the Unshard (what-if) tab on a model description instead of a\n"
    "                      profile (resources/models): tensor, context and expert parallelism need one\n"
    "  --world N           --model's world size (default: the description's cluster)\n"
    "  --plan P.json       apply this plan file (shardscope plan -o P.json, or one exported from the\n"
    "                      app: kept units, buckets, checkpointing, offload, parallelism) in the\n"
    "                      Unshard tab, opened on FILE's what-if or on --model's\n"
    "  --screenshot DIR    stage the views, write PNG screenshots of them to DIR and exit (with\n"
    "                      --model: DIR/whatif-panel.png and DIR/whatif-timeline-lanes.png; with\n"
    "                      FILE and --plan: DIR/unshard-plan.png, the plan applied)\n"
    "  --time-first-frame  print when each load stage starts, the time from opening FILE to its\n"
    "                      first drawn frame (a big profile's first part) and to the whole, and exit\n"
    "  --time-frames N     draw N timeline frames per zoom level, print their times and exit (with\n"
    "                      --screenshot DIR: also DIR/timeline-zoomed-out.png, nothing else)\n"
    "  -h, --help          this text\n\n"
    "Needs a display (DISPLAY or WAYLAND_DISPLAY; xvfb-run works; QT_QPA_PLATFORM picks another\n"
    "Qt platform). Without one, use the command line: shardscope info FILE, analyze, simulate ...\n";
}  // namespace

namespace {
// `gui --model M.json`: the Unshard tab on a model description, with --plan's choices applied;
// with --screenshot, the what-if panel and its timeline's lanes, then exit.
int run_model_description(QApplication& app, MainWindow& window, const QString& model, int world, const QString& plan,
                          const QString& screenshot_dir) {
  window.show_unshard_tab();
  auto* panel = window.unshard_panel();
  if (!panel->open_model_description(model, world)) {
    std::cerr << "shardscope gui: " << panel->last_error().toStdString() << "\n";
    return 2;
  }
  if (!plan.isEmpty() && !panel->apply_plan_file(plan)) {
    std::cerr << "shardscope gui: " << panel->last_error().toStdString() << "\n";
    return 2;
  }
  if (screenshot_dir.isEmpty()) return app.exec();
  // The docks are about a profile and there is none: the tab gets the window.
  for (auto* dock : window.findChildren<QDockWidget*>()) dock->hide();
  stage_whatif(*panel);
  QTimer::singleShot(700, &app, [&app, &window, panel, screenshot_dir] {
    panel->wait_for_timeline();  // a large step's timeline is built in the background
    QDir().mkpath(screenshot_dir);
    bool ok = save(window.grab().toImage(), screenshot_dir + "/whatif-panel.png");
    // The timeline alone, zoomed into the middle of the step (a few micro-batches of the steady
    // state), where single TP collectives and pipeline sends can be told apart.
    if (auto* c = panel->timeline()->controller(); c && panel->timeline_profile()) {
      const auto& p = *panel->timeline_profile();
      const double span = static_cast<double>(p.time_end - p.time_begin);
      c->viewport().fit(static_cast<double>(p.time_begin) + span * 0.45, static_cast<double>(p.time_begin) + span * 0.57);
    }
    panel->timeline()->update();
    QTimer::singleShot(500, &app, [&app, panel, screenshot_dir, ok] {
      const bool lanes = save(panel->timeline()->grabFramebuffer(), screenshot_dir + "/whatif-timeline-lanes.png");
      app.exit(ok && lanes ? 0 : 3);
    });
  });
  return app.exec();
}

// `gui FILE --plan P.json`: once FILE is loaded, the Unshard tab with the plan applied (one
// undoable change). A plan that does not fit the profile is said on stderr and in the status bar,
// and the profile stays open; with --screenshot, DIR/unshard-plan.png, then exit (2 on a bad plan).
void apply_plan_when_loaded(QApplication& app, MainWindow& window, const QString& plan, const QString& screenshot_dir) {
  if (!screenshot_dir.isEmpty())
    QObject::connect(&window, &MainWindow::loadFailed, &app, [&app](const QString& message) {
      std::cerr << "shardscope gui: " << message.toStdString() << "\n";
      app.exit(2);
    });
  QObject::connect(&window, &MainWindow::profileLoaded, &app, [&app, &window, plan, screenshot_dir] {
    window.show_unshard_tab();
    auto* panel = window.unshard_panel();
    if (!panel->apply_plan_file(plan)) {
      const QString why = panel->last_error();
      std::cerr << "shardscope gui: --plan: " << why.toStdString() << "\n";
      window.statusBar()->showMessage("Plan not applied: " + why, 10000);
      if (!screenshot_dir.isEmpty()) app.exit(2);
      return;
    }
    window.statusBar()->showMessage("Applied " + plan + " (Undo takes it back)", 8000);
    if (screenshot_dir.isEmpty()) return;
    QTimer::singleShot(500, &app, [&app, &window, panel, screenshot_dir] {
      panel->wait_for_timeline();
      QDir().mkpath(screenshot_dir);
      app.exit(save(window.grab().toImage(), screenshot_dir + "/unshard-plan.png") ? 0 : 3);
    });
  }, Qt::SingleShotConnection);
}
}  // namespace

int run_gui(int argc, char** argv, int first_arg) {
  QString screenshot_dir;
  bool time_first_frame = false;
  int time_frames_n = 0;  // --time-frames N
  bool light = false;  // --light: start with the light palette
  QString compare_path;  // --compare B: open the Compare view on the profile vs B
  QString model_path, plan_path;  // --model M.json, --plan P.json
  int model_world = 0;            // --world N
  std::string cluster_path;       // --cluster C.json
  std::string file;
  for (int i = first_arg; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "-h" || a == "--help") {
      std::cout << kGuiUsage;
      return 0;
    } else if (a == "--screenshot" && has_value) {
      screenshot_dir = QString::fromLocal8Bit(argv[++i]);
    } else if (a == "--compare" && has_value) {
      compare_path = QString::fromLocal8Bit(argv[++i]);
    } else if (a == "--time-frames" && has_value) {
      time_frames_n = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--model" && has_value) {
      model_path = QString::fromLocal8Bit(argv[++i]);
    } else if (a == "--cluster" && has_value) {
      cluster_path = argv[++i];
    } else if (a == "--plan" && has_value) {
      plan_path = QString::fromLocal8Bit(argv[++i]);
    } else if (a == "--world" && has_value) {
      model_world = std::atoi(argv[++i]);
      if (model_world < 1) {
        std::cerr << "shardscope gui: --world needs a positive number\n";
        return 1;
      }
    } else if (a == "--time-first-frame") {
      time_first_frame = true;
    } else if (a == "--light") {
      light = true;
    } else if (a.rfind("-", 0) == 0 || !file.empty()) {
      std::cerr << "shardscope gui: unexpected argument '" << a << "'\n\n" << kGuiUsage;
      return 1;
    } else {
      file = a;
    }
  }
  if (!model_path.isEmpty() && (!file.empty() || !compare_path.isEmpty() || time_first_frame || time_frames_n > 0)) {
    std::cerr << "shardscope gui: --model opens the Unshard tab on a model description; it takes no FILE, --compare or timing options\n";
    return 1;
  }
  if (model_path.isEmpty() && model_world > 0) {
    std::cerr << "shardscope gui: --world goes with --model\n";
    return 1;
  }
  if (!plan_path.isEmpty()) {
    if (model_path.isEmpty() && file.empty()) {
      std::cerr << "shardscope gui: --plan needs a profile (FILE) or --model\n";
      return 1;
    }
    if (time_first_frame || time_frames_n > 0 || !compare_path.isEmpty()) {
      std::cerr << "shardscope gui: --plan takes no --compare or timing options\n";
      return 1;
    }
    try {  // a file that is no plan is refused here; whether its units are FILE's, once it is loaded
      (void)sim::parse_plan_json(sim::read_text_file(plan_path.toStdString()), plan_path.toStdString());
    } catch (const ProfileError& e) {
      std::cerr << "shardscope gui: --plan: " << e.what() << "\n";
      return 2;
    }
  }
  if (!cluster_path.empty()) {
    try {
      (void)sim::load_cluster_file(cluster_path);  // refused here, not in a panel the user may never open
    } catch (const ProfileError& e) {
      std::cerr << "shardscope gui: --cluster: " << e.what() << "\n";
      return 2;
    }
  }
  // Qt aborts the process when it finds no display; say what to do instead.
  if (!std::getenv("DISPLAY") && !std::getenv("WAYLAND_DISPLAY") && !std::getenv("QT_QPA_PLATFORM")) {
    std::cerr << "shardscope gui: no display (DISPLAY and WAYLAND_DISPLAY are not set). Run it in a desktop "
                 "session or under xvfb-run, or use the command line (shardscope info FILE, analyze, simulate).\n";
    return 1;
  }
  int qt_argc = 1;  // our options are not Qt's
  QApplication app(qt_argc, argv);
  QApplication::setOrganizationName("ShardScope");
  QApplication::setApplicationName(screenshot_dir.isEmpty() ? "shardscope" : "shardscope-screenshot");
  if (const QString problem = opengl_problem(); !problem.isEmpty()) {
    const QString text = "The timeline draws with OpenGL 3, and " + problem +
                         ". Run the app on a display with OpenGL (or under xvfb-run, whose Mesa software OpenGL "
                         "works), or use the command line: shardscope info FILE, analyze, simulate, plan, export.";
    std::cerr << "shardscope gui: " << text.toStdString() << "\n";
    if (screenshot_dir.isEmpty() && QGuiApplication::platformName() != "offscreen")
      QMessageBox::critical(nullptr, "ShardScope", text);
    return 1;
  }
  if (time_frames_n > 0) {
    if (file.empty()) {
      std::cerr << "shardscope gui: --time-frames needs a profile\n";
      return 1;
    }
    return time_frames(file, time_frames_n, screenshot_dir);
  }
  MainWindow window;
  if (!screenshot_dir.isEmpty()) {
    window.set_interactive(false);
    window.resize(1600, 1000);
    window.reset_layout();
  }
  if (!screenshot_dir.isEmpty() || light) window.set_dark(!light);  // screenshots: a known palette
  window.show();
  QElapsedTimer since_open;
  if (time_first_frame) {
    window.set_interactive(false);
    // A big profile shows a first part before the whole: report the first frame, then wait for
    // the whole profile.
    auto frame_seen = std::make_shared<bool>(false);
    auto loaded_seen = std::make_shared<bool>(false);
    QObject::connect(window.timeline(), &timeline::TimelineWidget::profileFrameDrawn, &app, [&, frame_seen, loaded_seen] {
      if (*frame_seen) return;
      *frame_seen = true;
      std::cout << "first frame " << since_open.elapsed() << " ms after opening " << file
                << (window.showing_first_part() ? " (the first part)" : "") << "\n";
      if (*loaded_seen) app.exit(0);
    });
    QObject::connect(&window, &MainWindow::profileLoaded, &app, [&, frame_seen, loaded_seen] {
      *loaded_seen = true;
      if (*frame_seen) QTimer::singleShot(0, &app, [&] { app.exit(0); });
    });
    QObject::connect(&window, &MainWindow::loadFailed, &app, [&](const QString& message) {
      std::cerr << "shardscope gui: " << message.toStdString() << "\n";
      app.exit(2);
    });
    QObject::connect(&window, &MainWindow::profileLoaded, &app,
                     [&] { std::cout << "loaded " << since_open.elapsed() << " ms after opening\n"; });
    // Where the time goes: when each stage of the load (or import) starts.
    auto last_stage = std::make_shared<QString>();
    QObject::connect(&window, &MainWindow::loadProgress, &app, [&, last_stage](int, const QString& stage) {
      if (stage == *last_stage) return;
      *last_stage = stage;
      std::cout << "  " << since_open.elapsed() << " ms: " << stage.toStdString() << "\n";
    });
  }
  if (!cluster_path.empty()) window.unshard_panel()->set_measured_cluster(QString::fromStdString(cluster_path));
  since_open.start();
  if (!model_path.isEmpty()) return run_model_description(app, window, model_path, model_world, plan_path, screenshot_dir);
  if (!compare_path.isEmpty())
    QObject::connect(&window, &MainWindow::profileLoaded, &app, [&] {
      if (!window.compare_view()->compare_with(compare_path))
        std::cerr << "shardscope gui: cannot compare with " << compare_path.toStdString() << ": "
                  << window.compare_view()->last_error().toStdString() << "\n";
      if (screenshot_dir.isEmpty()) window.show_compare_tab();  // screenshots show it last
    }, Qt::SingleShotConnection);  // B goes with FILE only: a profile opened later starts without a B
  if (!plan_path.isEmpty()) apply_plan_when_loaded(app, window, plan_path, screenshot_dir);
  if (!file.empty()) window.open_file(QString::fromStdString(file));
  if (!plan_path.isEmpty()) return app.exec();  // its own screenshot, not the staged views'
  if (!screenshot_dir.isEmpty() && !file.empty()) {
    // A big profile: the loading page, and its first part while the rest loads.
    QTimer::singleShot(200, &app, [&] {
      if (!window.showing_loading()) return;
      QDir().mkpath(screenshot_dir);
      save(window.grab().toImage(), screenshot_dir + "/loading.png");
    });
    QObject::connect(&window, &MainWindow::firstPartShown, &app, [&] {
      QTimer::singleShot(300, &app, [&] {
        if (!window.showing_first_part()) return;
        QDir().mkpath(screenshot_dir);
        save(window.grab().toImage(), screenshot_dir + "/first-part.png");
      });
    });
  }
  if (!screenshot_dir.isEmpty()) {
    if (file.empty()) {
      std::cerr << "shardscope gui: --screenshot needs a profile\n";
      return 1;
    }
    QObject::connect(&window, &MainWindow::loadFailed, &app, [&](const QString& message) {
      std::cerr << "shardscope gui: " << message.toStdString() << "\n";
      app.exit(2);
    });
    QObject::connect(&window, &MainWindow::profileLoaded, &app, [&] {
      QTimer::singleShot(400, &app, [&] {
        // The window as a user first sees it, with the default layout.
        QDir().mkpath(screenshot_dir);
        const bool opened_ok = save(window.grab().toImage(), screenshot_dir + "/sample-main-window.png");
        stage_demo(window);
        QTimer::singleShot(500, &app, [&, opened_ok] {
          bool ok = save(window.grab().toImage(), screenshot_dir + "/main-window.png") && opened_ok;
          ok = save(window.timeline()->grabFramebuffer(), screenshot_dir + "/timeline.png") && ok;
          // The Analyses dock with a result: the overlap analysis on the whole profile, in the
          // default layout, and its first finding double-clicked (the timeline jumps to it).
          auto* analyses = window.analyses();
          analyses->selection_source = nullptr;  // the whole profile: more rows and findings to show
          window.analyses_dock()->raise();
          const auto shoot_memory = [&, ok](bool analyses_ok) {
            // The memory view on its own, at a useful size.
            window.memory_dock()->setFloating(true);
            window.memory_dock()->resize(1600, 1000);
            // The whole profile (the analysis jump narrowed the chart to the timeline's window).
            window.memory_view()->setTimeRange(window.profile()->time_begin, window.profile()->time_end);
            QTimer::singleShot(300, &app, [&, ok, analyses_ok] {
              // The hover readout at the peak, as a user pointing at it sees it.
              auto* chart = window.memory_view()->chart();
              chart->hover_time(window.memory_view()->model()->stats().series.peak_time);
              const bool mem_ok = save(window.memory_dock()->widget()->grab().toImage(), screenshot_dir + "/memory.png") && ok && analyses_ok;
              // The Unshard tab in the window, with a few layers kept unsharded as a user would.
              window.memory_dock()->setFloating(false);
              window.show_unshard_tab();
              window.memory_dock()->raise();
              stage_unshard(*window.unshard_panel());
              QTimer::singleShot(500, &app, [&, mem_ok] {
                const bool all = save(window.grab().toImage(), screenshot_dir + "/unshard-panel.png") && mem_ok;
                if (compare_path.isEmpty()) {
                  app.exit(all ? 0 : 3);
                  return;
                }
                // With --compare B: the Compare view with the largest discrepancy's row clicked, and
                // the comparison saved in a scratch workspace so the Comparisons dock lists it.
                window.analyses_dock()->hide();  // the Compare tab gets the window's width
                if (auto* aggregate = window.findChild<QDockWidget*>("aggregate_dock")) aggregate->hide();
                window.resizeDocks({window.comparisons_dock()}, {190}, Qt::Vertical);
                window.show_compare_tab();
                auto* cv = window.compare_view();
                static QTemporaryDir scratch;
                window.comparisons()->open_workspace(scratch.path() + "/screenshot.sscw");
                const auto* session = window.unshard_panel()->session();
                window.comparisons()->save("baseline vs what-if", cv->path_a(), cv->path_b(), cv->alignment(),
                                           session ? QString::fromStdString(session->plan_file_json()) : QString(),
                                           "Saved from the Compare view, with the Unshard panel's plan");
                window.comparisons_dock()->show();
                window.comparisons_dock()->raise();
                QTimer::singleShot(300, &app, [&, all, cv] {
                  // Clicked once the tab is laid out, so the zoom fits the timelines' real width.
                  if (cv->table()->model()->rowCount() > 0) cv->click_table_row(0);
                  QTimer::singleShot(500, &app, [&, all] {
                    const bool with_compare = save(window.grab().toImage(), screenshot_dir + "/compare.png") && all;
                    app.exit(with_compare ? 0 : 3);
                  });
                });
              });
            });
          };
          QObject::connect(analyses, &analyses::AnalysesDock::finished, &app, [&, analyses, shoot_memory] {
            if (analyses->findings()->count() > 0) analyses->activate_finding(0);
            QTimer::singleShot(500, &app, [&, analyses, shoot_memory] {
              const bool analyses_ok = analyses->result().ok && save(window.grab().toImage(), screenshot_dir + "/analyses.png");
              if (!analyses->result().ok) std::cerr << "shardscope gui: overlap failed: " << analyses->result().error << "\n";
              shoot_memory(analyses_ok);
            });
          }, Qt::SingleShotConnection);
          if (!analyses->run("overlap")) {
            std::cerr << "shardscope gui: could not run the overlap analysis for the screenshot\n";
            shoot_memory(false);
          }
        });
      });
    });
  }
  return app.exec();
}

}  // namespace ss::gui
