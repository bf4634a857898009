#include "profiler/collector/core/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace ss::collector {

std::string demangle(std::string_view name) {
  if (name.size() < 3 || name.substr(0, 2) != "_Z") return std::string(name);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(std::string(name).c_str(), nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

const std::string& DemangleCache::operator()(const std::string& name) {
  auto it = cache_.find(name);
  if (it == cache_.end()) it = cache_.emplace(name, demangle(name)).first;
  return it->second;
}

}  // namespace ss::collector
