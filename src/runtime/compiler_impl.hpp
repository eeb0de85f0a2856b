// The compiler's state, shared by the files of src/runtime/: compiler.cpp (public calls, locking,
// guards), step_events.cpp (begin/allocate/deallocate/end: replay and recording), rogues.cpp
// (what outlives a step) and report.cpp (stats and the readable report). Impl is the coordinator:
// the running step's place and books are its StepCursor, a recording's bytes its Recording, the
// rogues and the plans' window its RogueSet; Impl decides which of them an event goes to.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "carried_outputs.hpp"
#include "compiler_lock.hpp"
#include "learned_sites.hpp"
#include "live_bytes.hpp"
#include "memplan/arena/limiting_backend.hpp"
#include "memplan/arena/persistent_pool.hpp"
#include "memplan/runtime/branch_trace.hpp"
#include "memplan/runtime/compiler.hpp"
#include "memplan/tree/allocation_tree.hpp"
#include "memplan/tree/branch_planner.hpp"
#include "planned_arena.hpp"
#include "recording.hpp"
#include "rogue_set.hpp"
#include "step_cursor.hpp"

namespace memplan {

struct Compiler::Impl {
  Impl(arena::PhysicalBackend& backend, CompilerOptions options);

  // The replay fast path, inline: the next recorded event is the cursor's first child, nothing
  // foreign is live, no option needs checking. A tag on either side costs the tag's hash, out of
  // line, so that untagged calls pay one test; the tag's name was kept when the node was
  // recorded. nullptr / false: take the full path instead.
  void* try_replay_allocate(std::size_t bytes, std::string_view tag, std::size_t alignment) {
    if (!cursor.running() || !cursor.replaying() || pause_depth != 0 || alignment != 0 ||
        rogues.in_window() || !cursor.none_late() || !cursor.on_step_thread()) [[unlikely]] {
      return nullptr;
    }
    const NodeId c = cursor.next();
    if (c == tree::kNoNode) [[unlikely]]
      return nullptr;
    const tree::Node& n = cursor.tree().node(c);
    if (n.kind != tree::EventKind::Alloc || n.persistent || n.depth >= fast_path_until ||
        n.key.size != to_bytes(bytes) || n.key.alignment != default_alignment ||
        ((n.key.tag | tag.size()) != 0 && n.key.tag != hash_of_tag(tag))) [[unlikely]] {
      return nullptr;
    }
    void* p = planned_address(offset_of(n));
    cursor.replayed_alloc(c, p);
    ++stats.replayed_allocations;
    live_bytes.step_allocated(n.key.size, stats.live_rogue_bytes, pool.allocated_bytes());
    return p;
  }
  bool try_replay_free(void* p) {
    if (!cursor.running() || !cursor.replaying() || !cursor.none_late()) [[unlikely]]
      return false;
    const NodeId c = cursor.next();
    if (c == tree::kNoNode) [[unlikely]]
      return false;
    const tree::AllocationTree& g = cursor.tree();
    const tree::Node& n = g.node(c);
    if (n.kind != tree::EventKind::Free || cursor.live(n.buffer) != p) [[unlikely]]
      return false;
    const tree::Node& buffer = g.node(n.buffer);
    if (buffer.persistent) [[unlikely]]
      return false;
    cursor.replayed_next_free(c, n.buffer);
    live_bytes.step_freed(buffer.key.size);
    return true;
  }

  // step_events.cpp
  [[gnu::noinline]] static std::uint64_t hash_of_tag(std::string_view tag) noexcept;
  void begin_step(std::string_view name);
  void* allocate(std::size_t bytes, std::string_view tag, std::size_t alignment);
  void deallocate(void* p);
  StepResult end_step();
  void abort_step() noexcept;

  void* serve_replayed(NodeId node, std::size_t bytes);
  [[nodiscard]] NodeId live_node_of(void* p) const;
  void start_recording();
  void* record_allocate(const tree::AllocKey& key, std::string_view tag);
  void record_free(void* p);
  void handle_break(BreakReason reason, std::string came);
  tree::BranchId plan_recorded_branch();
  void finish_step() noexcept;
  void trim_arena();

