// How the Unshard panel's files (unshard_panel.cpp, unshard_panel_whatif.cpp) write times and sizes.
#pragma once

#include <QString>

#include <cstdint>

#include "storage/types.h"
#include "storage/units.h"

namespace ss::unshard::text {

inline QString ms(TimeNs ns) { return QString::number(static_cast<double>(ns) / 1e6, 'f', 3) + QStringLiteral(" ms"); }
inline QString bytes(std::int64_t b) { return QString::fromStdString(format_bytes(b)); }

}  // namespace ss::unshard::text
