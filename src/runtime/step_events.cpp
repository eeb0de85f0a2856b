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
  if (current != nullptr) {
    throw InvalidState(fmt::format(
        "begin_step '{}': step '{}' is still running (steps do not nest)", name, current->name));
  }
  auto it = trees.find(name);
  if (it == trees.end()) {
    auto g = std::make_unique<StepTree>();
    g->name = std::string(name);
    it = trees.emplace(g->name, std::move(g)).first;
  }
  StepTree& g = *it->second;
  // A no-op once mapped; maps back after release(). Throws before the step starts.
  arena.ensure_mapped(static_cast<std::size_t>(window),
                      static_cast<std::size_t>(g.tree.arena_bytes()));
  current = &g;
  step_thread = std::this_thread::get_id();
  cursor = tree::AllocationTree::root();
  event_index = 0;
  pauses_in_step = 0;
  scopes_at_step_start = scopes.size();
  ++g.steps;
  if (g.tree.branch_count() == 0) {
    mode = StepMode::Record;  // the first run of a step records; that is not a break
    start_recording();
  } else {
    mode = StepMode::Replay;
  }
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
  if (current == nullptr || pause_depth > 0 || std::this_thread::get_id() != step_thread) {
    if (align > arena::PersistentPool::kMaxAlignment) {
      throw InvalidArgument(fmt::format(
          "allocate: alignment {} for the persistent pool (inside a pause, outside steps or from "
          "another thread than the step's), which aligns to at most {}",
          align, arena::PersistentPool::kMaxAlignment));
    }
    void* p = pool.allocate(bytes, align);
    ++stats.paused_allocations;
    return p;
  }
  const tree::AllocKey key{static_cast<Bytes>(bytes), static_cast<Bytes>(align),
                           tree::tag_hash(tag)};
  if (mode == StepMode::Replay) {
    const tree::AllocationTree& g = tree();
    const auto matches = [&](NodeId c, std::span<const NodeId>) {
      const tree::Node& n = g.node(c);
      return n.kind == tree::EventKind::Alloc && n.key == key;
    };
    const NodeId match = find_reachable([&](NodeId c, std::span<const NodeId> passed_late) {
      const tree::Node& n = g.node(c);
      return matches(c, passed_late) &&
             (n.persistent ||
              ((!rogues_in_window || !occupied.overlaps(window + n.offset, n.key.size)) &&
               clear_of_late(n, passed_late)));
    });
    if (match != tree::kNoNode) [[likely]] {
      pass_to(match);
      return serve_replayed(match, bytes);
    }
    const bool held = find_reachable(matches) != tree::kNoNode;
    if (!tag.empty()) tag_names.try_emplace(key.tag, tag);
    handle_break(held ? BreakReason::RangeOccupied : BreakReason::UnknownAllocation,
                 fmt::format("alloc {}", describe_key(key)));
  }
  return record_allocate(key, tag);
}

// The oldest node (the smallest id) that `accept`s among the cursor's children and, through Free
// nodes, their children. A Free node is passed when its buffer is freed already (early: it is
// settled then), or when the buffer is still live (it is freed late: `accept` gets those passed
// on the way, so that an allocation is taken only if its planned range is clear of them). The
// oldest, because the tree only grows: a path that matched once matches the same nodes again,
// whatever branches were added since (guarantee 4). The first child is the oldest of all of them,
// which is why the inline fast path may take it.
template <class Accept>
NodeId Compiler::Impl::find_reachable(Accept&& accept) const {
  const tree::AllocationTree& g = current->tree;
  NodeId best = tree::kNoNode;
  std::vector<NodeId> passed_late;
  const auto visit = [&](const auto& self, NodeId at) -> void {
    for (NodeId c = g.node(at).first_child; c != tree::kNoNode; c = g.node(c).next_sibling) {
      const tree::Node& n = g.node(c);
      if (accept(c, std::span<const NodeId>(passed_late))) {
        best = std::min(best, c);
      } else if (n.kind == tree::EventKind::Free) {
        if (current->live[n.buffer] == nullptr) {
          self(self, c);  // freed already (early, or late after its first Free node): settled
        } else if (std::find(late.begin(), late.end(), n.buffer) == late.end() &&
                   std::find(passed_late.begin(), passed_late.end(), n.buffer) ==
                       passed_late.end()) {
          passed_late.push_back(n.buffer);
          self(self, c);
          passed_late.pop_back();
        }
      }
    }
  };
  visit(visit, cursor);
  return best;
}

