// Human-readable durations and sizes, and parsing of sizes such as "70GiB" (CLI and views).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ss {

std::string format_duration_ns(std::int64_t ns);  // "812 ns", "12.4 us", "3.21 ms", "1.50 s"
std::string format_bytes(std::int64_t bytes);     // "512 B", "1.50 KiB", "70.0 GiB"
// "1 rank", "2 ranks", "0 kernels" ("s" added unless `plural` is given).
std::string count_of(std::int64_t n, std::string_view singular, std::string_view plural = {});
// "70GiB", "70 GB", "1.5e9", "512MiB", "4096" -> bytes; nullopt on anything else.
std::optional<std::int64_t> parse_bytes(std::string_view text);
// "1500", "12.5ms", "300 us", "2s" -> ns; nullopt on anything else (negative included).
std::optional<std::int64_t> parse_duration_ns(std::string_view text);

}  // namespace ss
