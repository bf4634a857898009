// The timeline's rows on a profile's first screen (issue 24): per rank the steps, module lanes,
// compute and communication first; the operators folded behind one row that opens them; rows
// folded until every rank's communication fits the height, on the real 2-rank CPU sample and an
// 8-rank profile; a click on a folded group's or rank's first row opens it.
#include <catch2/catch.hpp>

#include <map>

#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "tests/support/test_paths.h"
#include "views/timeline/analysis.h"
#include "views/timeline/label_layout.h"
#include "views/timeline/timeline_controller.h"

using namespace ss;
using namespace ss::timeline;

namespace {

bool is_comm(const Profile& p, const Track& t) {
  return t.kind == TrackKind::Stream && p.stream_tracks[static_cast<std::size_t>(t.index)].kind == StreamKind::Nccl;
}

// Every communication row of every rank is laid out, open, and inside the visible height.
void check_comm_on_screen(const TimelineController& c, float height) {
  std::map<int, int> shown;
  for (std::size_t i = 0; i < c.tracks().size(); ++i) {
    const Track& t = c.tracks()[i];
    if (!is_comm(c.profile(), t)) continue;
    INFO(t.label);
    CHECK(t.laid_out());
    CHECK_FALSE(t.collapsed);
    const float y = c.track_y(static_cast<std::int32_t>(i));
    CHECK(y >= kRulerHeight);
    CHECK(y + t.height() <= height);
    ++shown[t.rank];
  }
  CHECK(shown.size() == c.profile().ranks.size());
}

}  // namespace

