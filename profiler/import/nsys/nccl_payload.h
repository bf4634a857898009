// NCCL NVTX payloads in an nsys export. NCCL (>= 2.18) attaches an extended payload to its API
// ranges: {comm id, message size in bytes, peer/root/op} or, for ncclCommInitRank, {comm, nranks,
// rank, cuda device}. nsys writes the schemas to NVTX_PAYLOAD_SCHEMAS / NVTX_PAYLOAD_SCHEMA_ENTRIES
// (entry name and byte offset) and the values to NVTX_EVENTS.binaryData (export with blobs) or
// NVTX_EVENTS.jsonText (export with --include-json). Both are decoded by entry *name*.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss::import::nsys {

class NsysDb;

struct NcclPayload {
  std::optional<std::int64_t> bytes;  // "Message size [bytes]"
  std::optional<std::uint64_t> comm;  // "NCCL communicator ID"
  std::optional<std::int64_t> rank;   // "Rank" (ncclCommInitRank)
  std::optional<std::int64_t> nranks; // "No. of ranks"
  bool empty() const { return !bytes && !comm && !rank && !nranks; }
};

// Field offsets of the NCCL payload schemas of each NVTX domain.
class NcclPayloadSchemas {
 public:
  void load(NsysDb& db);  // no-op when the export has no schema tables
  // Decodes a binary payload of the NCCL range `range_name` in `domain`. Candidates are the schemas
  // of that domain whose size equals the blob's and whose kind fits the call: communicator
  // creation (ncclCommInitRank*, ncclCommSplit: {comm, nranks, rank, device}) or an operation
  // ({comm, message size, ...}); schemas of one size may be of either kind. A field is read only
  // when every candidate that has it puts it at one offset.
  NcclPayload decode_blob(std::int64_t domain, std::string_view blob, std::string_view range_name) const;

 private:
  struct Field {
    std::size_t offset = 0;
    std::size_t width = 0;
  };
  struct Schema {
    std::int64_t domain = 0;
    std::size_t size = 0;
    std::map<std::string, Field> fields;
  };
  std::vector<Schema> schemas_;
};

// True for ranges whose payload describes a communicator (ncclCommInitRank*, ncclCommSplit).
bool is_comm_creation(std::string_view range_name);

// Decodes {"Message size [bytes]": 1048576, "Rank": 1, ...} (numbers only; other keys ignored).
NcclPayload decode_json_payload(std::string_view json);

}  // namespace ss::import::nsys
