// Saved comparisons: a workspace file (SQLite, its own schema, docs/compare.md) that holds named
// comparisons of two profiles with their alignment, an optional plan (JSON text) and notes, so
// that the GUI's Comparisons dock and `shardscope diff --open` can list and reopen them exactly.
// The workspace never copies profiles: it names them by absolute path and a content fingerprint,
// and reopening a comparison whose profile is missing or changed is an error that says which.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/compare/alignment.h"
#include "profiler/compare/profile_fingerprint.h"
#include "storage/sqlite_handle.h"

namespace ss::compare {

inline constexpr int kWorkspaceVersion = 1;
// PRAGMA application_id "SSWS" (profiles use "SSDP"), so neither file is mistaken for the other.
inline constexpr int kWorkspaceApplicationId = 0x53535753;
inline constexpr std::string_view kWorkspaceFormatName = "shardscope-workspace";

struct SavedComparison {
  std::int64_t id = 0;  // assigned by the workspace
  std::string name;     // unique within a workspace
  ProfileRef a;
  ProfileRef b;
  Alignment alignment;
  std::string plan_json;  // "" = no plan; otherwise valid JSON
  std::string notes;
  std::string created_utc;  // set by save()
  std::string updated_utc;
  bool operator==(const SavedComparison&) const = default;
};

// Fingerprints both profiles now (they must exist and be profiles).
SavedComparison make_saved_comparison(std::string name, const std::string& profile_a, const std::string& profile_b,
                                      const Alignment& alignment, std::string plan_json = {}, std::string notes = {});

class Workspace {
 public:
  enum class Mode { OpenExisting, CreateIfMissing };
  // Throws CompareError(NotWorkspace / NewerWorkspace) or ProfileError(Io) with the path.
  explicit Workspace(const std::string& path, Mode mode = Mode::CreateIfMissing);

  const std::string& path() const { return path_; }
  std::vector<SavedComparison> list() const;  // by name
  // Inserts, or replaces the comparison of the same name (keeping its id and created_utc).
  // Returns the id. Throws CompareError on an empty name or a plan that is not valid JSON.
  std::int64_t save(const SavedComparison& c);
  SavedComparison get(std::string_view name) const;  // throws CompareError(NoSuchComparison)
  bool remove(std::string_view name);

 private:
  std::string path_;
  sql::Db db_;
};

// Checks that both profiles of a saved comparison are still the files it was saved with;
// throws CompareError(ProfileMissing / ProfileChanged) naming the side, the comparison and the file.
void verify_profiles(const SavedComparison& c);

}  // namespace ss::compare
