#include "profiler/import/kineto/kineto_parse.h"

#include <simdjson.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <map>
#include <utility>
#include <vector>

#include "profiler/import/common/input_file.h"
#include "profiler/import/import.h"

namespace ss::import::kineto {

namespace od = simdjson::ondemand;

namespace {

// simdjson_result<T> -> T without exceptions; false on error.
template <typename R, typename T>
bool unwrap(R& r, T& out) {
  if (r.error()) return false;
  out = std::move(r).value_unsafe();
  return true;
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  if (a == b) return true;  // the usual case: a trace writes its categories as the importer spells them
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

// The key's text as it appears in the file (no copy). Keys with escapes never match ours, so
// they come back empty and their value is skipped.
std::string_view raw_key(od::field& f) {
  const char* p = f.key().raw();
  std::size_t n = 0;
  while (p[n] != '"') {
    if (p[n] == '\\') return {};
    ++n;
  }
  return {p, n};
}

// `key == lit` on the key's raw text (what od::field::key().raw() points at, just after the
// opening quote), without first scanning for its end: the key is `lit` exactly when its text is
// `lit` followed by the closing quote. The per-event key dispatch runs ~25 times per event, and
// the scan for the quote was ~10% of the parse. The literal's length is known at compile time,
// so the compare is inline. A key with escapes matches none, as with raw_key. Reads at most N
// bytes from `key`: inside the document or its SIMDJSON padding.
template <std::size_t N>
inline bool raw_key_is(const char* key, const char (&lit)[N]) {
  return std::memcmp(key, lit, N - 1) == 0 && key[N - 1] == '"';
}

// Visits every field of an object as (key, value). A malformed field throws; the caller reports
// it with the document offset.
template <typename Fn>
void for_each_field(od::object& o, Fn&& fn) {
  for (auto fr : o) {
    od::field f;
    if (!unwrap(fr, f)) throw simdjson::simdjson_error(fr.error());
    fn(raw_key(f), f.value());
  }
}

// Calls per_object(object) for every object element of an array value. Anything that is not an
// array, and elements that are not objects, are skipped (optional metadata: never an error).
template <typename PerObject>
void for_each_object(od::value v, PerObject&& per_object) {
  od::array a;
  if (v.get_array().get(a)) return;
  for (auto el : a) {
    od::object o;
    if (el.get_object().get(o)) continue;
    per_object(o);
  }
}

// An integer from a number (int, uint or integral double) or a numeric string.
bool read_int(od::value v, std::int64_t& out) {
  od::json_type t;
  if (v.type().get(t)) return false;
  if (t == od::json_type::number) {
    std::int64_t i;
    if (!v.get_int64().get(i)) {
      out = i;
      return true;
    }
    std::uint64_t u;
    if (!v.get_uint64().get(u)) {
      out = static_cast<std::int64_t>(u);  // addresses above 2^63 keep their bits
      return true;
    }
    double d;
    if (!v.get_double().get(d) && std::isfinite(d) && std::fabs(d) < 9.0e18) {
      out = static_cast<std::int64_t>(std::llround(d));
      return true;
    }
    return false;
  }
  if (t == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return false;
    std::int64_t i = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
    if (ec != std::errc()) return false;
    out = i;
    return true;
  }
  return false;
}

// pid / tid: numbers, or strings such as "stream 7" (old GPU lanes) or "Spans" (no id).
bool read_id(od::value v, std::int64_t& out) {
  od::json_type t;
  if (v.type().get(t)) return false;
  if (t == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return false;
    std::size_t i = 0;
    while (i < s.size() && !(s[i] >= '0' && s[i] <= '9')) ++i;
    if (i == s.size()) return false;
    std::int64_t x = 0;
    auto [p, ec] = std::from_chars(s.data() + i, s.data() + s.size(), x);
    if (ec != std::errc()) return false;
    out = x;
    return true;
  }
  return read_int(v, out);
}

bool read_string(od::value v, std::string_view& out) { return !v.get_string().get(out); }

// A field whose value repeats from event to event (pid, tid, a [memory] event's device): its last
// raw token and what it read as. The same text reads the same, so it is not converted again
// (a number's conversion is ~100 instructions, a CPU trace has 250,000 events per rank file).
struct RepeatedField {
  std::string_view token;  // into the JSON text, which outlives the parse
  std::int64_t value = 0;
  bool ok = false;
  template <typename Read>
  bool read(od::value v, std::int64_t& out, Read&& convert) {
    const std::string_view tok = v.raw_json_token();
    if (tok != token) {
      token = tok;
      ok = convert(v, value);
    }
    if (ok) out = value;
    return ok;
  }
};

void read_triple(od::value v, std::int32_t& x, std::int32_t& y, std::int32_t& z) {
  od::array a;
  if (v.get_array().get(a)) return;
  std::int32_t* dst[3] = {&x, &y, &z};
  int i = 0;
  for (auto el : a) {
    od::value ev;
    if (!unwrap(el, ev)) return;
    std::int64_t n = 0;
    if (i < 3 && read_int(ev, n)) *dst[i] = static_cast<std::int32_t>(n);
    ++i;
  }
}

// Elements of the first two tensors in "Input Dims": [[394241]] -> 394241; [[]] -> 1 (a scalar).
// c10d ops list (output, input): [[262912], [131456], [], []]. A TensorList argument counts its
// tensors' elements: [[[2, 32, 64]], ...] -> 4096. `second` stays untouched when absent.
bool read_first_numels(od::value v, std::int64_t& first, std::int64_t& second) {
  od::array outer;
  if (v.get_array().get(outer)) return false;
  int i = 0;
  for (auto tensor : outer) {
    od::array dims;
    if (tensor.get_array().get(dims)) return i > 0;
    std::int64_t n = 1;
    bool list = false;  // a TensorList argument ([[[2, 32, 64]], ...]: c10d::allreduce_, send, recv_): its tensors' sum
    std::int64_t sum = 0;
    for (auto d : dims) {
      od::value dv;
      std::int64_t x = 0;
      if (!unwrap(d, dv)) return i > 0;
      od::array inner;
      if (!dv.get_array().get(inner)) {
        if (!list && n != 1) return i > 0;  // dims then a tensor: not a shape
        list = true;
        std::int64_t m = 1;
        for (auto id : inner) {
          od::value iv;
          if (!unwrap(id, iv) || !read_int(iv, x) || x < 0) return i > 0;
          if (x != 0 && m > INT64_MAX / x) return i > 0;
          m *= x;
        }
        if (sum > INT64_MAX - m) return i > 0;
        sum += m;
        continue;
      }
      if (list || !read_int(dv, x) || x < 0) return i > 0;
      if (x != 0 && n > INT64_MAX / x) return i > 0;
      n *= x;
    }
    (i == 0 ? first : second) = list ? sum : n;
    if (++i == 2) break;
  }
  return i > 0;
}

bool read_first_string(od::value v, std::string_view& out) {
  od::array a;
  if (v.get_array().get(a)) return false;
  for (auto el : a) return !el.get_string().get(out);
  return false;
}

}  // namespace

Cat classify_category(std::string_view c) {
  // Only names of the category's length can match: most events compare one or two names, not
  // the whole list in order (the ninth, cpu_op, is most of a CPU trace's events).
  switch (c.size()) {
    case 4: return iequals(c, "ac2g") ? Cat::Flow : Cat::Other;
    case 6:
      if (iequals(c, "cpu_op")) return Cat::CpuOp;
      if (iequals(c, "kernel")) return Cat::Kernel;
      if (iequals(c, "memcpy")) return Cat::Memcpy;
      if (iequals(c, "memset")) return Cat::Memset;
      if (iequals(c, "driver")) return Cat::Runtime;
      if (iequals(c, "python")) return Cat::PythonFunction;
      if (iequals(c, "fwdbwd")) return Cat::Flow;
      return Cat::Other;
    case 7: return iequals(c, "runtime") ? Cat::Runtime : Cat::Other;
    case 8: return iequals(c, "operator") ? Cat::CpuOp : Cat::Other;
    case 10:
      if (iequals(c, "gpu_memcpy")) return Cat::Memcpy;
      return iequals(c, "gpu_memset") ? Cat::Memset : Cat::Other;
    case 11: return iequals(c, "cuda_driver") ? Cat::Runtime : Cat::Other;
    case 12: return iequals(c, "cuda_runtime") ? Cat::Runtime : Cat::Other;
    case 15:
      if (iequals(c, "user_annotation")) return Cat::UserAnnotation;
      return iequals(c, "python_function") ? Cat::PythonFunction : Cat::Other;
    case 16:
      if (iequals(c, "async_cpu_to_gpu")) return Cat::Flow;
      return iequals(c, "forward_backward") ? Cat::Flow : Cat::Other;
    case 17: return iequals(c, "cpu_instant_event") ? Cat::CpuInstant : Cat::Other;
    case 19: return iequals(c, "gpu_user_annotation") ? Cat::GpuUserAnnotation : Cat::Other;
    default: return Cat::Other;
  }
}

bool parse_us_token_to_ns(std::string_view tok, std::int64_t& ns) {
  while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\n' || tok.back() == '\r' || tok.back() == '\t'))
    tok.remove_suffix(1);
  if (tok.empty()) return false;
  const char* p = tok.data();
  const char* const end = p + tok.size();
  const bool neg = *p == '-';
  p += neg;
  auto digit = [](char c, unsigned& d) { return (d = static_cast<unsigned char>(c) - unsigned{'0'}) <= 9; };
  // Exact path: integer microseconds below 9e15 (unix-epoch us fit), then up to 3 (rounded)
  // decimals. A double would be off by up to 128 ns at epoch-scale values. Up to 16 digits are
  // summed without a check per digit (below 1e16, no overflow); a 17th, or 9e15 or more, is not exact.
  constexpr std::int64_t kMaxWhole = 9'000'000'000'000'000;
  const char* const first = p;
  const char* const stop = end - p > 16 ? p + 16 : end;
  std::int64_t whole = 0;
  unsigned d = 0;
  for (; p != stop && digit(*p, d); ++p) whole = whole * 10 + d;
  bool exact = p != first && whole < kMaxWhole && !(p != end && digit(*p, d));
  std::int64_t frac = 0;
  if (exact && p != end && *p == '.') {
    ++p;
    int fd = 0;
    int round_digit = -1;
    for (; p != end && digit(*p, d); ++p, ++fd) {
      if (fd < 3)
        frac = frac * 10 + d;
      else if (fd == 3)
        round_digit = static_cast<int>(d);
    }
    if (fd == 0) exact = false;
    for (int k = fd; k < 3; ++k) frac *= 10;
    if (round_digit >= 5) ++frac;
  }
  if (exact && p == end) {
    const std::int64_t v = whole * 1000 + frac;
    ns = neg ? -v : v;
    return true;
  }
  // Exponents, very long integers: through double (ns precision is not kept there anyway).
  std::string s(tok);
  char* send = nullptr;
  const double dv = std::strtod(s.c_str(), &send);
  if (send == s.c_str() || *send != '\0' || !std::isfinite(dv) || std::fabs(dv) > 9.0e15) return false;
  ns = static_cast<std::int64_t>(std::llround(dv * 1000.0));
  return true;
}

struct KinetoParser::Impl {
  od::parser parser;
  // A recycled trace's records: their allocations are reused, not faulted in afresh for each rank
  // file (a CPU trace's [memory] events each have a MemArgs).
  std::vector<RawEvent> spare_events;
  std::vector<CommArgs> spare_comms;
  std::vector<LaunchConfig> spare_launches;
  std::vector<MemArgs> spare_mems;
};

KinetoParser::KinetoParser() : impl_(std::make_unique<Impl>()) {}
KinetoParser::~KinetoParser() = default;

namespace {

class TraceReader {
 public:
  TraceReader(const std::string& json, const std::string& label, KinetoTrace& out,
              const std::function<void(std::uint64_t)>& progress)
      : json_(json), label_(label), t_(out), progress_(progress) {}

