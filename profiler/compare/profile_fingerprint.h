// Identifies a profile's content cheaply, so that a saved comparison notices when a file it
// names was replaced or rewritten: the file size plus a 64-bit FNV-1a hash of the meta and origin
// rows and of the largest row id of each event table (profiles are append-only, so a re-import or
// a different recording changes at least one of these).
#pragma once

#include <cstdint>
#include <string>

namespace ss::compare {

struct ProfileRef {
  std::string path;  // absolute
  std::int64_t size_bytes = 0;
  std::string fingerprint;  // 16 hex digits
  bool operator==(const ProfileRef&) const = default;
};

// Throws CompareError(ProfileMissing) when the file is absent, ProfileError when it is not a profile.
ProfileRef fingerprint_profile(const std::string& path);

enum class ProfileState { Unchanged, Missing, Changed, Unreadable };

// Compares the file now at ref.path with the saved reference; `why` gets a sentence for the user.
ProfileState check_profile(const ProfileRef& ref, std::string* why = nullptr);

}  // namespace ss::compare
