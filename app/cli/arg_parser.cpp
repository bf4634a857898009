#include "app/cli/arg_parser.h"

#include <cstdlib>
#include <iostream>
#include <sstream>

namespace ss::cli {

namespace {

constexpr std::size_t kHelpWidth = 100;
constexpr const char* kDescriptionIndent = "      ";

// An option's or argument's description is prose whose line breaks in the source are where its
// author wrapped it, for column 0: re-flowed here under the description's indent, so that no line
// starts at column 0 or runs past kHelpWidth (a word longer than the width gets a line of its own).
std::string described(const std::string& text) {
  std::istringstream words(text);
  std::string out, line, word;
  const std::string indent = kDescriptionIndent;
  while (words >> word) {
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > kHelpWidth) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

}  // namespace

ArgParser::ArgParser(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {
  flag("help", "show this help and exit", 'h');
}

ArgParser& ArgParser::option(const std::string& name, const std::string& metavar, const std::string& help,
                             const std::string& def, char short_name, std::vector<std::string> choices) {
  opts_.push_back({name, metavar, help, def, short_name, true, false, std::move(choices)});
  return *this;
}

ArgParser& ArgParser::flag(const std::string& name, const std::string& help, char short_name) {
  opts_.push_back({name, "", help, "", short_name, false, false, {}});
  return *this;
}

ArgParser& ArgParser::multi_option(const std::string& name, const std::string& metavar, const std::string& help) {
  opts_.push_back({name, metavar, help, "", 0, true, true, {}});
  return *this;
}

ArgParser& ArgParser::positional(const std::string& name, const std::string& help, bool required, bool variadic) {
  pos_.push_back({name, help, required, variadic});
  return *this;
}

ArgParser& ArgParser::allow_passthrough(const std::string& metavar, const std::string& help) {
  passthrough_allowed_ = true;
  passthrough_metavar_ = metavar;
  passthrough_help_ = help;
  return *this;
}

ArgParser& ArgParser::epilog(const std::string& text) {
  epilog_ = text;
  return *this;
}

const ArgParser::Opt* ArgParser::find_long(const std::string& name) const {
  for (const auto& o : opts_)
    if (o.name == name) return &o;
  return nullptr;
}

const ArgParser::Opt* ArgParser::find_short(char c) const {
  for (const auto& o : opts_)
    if (o.short_name == c) return &o;
  return nullptr;
}

bool ArgParser::parse(const std::vector<std::string>& args) {
  std::vector<std::string> words;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      if (!passthrough_allowed_) {
        words.insert(words.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      } else {
        passthrough_.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      }
      break;
    }
    const Opt* o = nullptr;
    std::string value;
    bool inline_value = false;
    if (a.size() > 2 && a.rfind("--", 0) == 0) {
      std::string name = a.substr(2);
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        inline_value = true;
      }
      o = find_long(name);
      if (!o) throw UsageError("unknown option '--" + name + "'");
    } else if (a.size() == 2 && a[0] == '-' && a[1] != '-') {
      o = find_short(a[1]);
      if (!o) throw UsageError("unknown option '" + a + "'");
    } else {
      words.push_back(a);
      continue;
    }
    if (o->name == "help") {
      std::cout << help();
      return false;
    }
    if (!o->takes_value) {
      if (inline_value) throw UsageError("option '--" + o->name + "' takes no value");
      values_[o->name].push_back("1");
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) throw UsageError("option '--" + o->name + "' needs a value (" + o->metavar + ")");
      value = args[++i];
    }
    if (!o->choices.empty()) {
      bool ok = false;
      std::string list;
      for (const auto& c : o->choices) {
        ok = ok || c == value;
        list += (list.empty() ? "" : "|") + c;
      }
      if (!ok) throw UsageError("option '--" + o->name + "' must be one of " + list + ", not '" + value + "'");
    }
    auto& slot = values_[o->name];
    if (!o->multi) slot.clear();
    slot.push_back(value);
  }
  std::size_t w = 0;
  for (const auto& p : pos_) {
    auto& slot = pos_values_[p.name];
    if (p.variadic) {
      while (w < words.size()) slot.push_back(words[w++]);
    } else if (w < words.size()) {
      slot.push_back(words[w++]);
    }
    if (p.required && slot.empty()) throw UsageError("missing " + p.name);
  }
  if (w < words.size()) throw UsageError("unexpected argument '" + words[w] + "'");
  return true;
}

std::string ArgParser::get(const std::string& name) const {
  if (auto it = values_.find(name); it != values_.end() && !it->second.empty()) return it->second.back();
  const Opt* o = find_long(name);
  return o ? o->def : std::string();
}

bool ArgParser::has(const std::string& name) const { return values_.count(name) != 0; }

std::vector<std::string> ArgParser::get_all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

const std::vector<std::string>& ArgParser::positionals(const std::string& name) const {
  static const std::vector<std::string> kEmpty;
  auto it = pos_values_.find(name);
  return it == pos_values_.end() ? kEmpty : it->second;
}

long long ArgParser::get_int(const std::string& name) const {
  std::string v = get(name);
  char* end = nullptr;
  long long r = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') throw UsageError("option '--" + name + "' needs an integer, not '" + v + "'");
  return r;
}

double ArgParser::get_double(const std::string& name) const {
  std::string v = get(name);
  char* end = nullptr;
  double r = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0') throw UsageError("option '--" + name + "' needs a number, not '" + v + "'");
  return r;
}

std::string ArgParser::help() const {
  std::ostringstream o;
  o << "Usage: shardscope " << command_;
  for (const auto& p : pos_) {
    o << ' ' << (p.required ? "" : "[") << p.name << (p.variadic ? "..." : "") << (p.required ? "" : "]");
  }
  o << " [options]";
  if (passthrough_allowed_) o << " -- " << passthrough_metavar_;
  o << "\n\n" << summary_ << "\n";
  if (!pos_.empty() || passthrough_allowed_) {
    o << "\nArguments:\n";
    for (const auto& p : pos_) o << "  " << p.name << (p.variadic ? "..." : "") << "\n" << described(p.help);
    if (passthrough_allowed_) o << "  " << passthrough_metavar_ << "\n" << described(passthrough_help_);
  }
  o << "\nOptions:\n";
  for (const auto& opt : opts_) {
    o << "  ";
    if (opt.short_name) o << '-' << opt.short_name << ", ";
    o << "--" << opt.name;
    if (opt.takes_value) o << ' ' << opt.metavar;
    std::string text = opt.help;
    if (!opt.choices.empty()) {
      text += " (";
      for (std::size_t i = 0; i < opt.choices.size(); ++i) text += (i ? "|" : "") + opt.choices[i];
      text += ")";
    }
    if (!opt.def.empty()) text += " [default: " + opt.def + "]";
    if (opt.multi) text += " (repeatable)";
    o << "\n" << described(text);
  }
  if (!epilog_.empty()) o << "\n" << epilog_ << "\n";
  return o.str();
}

}  // namespace ss::cli