  [[noreturn]] void fail(std::uint64_t offset, const std::string& what) const {
    throw ImportError("'" + label_ + "': " + what + " (at byte " + std::to_string(offset) +
                      (is_gz_ ? " of the inflated JSON)" : ")"));
  }

  // simdjson's error `e` at the document's current place; a document that ends inside an object
  // or array is a cut file, where what to say is where it ends.
  [[noreturn]] void fail_json(od::document& doc, simdjson::error_code e) const {
    if (e == simdjson::INCOMPLETE_ARRAY_OR_OBJECT) fail(json_.size(), "invalid JSON: the file ends before the trace does (truncated?)");
    fail(offset_of(doc), std::string("invalid JSON: ") + simdjson::error_message(e));
  }

  std::uint64_t offset_of(od::document& doc) const {
    const char* loc = nullptr;
    if (!doc.current_location().get(loc) && loc >= json_.data() && loc <= json_.data() + json_.size())
      return static_cast<std::uint64_t>(loc - json_.data());
    return last_offset_;
  }

  void run(od::document& doc, bool inflated) {
    is_gz_ = inflated;
    od::json_type type;
    if (auto e = doc.type().get(type)) fail_json(doc, e);
    if (type == od::json_type::array) {
      // Chrome's "JSON Array Format": a bare list of events.
      od::array events = doc.get_array().value();
      read_events(doc, events);
      saw_events_ = true;
    } else if (type == od::json_type::object) {
      od::object top = doc.get_object().value();
      for (auto fr : top) {
        od::field f;
      if (!unwrap(fr, f)) throw simdjson::simdjson_error(fr.error());
        const std::string_view k = raw_key(f);
        od::value v = f.value();
        if (k == "traceEvents") {
          od::array events;
          if (v.get_array().get(events)) fail(offset_of(doc), "'traceEvents' is not an array");
          read_events(doc, events);
          saw_events_ = true;
        } else if (k == "distributedInfo") {
          read_distributed(v);
        } else if (k == "shardscope_pg_threads") {
          read_pg_threads(v);
        } else if (k == "deviceProperties") {
          read_devices(v);
        } else if (k == "baseTimeNanoseconds") {
          std::int64_t b = 0;
          if (!read_int(v, b)) fail(offset_of(doc), "'baseTimeNanoseconds' is not an integer");
          t_.base_ns = b;
        } else if (k == "displayTimeUnit") {
          std::string_view s;
          if (read_string(v, s)) t_.display_time_unit = std::string(s);
        }
      }
    } else {
      fail(0, "not a trace: the JSON document is not an object with 'traceEvents'");
    }
    const char* rest = nullptr;
    if (!doc.current_location().get(rest)) fail(offset_of(doc), "invalid JSON: trailing content after the document");
    if (!saw_events_)
      fail(0, "not a PyTorch profiler / Kineto trace: no 'traceEvents' array at the top level");
  }

