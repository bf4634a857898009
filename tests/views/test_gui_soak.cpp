// A soak test of the whole main window: seeded random sequences of what a person does in a
// working session (zoom in deep and out again, pan, Ctrl+0, box-select, find, tab switches,
// analyses and their findings, what-if changes with undo, hovering and clicking the memory chart,
// picking modules and ranks) on the bundled real sample and on a 1M-kernel profile. It fails when
// one action keeps the main thread busy longer than a bound (its thread CPU time over the action
// and the events it caused, so a busy machine does not trip it) or when resident memory grows
// past a bound, and it prints the seed and the action so the run can be repeated. A watchdog ends
// the process with the same message when an action never finishes (the hang this was written for:
// the memory chart laying out a tiny tick step across the whole profile after Ctrl+0).
//
// CI runs a short sequence (tests/views/CMakeLists.txt); bench/views/soak_gui.sh runs long ones.
// Environment: SHARDSCOPE_SOAK_SEED, SHARDSCOPE_SOAK_ACTIONS (per profile),
// SHARDSCOPE_SOAK_BIG_KERNELS (0: the sample only), SHARDSCOPE_SOAK_MAX_ACTION_MS,
// SHARDSCOPE_SOAK_RSS_GROWTH_MB, SHARDSCOPE_SOAK_HANG_S, SHARDSCOPE_SOAK_VERBOSE (print every action).
#include <catch2/catch.hpp>

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QKeyEvent>
#include <QListWidget>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>
#include <QThread>
#include <QTreeView>
#include <QWheelEvent>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>

#include "app/gui/main_window.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "storage/thread_cpu_time.h"
#include "tests/support/test_paths.h"
#include "views/analyses/analyses_dock.h"
#include "views/memory/memory_chart.h"
#include "views/memory/memory_view.h"
#include "views/timeline/timeline_widget.h"
#include "views/unshard/unshard_panel.h"
#include "views/unshard/unshard_session.h"
#include "views/unshard/unshard_unit_model.h"

#include <QChartView>
#include <QValueAxis>

using namespace ss;
using namespace ss::timeline;

namespace {

QApplication& app() {
  static int argc = 1;
  static char name[] = "test_gui_soak";
  static char* argv[] = {name, nullptr};
  static QApplication* a = new QApplication(argc, argv);  // never destroyed (see test_timeline_gui)
  QStandardPaths::setTestModeEnabled(true);
  QApplication::setOrganizationName("ShardScopeTest");
  QApplication::setApplicationName("test_gui_soak");
  return *a;
}

long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 10) : fallback;
}

long rss_mb() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024) / 1024;
}

// Ends the process with the seed and the action when one action runs longer than `limit` in
// wall time: a hang would otherwise only end at ctest's timeout, without saying what hung.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds limit) : limit_(limit), thread_([this] { watch(); }) {}
  ~Watchdog() {
    stop_ = true;
    thread_.join();
  }
  void begin(const std::string& what) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      what_ = what;
    }
    started_ = std::chrono::steady_clock::now().time_since_epoch().count();
  }
  void end() { started_ = 0; }

 private:
  void watch() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const auto s = started_.load();
      if (s == 0) continue;
      const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
      if (now - s > std::chrono::duration_cast<std::chrono::steady_clock::duration>(limit_).count()) {
        std::lock_guard<std::mutex> lock(mu_);
        std::fprintf(stderr, "SOAK HANG: %s has run for more than %lld s; rss %ld MB\n", what_.c_str(),
                     static_cast<long long>(limit_.count()), rss_mb());
        std::fflush(stderr);
        std::_Exit(3);
      }
    }
  }
  std::chrono::seconds limit_;
  std::atomic<bool> stop_{false};
  std::atomic<std::chrono::steady_clock::rep> started_{0};
  std::mutex mu_;
  std::string what_;
  std::thread thread_;
};

void send_key(QWidget* w, int key, Qt::KeyboardModifiers mods = Qt::NoModifier, const QString& text = {}) {
  QKeyEvent press(QEvent::KeyPress, key, mods, text);
  QApplication::sendEvent(w, &press);
  QKeyEvent release(QEvent::KeyRelease, key, mods, text);
  QApplication::sendEvent(w, &release);
}

void send_mouse(QWidget* w, QEvent::Type type, QPointF pos, Qt::MouseButton button, Qt::MouseButtons buttons) {
  QMouseEvent e(type, pos, w->mapToGlobal(pos), button, buttons, Qt::NoModifier);
  QApplication::sendEvent(w, &e);
}

