#include "profiler/collector/core/rank_identity.h"

#include <charconv>
#include <cstdlib>

namespace ss::collector {
namespace {

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<int> first_int(const EnvLookup& env, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (auto v = env(n))
      if (auto i = parse_int(*v)) return i;
  return std::nullopt;
}

}  // namespace

EnvLookup process_env() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

RankIdentity rank_identity_from_env(const EnvLookup& env, std::int64_t pid) {
  RankIdentity id;
  id.pid = pid;
  id.rank = first_int(env, {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}).value_or(-1);
  id.local_rank = first_int(env, {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"}).value_or(-1);
  id.world_size = first_int(env, {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}).value_or(0);
  id.restart = first_int(env, {"TORCHELASTIC_RESTART_COUNT"}).value_or(0);
  return id;
}

bool started_by_a_rank(const EnvLookup& env, std::int64_t pid) {
  const auto mark = env(kEnvRankPid);
  return mark && !mark->empty() && *mark != std::to_string(pid);
}

std::string rank_file_stem(const RankIdentity& id) {
  auto num = [](int v) { return v < 0 ? std::string("x") : std::to_string(v); };
  std::string s = "shardscope_rank" + num(id.rank) + "_lrank" + num(id.local_rank) + "_pid" + std::to_string(id.pid);
  if (id.restart > 0) s += "_restart" + std::to_string(id.restart);
  return s;
}

std::optional<RankIdentity> parse_rank_file_stem(std::string_view name) {
  for (auto suffix : {kRankFileSuffix, kSidecarSuffix, kCpuTraceSuffix})
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
      name.remove_suffix(suffix.size());
      break;
    }
  constexpr std::string_view kPrefix = "shardscope_rank";
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  // Fields in order: rank, "_lrank", local rank, "_pid", pid, optional "_restart", count.
  auto take_until = [&](std::string_view sep) -> std::optional<std::string_view> {
    auto pos = name.find(sep);
    if (pos == std::string_view::npos) return std::nullopt;
    auto field = name.substr(0, pos);
    name.remove_prefix(pos + sep.size());
    return field;
  };
  auto num = [](std::string_view f) -> std::optional<int> { return f == "x" ? std::optional<int>(-1) : parse_int(f); };
  RankIdentity id;
  auto r = take_until("_lrank");
  auto l = r ? take_until("_pid") : std::nullopt;
  if (!r || !l) return std::nullopt;
  auto rn = num(*r), ln = num(*l);
  if (!rn || !ln) return std::nullopt;
  id.rank = *rn;
  id.local_rank = *ln;
  std::string_view pid_field = name;
  if (auto pos = name.find("_restart"); pos != std::string_view::npos) {
    pid_field = name.substr(0, pos);
    auto restart = parse_int(name.substr(pos + 8));
    if (!restart) return std::nullopt;
    id.restart = *restart;
  }
  std::int64_t pid = 0;
  auto [p, ec] = std::from_chars(pid_field.data(), pid_field.data() + pid_field.size(), pid);
  if (ec != std::errc() || p != pid_field.data() + pid_field.size() || pid_field.empty()) return std::nullopt;
  id.pid = pid;
  return id;
}

}  // namespace ss::collector