TEST_CASE("first screen of the real CPU sample: per rank steps, modules, compute, gloo; operators folded", "[views][timeline]") {
  const Profile p = load_profile(test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb");
  TimelineController c(p);
  c.set_size(1400, 480);  // the timeline's share of a 1600x1000 window
  CHECK(c.fit_rows_to_height() > 0);
  check_comm_on_screen(c, 480);
  // Rank 0's rows in reading order: steps, modules, ..., compute, gloo, ..., operators last.
  std::vector<const Track*> r0;
  for (const Track& t : c.tracks())
    if (t.rank == 0) r0.push_back(&t);
  REQUIRE(r0.size() > 5);
  CHECK(r0[0]->kind == TrackKind::Steps);
  CHECK(r0[1]->label == "rank 0 modules t1");
  CHECK(r0[1]->laid_out());
  CHECK_FALSE(r0[1]->collapsed);
  CHECK(r0.back()->label.find("operators") != std::string::npos);
  // The operators of the training thread: one group, its first row laid out, the rest hidden.
  std::size_t head = c.tracks().size();
  for (std::size_t i = 0; i < c.tracks().size() && head == c.tracks().size(); ++i)
    if (c.tracks()[i].rank == 0 && c.tracks()[i].group_size > 1) head = i;
  REQUIRE(head < c.tracks().size());
  const Track& h = c.tracks()[head];
  CHECK(h.label.find("rank 0 operators t1 (") == 0);
  int hidden = 0;
  for (const Track& t : c.tracks()) hidden += t.group == h.group && t.hidden;
  CHECK(hidden == h.group_size - 1);
  CHECK(h.group_size >= 8);  // the operators: 8-odd packed rows (20-odd nesting depths)
  // A click on its label opens the group; another folds it again.
  c.tracks()[head].collapsed = false;
  c.set_scroll_y(0);
  const float y = c.track_y(static_cast<std::int32_t>(head));
  REQUIRE(y >= kRulerHeight);
  c.set_size(1400, 4000);  // tall enough to reach the row whatever else is open
  const float y_tall = c.track_y(static_cast<std::int32_t>(head));
  CHECK(c.mouse_press(20, y_tall + 2, MouseButton::Left, false));
  hidden = 0;
  for (const Track& t : c.tracks()) hidden += t.group == h.group && t.hidden;
  CHECK(hidden == 0);
  CHECK(c.mouse_press(20, y_tall + 2, MouseButton::Left, false));
  hidden = 0;
  for (const Track& t : c.tracks()) hidden += t.group == h.group && t.hidden;
  CHECK(hidden == h.group_size - 1);
}

TEST_CASE("first screen of an 8-rank profile: every rank's communication fits; a folded rank opens with a click", "[views][timeline]") {
  test::TempDir dir;
  SyntheticSpec spec;
  spec.ranks = 8;
  spec.layers = 4;
  write_synthetic_profile(dir.file("p8.ssdb"), spec);
  const Profile p = load_profile(dir.file("p8.ssdb"));
  {
    TimelineController fits(p);
    fits.set_size(1400, 480);
    fits.fit_rows_to_height();
    check_comm_on_screen(fits, 480);
    CHECK(total_tracks_height(fits.tracks()) <= 480 - kRulerHeight);
  }
  // Lower still, collapsing is not enough: each rank folds to its first row (which heads it), its
  // compute and its communication; a click unfolds that rank.
  TimelineController c(p);
  c.set_size(1400, 300);
  c.fit_rows_to_height();
  check_comm_on_screen(c, 300);
  std::size_t head = c.tracks().size();
  for (std::size_t i = 0; i < c.tracks().size(); ++i)
    if (c.tracks()[i].rank_head && c.tracks()[i].rank == 3) head = i;
  REQUIRE(head < c.tracks().size());
  CHECK_FALSE(c.tracks()[head].rank_open);
  int folded = 0;
  for (const Track& t : c.tracks()) folded += t.rank == 3 && t.folded;
  CHECK(folded > 0);
  c.tracks()[head].collapsed = false;
  const float y = c.track_y(static_cast<std::int32_t>(head));
  REQUIRE(y >= kRulerHeight);
  CHECK(c.mouse_press(20, y + 2, MouseButton::Left, false));
  CHECK(c.tracks()[head].rank_open);
  folded = 0;
  for (const Track& t : c.tracks()) folded += t.rank == 3 && t.folded;
  CHECK(folded == 0);
  // Selecting an event on a folded rank's row unfolds that rank.
  std::size_t other = c.tracks().size();
  for (std::size_t i = 0; i < c.tracks().size() && other == c.tracks().size(); ++i)
    if (c.tracks()[i].rank == 5 && c.tracks()[i].folded && c.tracks()[i].kind == TrackKind::Ranges) other = i;
  REQUIRE(other < c.tracks().size());
  const Track& t = c.tracks()[other];
  c.select({TrackKind::Ranges, t.index, 0}, true);
  CHECK(c.tracks()[other].laid_out());
}

TEST_CASE("find: a record_function range around the collective of the same name is one match, not two", "[views][timeline]") {
  const Profile p = load_profile(test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb");
  std::size_t kernels = 0;
  for (const auto& t : p.stream_tracks)
    for (const auto& e : t.events) kernels += p.strings[e.name] == "gloo:all_gather";
  REQUIRE(kernels == 90);
  const auto found = find_events(p, "gloo:all_gather");
  CHECK(found.size() == kernels);  // was 180: the range on the gloo thread matched too
  for (const auto& ref : found) CHECK(ref.kind == TrackKind::Stream);
  // Steps through them one by one in time order.
  for (std::size_t i = 1; i < found.size(); ++i) CHECK(event_info(p, found[i - 1]).start <= event_info(p, found[i]).start);
  // A name only ranges carry is still found on them (module ranges).
  const auto modules = find_events(p, "layers.2.attention.wq");
  REQUIRE_FALSE(modules.empty());
  for (const auto& ref : modules) CHECK(ref.kind == TrackKind::Ranges);
}

TEST_CASE("row labels too long for the label column keep their start and their end", "[views][timeline]") {
  const auto chars = [](const std::string& s) { return static_cast<float>(s.size()); };  // one unit per character
  CHECK(elide_middle("rank 0 steps", 20, chars) == "rank 0 steps");
  const std::string long_label = "+ rank 0 operators t1 (10 rows)";
  const std::string e = elide_middle(long_label, 20, chars);
  CHECK(e.size() <= 20);
  CHECK(e.find("..") != std::string::npos);
  CHECK(e.rfind("+ rank 0", 0) == 0);               // the rank stays readable
  CHECK(e.substr(e.size() - 5) == "rows)");          // and what ends it
  CHECK(elide_middle(long_label, 2, chars).size() <= 3);
}
