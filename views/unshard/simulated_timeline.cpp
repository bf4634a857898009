#include "views/unshard/simulated_timeline.h"

#include <atomic>
#include <filesystem>
#include <system_error>
#include <unistd.h>

#include "profiler/sim/simulated_profile.h"
#include "storage/profile_reader.h"

namespace ss::unshard {

std::shared_ptr<const Profile> simulated_timeline_profile(const sim::SimInputs& in, const sim::CompiledStep& step,
                                                          const sim::SimResult& result, const std::string& scratch_path) {
  const sim::SimulatedProfileInfo info{in.source, in.gpu_name, "{}"};
  sim::write_simulated_profile(scratch_path, in.model, step, result, info);
  // Removed whether or not the load succeeds: the scratch file is never the user's.
  struct Remove {
    const std::string& p;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove(p, ec);
    }
  } remove{scratch_path};
  auto p = std::make_shared<Profile>(load_profile(scratch_path));
  p->path.clear();  // no file stays behind to fetch details from
  return p;
}

std::string timeline_scratch_path() {
  static std::atomic<int> counter{0};
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec) dir = ".";
  return (dir / ("shardscope-unshard-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".ssdb")).string();
}

}  // namespace ss::unshard
