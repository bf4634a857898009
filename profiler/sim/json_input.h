// Reading the simulator's JSON inputs (models, clusters, plans) with simdjson: every error names
// the file and the field path, and says what was expected.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>

namespace ss::sim {

// Parses `json` (from `where`) into a document owned by `parser`; throws ProfileError on bad JSON.
simdjson::dom::element parse_json(simdjson::dom::parser& parser, const std::string& json, const std::string& where);
std::string read_text_file(const std::string& path);  // throws ProfileError(Io)

[[noreturn]] void json_fail(const std::string& where, const std::string& path, const std::string& expected);

// Field accessors: absent -> nullopt / default; present but of the wrong type -> error.
std::optional<double> get_number(simdjson::dom::object o, const char* key, const std::string& where, const std::string& path);
std::optional<std::int64_t> get_int(simdjson::dom::object o, const char* key, const std::string& where, const std::string& path);
std::optional<std::string> get_string(simdjson::dom::object o, const char* key, const std::string& where, const std::string& path);
std::optional<bool> get_bool(simdjson::dom::object o, const char* key, const std::string& where, const std::string& path);
simdjson::dom::object as_object(simdjson::dom::element e, const std::string& where, const std::string& path);

}  // namespace ss::sim
