// Check mode: a debugging configuration of the memory compiler that makes lifetime hazards loud
// and names the buffer behind any address (CompilerOptions::check, Compiler::describe_address).
// Off by default; when off it costs one predictable branch per allocate and deallocate.
// See docs/check-mode.md for what each flag catches and what it costs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memplan {

// The poison. Each 16-bit half is a NaN in bf16 and fp16, each word a NaN in fp32 and each pair
// of words in fp64, so a kernel reading it at any 2-byte-aligned position computes NaN; as an
// integer it is a large positive number (an index out of range). The last nibble of each half
// tells which: A, handed out and not yet written; D, freed.
inline constexpr std::uint32_t kPoisonAllocated = 0x7FFA7FFAu;
inline constexpr std::uint32_t kPoisonFreed = 0x7FFD7FFDu;

struct CheckOptions {
  // Buffers are filled with kPoisonAllocated when handed out and kPoisonFreed when freed, in the
  // order of the allocating and the freeing stream (capturable: a memset node in a CUDA Graph).
  bool poison = false;
  // Every allocation gets addresses and physical pages never used before; a freed buffer's pages
  // stay mapped until every stream the compiler has seen has passed the free, then are unmapped.
  bool no_reuse = false;
  // Unmapped addresses before and after every buffer (a buffer ends where its pages end): an
  // access past either end faults. Implies no_reuse.
  bool guard_gaps = false;
  // Address space of the check heap (no_reuse, guard_gaps): consumed by every allocation and
  // never reused, so a long run needs much of it. Addresses only, no memory.
  std::size_t reserve_bytes = std::size_t{1} << 40;

  [[nodiscard]] bool enabled() const noexcept { return poison || no_reuse || guard_gaps; }
  // Whether allocations are served by the check heap instead of the plans.
  [[nodiscard]] bool fresh_addresses() const noexcept { return no_reuse || guard_gaps; }
};

// When check mode saw an allocation or a free.
struct CheckMoment {
  std::uint64_t step = 0;  // serial of the running step (outside steps: of the next one)
  std::string step_name;   // empty outside steps
  std::string scope;       // the scope path, "denoise/block.3"; empty outside steps
  // The call's index among the allocate/deallocate calls the step's thread made in the step,
  // outside pauses, from 0; empty inside a pause, outside steps and from other threads.
  std::optional<std::uint64_t> event;
  bool paused = false;        // inside a pause scope
  bool other_thread = false;  // during a step, from another thread than the step's
};

// A buffer as check mode recorded it.
struct BufferRecord {
  const void* address = nullptr;
  std::size_t bytes = 0;
  std::string tag;
  CheckMoment allocated;
  std::optional<CheckMoment> freed;  // empty while the buffer is alive
};

enum class AddressKind : std::uint8_t {
  Buffer,    // inside a recorded buffer
  Padding,   // in the mapped pages of a buffer of the check heap, outside its bytes
  Gap,       // memplan's addresses between buffers: a guard gap, or planned memory no buffer holds
  Unused,    // memplan's addresses never handed out (or not recorded: check mode was off)
  NotOwned,  // no memory of this compiler
};
std::string_view to_string(AddressKind kind) noexcept;

// What Compiler::describe_address found.
struct AddressReport {
  const void* address = nullptr;
  AddressKind kind = AddressKind::NotOwned;
  std::string region;   // "check heap", "planned arena", "persistent pool"; empty when not owned
  bool mapped = false;  // whether the address is mapped now (an access there would not fault)
  // The buffer holding the address (Buffer, Padding) or the nearest one (Gap, Unused), if any.
  std::optional<BufferRecord> buffer;
  std::ptrdiff_t offset = 0;  // address - buffer->address: negative before it, >= bytes past it
  std::string text;           // the whole finding, one line, for a log or an error message
};

}  // namespace memplan
