// The memory compiler: the step-by-step allocator a C++ inference runtime links.
//
// The first run of a step records its allocations (served dynamically, best fit, in the arena);
// at the end of the step the record becomes a branch of the step's allocation tree and is
// planned. Later runs replay: each allocation matches the next recorded event and gets
// base + offset, with no allocator call and the same pointer every step. An event that matches
// nothing is a break: counted, logged, and the step records a new branch from there.
// Allocations inside pause() scopes (or outside any step) go to a persistent pool; allocations of a
// step still live at its end are rogues: kept intact, reported, and their site learned so that
// later steps serve it from the pool.
//
// Thread safety: a compiler may be shared by threads; every public call takes one internal lock
// (unless thread_safe is false), biased towards the thread that began the first step, which
// enters without an atomic read-modify-write. A step belongs to the thread that began it: only its
// allocations are the step's events; allocations from other threads while a step runs are served
// by the persistent pool, as in a pause. Frees may come from any thread. Pause scopes are
// compiler-wide. Memory safety across streams follows the stream-ordered model: memory freed on
// one stream and reused on another needs the caller's event between them, as with cudaFreeAsync.
// Streams: every stream passed to allocate() must outlive the compiler or be given to
// forget_stream() first, since unmapping waits on each of them.
// CompilerOptions::check (check.hpp, docs/check-mode.md) makes a missing event show.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memplan/arena/backend.hpp"
#include "memplan/error.hpp"
#include "memplan/runtime/branch_trace.hpp"
#include "memplan/runtime/check.hpp"
#include "memplan/runtime/stats.hpp"
#include "memplan/runtime/step_result.hpp"

namespace memplan {

// Thrown when a step would add a branch past CompilerOptions::branch_cap (policy Error).
class BranchLimitExceeded : public InvalidState {
 public:
  using InvalidState::InvalidState;
};

// Thrown when memory is asked that would map more than CompilerOptions::memory_budget_bytes: an
// allocation while recording, the pool growing, or begin_step mapping a plan. The message names
// the budget, the bytes asked, what is mapped and the buffers live at that moment, largest first
// with their tags. Nothing was changed: the compiler stays usable (the step goes on, or aborts
// under a guard).
class BudgetExceeded : public OutOfMemory {
 public:
  using OutOfMemory::OutOfMemory;
};

enum class OverCapPolicy : std::uint8_t {
  Error,    // throw BranchLimitExceeded at the break; the step goes on dynamically
  Dynamic,  // serve the rest of the step dynamically (best fit, no learning), silently counted
};

struct CompilerOptions {
  std::size_t reserve_bytes = std::size_t{64} << 30;  // planned arena: addresses only
  // Physical mapping granularity of the planned arena. 2 MiB (the H200's granule): a rogue costs
  // its own bytes rounded up to this, and plans map within 2 MiB of their size; mapping is slower
  // per GiB than in 64 MiB chunks, but happens only when a branch is planned or the plans move.
  std::size_t chunk_bytes = std::size_t{2} << 20;
  std::size_t pool_reserve_bytes = std::size_t{64} << 30;  // persistent pool: addresses only
  std::size_t pool_chunk_bytes = std::size_t{64} << 20;
  // Physical memory the planned arena and the pool may map together (0: no budget). Past it,
  // BudgetExceeded. The arena maps whole chunk_bytes and the pool whole pool_chunk_bytes, so
  // choose those small against a tight budget.
  std::size_t memory_budget_bytes = 0;
  std::size_t default_alignment = 256;  // every pointer is aligned to this
  std::size_t branch_cap = 64;          // branches per step name
  OverCapPolicy over_cap = OverCapPolicy::Error;
  // Wall time for planning one new branch (plan::PlanOptions::budget): it bounds the whole
  // planner run, the greedy portfolio included, and the exact search gets what is left. The
  // checks, the lower bound, the portfolio's first strategy and the validator always run.
  std::chrono::milliseconds plan_budget{200};
  bool trim_after_recording = true;  // unmap what recording touched beyond the plans
  // A step output kept until the next step's exists is planned in the arena with period-two
  // placement (docs/compiler.md) once the habit is seen; false: it stays a learned pool site.
  bool period_two_outputs = true;
  // The plans start past the pool's bytes in the pool's partly used chunk, which the arena maps
  // where the window starts (docs/compiler.md, "The chunk the pool lends"), when that saves the
  // largest plan a chunk: the two otherwise each round up to a chunk. Needs pool_chunk_bytes ==
  // chunk_bytes. Off by default: it moves the window home when no rogue is live (graphs held
  // over the old addresses are recaptured), and the room it takes from the pool can cost the
  // pool a chunk later; of the PyTorch models measured so far it saved a chunk on ResNet-50 with
  // graphs only (with settle(); docs/pytorch.md).
  bool share_pool_chunk = false;
  bool thread_safe = true;  // false: one thread drives the compiler, no lock is taken
  CheckOptions check;       // debugging runs: poison, no reuse, guard gaps (check.hpp)
};

class Compiler;

// A branch whose plan a CUDA graph holds pointers of, as the StepResult of the step that captured
// it names it: the step's name, its branch and its parity (which of a period-two branch's two
// plans).
struct BranchRef {
  std::string step;
  std::uint32_t branch = 0;
  std::uint8_t parity = 0;

