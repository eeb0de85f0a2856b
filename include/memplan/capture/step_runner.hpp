// Runs a repeated step through the memory compiler and, once the step is stable, as a captured
// graph.
//
// The caller passes the step as a callable that allocates through a StepContext (which forwards to
// the Compiler) and enqueues its kernels with StepContext::launch. The runner always runs the
// callable, so the compiler sees every allocation event of every step: breaks, rogues and host
// state (caches, counters) stay exact, and replayed allocations cost only host bookkeeping. What
// changes is what happens to the launches:
//   - capture off: each launch runs at once (eager);
//   - capture on: launches are deferred to the end of the callable, still inside the step. The
//     step's fingerprint (the key, every pointer and size the context handed out, every free,
//     every value declared with depends_on, the number of launches) is then compared with the one
//     of the last step under the same key. Equal and a graph exists: the graph is launched instead
//     of the deferred launches. Equal for `capture_after` replayed steps in a row (no break, no
//     recorded allocation): the deferred launches are captured, instantiated once and the graph
//     launched. Otherwise the deferred launches run eagerly, and a graph whose fingerprint no
//     longer matches (a break re-planned the branch, a rogue moved it, a dependency changed) is
//     dropped and counted as an invalidation.
// Why this is safe: a graph is launched only when this step's own launches would have used exactly
// the captured pointers, and the compiler just handed those pointers out to this step, so they are
// mapped and overlap nothing live. Launches run before end_step, so nothing a recording touched is
// trimmed before the work using it is queued (and trimming waits for the stream).
//
// Graphs are kept per key and per parity (StepResult::parity): a branch whose output outlives its
// step has two plans that alternate step by step, so a graph captured on one is never launched on
// the other (the fingerprint would refuse it, but one entry for both would then never capture).
//
// The contract on the caller: under one key, the launches must be a function of the fingerprint
// (same pointers and dependencies -> same kernels and arguments). Values that change per step
// (a timestep) must be read by the kernels from device memory, not baked into launch arguments.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memplan/capture/captured_step.hpp"
#include "memplan/capture/step_fingerprint.hpp"
#include "memplan/runtime/compiler.hpp"

namespace memplan::capture {

struct CaptureOptions {
  bool enabled = true;    // false: every step eager, launches run at once (forced in check mode)
  int capture_after = 2;  // replayed steps with an equal fingerprint before a capture (>= 1)
};

struct CaptureStats {
  std::uint64_t steps = 0;
  std::uint64_t eager_steps = 0;       // launches ran one by one
  std::uint64_t captures = 0;          // graphs captured and instantiated
  std::uint64_t graph_launches = 0;    // steps served by a graph (the capturing step included)
  std::uint64_t invalidations = 0;     // graphs dropped because their step changed
  std::uint64_t capture_failures = 0;  // captures that failed; the step then ran eagerly
  std::uint64_t live_graphs = 0;
};

enum class StepPath : std::uint8_t { Eager, Captured, Graph };
[[nodiscard]] std::string_view to_string(StepPath path) noexcept;

// One step's allocations and launches, as the step's callable sees them; the runner makes one per
// step and takes its fingerprint and held-back launches at the end.
class StepContext {
 public:
  // Allocations through `compiler` on `stream`; launches run at once, or are held back for the
  // runner when `defer_launches`.
  StepContext(Compiler& compiler, StreamRef stream, bool defer_launches) noexcept
      : compiler_(&compiler), stream_(stream), defer_(defer_launches) {}

  // Allocates through the compiler on the runner's stream (inside pause scopes too).
  [[nodiscard]] void* allocate(std::size_t bytes, std::string_view tag = {},
                               std::size_t alignment = 0) {
    void* p = compiler_->allocate(bytes, stream_, tag, alignment);
    fingerprint_.allocated(p, bytes);
    return p;
  }
  void deallocate(void* p) {
    compiler_->deallocate(p, stream_);
    fingerprint_.freed(p);
  }
  // A value the launches depend on that this step did not allocate: a buffer kept from an
  // earlier step, a pointer of a persistent buffer, a shape.
  void depends_on(std::uint64_t value) { fingerprint_.depends_on(value); }
  void depends_on(const void* p) { depends_on(reinterpret_cast<std::uintptr_t>(p)); }

  // Enqueues `f` on the stream: at once when capture is off, else at the end of the callable.
  template <class F>
  void launch(F&& f) {
    ++launches_;
    if (defer_) {
      deferred_.emplace_back(std::forward<F>(f));
    } else {
      f(stream_);
    }
  }

  [[nodiscard]] Compiler& compiler() noexcept { return *compiler_; }
  [[nodiscard]] StreamRef stream() const noexcept { return stream_; }
  [[nodiscard]] std::uint64_t launches() const noexcept { return launches_; }

  // The end of the step's callable: its fingerprint, closed with the launch count, and the
  // launches held back, each handed over once.
  [[nodiscard]] StepFingerprint take_fingerprint() {
    fingerprint_.launched(launches_);
    return std::move(fingerprint_);
  }
  [[nodiscard]] std::vector<Launch> take_deferred() noexcept { return std::move(deferred_); }

 private:
  Compiler* compiler_;
  StreamRef stream_;
  bool defer_;
  std::uint64_t launches_ = 0;
  StepFingerprint fingerprint_;
  std::vector<Launch> deferred_;
};

class StepRunner {
 public:
  using Body = std::function<void(StepContext&)>;

  // `capturer` makes the graphs; `stream` is where every launch and graph goes (a created CUDA
  // stream for the CUDA capturer). Throws InvalidArgument for capture_after < 1.
  StepRunner(Compiler& compiler, StepCapturer& capturer, StreamRef stream,
             CaptureOptions options = {});

  // Runs one step named `step_name` (a compiler step) whose launches are described by `key`.
  // Returns how the launches ran. If `body` throws, the step is aborted (as by a StepGuard),
  // its deferred launches are dropped, and the exception propagates.
  StepPath run(std::string_view step_name, std::string_view key, const Body& body);

  // Drops every graph (counted as invalidations): call when something the launches depend on
  // changed behind the fingerprint's back.
  void invalidate_all();

  // Between steps: the compiler's trim_to the branches the live graphs were captured on (each
  // graph's branch and parity), or its trim() when no graph lives. Steps of those branches then
  // make no backend call; a step of another branch maps what it uses back.
  void trim();

  [[nodiscard]] const CaptureStats& stats() const noexcept { return stats_; }
  // What the compiler said of the last step run() ended (end_step's result); nullopt before the
  // first, or when the last one's callable threw.
  [[nodiscard]] const std::optional<StepResult>& last_step() const noexcept { return last_step_; }
  [[nodiscard]] const CaptureOptions& options() const noexcept { return options_; }

 private:
  struct Entry {
    StepFingerprint fingerprint;
    int stable = 0;  // replayed steps in a row with this fingerprint
    bool uncapturable = false;
    std::unique_ptr<CapturedStep> graph;
    std::optional<BranchRef> branch;  // the graph's: what its capture step replayed
  };

  StepPath finish(Entry& entry, bool replayed, StepFingerprint fingerprint,
                  std::vector<Launch> deferred);
  void run_all(const std::vector<Launch>& launches);

  Compiler& compiler_;
  StepCapturer& capturer_;
  StreamRef stream_;
  CaptureOptions options_;
  std::map<std::string, std::array<Entry, 2>, std::less<>> entries_;  // by key, then parity
  CaptureStats stats_;
  std::optional<StepResult> last_step_;
};

}  // namespace memplan::capture
