// What outlives a step. A rogue keeps its bytes where they are, and at the end of its step the
// plans' window moves to addresses clear of it (on the physical chunks the plans leave), so a rogue
// costs its own chunks and never a worse plan. Its site (the tree node) is learned: later steps
// serve that allocation from the persistent pool.
#include <fmt/format.h>

#include <algorithm>

#include "compiler_impl.hpp"
#include "core/log.hpp"
#include "memplan/arena/pointer_errors.hpp"

namespace memplan {

std::uint64_t Compiler::Impl::harvest_rogues(bool learn_sites) {
  if (cursor.live_buffers() == 0) return 0;  // the common case: everything was freed
  const std::uint64_t rogues_before = stats.rogues;
  std::vector<void*>& live = cursor.step().live;
  if (cursor.replaying()) {
    const tree::AllocationTree& g = tree();
    for (NodeId n = cursor.at(); n != tree::AllocationTree::root(); n = g.node(n).parent) {
      const tree::Node& node = g.node(n);
      if (node.kind != tree::EventKind::Alloc || live[n] == nullptr) continue;
      if (node.period_two && learn_sites) {
        carry_output(live[n], n);  // the next step's plan holds its range
      } else if (!node.persistent) {
        make_rogue(live[n], offset_of(node), node.key.size, n, learn_sites);
      }
      live[n] = nullptr;
    }
  } else {
    for (const auto& [p, instance] : recording.live()) {
      make_rogue(p, instance.offset, instance.size, instance.node,
                 learn_sites && instance.node != tree::kNoNode);
      if (instance.node != tree::kNoNode) live[instance.node] = nullptr;
    }
    recording.forget_live();
  }
  // Learned-site buffers still live stay in the pool; they are freed from there whenever. The
  // next step's allocation at that site needs a block of its own: map its room now.
  for (const auto& [p, node] : cursor.pooled()) {
    if (node == tree::kNoNode) continue;
    learned_sites.outlives(p, {current(), node}, /*in_arena=*/false);
    live[node] = nullptr;
    tree().node(node).quiet_steps = 0;
    pool_room_stale = true;
  }
  cursor.pooled().clear();
  cursor.forget_live();
  live_bytes.step_ended();
  live_bytes.noted(stats.live_rogue_bytes, pool.allocated_bytes());
  reserve_learned_sites();
  return stats.rogues - rogues_before;
}

// Moves the window clear of every live rogue when one lies in it: to the lowest whole chunk from
// which all plans fit between rogues, past the pool's bytes in it when the pool can lend its chunk
// there (window_home.cpp). With none live it goes home. remap() lets the new window take the
// physical chunks the old one leaves, so the move needs new memory only for the rogues' chunks.
// When no window fits or the memory is not there, replay checks each range against the rogues
// instead (and breaks where one is held), as plans made around them did before.
void Compiler::Impl::place_window() noexcept {
  try {
    move_window();
  } catch (const std::exception& e) {
    // The next begin_step maps the window again and reports a failure there.
    logger().error("mapping the plans' window failed: {}", e.what());
  }
}

void Compiler::Impl::move_window() {
  // Plans move or are made around rogues: outputs carried over become rogues first (their plans'
  // offsets are relative to the window).
  drop_carried();
  const Bytes need = plans_bytes();
  const Bytes extent = cursor.running() ? tree().arena_bytes() : need;
  // The window stays: mapped for this step's plans (the other steps' map at their begin_step);
  // `held_inside` when a rogue lies in it, which replay then checks for.
  const auto stay = [&](bool held_inside) {
    rogues.set_window(rogues.window(), held_inside);
    arena.ensure_mapped(rogues.window(), extent);
  };
  if (rogues.empty()) return share_pool_chunk ? go_home(need, extent) : stay(false);
  const Bytes from = rogues.window();
  if (from % plan_alignment == 0 &&
      rogues.clear_of_chunks(from, need, arena.chunk(), loan_left_behind())) {
    return stay(false);
  }
  HeldRoom room(pool);  // the learned sites' room stays the pool's (window_home.cpp)
  hold_learned_room(room, /*grow=*/false);
  const std::optional<WindowPlace> to = clear_place(need);
  if (!to) {
    logger().warn(
        "no window of {} B clear of {} live rogue(s) in the arena's {} B; replay "
        "checks their ranges instead",
        need, stats.live_rogues, arena.reserved());
    return stay(true);
  }
  try {
    take_place(*to);
    arena.raw().remap(ranges_to_keep());
  } catch (const Error& e) {
    if (to->lent) end_loan();  // the loan's slot held no rogue (clear_place)
    rogues.set_window(from, rogues.in_window());
    logger().warn(
        "moving the plans clear of the rogues failed ({}); replay checks their ranges "
        "instead",
        e.what());
    return stay(true);
  }
  ++stats.window_moves;
  drop_unused_loan();
  logger().info("plans moved from arena offset {} to {}, clear of {} live rogue(s){}", from,
                to->window, stats.live_rogues,
                to->lent ? " (past the pool's bytes in the chunk it lends)" : "");
}

// What must stay mapped: the plans' window and the rogues' bytes.
std::vector<arena::ByteRange> Compiler::Impl::ranges_to_keep() const {
  std::vector<arena::ByteRange> keep{PlannedArena::range(rogues.window(), plans_bytes())};
  rogues.for_each_range(
      [&](Bytes offset, Bytes size) { keep.push_back(PlannedArena::range(offset, size)); });
  return keep;
}

// Every live buffer of the arena outside a step: the rogues and the outputs carried in the plans.
std::vector<arena::ByteRange> Compiler::Impl::live_ranges() const {
  std::vector<arena::ByteRange> live;
  rogues.for_each_range(
      [&](Bytes offset, Bytes size) { live.push_back(PlannedArena::range(offset, size)); });
  for (const auto& [p, output] : carried.all()) {
    live.push_back(PlannedArena::range(rogues.window() + output.offset, output.size));
  }
  return live;
}

// Later steps serve the learned sites from the pool. After a step that learned a site or left a
// learned site's buffer live, map the room each site's next buffer needs (learned_sites.hpp: one
// block each at most, none where the caller's habit frees one first) all at once (allocate them
// all, give them back: free blocks for their sum), so that replayed steps make no backend call
// (guarantee 2). A failure here only means a later step may grow the pool.
void Compiler::Impl::reserve_learned_sites() {
  if (!pool_room_stale) return;
  pool_room_stale = false;
  HeldRoom room(pool);
  hold_learned_room(room, /*grow=*/true);  // and give it back at once
}

// The room of every learned site's next buffer, allocated from the pool until `room` goes; only
// from the free blocks there are unless `grow`.
void Compiler::Impl::hold_learned_room(HeldRoom& room, bool grow) {
  room.blocks.reserve(learned_sites.size());
  try {
    learned_sites.for_each_missing_room([&](const tree::AllocKey& key, std::uint32_t count) {
      for (std::uint32_t i = 0; i < count; ++i) {
        void* p = grow ? pool.allocate(to_size(key.size), to_size(key.alignment))
                       : pool.allocate_if_free(to_size(key.size), to_size(key.alignment));
        if (p != nullptr) room.blocks.push_back(p);
      }
    });
  } catch (const Error& e) {
    logger().warn("reserving pool room for learned sites failed: {}", e.what());
  }
}

// A learned site whose buffer was freed inside its step 8 steps in a row has stopped being a
// rogue: if a plan placed it before it was learned (its range is then kept in every plan through
// it, see branch_planner.cpp) and no replay relied on its being in the pool (pool_only), it
// is served from the plan again and its pool room goes. Each time
// a site is forgotten and learned again, it must stay quiet twice as long (up to 255 steps), so
// a site that leaks now and then settles in the pool instead of costing a rogue each time.
void Compiler::Impl::note_learned_site_freed(NodeId node) {
  tree::Node& n = tree().node(node);
  const unsigned needed = std::min(8u << std::min<unsigned>(n.forgotten, 5), 255u);
  if (n.quiet_steps < needed) ++n.quiet_steps;
  if (n.quiet_steps < needed || n.offset == tree::kUnplanned || n.pool_only) return;
  n.persistent = false;
  n.quiet_steps = 0;
  if (n.forgotten < 255) ++n.forgotten;
  learned_sites.forget({current(), node});
  ++stats.forgotten_rogue_sites;
  logger().info(
      "step '{}': the learned site of a {} B allocation was freed in its step {} times "
      "in a row; it is served from the plan again",
      cursor.step().name, n.key.size, needed);
}

void Compiler::Impl::make_rogue(void* p, Bytes offset, Bytes size, NodeId node, bool learn_site) {
  const bool has_site = node != tree::kNoNode;
  const std::uint64_t tag = has_site ? tree().node(node).key.tag : 0;
  const Bytes window = rogues.window();
  rogues.add(p, Rogue{.offset = window + offset,
                      .size = size,
                      .tag = tag,
                      .step = cursor.serial(),
                      .since = has_site ? tree().node(node).depth : 0,
                      .step_name = cursor.step().name});
  ++stats.rogues;
  stats.rogue_bytes += static_cast<std::uint64_t>(size);
  ++stats.live_rogues;
  stats.live_rogue_bytes += static_cast<std::uint64_t>(size);
  // The pool aligns to at most 4096 bytes: a site that asked for more (the arena allows up to a
  // chunk) stays in the arena, and may rogue again, each time at its own cost.
  const bool learns =
      learn_site && has_site &&
      tree().node(node).key.alignment <= to_bytes(arena::PersistentPool::kMaxAlignment);
  const auto name = tag_names.find(tag);
  logger().warn("rogue: {} B{} of step {} '{}' is live at the step's end (arena offset {}){}", size,
                name == tag_names.end() ? std::string() : fmt::format(" tagged '{}'", name->second),
                cursor.serial(), cursor.step().name, window + offset,
                learns ? "; its site is served from the persistent pool from now on" : "");
  if (learns && !tree().node(node).persistent) {
    tree().node(node).persistent = true;
    ++stats.learned_rogue_sites;
    learned_sites.learn({current(), node}, tree().node(node).key);
    learned_sites.outlives(p, {current(), node}, /*in_arena=*/true);
    pool_room_stale = true;
  }
}

void Compiler::Impl::free_outside_step(void* p) {
  if (take_carried(p)) return;
  // A learned site's buffer freed inside a step of its tree: how long it lived into that step.
  const StepTree* running = cursor.running() ? &cursor.step() : nullptr;
  const std::uint32_t depth = running != nullptr ? tree().node(cursor.at()).depth : 0;
  if (const std::optional<Rogue> rogue = rogues.take(p)) {
    --stats.live_rogues;
    stats.live_rogue_bytes -= static_cast<std::uint64_t>(rogue->size);
    if (rogues.empty()) home_stale = true;
    learned_sites.freed(p, running, depth);
    return;
  }
  if (pool.owns(p)) {
    pool.deallocate(p);  // throws DoubleFree or ForeignPointer, changing nothing
    learned_sites.freed(p, running, depth);
    return;
  }
  if (arena.raw().contains(p)) {
    const Bytes offset = arena.offset_of(p);
    if (const auto live = live_range_containing(offset)) {
      throw arena::ForeignPointer(fmt::format(
          "deallocate {}: not the start of an allocation: it lies {} B into the live {} B buffer "
          "at arena offset {}",
          p, offset - live->first, live->second, live->first));
    }
    throw arena::DoubleFree(fmt::format(
        "deallocate {}: no live allocation starts there in the arena at {} (freed already, or "
        "not the start of an allocation)",
        p, arena.raw().base()));
  }
  throw arena::ForeignPointer(fmt::format(
      "deallocate {}: not owned by this compiler (arena {} + {} B, pool {} + {} B)", p,
      arena.raw().base(), arena.reserved(), pool.arena().base(), pool.arena().reserved_bytes()));
}

// Error path of a free: the [offset, size) of the live arena buffer (a rogue, or a buffer of the
// running step) that contains `offset`, if any; offsets from the arena's base. A walk over
// everything live: never on a hot path.
std::optional<std::pair<Bytes, Bytes>> Compiler::Impl::live_range_containing(Bytes offset) const {
  const auto inside = [offset](Bytes start, Bytes size) {
    return start <= offset && offset - start < size;
  };
  for (const auto& [p, r] : rogues.all()) {
    if (inside(r.offset, r.size)) return std::pair{r.offset, r.size};
  }
  const Bytes window = rogues.window();
  for (const auto& [p, c] : carried.all()) {
    if (inside(window + c.offset, c.size)) return std::pair{window + c.offset, c.size};
  }
  if (!cursor.running()) return std::nullopt;
  for (const auto& [p, instance] : recording.live()) {
    if (inside(window + instance.offset, instance.size)) {
      return std::pair{window + instance.offset, instance.size};
    }
  }
  if (!cursor.replaying()) return std::nullopt;
  const tree::AllocationTree& g = cursor.tree();
  for (NodeId n = cursor.at(); n != tree::AllocationTree::root(); n = g.node(n).parent) {
    const tree::Node& node = g.node(n);
    if (node.kind == tree::EventKind::Alloc && !node.persistent && cursor.live(n) != nullptr &&
        inside(window + offset_of(node), node.key.size)) {
      return std::pair{window + offset_of(node), node.key.size};
    }
  }
  return std::nullopt;
}

// Plans ignore the rogues (the window moves clear of them) unless the window could not move:
// then the rogues in it are fixed_ranges for the whole of the branch's next steps, where they are
// live from the start. A rogue of this very step may sit where a buffer of the replayed prefix
// was earlier in the step (recording reused the range); the prefix's offsets are fixed, so that
// rogue is an fixed range only from its own allocation on.
std::vector<tree::FixedRange> Compiler::Impl::fixed_ranges_for_branch(NodeId last) const {
  if (!rogues.in_window()) return {};
  const tree::AllocationTree& g = cursor.tree();
  const NodeId first_recorded = recording.first_recorded();
  const Bytes window = rogues.window();
  std::vector<std::pair<Bytes, Bytes>> fixed;   // [offset, end) of the fixed prefix buffers
  std::vector<std::pair<Bytes, Bytes>> prefix;  // the same, with sites learned this step
  for (NodeId n = last; n != tree::AllocationTree::root(); n = g.node(n).parent) {
    const tree::Node& node = g.node(n);
    if (node.kind != tree::EventKind::Alloc || n >= first_recorded) continue;
    prefix.emplace_back(node.offset, node.offset + node.key.size);
    if (!node.persistent) fixed.emplace_back(node.offset, node.offset + node.key.size);
  }
  std::vector<tree::FixedRange> fixed_ranges;
  for (const auto& [p, r] : rogues.all()) {
    if (r.offset + r.size <= window) continue;
    const Bytes start = std::max(r.offset, window) - window;  // in the window
    const Bytes size = r.offset + r.size - window - start;
    // A buffer of the replayed prefix left live is a rogue of this step (its site just learned)
    // and a node of the branch, which holds its range already: fixed twice, no plan would fit.
    if (r.step == cursor.serial() &&
        std::find(prefix.begin(), prefix.end(), std::pair{start, start + size}) != prefix.end()) {
      continue;
    }
    const bool clashes =
        r.step == cursor.serial() && std::any_of(fixed.begin(), fixed.end(), [&](const auto& f) {
          return f.first < start + size && start < f.second;
        });
    fixed_ranges.push_back({start, size, clashes ? r.since : 0u});
  }
  return fixed_ranges;
}

// The largest plan of any step: the window's size.
Bytes Compiler::Impl::plans_bytes() const {
  Bytes need = 0;
  for (const auto& [name, g] : trees) need = std::max(need, g->tree.arena_bytes());
  return need;
}

}  // namespace memplan
