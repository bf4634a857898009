// Which module an allocation belongs to, from the Python frames PyTorch recorded with it
// (innermost first). Two forms of frames name modules:
//  - "nn.Module: Linear_0" frames (the profiler's module events, as
//    torch.cuda._memory_viz._profile_to_snapshot writes them): each is one level, named by its
//    label, as the Kineto importer names nn.Module ranges ("Sequential_0.Linear_0");
//  - frames of a function named `forward` (torch.cuda.memory._record_memory_history's stacks,
//    which give the code object's name, not its class): each is one level, named after the line
//    that called it ("model.py:80"), i.e. the line of the enclosing forward (or, for the
//    outermost, of the training loop) that invoked the module. Frames of
//    torch/nn/modules/module.py (_call_impl, _wrapped_call_impl) are skipped when looking for
//    the caller. Levels are joined with "/" ("train.py:30/model.py:80").
#pragma once

#include <string>
#include <vector>

#include "profiler/import/snapshot/snapshot_model.h"

namespace ss::import::snapshot {

struct ModuleLevel {
  std::string name;
  std::string class_name;
};

struct ModulePath {
  std::vector<ModuleLevel> levels;  // outermost first; empty when no frame names a module
  char separator = '.';
};

inline constexpr std::size_t kMaxModuleLevels = 256;  // deeper paths are cut at this many levels

ModulePath module_path_from_frames(const std::vector<Frame>& frames);

// "Linear_0" -> "Linear" (the profiler's per-class instance counter removed).
std::string class_of_module_label(const std::string& label);

}  // namespace ss::import::snapshot
