// Shared JSON and text rendering of a simulation result (simulate, plan, the GUI's what-if view).
#pragma once

#include <ostream>

#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/step_simulator.h"
#include "storage/json_writer.h"

namespace ss::sim {

double to_ms(TimeNs ns);
// Writes the result's fields into the currently open JSON object.
void write_result_fields(JsonWriter& j, const CompiledStep& step, const SimResult& r, bool per_unit);
void print_result_text(std::ostream& o, const CompiledStep& step, const SimResult& r, bool per_unit);
// What the measured step of a profile holds (compute / non-FSDP collectives / idle) and, for a
// window without step markers, which span was compared. Nothing when the input is not a profile.
void write_measured_fields(JsonWriter& j, const SimInputs& in);
void print_measured_text(std::ostream& o, const SimInputs& in);

}  // namespace ss::sim