 private:
  void read_distributed(od::value v) {
    od::object o;
    if (v.get_object().get(o)) return;
    for_each_field(o, [&](std::string_view k, od::value x) {
      std::int64_t n = 0;
      std::string_view s;
      if (k == "rank") {
        if (read_int(x, n) && n >= 0 && n < (1 << 24)) t_.rank = static_cast<int>(n);
      } else if (k == "world_size") {
        if (read_int(x, n) && n > 0 && n < (1 << 24)) t_.world_size = static_cast<int>(n);
      } else if (k == "backend") {
        if (read_string(x, s)) t_.backend = std::string(s);
      } else if (k == "pg_config") {
        read_pg_config(x);
      }
    });
  }

  // [{"pg_name": "1", "tids": [123, 124]}, ...]; entries that are not so are skipped.
  void read_pg_threads(od::value v) {
    for_each_object(v, [&](od::object& o) {
      std::string name;
      std::vector<std::int64_t> tids;
      for_each_field(o, [&](std::string_view k, od::value x) {
        std::int64_t n = 0;
        if (k == "pg_name") {
          read_pg_name(x, name);
        } else if (k == "tids") {
          od::array ta;
          if (x.get_array().get(ta)) return;
          for (auto te : ta) {
            od::value tv;
            if (unwrap(te, tv) && read_int(tv, n)) tids.push_back(n);
          }
        }
      });
      if (name.empty()) return;
      for (std::int64_t t : tids) t_.pg_threads.emplace_back(t, name);
    });
  }