// Whether planned node `n`'s range is clear of every buffer freed late (live, its Free node
// passed): those already passed, and `passed_late` on the way to `n`.
bool Compiler::Impl::clear_of_late(const tree::Node& n, std::span<const NodeId> passed_late) const {
  const tree::AllocationTree& g = current->tree;
  const auto clear = [&](NodeId buffer) {
    const tree::Node& b = g.node(buffer);
    return b.persistent || b.offset + b.key.size <= n.offset || n.offset + n.key.size <= b.offset;
  };
  return std::all_of(late.begin(), late.end(), clear) &&
         std::all_of(passed_late.begin(), passed_late.end(), clear);
}

// Moves the cursor to just before `node`, a result of find_reachable: of the Free nodes passed on
// the way, those of buffers freed early are settled, the others' buffers are freed late.
void Compiler::Impl::pass_to(NodeId node) {
  tree::AllocationTree& g = tree();
  for (NodeId n = g.node(node).parent; n != cursor; n = g.node(n).parent) {
    const NodeId buffer = g.node(n).buffer;
    if (current->live[buffer] == nullptr) {
      std::erase(freed_early, buffer);  // settled (a no-op for a late buffer freed since)
    } else {
      late.push_back(buffer);
      // Served from the pool, it may outlive its Free node; from the plan it could not, so it
      // is never forgotten (a seen path would break on its range).
      if (g.node(buffer).persistent) g.node(buffer).pooled_past_free = true;
    }
  }
  cursor = g.node(node).parent;
}

void* Compiler::Impl::serve_replayed(NodeId node, std::size_t bytes) {
  const tree::Node& n = tree().node(node);
  void* p = nullptr;
  if (n.persistent) {
    p = pool.allocate(bytes, static_cast<std::size_t>(n.key.alignment));
    step_pool_live.emplace(p, node);
    ++stats.learned_site_allocations;
  } else {
    p = planned_address(n.offset);
    ++stats.replayed_allocations;
  }
  current->live[node] = p;
  cursor = node;
  ++event_index;
  ++live_in_step;
  return p;
}

void Compiler::Impl::deallocate(void* p) {
  if (p == nullptr) return;
  if (current != nullptr) {
    if (mode == StepMode::Replay) {
      tree::AllocationTree& g = tree();
      std::vector<void*>& live = current->live;
      // The path's next event frees p: follow it. Only the first (oldest) child, as the fast
      // path does, so that a free never leads into a younger branch (see find_reachable).
      const NodeId c = g.node(cursor).first_child;
      const bool next = c != tree::kNoNode && g.node(c).kind == tree::EventKind::Free &&
                        live[g.node(c).buffer] == p;
      const NodeId buffer = next ? g.node(c).buffer : live_node_of(p);
      if (buffer != tree::kNoNode) {
        if (g.node(buffer).persistent) {
          pool.deallocate(p);
          step_pool_live.erase(p);
          note_learned_site_freed(buffer);
        }
        live[buffer] = nullptr;
        const auto was_late = std::find(late.begin(), late.end(), buffer);
        const bool freed_late = was_late != late.end();  // its Free node is behind
        if (freed_late) late.erase(was_late);
        if (next) {
          cursor = c;
        } else {
          // Not a break. Freed early, its Free node is passed later.
          if (!freed_late) freed_early.push_back(buffer);
          ++stats.frees_out_of_order;
        }
        ++event_index;
        --live_in_step;
        return;
      }
    } else if (recorded.contains(p) || step_pool_live.contains(p)) {
      record_free(p);
      return;
    }
  }
  free_outside_step(p);
}

// Slow path of a replayed free: the Alloc node of the live buffer `p` of this step, or kNoNode.
// A walk up the path: frees out of order are rare, and the hot path never comes here.
NodeId Compiler::Impl::live_node_of(void* p) const {
  if (const auto it = step_pool_live.find(p); it != step_pool_live.end()) return it->second;
  if (!arena.contains(p) || rogues.contains(p)) return tree::kNoNode;
  const tree::AllocationTree& g = current->tree;
  for (NodeId n = cursor; n != tree::AllocationTree::root(); n = g.node(n).parent) {
    if (g.node(n).kind == tree::EventKind::Alloc && current->live[n] == p) return n;
  }
  return tree::kNoNode;
}

