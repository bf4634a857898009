// Errors raised while reading or writing a profile. Each kind maps to one message a user can act on.
#pragma once

#include <stdexcept>
#include <string>

namespace ss {

enum class ProfileErrorKind {
  Io,             // cannot open / read / write / rename the file
  NotSqlite,      // the file is not a SQLite database
  NotProfile,     // a SQLite database that is not a ShardScope profile
  NewerVersion,   // written by a newer ShardScope with a schema this build cannot read
  MissingTable,   // a required table is absent
  MalformedTable, // a required table lacks a column, or holds values of the wrong type / range
  Truncated,      // the file is shorter than its SQLite header says
  Corrupt,        // SQLite reported corruption while reading
  Cancelled,      // the caller cancelled a long load
  Sql,            // any other SQLite error (message from SQLite)
};

class ProfileError : public std::runtime_error {
 public:
  ProfileError(ProfileErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ProfileErrorKind kind() const { return kind_; }

 private:
  ProfileErrorKind kind_;
};

const char* to_string(ProfileErrorKind kind);

}  // namespace ss