  // A process group's name: a string, or a number (older traces).
  static void read_pg_name(od::value x, std::string& name) {
    std::string_view s;
    std::int64_t n = 0;
    if (read_string(x, s)) name = std::string(s);
    else if (read_int(x, n)) name = std::to_string(n);
  }

  void read_pg_config(od::value v) {
    for_each_object(v, [&](od::object& o) {
      ProcessGroupConfig pg;
      for_each_field(o, [&](std::string_view k, od::value x) {
        std::string_view s;
        std::int64_t n = 0;
        if (k == "pg_name") {
          read_pg_name(x, pg.name);
        } else if (k == "pg_desc") {
          if (read_string(x, s)) pg.desc = std::string(s);
        } else if (k == "backend_config") {
          if (read_string(x, s)) pg.backend = std::string(s);
        } else if (k == "pg_size") {
          if (read_int(x, n)) pg.size = n;
        } else if (k == "ranks") {
          od::array ra;
          if (x.get_array().get(ra)) return;
          std::string r = "[";
          for (auto re : ra) {
            od::value rv;
            if (!unwrap(re, rv) || !read_int(rv, n)) continue;
            if (r.size() > 1) r += ',';
            r += std::to_string(n);
          }
          pg.ranks = r + "]";
        }
      });
      t_.process_groups.push_back(std::move(pg));
    });
  }