// Runs the event loop for `ms` of wall time: the repaints, the memory chart's delayed re-range
// and whatever else the action queued happen here, on the main thread, and count as its cost.
void settle(int ms) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < ms) {
    QApplication::processEvents(QEventLoop::AllEvents, 5);
    QThread::msleep(2);
  }
}

struct Soak {
  gui::MainWindow& window;
  std::mt19937_64 rng;
  std::vector<QString> queries;  // names that occur in the profile, for Find

  TimelineWidget* tw() { return window.timeline(); }
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
  int pick(int n) { return n <= 0 ? 0 : std::uniform_int_distribution<int>(0, n - 1)(rng); }
  QPointF timeline_point() {
    return {uniform(kLabelWidth + 5, tw()->width() - 5), uniform(kRulerHeight + 5, std::max<double>(kRulerHeight + 6, tw()->height() - 5))};
  }
  QAction* action_named(const char* name) { return window.findChild<QAction*>(name); }

  // One random action; returns what it did (printed with the seed when it fails).
  std::string act() {
    const int kind = pick(16);
    switch (kind) {
      case 0:
      case 1: {  // zoom in with W, often deep (tens of steps: microseconds on a seconds-long profile)
        window.central_tabs()->setCurrentIndex(0);
        const QPointF at = timeline_point();
        send_mouse(tw(), QEvent::MouseMove, at, Qt::NoButton, Qt::NoButton);
        const int n = 1 + pick(kind == 0 ? 8 : 60);
        for (int i = 0; i < n; ++i) send_key(tw(), Qt::Key_W, Qt::NoModifier, "w");
        return "zoom in x" + std::to_string(n);
      }
      case 2: {  // zoom out with S
        const int n = 1 + pick(20);
        for (int i = 0; i < n; ++i) send_key(tw(), Qt::Key_S, Qt::NoModifier, "s");
        return "zoom out x" + std::to_string(n);
      }
      case 3: {  // Ctrl+wheel zoom either way
        const QPointF at = timeline_point();
        const int steps = (pick(2) ? 1 : -1) * (1 + pick(10));
        QWheelEvent wheel(at, tw()->mapToGlobal(at), QPoint(), QPoint(0, 120 * steps), Qt::NoButton, Qt::ControlModifier,
                          Qt::NoScrollPhase, false);
        QApplication::sendEvent(tw(), &wheel);
        return "ctrl+wheel " + std::to_string(steps);
      }
      case 4: {  // pan with A / D, or a left drag
        if (pick(2)) {
          const bool left = pick(2);
          const int n = 1 + pick(10);
          for (int i = 0; i < n; ++i) send_key(tw(), left ? Qt::Key_A : Qt::Key_D, Qt::NoModifier, left ? "a" : "d");
          return std::string("pan ") + (left ? "A" : "D") + " x" + std::to_string(n);
        }
        const QPointF a = timeline_point(), b = timeline_point();
        send_mouse(tw(), QEvent::MouseButtonPress, a, Qt::LeftButton, Qt::LeftButton);
        send_mouse(tw(), QEvent::MouseMove, b, Qt::NoButton, Qt::LeftButton);
        send_mouse(tw(), QEvent::MouseButtonRelease, b, Qt::LeftButton, Qt::NoButton);
        return "drag";
      }
      case 5: {  // View > Whole profile (Ctrl+0)
        action_named("view_fit_all")->trigger();
        return "Ctrl+0 (whole profile)";
      }
      case 6: {  // box-select with a right drag, then maybe Esc
        const QPointF a = timeline_point(), b = timeline_point();
        send_mouse(tw(), QEvent::MouseButtonPress, a, Qt::RightButton, Qt::RightButton);
        send_mouse(tw(), QEvent::MouseMove, (a + b) / 2, Qt::NoButton, Qt::RightButton);
        send_mouse(tw(), QEvent::MouseMove, b, Qt::NoButton, Qt::RightButton);
        send_mouse(tw(), QEvent::MouseButtonRelease, b, Qt::RightButton, Qt::NoButton);
        if (pick(3) == 0) send_key(tw(), Qt::Key_Escape);
        return "box-select";
      }
      case 7: {  // Find: Ctrl+F, a name, Enter, F3 a few times, Esc
        window.central_tabs()->setCurrentIndex(0);
        send_key(tw(), Qt::Key_F, Qt::ControlModifier);
        settle(30);
        const QString q = queries.empty() ? QStringLiteral("all_gather") : queries[static_cast<std::size_t>(pick(static_cast<int>(queries.size())))];
        for (QChar ch : q) send_key(tw(), Qt::Key_unknown, Qt::NoModifier, QString(ch));
        settle(30);
        send_key(tw(), Qt::Key_Return);
        const int next = pick(5);
        for (int i = 0; i < next; ++i) send_key(tw(), Qt::Key_F3);
        send_key(tw(), Qt::Key_Escape);
        return "find '" + q.toStdString() + "' + F3 x" + std::to_string(next);
      }
      case 8: {  // tab switch
        const int tab = pick(window.central_tabs()->count());
        window.central_tabs()->setCurrentIndex(tab);
        return "tab " + window.central_tabs()->tabText(tab).toStdString();
      }
      case 9: {  // run an analysis (on the selection when there is one)
        auto* dock = window.analyses();
        const auto& plugins = dock->host().plugins();
        if (plugins.empty() || dock->busy()) return "analysis (none free)";
        const auto& d = plugins[static_cast<std::size_t>(pick(static_cast<int>(plugins.size())))];
        window.analyses_dock()->raise();
        dock->run(QString::fromStdString(d.name));
        return "analysis " + d.name;
      }
      case 10: {  // jump to an analysis finding
        auto* dock = window.analyses();
        if (dock->busy() || dock->findings()->count() == 0) return "finding (none)";
        const int row = pick(dock->findings()->count());
        dock->activate_finding(row);
        return "finding " + std::to_string(row);
      }
      case 11: {  // a what-if change: toggle a unit, change tp / micro-batches, undo or redo
        window.show_unshard_tab();
        auto* panel = window.unshard_panel();
        // The panel reads the profile in the background: waiting for it keeps the sequence the
        // same for a seed (its completion runs on the main thread and counts for this action).
        QElapsedTimer wait;
        wait.start();
        while (panel->loading() && wait.elapsed() < 120000) settle(20);
        auto* s = panel->session();
        if (!s || !panel->model()) return "what-if (no session)";
        switch (pick(5)) {
          case 0: {
            const int u = pick(s->unit_count());
            const QModelIndex i = panel->model()->index_of_unit(u);
            const bool on = panel->model()->data(i, Qt::CheckStateRole).toInt() == Qt::Checked;
            panel->model()->setData(i, on ? Qt::Unchecked : Qt::Checked, Qt::CheckStateRole);
            return "what-if toggle unit " + std::to_string(u);
          }
          case 1: {
            const int tp = 1 << pick(4);
            panel->tp_box()->setValue(tp);
            return "what-if tp " + std::to_string(tp);
          }
          case 2: {
            const int mb = 1 + pick(4);
            panel->micro_batches_box()->setValue(mb);
            return "what-if micro-batches " + std::to_string(mb);
          }
          case 3: panel->undo(); return "what-if undo";
          default: panel->redo(); return "what-if redo";
        }
      }
      case 12: {  // hover the memory chart
        window.memory_dock()->raise();
        auto* chart = window.memory_view()->chart();
        QWidget* vp = chart->view()->viewport();
        const QPointF at(uniform(0, vp->width()), uniform(0, vp->height()));
        send_mouse(vp, QEvent::MouseMove, at, Qt::NoButton, Qt::NoButton);
        return "memory hover";
      }
      case 13: {  // click the memory chart: the timeline moves there
        window.memory_dock()->raise();
        auto* chart = window.memory_view()->chart();
        QWidget* vp = chart->view()->viewport();
        const QPointF at(uniform(0, vp->width()), uniform(0, vp->height()));
        send_mouse(vp, QEvent::MouseButtonPress, at, Qt::LeftButton, Qt::LeftButton);
        send_mouse(vp, QEvent::MouseButtonRelease, at, Qt::LeftButton, Qt::NoButton);
        return "memory click";
      }
      case 14: {  // pick a module in the memory tree (selected on the timeline too)
        QTreeView* tree = window.memory_view()->tree();
        auto* proxy = window.memory_view()->proxy();
        QModelIndex i = proxy->index(0, 0);
        const int depth = pick(4);
        for (int d = 0; d < depth && i.isValid() && proxy->rowCount(i) > 0; ++d) i = proxy->index(pick(proxy->rowCount(i)), 0, i);
        if (i.isValid()) tree->setCurrentIndex(i);
        return "module " + i.data().toString().toStdString();
      }
      default: {  // click somewhere on the timeline (select what is there)
        window.central_tabs()->setCurrentIndex(0);
        const QPointF at = timeline_point();
        send_mouse(tw(), QEvent::MouseMove, at, Qt::NoButton, Qt::NoButton);
        send_mouse(tw(), QEvent::MouseButtonPress, at, Qt::LeftButton, Qt::LeftButton);
        send_mouse(tw(), QEvent::MouseButtonRelease, at, Qt::LeftButton, Qt::NoButton);
        return "click";
      }
    }
  }
};

