#include "storage/value_bounds.h"

#include "storage/errors.h"

namespace ss {

void add_memory_bytes(std::int64_t& level, std::int64_t bytes, const std::string& path) {
  // level stays within +-2^62 and bytes within +-2^50, so the sum itself cannot overflow.
  if (!bytes_in_bounds(bytes))
    throw ProfileError(ProfileErrorKind::MalformedTable,
                       path + ": table 'memory_events' has an event of " + std::to_string(bytes) +
                           " bytes (more than 2^50 either way: not a real allocation)");
  const std::int64_t sum = level + bytes;
  if (sum > kMaxTableTotal || sum < -kMaxTableTotal)
    throw ProfileError(ProfileErrorKind::MalformedTable,
                       path + ": table 'memory_events' adds up to more than 2^62 bytes either way");
  level = sum;
}

}  // namespace ss