  void read_devices(od::value v) {
    for_each_object(v, [&](od::object& o) {
      DeviceProps d;
      for_each_field(o, [&](std::string_view k, od::value x) {
        std::string_view s;
        if (k == "id") read_int(x, d.id);
        else if (k == "name") {
          if (read_string(x, s)) d.name = std::string(s);
        } else if (k == "totalGlobalMem") read_int(x, d.total_global_mem);
        else if (k == "numSms") read_int(x, d.num_sms);
        else if (k == "computeMajor") read_int(x, d.compute_major);
        else if (k == "computeMinor") read_int(x, d.compute_minor);
      });
      t_.devices.push_back(std::move(d));
    });
  }

  CommArgs& comm(RawEvent& e) {
    if (e.comm < 0) {
      e.comm = static_cast<std::int32_t>(t_.comms.size());
      t_.comms.emplace_back();
    }
    return t_.comms[static_cast<std::size_t>(e.comm)];
  }
  LaunchConfig& launch(RawEvent& e) {
    if (e.launch < 0) {
      e.launch = static_cast<std::int32_t>(t_.launches.size());
      t_.launches.emplace_back();
    }
    return t_.launches[static_cast<std::size_t>(e.launch)];
  }
  MemArgs& mem(RawEvent& e) {
    if (e.mem < 0) {
      e.mem = static_cast<std::int32_t>(t_.mems.size());
      t_.mems.emplace_back();
    }
    return t_.mems[static_cast<std::size_t>(e.mem)];
  }

  // Shapes are read only where they size a collective: `nccl:*` / `gloo:*` annotations and the
  // c10d ops that issue one (every other op's shapes would cost a record per event).
  static bool carries_comm_shapes(const RawEvent& e) {
    if (e.cat == Cat::UserAnnotation) return true;
    return e.cat == Cat::CpuOp && e.name.substr(0, 6) == "c10d::";
  }

