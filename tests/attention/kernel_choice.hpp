// Runs a test on one flash forward path: sets MEMPLAN_ATTENTION_KERNEL (read at every launch, see
// kernels/flash_fwd.cu) for the guard's lifetime and restores what was there, so one test binary
// checks the default path and each Hopper kernel by name (tma, wgmma) against the same references;
// the TMA kernel's candidate set-ups for block lists (kSparseSetups) run the sparse tests too.
#pragma once

#include <array>
#include <cstdlib>
#include <optional>
#include <string>

namespace memplan::attention::test {

// MEMPLAN_ATTENTION_KERNEL values that differ from `tma` only for block lists (flash_tma.hpp):
// the sparse tests (flash shapes, selection + attention, graph replay, 2 x 600k) run each.
inline constexpr std::array<const char*, 9> kSparseSetups{
    "tma-sparse-wr",         "tma-sparse-rq",      "tma-sparse-pair",
    "tma-sparse-pair128",    "tma-sparse-pair-rq", "tma-sparse-pair128-rq",
    "tma-sparse-persistent", "tma-sparse-rq128",   "tma-sparse-persistent128"};

class ScopedKernel {
 public:
  // An empty `kernel` leaves the variable as it is (the path the environment chose).
  explicit ScopedKernel(const std::string& kernel) {
    if (kernel.empty()) return;
    set_ = true;
    if (const char* old = std::getenv(kName)) old_ = old;
    ::setenv(kName, kernel.c_str(), 1);
  }
  ~ScopedKernel() {
    if (!set_) return;
    if (old_) {
      ::setenv(kName, old_->c_str(), 1);
    } else {
      ::unsetenv(kName);
    }
  }
  ScopedKernel(const ScopedKernel&) = delete;
  ScopedKernel& operator=(const ScopedKernel&) = delete;

 private:
  static constexpr const char* kName = "MEMPLAN_ATTENTION_KERNEL";
  bool set_ = false;
  std::optional<std::string> old_;
};

}  // namespace memplan::attention::test
