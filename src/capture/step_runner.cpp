// The capture policy: run the step through the compiler, fingerprint what its launches use, and
// choose eager, capture or graph (see step_runner.hpp for the why).
#include "memplan/capture/step_runner.hpp"

#include <fmt/format.h>

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
    : compiler_(compiler),
      capturer_(capturer),
      stream_(stream),
      options_(options),
      context_(compiler, stream) {
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
  context_.reset(options_.enabled);
  if (!options_.enabled) {
    auto step = compiler_.step(step_name);
    body(context_);
    step.end();
    ++stats_.eager_steps;
    return StepPath::Eager;
  }

  auto it = entries_.find(key);
  if (it == entries_.end()) it = entries_.emplace(std::string(key), Entry{}).first;
  Entry& entry = it->second;

  const Stats before = compiler_.stats();
  auto step = compiler_.step(step_name);
  try {
    body(context_);
  } catch (...) {
    context_.deferred_.clear();  // nothing of this step was launched; the guard aborts it
    throw;
  }
  context_.depends_on(context_.launches_);
  const Stats after = compiler_.stats();
  const bool replayed = after.breaks == before.breaks &&
                        after.recorded_allocations == before.recorded_allocations &&
                        after.steps_dynamic == before.steps_dynamic;
  const StepPath path = finish(entry, replayed);
  step.end();
  return path;
}

StepPath StepRunner::finish(Entry& entry, bool replayed) {
  const bool same = entry.fingerprint == context_.trace_;
  if (entry.graph != nullptr && same) {
    entry.graph->launch(stream_);
    context_.deferred_.clear();
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
  entry.fingerprint.swap(context_.trace_);
  if (entry.stable >= options_.capture_after && !entry.uncapturable) {
    try {
      entry.graph = capturer_.capture(stream_, context_.deferred_);
    } catch (const Error& e) {
      logger().warn("capture failed, the step runs eagerly from now on: {}", e.what());
      entry.uncapturable = true;
      ++stats_.capture_failures;
    }
    if (entry.graph != nullptr) {
      ++stats_.captures;
      ++stats_.live_graphs;
      context_.deferred_.clear();
      entry.graph->launch(stream_);
      ++stats_.graph_launches;
      return StepPath::Captured;
    }
  }
  run_deferred();
  ++stats_.eager_steps;
  return StepPath::Eager;
}

void StepRunner::run_deferred() {
  for (const Launch& f : context_.deferred_) f(stream_);
  context_.deferred_.clear();
}

void StepRunner::invalidate_all() {
  for (auto& [key, entry] : entries_) {
    if (entry.graph != nullptr) {
      entry.graph.reset();
      ++stats_.invalidations;
      --stats_.live_graphs;
    }
    entry.stable = 0;
    entry.fingerprint.clear();
  }
}

}  // namespace memplan::capture
