// Aborted steps, for the host and the GPU tests alike. An exception thrown before any event of a
// step (recording, replaying, after a break, past the branch cap, at a learned rogue site,
// with a rogue live, inside a pause or not) aborts the step; once the buffers the step's code owns
// are freed (by the unwinding, before the step guard aborts the step, or by the caller after it),
// memory is back at its pre-step level to the byte, and the next steps follow the known path
// without a break.
#pragma once

#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "step_program.hpp"

namespace memplan::testing {

// Memory between steps, after trim(): what is mapped for plans and for the pool, what the pool and
// the rogues hold, and the physical chunks the backend holds (create_chunk - release_chunk: on a
// GPU the driver's free memory is no byte-exact measure). `limited` is a LimitingBackend's used
// bytes, where the backend is one.
struct MemoryLevel {
  std::uint64_t mapped = 0;
  std::uint64_t pool_mapped = 0;
  std::uint64_t pool_allocated = 0;
  std::uint64_t live_rogues = 0;
  std::uint64_t live_rogue_bytes = 0;
  std::uint64_t chunks_held = 0;
  std::uint64_t limited = 0;
  // Equal levels map the same physical memory, however the arena and the pool share it: the
  // pool may lend the plans part of its chunk (window_home.cpp), so one chunk counts as the
  // pool's or as the arena's depending on where the window went.
  friend bool operator==(const MemoryLevel& a, const MemoryLevel& b) {
    return a.mapped + a.pool_mapped == b.mapped + b.pool_mapped &&
           a.pool_allocated == b.pool_allocated && a.live_rogues == b.live_rogues &&
           a.live_rogue_bytes == b.live_rogue_bytes && a.chunks_held == b.chunks_held &&
           a.limited == b.limited;
  }
  friend std::ostream& operator<<(std::ostream& os, const MemoryLevel& m) {
    return os << "{mapped " << m.mapped << ", pool mapped " << m.pool_mapped << ", pool allocated "
              << m.pool_allocated << ", live rogues " << m.live_rogues << " (" << m.live_rogue_bytes
              << " B), chunks held " << m.chunks_held << ", limit used " << m.limited << "}";
  }
};

template <class H>
MemoryLevel memory_level(H& h) {
  h.compiler().trim();
  const Stats s = h.compiler().stats();
  MemoryLevel m{.mapped = s.mapped_bytes,
                .pool_mapped = s.pool_mapped_bytes,
                .pool_allocated = s.pool_live_bytes,
                .live_rogues = s.live_rogues,
                .live_rogue_bytes = s.live_rogue_bytes,
                .chunks_held = s.backend_calls[arena::Call::CreateChunk] -
                               s.backend_calls[arena::Call::ReleaseChunk]};
  if constexpr (requires { h.backend().used_bytes(); }) m.limited = h.backend().used_bytes();
  return m;
}

// The buffers a step's code owns, freed by the destructor in the reverse order of their
// allocation, as tensors on a C++ stack are when an exception unwinds it.
template <class H>
class Owners {
 public:
  explicit Owners(H& h) : h_(h) {}
  Owners(const Owners&) = delete;
  Owners& operator=(const Owners&) = delete;
  ~Owners() { free_all(); }

  void allocate(int id, std::size_t size, bool paused) {
    h_.allocate(id, size, {}, paused);
    live_.emplace_back(id, size);
  }
  void release(int id) {
    h_.release(id);
    std::erase_if(live_, [id](const auto& owned) { return owned.first == id; });
  }
  // Bytes of the owned buffers still live (sizes are multiples of 256: the pool adds no padding).
  std::size_t live_bytes() const {
    std::size_t sum = 0;
    for (const auto& owned : live_) sum += owned.second;
    return sum;
  }
  void free_all() noexcept {
    for (auto it = live_.rbegin(); it != live_.rend(); ++it) {
      try {
        h_.release(it->first);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "freeing buffer " << it->first << ": " << e.what();
      }
    }
    live_.clear();
  }

