// The GPU kernels: cuBLAS GEMMs (bf16 in and out, fp32 accumulation, a fixed user workspace so the
// same algorithm runs eagerly and inside a graph), memplan's block-sparse attention (the policy of
// attention_policy.hpp: tau 1.5 inside the schedule window, dense outside), and small elementwise
// kernels. Activations are bf16; the latents and schedules float. Every op enqueues on the given
// stream (the platform's stream when the given one is null) and every CUDA and cuBLAS call is
// checked.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "ops.hpp"

namespace denoise {

[[nodiscard]] std::unique_ptr<Ops> make_gpu_ops(cudaStream_t stream);

}  // namespace denoise
