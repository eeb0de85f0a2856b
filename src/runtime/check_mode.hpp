// Check mode inside the compiler (CompilerOptions::check): who serves a buffer, the poison, the
// address book. The compiler's public calls hand over to it when it exists (one branch each):
//   - poison only: the plans serve as usual; handed-out and freed buffers are filled with the
//     poison on the allocating and the freeing stream;
//   - no_reuse or guard_gaps: every allocation (step, pause, outside steps) is served by an
//     arena::CheckHeap at fresh addresses; the compiler's tree sees no events, so its steps
//     replay empty branches and nothing is planned or captured.
// Either way every buffer is recorded in the address book for describe_address.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "address_book.hpp"
#include "memplan/arena/check_heap.hpp"
#include "memplan/runtime/compiler.hpp"

namespace memplan {

struct Compiler::Check {
  Check(arena::PhysicalBackend& backend, const CompilerOptions& options);

  // Compiler::allocate / deallocate while check mode is on; they take the compiler's lock (the
  // public calls test for check mode before locking, so that the planned path stays as it was).
  void* allocate(Compiler& compiler, std::size_t bytes, StreamRef stream, std::string_view tag,
                 std::size_t alignment);
  void deallocate(Compiler& compiler, void* p, StreamRef stream);
  // Compiler::trim / release: waits for the check heap's pending frees and releases them.
  void trim();
  [[nodiscard]] std::string summary() const;
  // Compiler::describe_address; `check` is null when check mode is off.
  [[nodiscard]] static AddressReport describe(const Impl& impl, const Check* check, const void* p);

 private:
  CheckMoment moment(const Impl& impl);
  void poison(void* p, std::size_t bytes, std::size_t alignment, std::uint32_t pattern,
              StreamRef stream);
  [[nodiscard]] std::string history(const void* p) const;

  arena::PhysicalBackend& backend_;
  CheckOptions options_;
  std::size_t default_alignment_;
  std::optional<arena::CheckHeap> heap_;  // with fresh_addresses()
  AddressBook book_;
  std::uint64_t counted_step_ =
      std::numeric_limits<std::uint64_t>::max();  // whose events are counted
  std::uint64_t next_event_ = 0;
};

}  // namespace memplan
