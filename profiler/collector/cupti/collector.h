// The in-process collector: one per process, created by the first of InitializeInjection (the
// CUDA driver, at cuInit) or an NVTX injection entry point (libtorch / libnccl, at their first
// NVTX call). It subscribes to CUPTI, enables the activity kinds, and runs a writer thread that
// decodes completed buffers, attributes records and commits the rank file at least once a second.
// Any CUPTI or SQLite failure is logged once with "[shardscope]" and turns the collector off; the
// training job never sees an error.
#pragma once

namespace ss::collector {

// Idempotent and thread-safe; returns true when the collector is recording.
bool start_collector();
// `record --steps A:B`: switches kernel, copy, range and launch-API tracing on (at the window's
// start) or off (at its end). At the end every kind goes off, memory too, and CUPTI is detached
// from the job (unless SHARDSCOPE_CUPTI_DETACH=0); the window cannot open again. False when the
// collector is not recording.
bool set_capture(bool on);
// Called from atexit: disable, force-flush, drain, final commit. Safe to call twice.
void stop_collector();

}  // namespace ss::collector
