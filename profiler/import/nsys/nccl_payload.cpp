#include "profiler/import/nsys/nccl_payload.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "profiler/import/nsys/nsys_db.h"

namespace ss::import::nsys {

namespace {

constexpr const char* kBytes = "Message size [bytes]";
constexpr const char* kComm = "NCCL communicator ID";
constexpr const char* kRank = "Rank";
constexpr const char* kNranks = "No. of ranks";

std::optional<std::uint64_t> read_le(std::string_view blob, std::size_t offset, std::size_t width) {
  if (width == 0 || width > 8 || offset + width > blob.size()) return std::nullopt;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i)
    v |= std::uint64_t(static_cast<unsigned char>(blob[offset + i])) << (8 * i);
  return v;
}

}  // namespace

void NcclPayloadSchemas::load(NsysDb& db) {
  schemas_.clear();
  if (!db.has_table("NVTX_PAYLOAD_SCHEMAS") || !db.has_table("NVTX_PAYLOAD_SCHEMA_ENTRIES")) return;
  for (const char* c : {"domainId", "schemaId", "payloadSize"})
    if (!db.has_column("NVTX_PAYLOAD_SCHEMAS", c)) return;
  for (const char* c : {"domainId", "schemaId", "name", "offset"})
    if (!db.has_column("NVTX_PAYLOAD_SCHEMA_ENTRIES", c)) return;
  // nsys may list a schema once per process that registered it: keep one per (domain, schema).
  sql::Stmt s(db.get(),
              "SELECT DISTINCT domainId, schemaId, payloadSize FROM NVTX_PAYLOAD_SCHEMAS"
              " WHERE payloadSize IS NOT NULL AND payloadSize > 0");
  // The first entry's offset is NULL in some exports (2026.2): it is 0.
  const std::string first = db.has_column("NVTX_PAYLOAD_SCHEMA_ENTRIES", "idx") ? "idx = 0" : "0";
  sql::Stmt e(db.get(),
              "SELECT DISTINCT name, CASE WHEN offset IS NULL AND " + first +
                  " THEN 0 ELSE offset END AS off FROM NVTX_PAYLOAD_SCHEMA_ENTRIES WHERE domainId = ? AND schemaId = ?"
                  " AND off IS NOT NULL ORDER BY off");
  while (s.step()) {
    Schema sc;
    sc.domain = s.col_int(0);
    sc.size = static_cast<std::size_t>(s.col_int(2));
    e.bind(1, s.col_int(0));
    e.bind(2, s.col_int(1));
    std::vector<std::pair<std::size_t, std::string>> entries;
    while (e.step()) {
      const std::int64_t off = e.col_int(1);
      if (off >= 0) entries.emplace_back(static_cast<std::size_t>(off), column_utf8(e.get(), 0));
    }
    e.reset();
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const std::size_t next = i + 1 < entries.size() ? entries[i + 1].first : sc.size;
      if (next > entries[i].first) sc.fields[entries[i].second] = Field{entries[i].first, std::min<std::size_t>(8, next - entries[i].first)};
    }
    schemas_.push_back(std::move(sc));
  }
}

bool is_comm_creation(std::string_view range_name) {
  return range_name.rfind("ncclCommInitRank", 0) == 0 || range_name.rfind("ncclCommSplit", 0) == 0;
}

NcclPayload NcclPayloadSchemas::decode_blob(std::int64_t domain, std::string_view blob, std::string_view range_name) const {
  NcclPayload p;
  const bool creation = is_comm_creation(range_name);
  auto field = [&](const char* name) -> std::optional<std::uint64_t> {
    std::optional<Field> found;
    for (const auto& sc : schemas_) {
      if (sc.domain != domain || sc.size != blob.size()) continue;
      const bool operation_schema = sc.fields.count(kBytes) != 0;
      if (operation_schema == creation) continue;  // a schema of the other kind
      auto it = sc.fields.find(name);
      if (it == sc.fields.end()) continue;
      if (found && (found->offset != it->second.offset || found->width != it->second.width)) return std::nullopt;
      found = it->second;
    }
    if (!found) return std::nullopt;
    return read_le(blob, found->offset, found->width);
  };
  if (auto v = field(kComm)) p.comm = *v;
  if (creation) {
    if (auto v = field(kRank)) p.rank = static_cast<std::int64_t>(*v);
    if (auto v = field(kNranks)) p.nranks = static_cast<std::int64_t>(*v);
  } else if (auto v = field(kBytes)) {
    p.bytes = static_cast<std::int64_t>(*v);
  }
  return p;
}

NcclPayload decode_json_payload(std::string_view json) {
  NcclPayload p;
  auto number_after = [&](std::string_view key) -> std::optional<std::uint64_t> {
    const std::string quoted = "\"" + std::string(key) + "\"";
    std::size_t k = json.find(quoted);
    if (k == std::string_view::npos) return std::nullopt;
    std::size_t i = k + quoted.size();
    while (i < json.size() && std::isspace(static_cast<unsigned char>(json[i]))) ++i;
    if (i >= json.size() || json[i] != ':') return std::nullopt;
    ++i;
    while (i < json.size() && (std::isspace(static_cast<unsigned char>(json[i])) || json[i] == '"')) ++i;
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(json.data() + i, json.data() + json.size(), v);
    if (ec != std::errc() || end == json.data() + i) return std::nullopt;
    return v;
  };
  if (auto v = number_after(kBytes)) p.bytes = static_cast<std::int64_t>(*v);
  if (auto v = number_after(kComm)) p.comm = *v;
  if (auto v = number_after(kRank)) p.rank = static_cast<std::int64_t>(*v);
  if (auto v = number_after(kNranks)) p.nranks = static_cast<std::int64_t>(*v);
  return p;
}

}  // namespace ss::import::nsys