  friend bool operator==(const BranchRef&, const BranchRef&) = default;
};

// RAII guards. A step guard destroyed by an exception aborts the step instead of ending it.
class StepGuard {
 public:
  StepGuard(StepGuard&& other) noexcept;
  StepGuard(const StepGuard&) = delete;
  StepGuard& operator=(const StepGuard&) = delete;
  StepGuard& operator=(StepGuard&&) = delete;
  ~StepGuard();
  // Ends the step now (throws like Compiler::end_step) and says what it did; nullopt when the
  // guard had ended it already.
  std::optional<StepResult> end();

 private:
  friend class Compiler;
  explicit StepGuard(Compiler& compiler);
  Compiler* compiler_;
  int exceptions_;
};

class ScopeGuard {
 public:
  ScopeGuard(ScopeGuard&& other) noexcept : compiler_(std::exchange(other.compiler_, nullptr)) {}
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
  ScopeGuard& operator=(ScopeGuard&&) = delete;
  ~ScopeGuard();

 private:
  friend class Compiler;
  explicit ScopeGuard(Compiler& compiler) : compiler_(&compiler) {}
  Compiler* compiler_;
};

class PauseGuard {
 public:
  PauseGuard(PauseGuard&& other) noexcept : compiler_(std::exchange(other.compiler_, nullptr)) {}
  PauseGuard(const PauseGuard&) = delete;
  PauseGuard& operator=(const PauseGuard&) = delete;
  PauseGuard& operator=(PauseGuard&&) = delete;
  ~PauseGuard();

 private:
  friend class Compiler;
  explicit PauseGuard(Compiler& compiler) : compiler_(&compiler) {}
  Compiler* compiler_;
};

class Compiler {
 public:
  // The backend provides physical memory for the planned arena and the pool, and counts calls.
  explicit Compiler(arena::PhysicalBackend& backend, CompilerOptions options = {});
  Compiler(const Compiler&) = delete;
  Compiler& operator=(const Compiler&) = delete;
  ~Compiler();

  // `bytes` > 0, aligned to max(alignment, default_alignment); alignment must be a power of two
  // no larger than chunk_bytes, and at most 4096 where the persistent pool serves it (inside a
  // pause, outside steps, from another thread than the step's). The tag, when given, must match
  // on replay too.
  // The stream (nullptr: the default stream) becomes a user of the compiler's memory: trim(),
  // release() and ~Compiler() wait for its queued work before unmapping. So a stream passed here
  // must outlive the compiler, or be handed to forget_stream() before it is destroyed.
  [[nodiscard]] void* allocate(std::size_t bytes, StreamRef stream = {}, std::string_view tag = {},
                               std::size_t alignment = 0);
  // Waits for the work queued on `stream`, then stops tracking it: call it before destroying a
  // stream that was passed to allocate(). Buffers allocated on it stay valid. Returns false (and
  // does nothing) if the stream was never passed to allocate() or was already forgotten.
  bool forget_stream(StreamRef stream);
  // nullptr is ignored. A pointer the compiler does not own throws arena::ForeignPointer; one it
  // already freed throws arena::DoubleFree. Neither changes any state.
  void deallocate(void* p, StreamRef stream = {});

  [[nodiscard]] StepGuard step(std::string_view name);
  [[nodiscard]] ScopeGuard scope(std::string_view name);
  [[nodiscard]] PauseGuard pause();

