#pragma once
namespace ss {
inline constexpr const char* kShardScopeVersion = "0.1.0";
}
