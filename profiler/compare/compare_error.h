// Bad input to a comparison (a rank or step that a profile lacks) or a saved workspace that
// cannot be used as saved (missing or changed profile, wrong file). Derived from ProfileError
// so that the CLI maps it to exit code 2 like any other bad input.
#pragma once

#include <string>

#include "storage/errors.h"

namespace ss::compare {

enum class CompareErrorKind {
  NoSuchRank,       // the chosen rank is absent from one profile
  NoSuchStep,       // the chosen step number is absent from one profile's rank
  EmptyRank,        // the chosen rank holds no event at all
  NotWorkspace,     // the file is not a ShardScope workspace
  NewerWorkspace,   // written by a newer ShardScope
  NoSuchComparison, // no saved comparison with that name / id
  ProfileMissing,   // a saved comparison names a profile that no longer exists
  ProfileChanged,   // a saved comparison names a profile whose content changed since saving
  InvalidArgument,  // an empty comparison name, a plan that is not JSON, ...
};

class CompareError : public ProfileError {
 public:
  CompareError(CompareErrorKind kind, const std::string& message)
      : ProfileError(ProfileErrorKind::MalformedTable, message), compare_kind_(kind) {}
  CompareErrorKind compare_kind() const { return compare_kind_; }

 private:
  CompareErrorKind compare_kind_;
};

}  // namespace ss::compare