void Compiler::Impl::handle_break(BreakReason reason, std::string came) {
  ++stats.breaks;
  ++stats.breaks_by_reason[static_cast<std::size_t>(reason)];
  BreakRecord record{.step = step_serial,
                     .step_name = current->name,
                     .scope = scope_path(),
                     .event = event_index,
                     .reason = reason,
                     .expected = describe_expected(),
                     .came = std::move(came)};
  logger().warn("break in step {} '{}' at event {} (scope '{}'): {}; expected {}, came {}",
                record.step, record.step_name, record.event, record.scope,
                break_reason_name(reason), record.expected, record.came);
  constexpr std::size_t kMaxLoggedBreaks = 4096;  // the counters go on; the log stays bounded
  if (break_log.size() < kMaxLoggedBreaks) break_log.push_back(std::move(record));

  const bool capped = tree().branch_count() >= options.branch_cap;
  mode = capped ? StepMode::Dynamic : StepMode::Record;
  start_recording();
  if (mode == StepMode::Record) {
    // The frees that came early happened before the break: they start the new branch, so that
    // its plan may reuse their bytes and the same program replays it (find_reachable passes them).
    for (const NodeId buffer : freed_early) {
      cursor = tree().add_free(cursor, buffer);
      current->live.push_back(nullptr);
    }
    // Buffers freed late are live, so the recording keeps their bytes and records their frees
    // again; the plan must know that they outlive the Free nodes the replay passed.
    for (const NodeId buffer : late) {
      if (!tree().node(buffer).persistent) recorded_late.push_back(buffer);  // pool: no bytes here
    }
  }
  freed_early.clear();
  late.clear();
  if (capped && options.over_cap == OverCapPolicy::Error) {
    throw BranchLimitExceeded(fmt::format(
        "step '{}' would need branch {} but the cap is {} (CompilerOptions::branch_cap); the "
        "rest of this step is served dynamically. Divergence: {}",
        current->name, tree().branch_count() + 1, options.branch_cap, break_log.back().came));
  }
}

// Builds the best-fit view of the window around everything live: the replayed prefix and the
// rogues (above the plans, or inside them if the window could not move).
void Compiler::Impl::start_recording() {
  free_ranges.emplace(static_cast<Bytes>(arena.reserved_bytes()) - window);
  recorded.clear();
  const tree::AllocationTree& g = tree();
  for (NodeId n = cursor; n != tree::AllocationTree::root(); n = g.node(n).parent) {
    const tree::Node& node = g.node(n);
    void* p = current->live[n];
    if (node.kind != tree::EventKind::Alloc || p == nullptr || node.persistent) continue;
    free_ranges->occupy(node.offset, node.key.size);
    recorded.emplace(p, Instance{n, node.offset, node.key.size});
  }
  occupied.for_each([&](Bytes offset, Bytes size) {
    const Bytes start = std::max(offset, window);
    if (start < offset + size) free_ranges->occupy(start - window, offset + size - start);
  });
  first_recorded = static_cast<NodeId>(g.node_count());
}

void* Compiler::Impl::record_allocate(const tree::AllocKey& key, std::string_view tag) {
  if (!tag.empty()) tag_names.try_emplace(key.tag, tag);
  const bool learning = mode == StepMode::Record;
  tree::AllocationTree& g = tree();
  // Learning is by site (a node of the tree), never by tag: a tag shared by many allocations
  // would send all of them to the pool when one of them outlived its step once.
  const auto offset = free_ranges->allocate(key.size, key.alignment);
  if (!offset) {
    throw OutOfMemory(fmt::format(
        "allocate {} B (step '{}'): no free range in the arena's {} reserved bytes while "
        "recording ({} mapped, {} in live rogues); raise CompilerOptions::reserve_bytes",
        key.size, current->name, arena.reserved_bytes(), arena.mapped_bytes(),
        stats.live_rogue_bytes));
  }
  try {
    arena.ensure_mapped(static_cast<std::size_t>(window + *offset),
                        static_cast<std::size_t>(key.size));
  } catch (...) {
    free_ranges->release(*offset, key.size);
    throw;
  }
  void* p = planned_address(*offset);
  NodeId node = tree::kNoNode;
  if (learning) {
    node = cursor = g.add_alloc(cursor, key);
    current->live.push_back(p);
  }
  recorded.emplace(p, Instance{node, *offset, key.size});
  ++stats.recorded_allocations;
  ++event_index;
  ++live_in_step;
  return p;
}

void Compiler::Impl::record_free(void* p) {
  NodeId node = tree::kNoNode;
  if (const auto it = step_pool_live.find(p); it != step_pool_live.end()) {
    node = it->second;
    pool.deallocate(p);
    step_pool_live.erase(it);
    if (node != tree::kNoNode) note_learned_site_freed(node);
  } else {
    const auto rec = recorded.find(p);
    node = rec->second.node;
    free_ranges->release(rec->second.offset, rec->second.size);
    recorded.erase(rec);
  }
  if (node != tree::kNoNode) {
    current->live[node] = nullptr;
    if (mode == StepMode::Record) {
      cursor = tree().add_free(cursor, node);
      current->live.push_back(nullptr);
    }
  }
  ++event_index;
  --live_in_step;
}