 private:
  H& h_;
  std::vector<std::pair<int, std::size_t>> live_;  // id and size, in allocation order
};

struct ModelFailed : std::runtime_error {
  ModelFailed() : std::runtime_error("the model threw") {}
};

// A step or, with an empty name, events outside any step (frees of buffers kept from a step).
struct Phase {
  std::string step;
  Program program;
};

struct AbortScenario {
  std::string name;
  CompilerOptions options;
  std::vector<Phase> setup;  // run before the aborted step
  Program aborted;           // the aborted step: it throws before each of its events in turn
  std::vector<Phase> known;  // the known path, run twice after the abort: no break, then replayed
};

enum class FreedBy : std::uint8_t {
  Unwinding,  // the owners live inside the step guard: freed before the step is aborted
  Caller,     // the owners outlive the guard: rogues at the abort, freed by the caller after it
};

template <class H>
void run_phase(H& h, const Phase& phase) {
  if (!phase.step.empty()) {
    h.run_step(phase.program, phase.step);
    return;
  }
  for (const Op& op : phase.program) {
    if (op.kind == Op::Alloc) {
      h.allocate(op.id, op.size, op.tag, op.paused);
    } else {
      h.release(op.id);
    }
  }
}

inline constexpr int kPausedInStep = 100;  // the buffer allocated inside the open pause
inline constexpr std::size_t kPausedInStepBytes = 3072;

// The events of `program` before `event`, into `owners`; then, with `in_pause`, a pause is opened
// and a buffer allocated in it; then the exception.
template <class H>
[[noreturn]] void run_until_exception(H& h, Owners<H>& owners, const Program& program,
                                      std::size_t event, bool in_pause) {
  for (std::size_t i = 0; i < event; ++i) {
    const Op& op = program[i];
    if (op.kind == Op::Alloc) {
      owners.allocate(op.id, op.size, op.paused);
    } else {
      owners.release(op.id);
    }
  }
  if (in_pause) {
    auto pause = h.compiler().pause();
    owners.allocate(kPausedInStep, kPausedInStepBytes, /*paused=*/false);  // the pool: paused
    throw ModelFailed();
  }
  throw ModelFailed();
}

// One abort: the step `scenario.aborted` throws before its event `event`.
template <class H>
void check_abort(const AbortScenario& scenario, std::size_t event, bool in_pause, FreedBy freed) {
  SCOPED_TRACE(::testing::Message()
               << scenario.name << ": exception before event " << event
               << (in_pause ? ", inside a pause" : "") << ", freed by "
               << (freed == FreedBy::Unwinding ? "the unwinding" : "the caller"));
  H h(scenario.options);
  for (const Phase& phase : scenario.setup) run_phase(h, phase);
  const MemoryLevel before = memory_level(h);
  const Stats stats_before = h.compiler().stats();
  const std::string step = "denoise";

  if (freed == FreedBy::Unwinding) {
    try {
      auto guard = h.compiler().step(step);
      Owners<H> owners(h);
      run_until_exception(h, owners, scenario.aborted, event, in_pause);
    } catch (const ModelFailed&) {
    }
  } else {
    Owners<H> owners(h);
    try {
      auto guard = h.compiler().step(step);
      run_until_exception(h, owners, scenario.aborted, event, in_pause);
    } catch (const ModelFailed&) {
    }
    // What the step's code still owns outlived the step: arena buffers became rogues, pool buffers
    // (paused, or at learned sites) stayed in the pool. Nothing else was added, nothing lost.
    const Stats at_abort = h.compiler().stats();
    EXPECT_EQ((at_abort.live_rogue_bytes - stats_before.live_rogue_bytes) +
                  (at_abort.pool_live_bytes - stats_before.pool_live_bytes),
              owners.live_bytes());
    EXPECT_EQ(at_abort.learned_rogue_sites, stats_before.learned_rogue_sites);
    h.expect_all_intact();
  }
  EXPECT_FALSE(h.compiler().in_step());
  EXPECT_EQ(h.compiler().stats().steps_aborted, stats_before.steps_aborted + 1);
  h.expect_all_intact();
  EXPECT_EQ(memory_level(h), before);

  const Stats after_abort = h.compiler().stats();
  for (const Phase& phase : scenario.known) run_phase(h, phase);
  const Stats first = h.compiler().stats();
  for (const Phase& phase : scenario.known) run_phase(h, phase);
  const Stats second = h.compiler().stats();
  EXPECT_EQ(second.breaks, after_abort.breaks);
  EXPECT_GT(second.steps_replayed, first.steps_replayed);
  EXPECT_EQ(second.steps_recorded, first.steps_recorded);
  h.expect_all_intact();
}

// Every event of the scenario's aborted step, inside a pause or not, freed either way.
template <class H>
void check_aborts_at_every_event(const AbortScenario& scenario) {
  for (std::size_t event = 0; event <= scenario.aborted.size(); ++event) {
    for (const bool in_pause : {false, true}) {
      for (const FreedBy freed : {FreedBy::Unwinding, FreedBy::Caller}) {
        check_abort<H>(scenario, event, in_pause, freed);
      }
    }
  }
}

// The scenarios. Sizes are multiples of 256, so pool and rogue bytes add up exactly.
inline const Program kAbortProgram{alloc(1, 4096), alloc(2, 8192), free_(1),
                                   alloc(3, 4096), free_(2),       free_(3)};
// The same step with buffer 2 larger: a break at its event 1.
inline const Program kDivergentProgram{alloc(1, 4096), alloc(2, 12288), free_(1),
                                       alloc(3, 4096), free_(2),        free_(3)};
// Buffer 9 outlives its step: a rogue the first time, then its site is served by the pool.
inline const Program kKeepsBuffer9{alloc(1, 4096), alloc(9, 2048), alloc(2, 8192), free_(1),
                                   free_(2)};

template <class H>
std::vector<AbortScenario> abort_scenarios() {
  const CompilerOptions options = H::small_options();
  CompilerOptions capped = options;
  capped.branch_cap = 1;
  capped.over_cap = OverCapPolicy::Dynamic;
  const Phase step{"denoise", kAbortProgram};
  const Phase free_9{"", {free_(9)}};
  return {
      {"recording", options, {}, kAbortProgram, {step}},
      {"replaying", options, {step}, kAbortProgram, {step}},
      // A rogue of another step lives in the planned arena across the aborted one.
      {"with a rogue live", options, {{"warmup", {alloc(50, 65536)}}, step}, kAbortProgram, {step}},
      {"after a break", options, {step}, kDivergentProgram, {step}},
      {"past the branch cap", capped, {step}, kDivergentProgram, {step}},
      {"at a learned rogue site",
       options,
       {{"denoise", kKeepsBuffer9}, free_9, {"denoise", kKeepsBuffer9}, free_9},
       kKeepsBuffer9,
       {{"denoise", kKeepsBuffer9}, free_9}},
  };
}

}  // namespace memplan::testing