  // trim_to.cpp: trimming to the branches graphs hold, and mapping back as steps allocate
  void trim_to(std::span<const BranchRef> held);
  void append_branch_ranges(const BranchRef& ref, std::vector<arena::ByteRange>& out) const;
  void choose_mapping(const StepTree& g);
  void map_replayed(const tree::Node& n);

  // rogues.cpp
  std::uint64_t harvest_rogues(bool learn_sites);  // the rogues left in the planned arena
  void make_rogue(void* p, Bytes offset, Bytes size, NodeId node, bool learn_site);
  [[nodiscard]] std::vector<tree::FixedRange> fixed_ranges_for_branch(NodeId last) const;
  void reserve_learned_sites();
  // Pool blocks held as room for the learned sites' next buffers, given back at destruction.
  struct HeldRoom {
    arena::PersistentPool& pool;
    std::vector<void*> blocks;
    explicit HeldRoom(arena::PersistentPool& p) : pool(p) {}
    HeldRoom(const HeldRoom&) = delete;
    HeldRoom& operator=(const HeldRoom&) = delete;
    ~HeldRoom() {
      for (void* p : blocks) pool.deallocate(p);
    }
  };
  void hold_learned_room(HeldRoom& room, bool grow);
  void note_learned_site_freed(NodeId node);
  void place_window() noexcept;
  void move_window();

  // window_home.cpp: where the window goes, and the chunk the pool lends it
  struct WindowPlace {
    Bytes window = 0;   // the plans' offset 0
    Bytes slot = 0;     // the whole chunk it starts in
    bool lent = false;  // that slot maps the pool's lent chunk
  };
  [[nodiscard]] std::optional<Bytes> loan_start(Bytes need) const;
  [[nodiscard]] bool loan_movable() const;
  [[nodiscard]] std::optional<std::pair<Bytes, Bytes>> loan_left_behind() const;
  [[nodiscard]] std::optional<WindowPlace> clear_place(Bytes need) const;
  void take_place(const WindowPlace& to);
  bool move_home(Bytes need);
  void go_home(Bytes need, Bytes extent);
  void go_home_as_mapped();
  void go_home_if_stale();
  bool settle_window();
  // No rogue and no carried output: nothing of the arena is live between steps.
  [[nodiscard]] bool arena_empty() const { return rogues.empty() && carried.empty(); }
  void end_loan();
  void drop_unused_loan();
  [[nodiscard]] std::vector<arena::ByteRange> ranges_to_keep() const;
  [[nodiscard]] std::vector<arena::ByteRange> live_ranges() const;
  void free_outside_step(void* p);
  [[nodiscard]] std::optional<std::pair<Bytes, Bytes>> live_range_containing(Bytes offset) const;
  [[nodiscard]] Bytes plans_bytes() const;

  // period_two.cpp: outputs that outlive their step by less than one step (carried_outputs.hpp)
  std::uint8_t settle_carried(StepTree& g);
  void plan_period_two_output(StepTree& g);
  void carry_output(void* p, NodeId node);
  bool take_carried(void* p);
  void drop_carried();
  void fall_back_from_period_two(StepTree& g, std::string_view why);
  [[nodiscard]] bool clear_of_carried(const tree::Node& n) const noexcept {
    return n.depth < carried_guard || carried.clear(offset_of(n), n.key.size);
  }
  void set_carried_guard(std::uint32_t depth) noexcept {
    carried_guard = depth;
    fast_path_until = map_as_served ? 0 : depth;
  }

