// The CPU kernels: the same ops as the GPU in float, with plain loops, run at once on the calling
// thread (the stream is ignored). Attention is exact softmax attention; its sparse mode selects key
// blocks as the GPU does, under the same policy (attention_policy.hpp), with memplan's host
// reference selection (memplan/attention/host_selection.hpp), and attends only to those, with the
// pooled tensors and block lists in the caller's workspace, as the GPU kernels do.
#pragma once

#include <memory>

#include "ops.hpp"

namespace denoise {

[[nodiscard]] std::unique_ptr<Ops> make_cpu_ops();

}  // namespace denoise
