// The events of a step. Replay is the fast path: the next recorded event is a child of the cursor,
// so an allocation is one key comparison and base + offset, and a free is one pointer comparison.
// Anything else is a break: the step switches to recording, serving the rest of its events
// best fit around whatever is live, and at its end the new branch is planned.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <span>

#include "compiler_impl.hpp"
#include "core/log.hpp"
#include "memplan/arena/pointer_errors.hpp"
#include "memplan/tree/branch_planner.hpp"

namespace memplan {

void Compiler::Impl::begin_step(std::string_view name) {
  if (cursor.running()) {
    throw InvalidState(
        fmt::format("begin_step '{}': step '{}' is still running (steps do not nest)", name,
                    cursor.step().name));
  }
  auto it = trees.find(name);
  if (it == trees.end()) {
    auto g = std::make_unique<StepTree>();
    g->name = std::string(name);
    it = trees.emplace(g->name, std::move(g)).first;
  }
  StepTree& g = *it->second;
  // The previous output of a period-two site decides the parity; anything else carried over
  // becomes a rogue first (period_two.cpp).
  const std::uint8_t parity = settle_carried(g);
  learned_sites.step_begins(&g);
  plan_period_two_output(g);
  if (g.tree.branch_count() == 0) go_home_if_stale();
  // A no-op once mapped; maps back after release(), or as it serves after trim_to (trim_to.cpp).
  // Throws before the step starts.
  choose_mapping(g);
  pauses_in_step = 0;
  scopes_at_step_start = scopes.size();
  ++g.steps;
  // The first run of a step records; that is not a break.
  const bool first = g.tree.branch_count() == 0;
  cursor.start(g, first ? StepMode::Record : StepMode::Replay, parity);
  set_carried_guard(carried.empty() ? tree::kToStepEnd : g.period_two_hold);
  if (first) start_recording();
}

std::uint64_t Compiler::Impl::hash_of_tag(std::string_view tag) noexcept {
  return tree::tag_hash(tag);
}

void* Compiler::Impl::allocate(std::size_t bytes, std::string_view tag, std::size_t alignment) {
  const std::size_t align = std::max(alignment, options.default_alignment);
  if (bytes == 0 || bytes > arena::PersistentPool::kMaxRequestBytes) {
    throw InvalidArgument(fmt::format("allocate: size {} is outside [1, {}]", bytes,
                                      arena::PersistentPool::kMaxRequestBytes));
  }
  if ((alignment != 0 && !std::has_single_bit(alignment)) || align > options.chunk_bytes) {
    throw InvalidArgument(
        fmt::format("allocate: alignment {} is not a power of two no larger than the chunk ({} B)",
                    alignment, options.chunk_bytes));
  }
  // Outside steps, inside pauses and from threads other than the step's: the persistent pool.
  if (!cursor.running() || pause_depth > 0 || !cursor.on_step_thread()) {
    if (align > arena::PersistentPool::kMaxAlignment) {
      throw InvalidArgument(fmt::format(
          "allocate: alignment {} for the persistent pool (inside a pause, outside steps or from "
          "another thread than the step's), which aligns to at most {}",
          align, arena::PersistentPool::kMaxAlignment));
    }
    void* p = pool.allocate(bytes, align);
    ++stats.paused_allocations;
    live_bytes.noted(stats.live_rogue_bytes, pool.allocated_bytes());
    return p;
  }
  const tree::AllocKey key{to_bytes(bytes), to_bytes(align), tree::tag_hash(tag)};
  if (cursor.replaying()) {
    const tree::AllocationTree& g = tree();
    const auto matches = [&](NodeId c, std::span<const NodeId>) {
      const tree::Node& n = g.node(c);
      return n.kind == tree::EventKind::Alloc && n.key == key;
    };
    const NodeId match = cursor.find_reachable([&](NodeId c, std::span<const NodeId> passed_late) {
      const tree::Node& n = g.node(c);
      return matches(c, passed_late) &&
             (n.persistent || (rogues.clear(offset_of(n), n.key.size) &&
                               cursor.clear_of_late(n, passed_late) && clear_of_carried(n)));
    });
    if (match != tree::kNoNode) [[likely]] {
      if (map_as_served) map_replayed(g.node(match));  // may throw: nothing changed yet
      cursor.pass_to(match);
      tree::Node& n = tree().node(match);
      // A learned site is served from the pool wherever its planned range is held: then the plan
      // of this path must not keep that range for it.
      if (n.persistent && n.offset != tree::kUnplanned &&
          !(rogues.clear(offset_of(n), n.key.size) && cursor.clear_of_late(n, {}))) {
        n.pool_only = true;
      }
      return serve_replayed(match, bytes);
    }
    const bool held = cursor.find_reachable(matches) != tree::kNoNode;
    if (!tag.empty()) tag_names.try_emplace(key.tag, tag);
    handle_break(held ? BreakReason::RangeOccupied : BreakReason::UnknownAllocation,
                 fmt::format("alloc {}", describe_key(key)));
  }
  return record_allocate(key, tag);
}

void* Compiler::Impl::serve_replayed(NodeId node, std::size_t bytes) {
  const tree::Node& n = tree().node(node);
  void* p = nullptr;
  if (n.persistent) {
    p = pool.allocate(bytes, to_size(n.key.alignment));
    cursor.pooled().emplace(p, node);
    ++stats.learned_site_allocations;
    live_bytes.noted(stats.live_rogue_bytes, pool.allocated_bytes());
  } else {
    p = planned_address(offset_of(n));
    ++stats.replayed_allocations;
    live_bytes.step_allocated(n.key.size, stats.live_rogue_bytes, pool.allocated_bytes());
  }
  cursor.replayed_alloc(node, p);
  return p;
}

void Compiler::Impl::deallocate(void* p) {
  if (p == nullptr) return;
  if (cursor.running()) {
    // The previous step's output (period two): settled before any walk of the path.
    if (!carried.empty() && take_carried(p)) return;
    if (cursor.replaying()) {
      const tree::AllocationTree& g = tree();
      // The path's next event frees p: follow it. Only the first (oldest) child, as the fast
      // path does, so that a free never leads into a younger branch (see find_reachable).
      const NodeId c = cursor.next();
      const bool next = c != tree::kNoNode && g.node(c).kind == tree::EventKind::Free &&
                        cursor.live(g.node(c).buffer) == p;
      const NodeId buffer = next ? g.node(c).buffer : live_node_of(p);
      if (buffer != tree::kNoNode) {
        if (g.node(buffer).persistent) {
          pool.deallocate(p);
          cursor.pooled().erase(p);
          note_learned_site_freed(buffer);
        } else {
          live_bytes.step_freed(g.node(buffer).key.size);
        }
        if (cursor.replayed_free(buffer, next ? c : tree::kNoNode)) ++stats.frees_out_of_order;
        return;
      }
    } else if (recording.holds(p) || cursor.pooled().contains(p)) {
      record_free(p);
      return;
    }
  }
  free_outside_step(p);
}

// Slow path of a replayed free: the Alloc node of the live buffer `p` of this step, or kNoNode.
// A walk up the path: frees out of order are rare, and the hot path never comes here.
NodeId Compiler::Impl::live_node_of(void* p) const {
  if (const auto it = cursor.pooled().find(p); it != cursor.pooled().end()) return it->second;
  if (!arena.raw().contains(p) || rogues.contains(p)) return tree::kNoNode;
  const tree::AllocationTree& g = cursor.tree();
  for (NodeId n = cursor.at(); n != tree::AllocationTree::root(); n = g.node(n).parent) {
    if (g.node(n).kind == tree::EventKind::Alloc && cursor.live(n) == p) return n;
  }
  return tree::kNoNode;
}

void Compiler::Impl::handle_break(BreakReason reason, std::string came) {
  ++stats.breaks;
  ++stats.breaks_by_reason[static_cast<std::size_t>(reason)];
  BreakRecord record{.step = cursor.serial(),
                     .step_name = cursor.step().name,
                     .scope = scope_path(),
                     .event = cursor.events(),
                     .reason = reason,
                     .expected = describe_expected(),
                     .came = std::move(came)};
  logger().warn("break in step {} '{}' at event {} (scope '{}'): {}; expected {}, came {}",
                record.step, record.step_name, record.event, record.scope, to_string(reason),
                record.expected, record.came);
  constexpr std::size_t kMaxLoggedBreaks = 4096;  // the counters go on; the log stays bounded
  if (break_log.size() < kMaxLoggedBreaks) break_log.push_back(std::move(record));

  const bool capped = tree().branch_count() >= options.branch_cap;
  start_recording();
  // The new branch is planned with one parity: the output goes back to the pool.
  fall_back_from_period_two(cursor.step(), "the step broke");
  recording.add_freed_late(
      tree(), cursor.break_into(capped ? StepMode::Dynamic : StepMode::Record, reason));
  if (capped && options.over_cap == OverCapPolicy::Error) {
    throw BranchLimitExceeded(fmt::format(
        "step '{}' would need branch {} but the cap is {} (CompilerOptions::branch_cap); the "
        "rest of this step is served dynamically. Divergence: {}",
        cursor.step().name, tree().branch_count() + 1, options.branch_cap, break_log.back().came));
  }
}

// Builds the best-fit view of the window around everything live: the replayed prefix and the
// rogues (above the plans, or inside them if the window could not move).
void Compiler::Impl::start_recording() {
  const tree::AllocationTree& g = tree();
  const Bytes window = rogues.window();
  recording.start(arena.reserved() - window, static_cast<NodeId>(g.node_count()));
  for (NodeId n = cursor.at(); n != tree::AllocationTree::root(); n = g.node(n).parent) {
    const tree::Node& node = g.node(n);
    void* p = cursor.live(n);
    if (node.kind != tree::EventKind::Alloc || p == nullptr || node.persistent) continue;
    recording.hold(p, Instance{n, offset_of(node), node.key.size});
  }
  for (const auto& [p, output] : carried.all()) recording.hold_range(output.offset, output.size);
  rogues.for_each_range([&](Bytes offset, Bytes size) {
    const Bytes start = std::max(offset, window);
    if (start < offset + size) recording.hold_range(start - window, offset + size - start);
  });
  // The slot of a loan the window left behind holds the pool's bytes (window_home.cpp), and
  // maybe rogues.
  if (const auto behind = loan_left_behind()) {
    const Bytes start = std::max(behind->first, window);
    if (start < behind->second) recording.hold_free_parts(start - window, behind->second - start);
  }
}

void* Compiler::Impl::record_allocate(const tree::AllocKey& key, std::string_view tag) {
  if (!tag.empty()) tag_names.try_emplace(key.tag, tag);
  // Learning is by site (a node of the tree), never by tag: a tag shared by many allocations
  // would send all of them to the pool when one of them outlived its step once.
  // A plan's offsets are aligned from its window; the window keeps the largest alignment asked.
  plan_alignment = std::max(plan_alignment, key.alignment);
  const auto offset = recording.place(key.size, key.alignment, rogues.window());
  if (!offset) {
    throw OutOfMemory(fmt::format(
        "allocate {} B (step '{}'): no free range in the arena's {} reserved bytes while "
        "recording ({} mapped, {} in live rogues); raise CompilerOptions::reserve_bytes",
        key.size, cursor.step().name, arena.reserved(), arena.raw().mapped_bytes(),
        stats.live_rogue_bytes));
  }
  try {
    arena.ensure_mapped(rogues.window() + *offset, key.size);
  } catch (...) {
    recording.unplace(*offset, key.size);
    throw;
  }
  void* p = planned_address(*offset);
  recording.add(p, Instance{cursor.recorded_alloc(key, p), *offset, key.size});
  ++stats.recorded_allocations;
  live_bytes.step_allocated(key.size, stats.live_rogue_bytes, pool.allocated_bytes());
  return p;
}

void Compiler::Impl::record_free(void* p) {
  NodeId node = tree::kNoNode;
  if (const auto it = cursor.pooled().find(p); it != cursor.pooled().end()) {
    node = it->second;
    pool.deallocate(p);
    cursor.pooled().erase(it);
    if (node != tree::kNoNode) note_learned_site_freed(node);
  } else {
    const Instance instance = recording.release(p);
    node = instance.node;
    live_bytes.step_freed(instance.size);
  }
  cursor.recorded_free(node);
}

StepResult Compiler::Impl::end_step() {
  if (!cursor.running()) throw InvalidState("end_step: no step is running");
  if (pauses_in_step > 0) {
    throw InvalidState(fmt::format(
        "end_step '{}': {} pause scope(s) opened in this step are still open; close them first "
        "(the step stays open)",
        cursor.step().name, pauses_in_step));
  }
  if (cursor.replaying()) {
    const NodeId end = cursor.find_reachable([&](NodeId c, std::span<const NodeId>) {
      return tree().node(c).kind == tree::EventKind::End;
    });
    if (end != tree::kNoNode) {
      cursor.pass_to(end);
      StepResult result = cursor.result();
      result.branch = tree().node(end).branch;
      result.rogues = harvest_rogues(/*learn_sites=*/true);
      ++stats.steps_replayed;
      if (result.rogues > 0) place_window();
      finish_step();
      return result;
    }
    handle_break(BreakReason::UnexpectedEnd, "end of step");
  }
  StepResult result = cursor.result();
  result.rogues = harvest_rogues(/*learn_sites=*/cursor.mode() == StepMode::Record);
  if (cursor.mode() == StepMode::Record) {
    result.branch = plan_recorded_branch();  // if it throws, the step stays open; a guard then
                                             // aborts it
    ++stats.steps_recorded;
  } else {
    ++stats.steps_dynamic;
    if (result.rogues > 0) place_window();
  }
  finish_step();
  return result;
}

// The recorded path becomes a branch: planned as if no rogue existed (the window then moves clear
// of them), mapped, trimmed.
tree::BranchId Compiler::Impl::plan_recorded_branch() {
  tree::AllocationTree& g = tree();
  std::vector<void*>& live = cursor.step().live;
  const std::vector<tree::FixedRange> fixed_ranges = fixed_ranges_for_branch(cursor.at());
  const tree::BranchId branch = g.add_end(cursor.at());
  live.push_back(nullptr);
  plan::Solution solution;
  try {
    solution = tree::plan_branch(g, branch, fixed_ranges, options.plan_budget,
                                 {recording.freed_late(), recording.first_recorded()});
  } catch (...) {
    g.truncate(g.branch(branch).end);  // no half-made branch stays behind
    live.resize(g.node_count());
    throw;
  }
  ++stats.branches;
  if (static_cast<std::uint64_t>(solution.arena_size) > stats.planned_peak_bytes) {
    stats.planned_peak_bytes = static_cast<std::uint64_t>(solution.arena_size);
    stats.lower_bound_bytes = static_cast<std::uint64_t>(solution.lower_bound);
  }
  logger().info("step '{}': branch {} planned: {} B (lower bound {} B, {}{})", cursor.step().name,
                branch, solution.arena_size, solution.lower_bound, solution.algorithm,
                solution.proven_optimal ? ", optimal" : "");
  try {
    place_window();
    if (options.trim_after_recording) trim_arena();
  } catch (const Error& e) {
    // The next begin_step maps it again and reports the failure there.
    logger().error("step '{}': mapping the planned arena failed: {}", cursor.step().name, e.what());
  }
  return branch;
}

void Compiler::Impl::trim_arena() {
  const std::vector<arena::ByteRange> keep = ranges_to_keep();
  arena.raw().keep_only(keep);
  drop_unused_loan();
}

void Compiler::Impl::abort_step() noexcept {
  if (!cursor.running()) return;
  const std::string& name = cursor.step().name;
  try {
    const bool rogues_made = harvest_rogues(/*learn_sites=*/false) > 0;
    const NodeId first_recorded = recording.first_recorded();
    if (cursor.mode() == StepMode::Record && first_recorded < tree().node_count()) {
      tree().truncate(first_recorded);
      cursor.step().live.resize(tree().node_count());
    }
    if (rogues_made) place_window();
    ++stats.steps_aborted;
    logger().warn("step '{}' aborted at event {}; {} rogue(s) live", name, cursor.events(),
                  stats.live_rogues);
  } catch (const std::exception& e) {
    logger().error("step '{}': abort failed: {}", name, e.what());
  }
  finish_step();
}

void Compiler::Impl::finish_step() noexcept {
  live_bytes.step_ended();  // what was live became rogues (harvest_rogues)
  learned_sites.step_ended();
  cursor.finish();
  recording.finish();
  // Scopes opened in the step close with it; those opened before it (a model-wide scope) stay.
  if (scopes.size() > scopes_at_step_start) scopes.resize(scopes_at_step_start);
  pause_depth -= pauses_in_step;
  pauses_in_step = 0;
  map_as_served = false;
}

}  // namespace memplan
