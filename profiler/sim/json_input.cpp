#include "profiler/sim/json_input.h"

#include <fstream>
#include <sstream>

#include "storage/errors.h"

namespace ss::sim {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ProfileError(ProfileErrorKind::Io, path + ": cannot open for reading");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw ProfileError(ProfileErrorKind::Io, path + ": read error");
  return s.str();
}

void json_fail(const std::string& where, const std::string& path, const std::string& expected) {
  throw ProfileError(ProfileErrorKind::MalformedTable,
                     where + ": " + (path.empty() ? std::string("top level") : path) + ": expected " + expected);
}

simdjson::dom::element parse_json(simdjson::dom::parser& parser, const std::string& json, const std::string& where) {
  simdjson::dom::element e;
  auto err = parser.parse(json).get(e);
  if (err) {
    throw ProfileError(ProfileErrorKind::MalformedTable,
                       where + ": invalid JSON (" + simdjson::error_message(err) + ")");
  }
  return e;
}

simdjson::dom::object as_object(simdjson::dom::element e, const std::string& where, const std::string& path) {
  simdjson::dom::object o;
  if (e.get_object().get(o)) json_fail(where, path, "an object");
  return o;
}

namespace {
std::string join(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }
}  // namespace

std::optional<double> get_number(simdjson::dom::object o, const char* key, const std::string& where,
                                 const std::string& path) {
  simdjson::dom::element e;
  if (o[key].get(e)) return std::nullopt;
  double d;
  if (e.get_double().get(d)) {
    std::int64_t i;
    if (e.get_int64().get(i)) {
      std::uint64_t u;
      if (e.get_uint64().get(u)) json_fail(where, join(path, key), "a number");
      return static_cast<double>(u);
    }
    return static_cast<double>(i);
  }
  return d;
}

std::optional<std::int64_t> get_int(simdjson::dom::object o, const char* key, const std::string& where,
                                    const std::string& path) {
  simdjson::dom::element e;
  if (o[key].get(e)) return std::nullopt;
  std::int64_t i;
  if (e.get_int64().get(i)) {
    double d;
    if (e.get_double().get(d) || d != static_cast<double>(static_cast<std::int64_t>(d)))
      json_fail(where, join(path, key), "an integer");
    return static_cast<std::int64_t>(d);
  }
  return i;
}

std::optional<std::string> get_string(simdjson::dom::object o, const char* key, const std::string& where,
                                      const std::string& path) {
  simdjson::dom::element e;
  if (o[key].get(e)) return std::nullopt;
  std::string_view s;
  if (e.get_string().get(s)) json_fail(where, join(path, key), "a string");
  return std::string(s);
}

std::optional<bool> get_bool(simdjson::dom::object o, const char* key, const std::string& where,
                             const std::string& path) {
  simdjson::dom::element e;
  if (o[key].get(e)) return std::nullopt;
  bool b;
  if (e.get_bool().get(b)) json_fail(where, join(path, key), "true or false");
  return b;
}

}  // namespace ss::sim
