// Runs a test on one flash forward path: sets MEMPLAN_ATTENTION_KERNEL (read at every launch, see
// kernels/flash_fwd.cu) for the guard's lifetime and restores what was there, so one test binary
// checks the default path and each Hopper kernel by name (tma, wgmma) against the same references.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace memplan::attention::test {

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