  void read_args(od::value v, RawEvent& e) {
    od::object o;
    if (v.get_object().get(o)) return;
    for (auto fr : o) {
      od::field f;
      if (!unwrap(fr, f)) throw simdjson::simdjson_error(fr.error());
      const char* k = f.key().raw();
      od::value x = f.value();
      std::int64_t n = 0;
      std::string_view s;
      switch (k[0]) {
        case 'c':
          if (raw_key_is(k, "correlation")) read_int(x, e.correlation);
          break;
        case 'E':
          if (raw_key_is(k, "External id")) read_int(x, e.external_id);
          break;
        case 'd':
          if (raw_key_is(k, "device")) read_int(x, e.device);
          else if (raw_key_is(k, "dtype") && read_string(x, s)) comm(e).dtype = s;
          break;
        case 's':
          if (raw_key_is(k, "stream")) read_int(x, e.stream);
          else if (raw_key_is(k, "shared memory") && read_int(x, n)) launch(e).shared_mem_bytes = static_cast<std::int32_t>(n);
          break;
        case 'b':
          if (raw_key_is(k, "bytes")) read_int(x, e.bytes);
          else if (raw_key_is(k, "block")) {
            auto& l = launch(e);
            read_triple(x, l.block_x, l.block_y, l.block_z);
          }
          break;
        case 'g':
          if (raw_key_is(k, "grid")) {
            auto& l = launch(e);
            read_triple(x, l.grid_x, l.grid_y, l.grid_z);
          }
          break;
        case 'r':
          if (raw_key_is(k, "registers per thread") && read_int(x, n)) launch(e).registers_per_thread = static_cast<std::int32_t>(n);
          break;
        case 'C':
          if (raw_key_is(k, "Collective name") && read_string(x, s)) comm(e).collective_name = s;
          break;
        case 'I':
          if (raw_key_is(k, "In msg nelems")) {
            if (read_int(x, n)) comm(e).in_nelems = n;
          } else if (raw_key_is(k, "Input Dims") && carries_comm_shapes(e)) {
            std::int64_t second = kAbsent;
            if (read_first_numels(x, n, second)) {
              comm(e).input_numel = n;
              comm(e).input_numel2 = second;
            }
          } else if (raw_key_is(k, "Input type") && carries_comm_shapes(e)) {
            if (read_first_string(x, s)) comm(e).input_type = s;
          }
          break;
        case 'O':
          if (raw_key_is(k, "Out msg nelems") && read_int(x, n)) comm(e).out_nelems = n;
          break;
        case 'G':
          if (raw_key_is(k, "Group size") && read_int(x, n)) comm(e).group_size = n;
          break;
        case 'P':
          if (raw_key_is(k, "Process Group Name")) {
            if (read_string(x, s)) comm(e).pg_name = s;
            else if (read_int(x, n)) comm(e).pg_name = intern_number(n);
          } else if (raw_key_is(k, "Process Group Description") && read_string(x, s)) {
            comm(e).pg_desc = s;
          } else if (raw_key_is(k, "Process Group Ranks") && read_string(x, s)) {
            comm(e).pg_ranks = s;
          }
          break;
        case 'n':
          if (raw_key_is(k, "name")) read_string(x, e.arg_name);
          break;
        case 'F':
          if (raw_key_is(k, "Fwd thread id")) e.fwd_thread_arg = true;
          break;
        case 'A':
          if (raw_key_is(k, "Addr") && read_int(x, n)) mem(e).addr = n;
          break;
        case 'B':
          if (raw_key_is(k, "Bytes") && read_int(x, n)) mem(e).bytes = n;
          break;
        case 'T':
          if (raw_key_is(k, "Total Allocated") && read_int(x, n)) mem(e).total_allocated = n;
          break;
        case 'D':
          if (raw_key_is(k, "Device Id") && device_id_.read(x, n, read_int)) mem(e).device_id = n;
          else if (raw_key_is(k, "Device Type") && device_type_.read(x, n, read_int)) mem(e).device_type = n;
          break;
        default: break;
      }
    }
  }

  // A numeric process-group name kept alive as text for the trace's lifetime.
  std::string_view intern_number(std::int64_t n) {
    t_.owned_strings.push_back(std::make_unique<std::string>(std::to_string(n)));
    return *t_.owned_strings.back();
  }

  // Looked up without building a string: most events of a real trace are skipped (flows, runtime calls).
  void skip(std::string_view reason) { ++skip_counter(reason); }

  // Most skipped events (flow arrows, runtime calls: over 40 % of a real trace's events) give
  // one of a few literal reasons; their counters are found again by the literal's address, not
  // by string comparisons in the map. (Map nodes do not move, so the pointers stay valid.)
  template <std::size_t N>
  void skip(const char (&reason)[N]) {
    for (const auto& [text, counter] : literal_skips_)
      if (text == reason) {
        ++*counter;
        return;
      }
    std::int64_t& counter = skip_counter(std::string_view(reason, N - 1));
    if (literal_skips_.size() < 16) literal_skips_.emplace_back(reason, &counter);
    ++counter;
  }

  std::int64_t& skip_counter(std::string_view reason) {
    auto it = t_.skipped.find(reason);
    if (it == t_.skipped.end()) it = t_.skipped.emplace(std::string(reason), 0).first;
    return it->second;
  }

