// Runs the model sequence-parallel over config.ranks ranks in this process, one thread per rank.
// Each rank's thread makes its own platform (on GPUs: device r, made current on that thread, its
// stream, cuBLAS handle and a VMM backend whose memory the other ranks' devices may reach), its
// own model (the same seeded weights and latents on every rank) and, per mode, its own compiler;
// the ranks exchange through a HostCommGroup on the CPU and through NCCL communicators made in one
// ncclCommInitAll over GPUs 0..N-1 on GPUs. Every rank runs every mode, in the same order.
#pragma once

#include <string>
#include <vector>

#include "config.hpp"
#include "run_modes.hpp"

namespace denoise {

struct RankResults {
  int rank = 0;
  std::string device;
  std::vector<ModeResult> modes;  // config.modes, in order
};

// Checks the shape (SequenceParallel::check_shape) and, on GPUs, that config.ranks devices exist
// (and NCCL, by making the communicators: NcclLibrary's error when it is missing) before any rank
// starts. A rank that fails while setting up stops every rank; the first error is rethrown.
[[nodiscard]] std::vector<RankResults> run_sequence_parallel(const Config& config, bool gpu);

// The one-device path (no exchange) of `mode` on GPU 0 or the CPU: what the ranks are compared
// with.
[[nodiscard]] ModeResult run_one_device(const Config& config, bool gpu, Mode mode);

}  // namespace denoise