void Compiler::Impl::end_step() {
  if (current == nullptr) throw InvalidState("end_step: no step is running");
  if (pauses_in_step > 0) {
    throw InvalidState(fmt::format(
        "end_step '{}': {} pause scope(s) opened in this step are still open; close them first "
        "(the step stays open)",
        current->name, pauses_in_step));
  }
  if (mode == StepMode::Replay) {
    const NodeId end = find_reachable([&](NodeId c, std::span<const NodeId>) {
      return tree().node(c).kind == tree::EventKind::End;
    });
    if (end != tree::kNoNode) {
      pass_to(end);
      const bool rogues_made = harvest_rogues(/*learn_sites=*/true);
      ++stats.steps_replayed;
      if (rogues_made) place_window();
      finish_step();
      return;
    }
    handle_break(BreakReason::UnexpectedEnd, "end of step");
  }
  const bool rogues_made = harvest_rogues(/*learn_sites=*/mode == StepMode::Record);
  if (mode == StepMode::Record) {
    plan_recorded_branch();  // if it throws, the step stays open; a guard then aborts it
    ++stats.steps_recorded;
  } else {
    ++stats.steps_dynamic;
    if (rogues_made) place_window();
  }
  finish_step();
}

// The recorded path becomes a branch: planned as if no rogue existed (the window then moves clear
// of them), mapped, trimmed.
void Compiler::Impl::plan_recorded_branch() {
  tree::AllocationTree& g = tree();
  const std::vector<tree::FixedRange> fixed_ranges = fixed_ranges_for_branch(cursor);
  const tree::BranchId branch = g.add_end(cursor);
  current->live.push_back(nullptr);
  plan::Solution solution;
  try {
    solution = tree::plan_branch(g, branch, fixed_ranges, options.plan_budget,
                                 {recorded_late, first_recorded});
  } catch (...) {
    g.truncate(g.branch(branch).end);  // no half-made branch stays behind
    current->live.resize(g.node_count());
    throw;
  }
  ++stats.branches;
  if (static_cast<std::uint64_t>(solution.arena_size) > stats.planned_peak_bytes) {
    stats.planned_peak_bytes = static_cast<std::uint64_t>(solution.arena_size);
    stats.lower_bound_bytes = static_cast<std::uint64_t>(solution.lower_bound);
  }
  logger().info("step '{}': branch {} planned: {} B (lower bound {} B, {}{})", current->name,
                branch, solution.arena_size, solution.lower_bound, solution.algorithm,
                solution.proven_optimal ? ", optimal" : "");
  try {
    place_window();
    if (options.trim_after_recording) trim_arena();
  } catch (const Error& e) {
    // The next begin_step maps it again and reports the failure there.
    logger().error("step '{}': mapping the planned arena failed: {}", current->name, e.what());
  }
}

void Compiler::Impl::trim_arena() {
  const std::vector<arena::ByteRange> keep = ranges_to_keep();
  arena.keep_only(keep);
}

void Compiler::Impl::abort_step() noexcept {
  if (current == nullptr) return;
  try {
    const bool rogues_made = harvest_rogues(/*learn_sites=*/false);
    if (mode == StepMode::Record && first_recorded < tree().node_count()) {
      tree().truncate(first_recorded);
      current->live.resize(tree().node_count());
    }
    if (rogues_made) place_window();
    ++stats.steps_aborted;
    logger().warn("step '{}' aborted at event {}; {} rogue(s) live", current->name, event_index,
                  stats.live_rogues);
  } catch (const std::exception& e) {
    logger().error("step '{}': abort failed: {}", current->name, e.what());
  }
  finish_step();
}

void Compiler::Impl::finish_step() noexcept {
  current = nullptr;
  cursor = tree::AllocationTree::root();
  freed_early.clear();
  late.clear();
  recorded_late.clear();
  free_ranges.reset();
  if (!recorded.empty()) recorded.clear();  // clear() sweeps every bucket, even when empty
  if (!step_pool_live.empty()) step_pool_live.clear();
  first_recorded = tree::kNoNode;
  live_in_step = 0;
  // Scopes opened in the step close with it; those opened before it (a model-wide scope) stay.
  if (scopes.size() > scopes_at_step_start) scopes.resize(scopes_at_step_start);
  pause_depth -= pauses_in_step;
  pauses_in_step = 0;
  ++step_serial;
}

}  // namespace memplan
