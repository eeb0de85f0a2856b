// The capture policy: run the step through the compiler, fingerprint what its launches use, and
// choose eager, capture or graph (see step_runner.hpp for the why).
#include "memplan/capture/step_runner.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/log.hpp"

namespace memplan::capture {

std::string_view to_string(StepPath path) noexcept {
  switch (path) {
    case StepPath::Eager:
      return "eager";
    case StepPath::Captured:
      return "capture";
    case StepPath::Graph:
      return "graph";
  }
  return "?";
}

StepRunner::StepRunner(Compiler& compiler, StepCapturer& capturer, StreamRef stream,
                       CaptureOptions options)
    : compiler_(compiler), capturer_(capturer), stream_(stream), options_(options) {
  if (options_.capture_after < 1) {
    throw InvalidArgument(
        fmt::format("CaptureOptions: capture_after must be >= 1, got {}", options_.capture_after));
  }
  // Check mode poisons and fences at each free: deferred launches would run after their buffers'
  // frees, so they run at once instead.
  if (options_.enabled && compiler_.options().check.enabled()) {
    logger().info("capture: off because the compiler is in check mode; every step runs eagerly");
    options_.enabled = false;
  }
}

StepPath StepRunner::run(std::string_view step_name, std::string_view key, const Body& body) {
  ++stats_.steps;
  last_step_.reset();
  StepContext context(compiler_, stream_, /*defer_launches=*/options_.enabled);
  if (!options_.enabled) {
    auto step = compiler_.step(step_name);
    body(context);
    last_step_ = step.end();
    ++stats_.eager_steps;
    return StepPath::Eager;
  }

  auto it = entries_.find(key);
  if (it == entries_.end()) it = entries_.emplace(std::string(key), std::array<Entry, 2>{}).first;

  auto step = compiler_.step(step_name);
  body(context);  // if it throws, nothing of this step was launched; the guard aborts it
  // The launches are decided before the step ends: they must be queued before end_step may trim
  // what a recording touched or move the plans. So "replayed" is the step so far: every pointer
  // came from a plan (no break, nothing recorded), the plan of the step's parity.
  const std::optional<StepResult> so_far = compiler_.step_so_far();
  Entry& entry = it->second[so_far->parity];
  const bool replayed = !so_far->break_reason && so_far->recorded_allocations == 0;
  const StepPath path =
      finish(entry, replayed, context.take_fingerprint(), context.take_deferred());
  last_step_ = step.end();
  if (path == StepPath::Captured && last_step_->branch) {
    entry.branch = BranchRef{std::string(step_name), *last_step_->branch, last_step_->parity};
  }
  return path;
}

StepPath StepRunner::finish(Entry& entry, bool replayed, StepFingerprint fingerprint,
                            std::vector<Launch> deferred) {
  const bool same = entry.fingerprint == fingerprint;
  if (entry.graph != nullptr && same) {
    entry.graph->launch(stream_);
    ++stats_.graph_launches;
    return StepPath::Graph;
  }
  if (entry.graph != nullptr) {
    logger().info("capture: graph of {} launches invalidated (its step changed)",
                  entry.graph->nodes());
    entry.graph.reset();
    ++stats_.invalidations;
    --stats_.live_graphs;
  }
  entry.stable = !replayed ? 0 : same ? entry.stable + 1 : 1;
  entry.fingerprint = std::move(fingerprint);
  if (entry.stable >= options_.capture_after && !entry.uncapturable) {
    try {
      entry.graph = capturer_.capture(stream_, deferred);
    } catch (const Error& e) {
      logger().warn("capture failed, the step runs eagerly from now on: {}", e.what());
      entry.uncapturable = true;
      ++stats_.capture_failures;
    }
    if (entry.graph != nullptr) {
      ++stats_.captures;
      ++stats_.live_graphs;
      entry.graph->launch(stream_);
      ++stats_.graph_launches;
      return StepPath::Captured;
    }
  }
  run_all(deferred);
  ++stats_.eager_steps;
  return StepPath::Eager;
}

void StepRunner::run_all(const std::vector<Launch>& launches) {
  for (const Launch& f : launches) f(stream_);
}

void StepRunner::trim() {
  std::vector<BranchRef> held;
  for (const auto& [key, by_parity] : entries_) {
    for (const Entry& entry : by_parity) {
      if (entry.graph != nullptr && entry.branch &&
          std::find(held.begin(), held.end(), *entry.branch) == held.end()) {
        held.push_back(*entry.branch);
      }
    }
  }
  if (held.empty()) {
    compiler_.trim();
  } else {
    compiler_.trim_to(held);
  }
}

void StepRunner::invalidate_all() {
  for (auto& [key, by_parity] : entries_) {
    for (Entry& entry : by_parity) {
      if (entry.graph != nullptr) {
        entry.graph.reset();
        ++stats_.invalidations;
        --stats_.live_graphs;
      }
      entry.stable = 0;
      entry.fingerprint.clear();
    }
  }
}

}  // namespace memplan::capture
