// Runs a test on one flash forward path: sets an environment variable that the library reads at
// every launch for the guard's lifetime and restores what was there. ScopedKernel sets
// MEMPLAN_ATTENTION_KERNEL (kernels/flash_fwd.cu), so one test binary checks the default path and
// each Hopper kernel by name (tma, wgmma) against the same references; ScopedRotation sets
// MEMPLAN_ATTENTION_ROTATE (kernels/flash_tma.cu), so small shapes exercise rotated visits.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace memplan::attention::test {

class ScopedVariable {
 public:
  // An empty `value` leaves the variable as it is (what the environment chose).
  ScopedVariable(const char* name, const std::string& value) : name_(name) {
    if (value.empty()) return;
    set_ = true;
    if (const char* old = std::getenv(name_)) old_ = old;
    ::setenv(name_, value.c_str(), 1);
  }
  ~ScopedVariable() {
    if (!set_) return;
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
  bool set_ = false;
  std::optional<std::string> old_;
};

class ScopedKernel : public ScopedVariable {
 public:
  explicit ScopedKernel(const std::string& kernel)
      : ScopedVariable("MEMPLAN_ATTENTION_KERNEL", kernel) {}
};

class ScopedRotation : public ScopedVariable {
 public:
  explicit ScopedRotation(const std::string& when)
      : ScopedVariable("MEMPLAN_ATTENTION_ROTATE", when) {}
};

}  // namespace memplan::attention::test
