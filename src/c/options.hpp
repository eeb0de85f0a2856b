// The C API's plain structs to and from memplan's C++ types: compiler options (zero fields keep
// the defaults), the log level, and a step's result.
#pragma once

#include "memplan/c/memplan_torch.h"
#include "memplan/runtime/compiler.hpp"
#include "memplan/runtime/step_result.hpp"

namespace memplan::c_api {

[[nodiscard]] memplan_torch_options to_c_options(const CompilerOptions& options);
// The C API's defaults: the compiler's, with a 2 MiB pool chunk (PyTorch's tensors come one by
// one).
[[nodiscard]] CompilerOptions default_compiler_options();
// Throws InvalidArgument naming the field for an alignment that is not a power of two or a log
// level outside -1..6.
[[nodiscard]] CompilerOptions to_compiler_options(const memplan_torch_options& options);
// Sets memplan's log level from the C value (-1: unchanged).
void apply_log_level(int level);
[[nodiscard]] memplan_torch_step_result to_c_result(const StepResult& result);

}  // namespace memplan::c_api