  // report.cpp
  [[nodiscard]] std::string describe_expected() const;
  [[nodiscard]] std::string describe_key(const tree::AllocKey& key) const;
  [[nodiscard]] std::string scope_path() const;
  [[nodiscard]] Stats snapshot() const;
  [[nodiscard]] std::string report() const;
  [[nodiscard]] std::string report_json() const;  // report_json.cpp
  [[nodiscard]] BranchTrace branch_trace(std::string_view step, std::size_t branch) const;
  [[nodiscard]] std::string describe_memory() const;
  // An OutOfMemory naming the request that failed (an allocation, or begin_step's mapping), what
  // is mapped and what is live, with the cause's own message after it.
  [[noreturn]] void rethrow_allocate_failure(std::size_t bytes, const OutOfMemory& cause) const;
  [[noreturn]] void rethrow_begin_step_failure(std::string_view name,
                                               const OutOfMemory& cause) const;
  [[noreturn]] void throw_out_of_memory(std::string_view request, const OutOfMemory& cause) const;

  // The offset of a planned node in the running step's plan (its parity's).
  [[nodiscard]] Bytes offset_of(const tree::Node& n) const noexcept {
    return n.offset_at(cursor.parity());
  }
  // Where planned offset `offset` is: plans are laid out from the window on.
  [[nodiscard]] void* planned_address(Bytes offset) const noexcept {
    return arena.address(rogues.window() + offset);
  }
  [[nodiscard]] tree::AllocationTree& tree() noexcept { return cursor.tree(); }
  [[nodiscard]] StepTree* current() const noexcept {
    return cursor.running() ? &cursor.step() : nullptr;
  }

  arena::PhysicalBackend& backend;
  CompilerOptions options;
  Bytes default_alignment;  // options.default_alignment, in the tree's units
  // The arena's and the pool's way to `backend`: holds them to the memory budget (or to no limit)
  // and keeps the high-water mark of what they map.
  arena::LimitingBackend budget;
  mutable std::uint64_t budget_refusals_seen = 0;  // budget.refusals() at the last OutOfMemory
  PlannedArena arena;
  arena::PersistentPool pool;
  // options.share_pool_chunk, and the two chunk sizes are equal (a pool chunk fits a slot).
  bool share_pool_chunk;
  mutable CompilerLock lock;

  std::map<std::string, std::unique_ptr<StepTree>, std::less<>> trees;
  std::vector<StreamRef> streams;  // users of the arena
  StreamRef last_stream;

  StepCursor cursor;  // the running step
  Recording recording;
  std::vector<std::string> scopes;
  std::size_t scopes_at_step_start = 0;  // scopes opened before the running step: kept at its end
  int pause_depth = 0;
  int pauses_in_step = 0;  // pauses opened in the running step and still open

  // What outlives steps.
  RogueSet rogues;
  std::unordered_map<std::uint64_t, std::string> tag_names;
  // Every learned site, and how many of its buffers outlive their steps (for the pool's room).
  LearnedSites learned_sites;
  bool pool_room_stale = false;  // a site was learned or leaked: map room at step end
  // Period-two outputs of finished steps still live in the window, and the event depth from
  // which the running step's plan no longer holds the one it carries over (past it, allocations
  // leave the fast path and check their range: clear_of_carried).
  CarriedOutputs carried;
  std::uint32_t carried_guard = tree::kToStepEnd;
  // Allocations at or past this depth leave the inline fast path: carried_guard, or 0 while the
  // running step maps its planned ranges as it serves them (set_carried_guard keeps the two).
  std::uint32_t fast_path_until = tree::kToStepEnd;

  // trim_to left chunks of the plans' window unmapped: a step whose tree is not mapped throughout
  // maps each planned range as it serves it (map_as_served) instead of its tree's whole extent at
  // begin_step, so that a step of a branch a graph holds makes no backend call.
  bool plans_have_holes = false;
  // The window may have a better home than where it is: the last rogue died, or a loan ended
  // (window_home.cpp): the begin_step of a step never seen sends it there.
  bool home_stale = false;
  Bytes loan_slot = 0;  // the arena slot (a whole chunk) that maps the pool's lent chunk
  // The largest alignment a step's buffer in the arena asked: plans' offsets are aligned from the
  // window, so the window's start must be too (a loan's start is rounded up to it).
  Bytes plan_alignment = 1;
  bool map_as_served = false;  // the running step's, chosen at its begin_step

  Stats stats;
  LiveBytes live_bytes;
  std::vector<BreakRecord> break_log;
};

}  // namespace memplan
