// A small command-line parser for the subcommands: long options (--name value / --name=value),
// short aliases, flags, positionals, "--" to pass the rest through (record), choices, and a
// generated --help. Usage errors throw UsageError (exit code 1).
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ss::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ArgParser {
 public:
  ArgParser(std::string command, std::string summary);

  // An option that takes a value. `def` is returned by get() when absent.
  ArgParser& option(const std::string& name, const std::string& metavar, const std::string& help,
                    const std::string& def = "", char short_name = 0, std::vector<std::string> choices = {});
  ArgParser& flag(const std::string& name, const std::string& help, char short_name = 0);
  // Repeatable option: every occurrence is kept (get_all).
  ArgParser& multi_option(const std::string& name, const std::string& metavar, const std::string& help);
  ArgParser& positional(const std::string& name, const std::string& help, bool required = true, bool variadic = false);
  // After "--", remaining words are returned by passthrough() instead of being parsed.
  ArgParser& allow_passthrough(const std::string& metavar, const std::string& help);
  ArgParser& epilog(const std::string& text);

  // Returns false when --help was given (help is printed to stdout; exit 0).
  bool parse(const std::vector<std::string>& args);

  std::string get(const std::string& name) const;
  bool has(const std::string& name) const;  // given on the command line
  bool flag_set(const std::string& name) const { return has(name); }
  std::vector<std::string> get_all(const std::string& name) const;
  const std::vector<std::string>& positionals(const std::string& name) const;
  const std::vector<std::string>& passthrough() const { return passthrough_; }
  // Parses an option's value as a number; a malformed value is a usage error naming the option.
  long long get_int(const std::string& name) const;
  double get_double(const std::string& name) const;

  std::string help() const;

 private:
  struct Opt {
    std::string name, metavar, help, def;
    char short_name = 0;
    bool takes_value = true;
    bool multi = false;
    std::vector<std::string> choices;
  };
  struct Pos {
    std::string name, help;
    bool required = true, variadic = false;
  };
  const Opt* find_long(const std::string& name) const;
  const Opt* find_short(char c) const;

  std::string command_, summary_, epilog_, passthrough_metavar_, passthrough_help_;
  bool passthrough_allowed_ = false;
  std::vector<Opt> opts_;
  std::vector<Pos> pos_;
  std::map<std::string, std::vector<std::string>> values_;
  std::map<std::string, std::vector<std::string>> pos_values_;
  std::vector<std::string> passthrough_;
};

}  // namespace ss::cli
