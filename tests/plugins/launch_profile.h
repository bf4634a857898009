// A hand-made profile with host launch calls, copies and annotation ranges, for launch-stats,
// copy-bandwidth and annotations; its layout (in launch_profile.cpp) is small enough that every
// expected number in the tests is worked out on paper next to its assertion.
#pragma once

#include <string>

namespace ss::test {

// with_launches = false: the same profile as a file written before launch records were kept
// (no `launches` table, no `launch_view`).
void write_launch_profile(const std::string& path, bool with_launches = true);

}  // namespace ss::test
