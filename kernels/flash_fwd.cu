// Instantiations and launcher of the flash forward kernel: one configuration per head_dim, chosen
// by a sweep on the H200 (few instantiations keep the CI build short). Dense, 24 heads, 32k tokens:
// d=128: 16 rows/warp 3 stages 302 TFLOP/s, 2 stages 297, 32 rows/warp 115-180 (register spills);
// d=64: 32 rows/warp 3 stages 292, 16 rows/warp 278.
// On a compute capability 9.0 device, head_dim 128 runs a Hopper kernel instead: the TMA producer
// kernel (flash_tma.cu) by default (the fastest measured, docs/attention.md), the wgmma kernel with
// its cp.async ring (flash_wgmma.cu) where the driver has no tensor maps or with
// MEMPLAN_ATTENTION_KERNEL=wgmma; MEMPLAN_ATTENTION_KERNEL=tma asks for the TMA kernel explicitly,
// =mma forces mma.sync. The variable is read at every launch, so a process (the tests, the
// benchmark) can run each path.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "flash_fwd.cuh"
#include "flash_tma.hpp"
#include "flash_wgmma.hpp"
#include "memplan/cuda_check.hpp"
#include "memplan/error.hpp"
#include "tensor_map.hpp"

namespace memplan::attention::detail {

namespace {

template <int D, int MT, int STAGES>
void launch(const FlashParams& params, cudaStream_t stream) {
  using Cfg = FlashConfig<D, MT, STAGES>;
  auto* kernel = &flash_fwd_kernel<D, MT, STAGES>;
  // Above 48 KiB of dynamic shared memory needs an explicit opt-in; it is a host-side attribute,
  // so setting it on every launch is cheap and legal during stream capture.
  MEMPLAN_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  const dim3 grid(static_cast<unsigned>(params.blocks), static_cast<unsigned>(params.heads),
                  static_cast<unsigned>(params.batch));
  const float scale_log2 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)) * M_LOG2E);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(params, scale_log2);
  check_launch("flash_fwd_kernel");
}

enum class KernelChoice { Default, Tma, Wgmma, Mma };

KernelChoice kernel_choice() {
  const char* value = std::getenv("MEMPLAN_ATTENTION_KERNEL");
  if (value == nullptr || *value == '\0') return KernelChoice::Default;
  if (std::strcmp(value, "tma") == 0) return KernelChoice::Tma;
  if (std::strcmp(value, "wgmma") == 0) return KernelChoice::Wgmma;
  if (std::strcmp(value, "mma") == 0) return KernelChoice::Mma;
  throw InvalidArgument(std::string("attention: MEMPLAN_ATTENTION_KERNEL=") + value +
                        " is none of tma, wgmma, mma");
}

}  // namespace

void run_flash_forward(const FlashParams& params, cudaStream_t stream) {
  const KernelChoice choice = kernel_choice();
  const bool hopper =
      params.head_dim == 128 && choice != KernelChoice::Mma && flash_wgmma_available();
  if (hopper && (choice == KernelChoice::Tma ||
                 (choice == KernelChoice::Default && tensor_maps_available()))) {
    run_flash_tma(params, stream);
  } else if (hopper) {
    run_flash_wgmma(params, stream);
  } else if (params.head_dim == 64) {
    launch<64, 2, 3>(params, stream);
  } else {
    launch<128, 1, 3>(params, stream);
  }
}

}  // namespace memplan::attention::detail