  void read_events(od::document& doc, od::array& events) {
    std::uint64_t count = 0;
    for (auto er : events) {
      const std::uint64_t offset = offset_of(doc);
      last_offset_ = offset;
      od::object o;
      if (auto err = er.get_object().get(o))
        fail(offset, std::string("event is not a JSON object: ") + simdjson::error_message(err));
      RawEvent& e = t_.events.emplace_back();  // built in place: no copy of the record when kept
      e.offset = offset;
      bool has_ts = false, has_dur = false, flow = false;
      for (auto fr : o) {
        od::field f;
        if (!unwrap(fr, f)) fail_json(doc, fr.error());
        const char* k = f.key().raw();
        od::value v = f.value();
        if (raw_key_is(k, "ph")) {
          std::string_view s;
          if (!read_string(v, s) || s.empty()) fail_field(doc, v, offset, "event field 'ph' is not a non-empty string");
          e.ph = s[0];
          // Flow arrows (a third of a real trace's events) are not imported: their other fields'
          // values are left unread (keep_or_count counts the event). Kineto writes "ph" first.
          // The loop still walks the fields, so the object's structure is checked as before.
          flow = e.ph == 's' || e.ph == 'f' || e.ph == 't';
        } else if (flow) {
          continue;
        } else if (raw_key_is(k, "cat")) {
          std::string_view s;
          if (read_string(v, s)) {
            e.cat_text = s;
            e.cat = classify_category(s);
          }
        } else if (raw_key_is(k, "name")) {
          if (!read_string(v, e.name)) fail_field(doc, v, offset, "event field 'name' is not a string");
          e.has_name = true;
        } else if (raw_key_is(k, "pid")) {
          pid_.read(v, e.pid, read_id);
        } else if (raw_key_is(k, "tid")) {
          tid_.read(v, e.tid, read_id);
        } else if (const bool ts = raw_key_is(k, "ts"); ts || raw_key_is(k, "dur")) {
          std::string_view tok;
          od::json_type jt;
          std::int64_t ns = 0;
          if (v.type().get(jt) || jt != od::json_type::number || (tok = v.raw_json_token()).empty() ||
              !parse_us_token_to_ns(tok, ns))
            fail_field(doc, v, offset, std::string("event field '") + (ts ? "ts" : "dur") + "' is not a number of microseconds");
          if (ts) {
            e.ts = ns;
            has_ts = true;
          } else {
            e.dur = ns;
            has_dur = true;
          }
        } else if (raw_key_is(k, "args")) {
          read_args(v, e);
        }
      }
      if (++count % 65536 == 0 && progress_) progress_(offset);
      if (!keep_or_count(e, has_ts, has_dur)) t_.events.pop_back();
    }
  }

  // A field of the wrong type, or no valid JSON value at all: say which.
  [[noreturn]] void fail_field(od::document& doc, od::value& v, std::uint64_t offset, const std::string& what) const {
    od::json_type jt;
    if (auto err = v.type().get(jt)) fail_json(doc, err);
    fail(offset, what);
  }

  void require(const RawEvent& e, bool ok, const char* what) const {
    if (!ok)
      fail(e.offset, std::string("event '") + std::string(e.name.substr(0, 80)) + "' (ph '" + std::string(1, e.ph ? e.ph : '?') +
                         "') has no '" + what + "'");
  }

  // Whether the event (already in place at the back of t_.events) is kept; one that is not is
  // counted as skipped and taken off by the caller.
  bool keep_or_count(RawEvent& e, bool has_ts, bool has_dur) {
    if (e.ph == 0) fail(e.offset, "event has no 'ph' (phase) field");
    if (e.ph == 'M') {
      if (e.name == "thread_name" && e.tid != kAbsent && !e.arg_name.empty())
        t_.thread_names.emplace_back(e.tid, std::string(e.arg_name));
      return false;
    }
    if (e.ph == 's' || e.ph == 'f' || e.ph == 't' || e.cat == Cat::Flow) {
      skip("flow arrow (ac2g/fwdbwd; kernels are linked by correlation id instead)");
      return false;
    }
    if (e.ph == 'X') {
      require(e, e.has_name, "name");
      require(e, has_ts, "ts");
      require(e, has_dur, "dur");
      if (e.dur < 0) fail(e.offset, "event '" + std::string(e.name.substr(0, 80)) + "' has a negative duration");
      switch (e.cat) {
        case Cat::Kernel:
        case Cat::Memcpy:
        case Cat::Memset:
        case Cat::GpuUserAnnotation:
          if (e.device == kAbsent) e.device = e.pid;
          if (e.stream == kAbsent) e.stream = e.tid;
          if (e.device == kAbsent || e.stream == kAbsent)
            fail(e.offset, "GPU event '" + std::string(e.name.substr(0, 80)) + "' has no device/stream (pid/tid)");
          return true;
        case Cat::Runtime:
          skip("CUDA runtime/driver call (used to attribute kernels, not stored)");
          return e.correlation != kAbsent && e.tid != kAbsent;
        case Cat::CpuOp:
        case Cat::UserAnnotation:
          require(e, e.tid != kAbsent, "tid");
          return true;
        case Cat::PythonFunction:
          if (e.name.rfind("nn.Module: ", 0) == 0 && e.tid != kAbsent) {
            return true;
          }
          skip("python_function (Python stack frame)");
          return false;
        default: break;
      }
      skip_category(e);
      return false;
    }
    if (e.ph == 'i' || e.ph == 'I') {
      require(e, has_ts, "ts");
      if (e.name == "[memory]") {
        if (e.tid == kAbsent) e.tid = 0;
        e.cat = Cat::CpuInstant;
        return true;
      }
      skip("instant event other than [memory]");
      return false;
    }
    skip(std::string("event phase '") + (std::isprint(static_cast<unsigned char>(e.ph)) ? std::string(1, e.ph) : "?") +
         "' not imported");
    return false;
  }

