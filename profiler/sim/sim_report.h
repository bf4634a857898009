// Shared JSON and text rendering of a simulation result (simulate, plan, the GUI's what-if view).
#pragma once

#include <ostream>

#include "profiler/sim/step_simulator.h"
#include "storage/json_writer.h"

namespace ss::sim {

double to_ms(TimeNs ns);
// Writes the result's fields into the currently open JSON object.
void write_result_fields(JsonWriter& j, const CompiledStep& step, const SimResult& r, bool per_unit);
void print_result_text(std::ostream& o, const CompiledStep& step, const SimResult& r, bool per_unit);

}  // namespace ss::sim
