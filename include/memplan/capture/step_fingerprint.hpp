// What a step's launches use, as the capture policy compares it between steps: every pointer and
// size the step's context handed out, every free, every value declared with depends_on, and the
// number of launches, in order. Two steps under one key with equal fingerprints make the same
// launches on the same memory (the caller's contract, step_runner.hpp), so a graph captured from
// one serves the other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memplan::capture {

class StepFingerprint {
 public:
  enum class Kind : std::uint8_t { Allocation, Free, Dependency, Launches };
  struct Entry {
    Kind kind = Kind::Dependency;
    std::uint64_t value = 0;  // the pointer, the dependency or the launch count
    std::uint64_t bytes = 0;  // Allocation: its size
    friend bool operator==(const Entry&, const Entry&) = default;
  };

  void allocated(const void* p, std::size_t bytes) {
    entries_.push_back({Kind::Allocation, address(p), bytes});
  }
  void freed(const void* p) { entries_.push_back({Kind::Free, address(p)}); }
  void depends_on(std::uint64_t value) { entries_.push_back({Kind::Dependency, value}); }
  // Closes the fingerprint with the step's launch count.
  void launched(std::uint64_t launches) { entries_.push_back({Kind::Launches, launches}); }

  [[nodiscard]] const std::vector<Entry>& entries() const noexcept { return entries_; }
  [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }
  void clear() noexcept { entries_.clear(); }
  friend bool operator==(const StepFingerprint&, const StepFingerprint&) = default;

 private:
  static std::uint64_t address(const void* p) noexcept {
    return reinterpret_cast<std::uintptr_t>(p);
  }
  std::vector<Entry> entries_;
};

}  // namespace memplan::capture
