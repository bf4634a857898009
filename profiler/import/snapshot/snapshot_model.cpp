#include "profiler/import/snapshot/snapshot_model.h"

#include <map>

namespace ss::import::snapshot {

namespace {

using pickle::PickleError;
using pickle::Value;

constexpr std::int64_t kMaxSize = std::int64_t(1) << 50;

class Reader {
 public:
  Reader(const pickle::Document& doc, const std::string& label)
      : label_(label), budget_(16 * static_cast<std::uint64_t>(doc.arena.size()) + 100000) {}

  Snapshot read(const Value& root) {
    Snapshot s;
    out_ = &s;
    const Value* segments = &root;
    if (root.kind == Value::Kind::Dict) {
      segments = root.get("segments");
      if (const Value* t = root.get("device_traces")) {
        for (const Value* dev : list(*t, "device_traces")) {
          s.device_traces.emplace_back();
          for (const Value* e : list(*dev, "device_traces[]")) s.device_traces.back().push_back(entry(*e));
        }
      }
      if (const Value* a = root.get("allocator_settings"); a && a->kind == Value::Kind::Dict) settings(*a);
      if (const Value* a = root.get("external_annotations"); a && a->kind != Value::Kind::None)
        for (const Value* e : list(*a, "external_annotations")) annotation(*e);
      if (!segments && !root.get("device_traces"))
        fail("a dict without 'segments' or 'device_traces': not a PyTorch memory snapshot");
    } else if (root.kind != Value::Kind::List) {
      fail(std::string("the pickle holds a ") + pickle::kind_name(root.kind) +
           ", not a memory snapshot (a dict with 'segments' and 'device_traces')");
    }
    if (segments && segments->kind != Value::Kind::None)
      for (const Value* seg : list(*segments, "segments")) s.segments.push_back(segment(*seg));
    return s;
  }

 private:
  const std::string& label_;
  std::uint64_t budget_;
  Snapshot* out_ = nullptr;
  std::map<const Value*, int> frame_list_ids_;

  [[noreturn]] void fail(const std::string& what) const { throw PickleError("'" + label_ + "': " + what); }

  void spend(std::size_t n) {
    if (n > budget_)
      fail("the snapshot's shared references expand to more values than a snapshot of this size can hold"
           " (a hostile pickle); refused");
    budget_ -= n;
  }
  const std::vector<const Value*>& list(const Value& v, const char* what) {
    if (!v.is_list_like()) fail(std::string("'") + what + "' is a " + pickle::kind_name(v.kind) + ", expected a list");
    spend(v.items.size() + 1);
    return v.items;
  }
  const Value& dict(const Value& v, const char* what) {
    if (v.kind != Value::Kind::Dict) fail(std::string("an entry of '") + what + "' is a " + pickle::kind_name(v.kind) + ", expected a dict");
    spend(v.dict_size() + 1);
    return v;
  }
  // An int field: absent / None gives `fallback`; a bool is an int, as in Python. Sizes
  // (non_negative) are capped at 1 PiB, far above any device, so that sums cannot overflow.
  std::int64_t integer(const Value& d, const char* key, std::int64_t fallback = 0, bool non_negative = false) {
    const Value* v = d.get(key);
    if (!v || v->kind == Value::Kind::None) return fallback;
    if (v->kind == Value::Kind::BigInt) fail(std::string("'") + key + "' does not fit in 64 bits");
    if (v->kind != Value::Kind::Int && v->kind != Value::Kind::Bool)
      fail(std::string("'") + key + "' is a " + pickle::kind_name(v->kind) + ", expected an int");
    if (non_negative && v->integer < 0) fail(std::string("'") + key + "' is negative (" + std::to_string(v->integer) + ")");
    if (non_negative && v->integer > kMaxSize) fail(std::string("'") + key + "' is larger than 1 PiB (" + std::to_string(v->integer) + ")");
    return v->integer;
  }
  std::optional<std::int64_t> opt_integer(const Value& d, const char* key) {
    const Value* v = d.get(key);
    if (!v || v->kind == Value::Kind::None) return std::nullopt;
    return integer(d, key);
  }
  // A frame's line: an int64, or an unsigned 64-bit value kept as its 64 bits (2^64 - 1, the
  // unknown line, is kUnknownLine). Anything wider is still refused by integer().
  std::int64_t line(const Value& d) {
    const Value* v = d.get("line");
    std::uint64_t u = 0;
    if (v && v->kind == Value::Kind::BigInt && v->as_uint64(u)) return static_cast<std::int64_t>(u);
    return integer(d, "line");
  }
  std::string text(const Value& d, const char* key) {
    const Value* v = d.get(key);
    if (!v || v->kind == Value::Kind::None) return {};
    if (v->kind != Value::Kind::Str) fail(std::string("'") + key + "' is a " + pickle::kind_name(v->kind) + ", expected a str");
    return v->text;
  }
  int frames(const Value& d) {
    const Value* v = d.get("frames");
    if (!v || v->kind == Value::Kind::None) return -1;
    if (auto it = frame_list_ids_.find(v); it != frame_list_ids_.end()) return it->second;
    std::vector<Frame> fl;
    for (const Value* f : list(*v, "frames")) {
      const Value& fd = dict(*f, "frames");
      fl.push_back({text(fd, "filename"), line(fd), text(fd, "name")});
    }
    const int id = static_cast<int>(out_->frame_lists.size());
    out_->frame_lists.push_back(std::move(fl));
    frame_list_ids_.emplace(v, id);
    return id;
  }

