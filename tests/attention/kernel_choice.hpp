// Runs a test on one flash forward path: sets MEMPLAN_ATTENTION_KERNEL (read at every launch, see
// kernels/flash_fwd.cu) for the guard's lifetime and restores what was there, so one test binary
// checks the default path and each Hopper kernel by name (tma, tma-persistent, wgmma) against the
// same references. ScopedPersistentCtas caps the persistent kernel's grid the same way
// (MEMPLAN_ATTENTION_PERSISTENT_CTAS), so small shapes run many work items per CTA.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace memplan::attention::test {

// Sets an environment variable for the guard's lifetime; an empty value leaves it as it is.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (value.empty()) return;
    set_ = true;
    if (const char* old = std::getenv(name_)) old_ = old;
    ::setenv(name_, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (!set_) return;
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool set_ = false;
  std::optional<std::string> old_;
};

class ScopedKernel : public ScopedEnv {
 public:
  // An empty `kernel` leaves the variable as it is (the path the environment chose).
  explicit ScopedKernel(const std::string& kernel)
      : ScopedEnv("MEMPLAN_ATTENTION_KERNEL", kernel) {}
};

class ScopedPersistentCtas : public ScopedEnv {
 public:
  // 0 leaves the variable as it is (a grid of every CTA the device holds at once).
  explicit ScopedPersistentCtas(int ctas)
      : ScopedEnv("MEMPLAN_ATTENTION_PERSISTENT_CTAS", ctas > 0 ? std::to_string(ctas) : "") {}
};

}  // namespace memplan::attention::test