bool background_busy(gui::MainWindow& w) {
  return w.analyses()->busy() || w.unshard_panel()->loading() || w.unshard_panel()->timeline_pending();
}

// Opens `path` in a fresh main window and runs `actions` random actions on it.
void soak(const std::string& path, const std::string& label, std::uint64_t seed, long actions) {
  const double max_action_ms = static_cast<double>(env_long("SHARDSCOPE_SOAK_MAX_ACTION_MS", 250));
  const long rss_growth_mb = env_long("SHARDSCOPE_SOAK_RSS_GROWTH_MB", 400);
  const bool verbose = env_long("SHARDSCOPE_SOAK_VERBOSE", 0) != 0;  // every action with its cost
  gui::MainWindow window;
  window.set_interactive(false);
  window.resize(1600, 1000);
  window.show();
  REQUIRE(QTest::qWaitForWindowExposed(&window));
  QSignalSpy loaded(&window, &gui::MainWindow::profileLoaded);
  window.open_file(QString::fromStdString(path));
  REQUIRE(loaded.wait(120000));
  settle(1500);  // the memory view fills after the first frame; the Unshard tab reads in the background
  const Profile& p = *window.profile();

  Soak s{window, std::mt19937_64(seed), {}};
  for (const auto& t : p.stream_tracks)
    if (!t.events.empty() && s.queries.size() < 12) s.queries.push_back(QString::fromUtf8(p.strings[t.events[t.events.size() / 2].name].data()).left(12));
  REQUIRE(s.tw()->controller());

  Watchdog watchdog(std::chrono::seconds(env_long("SHARDSCOPE_SOAK_HANG_S", 60)));
  long rss_base = 0;
  double worst_ms = 0;
  std::string worst;
  for (long i = 0; i < actions; ++i) {
    if (i == 10) rss_base = rss_mb();  // after the first few actions built their caches
    const std::string prefix = label + " seed " + std::to_string(seed) + " action " + std::to_string(i) + ": ";
    watchdog.begin(prefix + "(starting)");
    const double cpu0 = thread_cpu_seconds();
    const std::string what = s.act();
    watchdog.begin(prefix + what);
    settle(memview::MemoryView::kRangeDelayMs + 80);
    const double ms = (thread_cpu_seconds() - cpu0) * 1e3;
    watchdog.end();
    if (ms > worst_ms) {
      worst_ms = ms;
      worst = what;
    }
    if (verbose) std::printf("%s%s: %.1f ms CPU, rss %ld MB\n", prefix.c_str(), what.c_str(), ms, rss_mb());
    INFO(prefix << what << ": main thread busy " << ms << " ms CPU; rss " << rss_mb() << " MB");
    REQUIRE(ms <= max_action_ms);
    // What the window keeps, not what a background job holds for a while (the critical path of
    // 1M kernels takes a few hundred MB on its worker thread and gives it back).
    if (rss_base > 0 && !background_busy(window)) REQUIRE(rss_mb() <= rss_base + rss_growth_mb);
  }
  std::printf("soak %s seed %llu: %ld actions, worst %.1f ms CPU (%s), rss %ld MB (after 10 actions %ld MB)\n", label.c_str(),
              static_cast<unsigned long long>(seed), actions, worst_ms, worst.c_str(), rss_mb(), rss_base);
  // Leave no analysis running into the window's destruction.
  CHECK(QTest::qWaitFor([&] { return !window.analyses()->busy(); }, 30000));
}

}  // namespace

TEST_CASE("soak: random working sessions on the bundled sample and a 1M-kernel profile stay responsive", "[views][gui][soak]") {
  app();
  const std::uint64_t seed = static_cast<std::uint64_t>(env_long("SHARDSCOPE_SOAK_SEED", 20261126));
  const long actions = env_long("SHARDSCOPE_SOAK_ACTIONS", 120);
  soak(test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb", "sample", seed, actions);
  const long big = env_long("SHARDSCOPE_SOAK_BIG_KERNELS", 1'000'000);
  if (big > 0) {
    test::TempDir dir;
    SyntheticSpec spec;
    spec.ranks = 2;
    spec.layers = 8;
    spec.min_kernels = big;
    write_synthetic_profile(dir.file("big.ssdb"), spec);
    soak(dir.file("big.ssdb"), "1M-kernel profile", seed + 1, actions);
  }
}