  TraceEntry entry(const Value& v) {
    const Value& d = dict(v, "device_traces");
    static const std::map<std::string, Action, std::less<>> kActions = {
        {"alloc", Action::Alloc},
        {"free_requested", Action::FreeRequested},
        {"free_completed", Action::FreeCompleted},
        {"segment_alloc", Action::SegmentAlloc},
        {"segment_free", Action::SegmentFree},
        {"segment_map", Action::SegmentMap},
        {"segment_unmap", Action::SegmentUnmap},
        {"snapshot", Action::Snapshot},
        {"oom", Action::Oom}};
    TraceEntry e;
    const std::string action = text(d, "action");
    if (auto it = kActions.find(action); it != kActions.end())
      e.action = it->second;
    else
      ++out_->unknown_actions;
    e.addr = integer(d, "addr");
    e.size = integer(d, "size", 0, true);
    e.stream = integer(d, "stream");
    e.time_us = opt_integer(d, "time_us");
    e.frames = frames(d);
    e.category = text(d, "category");
    return e;
  }

  Segment segment(const Value& v) {
    const Value& d = dict(v, "segments");
    Segment s;
    s.device = integer(d, "device");
    s.address = integer(d, "address");
    s.total_size = integer(d, "total_size", 0, true);
    s.allocated_size = integer(d, "allocated_size", 0, true);
    s.active_size = integer(d, "active_size", 0, true);
    s.stream = integer(d, "stream");
    s.segment_type = text(d, "segment_type");
    // Blocks tile the segment in order; a block without an address (older snapshots, and
    // _profile_to_snapshot) starts where the previous one ended, as PyTorch computes it.
    std::int64_t next = s.address;
    if (const Value* bl = d.get("blocks"); bl && bl->kind != Value::Kind::None) {
      for (const Value* b : list(*bl, "blocks")) {
        const Value& bd = dict(*b, "blocks");
        Block k;
        k.address = integer(bd, "address", next);
        k.size = integer(bd, "size", 0, true);
        k.requested_size = integer(bd, "requested_size", k.size, true);
        k.state = text(bd, "state");
        k.frames = frames(bd);
        // Wrapping arithmetic on hostile addresses is harmless here: addresses are only compared.
        next = static_cast<std::int64_t>(static_cast<std::uint64_t>(k.address) + static_cast<std::uint64_t>(k.size));
        s.blocks.push_back(std::move(k));
      }
    }
    return s;
  }

  // Scalars only, a few short ones: the meta table is a summary, not a copy of the file.
  void settings(const Value& d) {
    spend(d.dict_size() + 1);
    for (std::size_t i = 0; i < d.dict_size() && out_->allocator_settings.size() < 64; ++i) {
      const Value& k = d.key(i);
      const Value& v = d.value(i);
      if (k.kind != Value::Kind::Str || k.text.size() > 128) continue;
      std::string text;
      switch (v.kind) {
        case Value::Kind::Str: text = v.text.substr(0, 1024); break;
        case Value::Kind::Int: text = std::to_string(v.integer); break;
        case Value::Kind::Bool: text = v.boolean ? "True" : "False"; break;
        case Value::Kind::Float: text = std::to_string(v.real); break;
        default: continue;
      }
      out_->allocator_settings.emplace_back(k.text, std::move(text));
    }
  }

  void annotation(const Value& v) {
    const Value& d = dict(v, "external_annotations");
    Annotation a;
    a.device = integer(d, "device");
    a.time_us = opt_integer(d, "time_us");
    a.name = text(d, "name");
    const std::string stage = text(d, "stage");
    if (stage != "START" && stage != "END") return;  // other metadata: not a record_function range
    a.start = stage == "START";
    out_->annotations.push_back(std::move(a));
  }
};

}  // namespace

Snapshot read_snapshot(const pickle::Document& doc, const std::string& label) {
  if (!doc.root) throw PickleError("'" + label + "': empty pickle");
  return Reader(doc, label).read(*doc.root);
}

}  // namespace ss::import::snapshot
