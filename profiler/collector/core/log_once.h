// "[shardscope] ..." messages from inside the training process. Each distinct key is printed at
// most once, so a failing call in a hot path cannot flood the job's log.
#pragma once

#include <string>

namespace ss::collector {

void log_line(const std::string& message);                          // always printed
bool log_once(const std::string& key, const std::string& message);  // true when printed now
void set_log_verbose(bool on);
void log_verbose(const std::string& message);                       // only with SHARDSCOPE_VERBOSE=1

}  // namespace ss::collector