  void skip_category(const RawEvent& e) {
    std::string cat(e.cat_text.substr(0, 40));
    for (char& c : cat)
      if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
    if (e.cat == Cat::Missing) cat = "(none)";
    if (!t_.skipped.count("category '" + cat + "' not imported") && ++distinct_categories_ > 32) cat = "(other)";
    skip("category '" + cat + "' not imported");
  }

  const std::string& json_;
  const std::string& label_;
  KinetoTrace& t_;
  const std::function<void(std::uint64_t)>& progress_;
  std::uint64_t last_offset_ = 0;
  bool saw_events_ = false;
  bool is_gz_ = false;
  int distinct_categories_ = 0;
  std::vector<std::pair<const char*, std::int64_t*>> literal_skips_;  // skip(literal) -> its counter
  RepeatedField pid_, tid_, device_id_, device_type_;
};

}  // namespace

KinetoTrace KinetoParser::parse(const std::string& json, const std::string& label, bool inflated,
                                const std::function<void(std::uint64_t)>& progress) {
  KinetoTrace t;
  t.events = std::move(impl_->spare_events);
  t.events.clear();
  t.comms = std::move(impl_->spare_comms);
  t.launches = std::move(impl_->spare_launches);
  t.mems = std::move(impl_->spare_mems);
  // Real traces keep about one event per 300 bytes of JSON (8.6 MB: 27,000). Reserving that up
  // front, under huge pages, spares the vector's regrowth copies and most of its page faults;
  // the reserve only maps memory, pages are touched as events are kept.
  if (const std::size_t guess = json.size() / 300; t.events.capacity() < guess) {
    t.events.reserve(guess);
    advise_huge_pages(t.events.data(), t.events.capacity() * sizeof(RawEvent));
  }
  if (json.capacity() < json.size() + kInputPadding)
    throw ImportError("internal: input buffer without padding for '" + label + "'");
  simdjson::padded_string_view view(json.data(), json.size(), json.capacity());
  od::document doc;
  if (auto e = impl_->parser.iterate(view).get(doc)) {
    // A string never closed runs to the end of the file: a cut file, where it ends is what to say.
    if (e == simdjson::UNCLOSED_STRING)
      throw ImportError("'" + label + "': invalid JSON: the file ends inside a string, at byte " + std::to_string(json.size()) +
                        (inflated ? " of the inflated JSON" : "") + " (truncated?)");
    throw ImportError("'" + label + "': invalid JSON: " + simdjson::error_message(e) +
                      (e == simdjson::EMPTY ? " (the file is empty)" : " (found while indexing the document)"));
  }
  TraceReader r(json, label, t, progress);
  try {
    r.run(doc, inflated);
  } catch (const simdjson::simdjson_error& e) {
    r.fail_json(doc, e.error());
  }
  return t;
}

void KinetoParser::recycle(KinetoTrace&& trace) {
  impl_->spare_events = std::move(trace.events);
  impl_->spare_events.clear();
  impl_->spare_comms = std::move(trace.comms);
  impl_->spare_comms.clear();
  impl_->spare_launches = std::move(trace.launches);
  impl_->spare_launches.clear();
  impl_->spare_mems = std::move(trace.mems);
  impl_->spare_mems.clear();
}

}  // namespace ss::import::kineto