  // The same, without guards. end_step says what the step did (replayed or recorded, its branch,
  // its break); it throws InvalidState if a pause opened in the step is still open (the step
  // stays open); abort_step never throws.
  void begin_step(std::string_view name);
  StepResult end_step();
  void abort_step() noexcept;
  void begin_scope(std::string_view name);
  void end_scope();
  void begin_pause();
  void end_pause();

  [[nodiscard]] bool in_step() const;
  // The running step so far (no branch or rogues yet: end_step gives those); nullopt between
  // steps.
  [[nodiscard]] std::optional<StepResult> step_so_far() const;
  [[nodiscard]] Stats stats() const;
  [[nodiscard]] std::vector<BreakRecord> breaks() const;
  // A readable report: stats, branches per step, the last breaks, live rogues.
  [[nodiscard]] std::string report() const;
  // The same as one JSON object (schema "memplan.report", version 1; docs/compiler.md): the
  // stats (to_json), each step's branches with plan, bound, gap and the tags at the peak, every
  // logged break, the live rogues. Bytes exact.
  [[nodiscard]] std::string report_json() const;

  // The step names run so far, with how many branches each has recorded, by name.
  [[nodiscard]] std::vector<std::pair<std::string, std::size_t>> step_branches() const;
  // A recorded branch as a planner problem with its plan and tags (branch_trace.hpp), to export,
  // re-plan or draw. Throws InvalidArgument for a step never run or a branch it does not have.
  [[nodiscard]] BranchTrace branch_trace(std::string_view step, std::size_t branch) const;

  // Between steps: unmaps planned-arena memory above what the plans and live rogues need, and the
  // pool's free chunks at its top. Waits for the arena's user streams first.
  void trim();
  // Between steps: keeps mapped only the chunks that the plans of `held` use (each branch's
  // planned buffers in the plan of its parity, rounded out to chunks) and those of every live
  // buffer in the arena (rogues, carried outputs); every other chunk of the planned arena is
  // unmapped, and the pool trimmed as by trim(). For the branches that CUDA graphs launched
  // outside steps hold. A later step maps what its allocations use as they come: backend calls in
  // a step of a branch not held, none in one of a held branch (docs/compiler.md). Waits for the
  // arena's user streams first. Throws InvalidArgument for a step, branch or parity the compiler
  // does not have (nothing unmapped), InvalidState while a step runs.
  void trim_to(std::span<const BranchRef> held);
  // Between steps: unmaps all planned-arena memory (addresses kept; the next step maps it back).
  // Throws InvalidState while rogues live in the arena.
  void release();
  // Between steps, with share_pool_chunk: when nothing lives in the arena (no rogue, no carried
  // output) and the plans' window is not home (rogues pushed it away), moves it home: past the
  // pool's bytes in the chunk the pool lends (a loan already out keeps its chunk; else the pool's
  // top chunk now) when that saves the largest plan a chunk, else offset 0. Plans that were mapped
  // are mapped there (backend calls); graphs over the old addresses see Stats::window_moves. A
  // capture layer calls it before it captures, once the pool holds what it will hold. Returns
  // whether the window moved; false (and nothing done) without share_pool_chunk. InvalidState in
  // a step; OutOfMemory when the memory to map the plans (or the pool's chunk) at home is not
  // there: then nothing of the arena is mapped and no loan is out (the next step maps its plan).
  bool settle();

  // The arena's base address: stable for the compiler's life.
  [[nodiscard]] void* arena_base() const noexcept;
  [[nodiscard]] const CompilerOptions& options() const noexcept;

  // Which buffer holds `p` (alive, or when it was freed), or the nearest one when `p` is in a
  // guard gap or padding, or that memplan does not own `p`. Buffers are recorded in check mode
  // only; with it off the report says which of memplan's ranges holds `p`, if any.
  [[nodiscard]] AddressReport describe_address(const void* p) const;

 private:
  struct Impl;
  struct Check;  // check mode (check_mode.hpp); null when every CompilerOptions::check flag is off
  void* allocate_planned(std::size_t bytes, StreamRef stream, std::string_view tag,
                         std::size_t alignment);
  void use_stream(StreamRef stream);
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<Check> check_;
};

}  // namespace memplan
