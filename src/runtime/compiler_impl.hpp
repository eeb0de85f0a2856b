// The compiler's state, shared by the files of src/runtime/: compiler.cpp (public calls, locking,
// guards), step_events.cpp (begin/allocate/deallocate/end: replay and recording), rogues.cpp
// (what outlives a step) and report.cpp (stats and the readable report).
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

#include "compiler_lock.hpp"
#include "memplan/arena/arena.hpp"
#include "memplan/arena/persistent_pool.hpp"
#include "memplan/runtime/compiler.hpp"
#include "memplan/tree/allocation_tree.hpp"
#include "memplan/tree/branch_planner.hpp"
#include "memplan/tree/free_ranges.hpp"
#include "memplan/tree/occupied_ranges.hpp"

namespace memplan {

using tree::NodeId;

// One allocation tree per step name, with the pointer each node's buffer has while it is live in
// the running step (indexed by node id; nullptr when not live).
struct StepTree {
  std::string name;
  tree::AllocationTree tree;
  std::vector<void*> live{nullptr};
  std::uint64_t steps = 0;
};

// How the running step is served.
enum class StepMode : std::uint8_t {
  Replay,   // following a known branch: base + offset
  Record,   // after a break, or the first time: best fit, events appended to the tree
  Dynamic,  // past the branch cap: best fit, nothing learned
};

// A live buffer of the running step while it records: where its bytes are.
struct Instance {
  NodeId node = tree::kNoNode;  // kNoNode in Dynamic mode
  Bytes offset = 0;
  Bytes size = 0;
};

// An allocation of a finished step that is still live.
struct Rogue {
  Bytes offset = 0;  // in the planned arena, from its base (not from the window)
  Bytes size = 0;
  std::uint64_t tag = 0;
  std::uint64_t step = 0;
  std::uint32_t since = 0;  // the event (node depth) that allocated it in that step
  std::string step_name;
};

struct Compiler::Impl {
  Impl(arena::PhysicalBackend& backend, CompilerOptions options);

  // The replay fast path, inline: the next recorded event is the cursor's first child, nothing
  // foreign is live, no option needs checking. nullptr / false: take the full path instead.
  void* try_replay_allocate(std::size_t bytes, std::string_view tag, std::size_t alignment) {
    if (current == nullptr || mode != StepMode::Replay || pause_depth != 0 || alignment != 0 ||
        !tag.empty() || rogues_in_window || !late.empty() ||
        std::this_thread::get_id() != step_thread) [[unlikely]] {
      return nullptr;
    }
    const tree::AllocationTree& g = current->tree;
    const NodeId c = g.node(cursor).first_child;
    if (c == tree::kNoNode) [[unlikely]]
      return nullptr;
    const tree::Node& n = g.node(c);
    if (n.kind != tree::EventKind::Alloc || n.persistent || n.key.tag != 0 ||
        n.key.size != static_cast<Bytes>(bytes) ||
        n.key.alignment != static_cast<Bytes>(options.default_alignment)) [[unlikely]] {
      return nullptr;
    }
    void* p = planned_address(n.offset);
    current->live[c] = p;
    cursor = c;
    ++event_index;
    ++live_in_step;
    ++stats.replayed_allocations;
    return p;
  }
  bool try_replay_free(void* p) {
    if (current == nullptr || mode != StepMode::Replay || !late.empty()) [[unlikely]]
      return false;
    const tree::AllocationTree& g = current->tree;
    const NodeId c = g.node(cursor).first_child;
    if (c == tree::kNoNode) [[unlikely]]
      return false;
    const tree::Node& n = g.node(c);
    if (n.kind != tree::EventKind::Free || current->live[n.buffer] != p ||
        g.node(n.buffer).persistent) [[unlikely]] {
      return false;
    }
    current->live[n.buffer] = nullptr;
    cursor = c;
    ++event_index;
    --live_in_step;
    return true;
  }

  // step_events.cpp
  void begin_step(std::string_view name);
  void* allocate(std::size_t bytes, std::string_view tag, std::size_t alignment);
  void deallocate(void* p);
  void end_step();
  void abort_step() noexcept;

  void* serve_replayed(NodeId node, std::size_t bytes);
  template <class Accept>
  [[nodiscard]] NodeId find_reachable(Accept&& accept) const;
  [[nodiscard]] bool clear_of_late(const tree::Node& n, std::span<const NodeId> passed_late) const;
  void pass_to(NodeId node);
  [[nodiscard]] NodeId live_node_of(void* p) const;
  void start_recording();
  void* record_allocate(const tree::AllocKey& key, std::string_view tag);
  void record_free(void* p);
  void handle_break(BreakReason reason, std::string came);
  void plan_recorded_branch();
  void finish_step() noexcept;
  void trim_arena();

  // rogues.cpp
  bool harvest_rogues(bool learn_sites);  // true: a rogue was left in the planned arena
  void make_rogue(void* p, Bytes offset, Bytes size, NodeId node, bool learn_site);
  [[nodiscard]] std::vector<tree::FixedRange> fixed_ranges_for_branch(NodeId last) const;
  void reserve_learned_sites();
  void note_learned_site_freed(NodeId node);
  void place_window() noexcept;
  void move_window();
  [[nodiscard]] std::vector<arena::ByteRange> ranges_to_keep() const;
  void free_outside_step(void* p);
  [[nodiscard]] std::optional<std::pair<Bytes, Bytes>> live_range_containing(Bytes offset) const;
  [[nodiscard]] Bytes plans_bytes() const;

  // report.cpp
  [[nodiscard]] std::string describe_expected() const;
  [[nodiscard]] std::string describe_key(const tree::AllocKey& key) const;
  [[nodiscard]] std::string scope_path() const;
  [[nodiscard]] Stats snapshot() const;
  [[nodiscard]] std::string report() const;
  [[nodiscard]] std::string describe_memory() const;
  // An OutOfMemory naming the request that failed (an allocation, or begin_step's mapping), what
  // is mapped and what is live, with the cause's own message after it.
  [[noreturn]] void rethrow_allocate_failure(std::size_t bytes, const OutOfMemory& cause) const;
  [[noreturn]] void rethrow_begin_step_failure(std::string_view name,
                                               const OutOfMemory& cause) const;

  // Where planned offset `offset` is: plans are laid out from the window on.
  [[nodiscard]] void* planned_address(Bytes offset) const noexcept {
    return arena.address(static_cast<std::size_t>(window + offset));
  }
  // A pointer's offset from the arena's base (rogues are kept this way: windows move).
  [[nodiscard]] Bytes offset_of(const void* p) const noexcept {
    return static_cast<Bytes>(static_cast<const std::byte*>(p) -
                              static_cast<const std::byte*>(arena.base()));
  }
  [[nodiscard]] tree::AllocationTree& tree() noexcept { return current->tree; }

  arena::PhysicalBackend& backend;
  CompilerOptions options;
  arena::Arena arena;
  arena::PersistentPool pool;
  mutable CompilerLock lock;

  std::map<std::string, std::unique_ptr<StepTree>, std::less<>> trees;
  std::vector<StreamRef> streams;  // users of the arena
  StreamRef last_stream;

  // The running step.
  StepTree* current = nullptr;
  std::thread::id step_thread;  // the thread that began it: only its allocations are events
  StepMode mode = StepMode::Replay;
  NodeId cursor = tree::AllocationTree::root();
  // Buffers of the replayed step freed before the path's Free node for them, in the order freed.
  // Those Free nodes are then passed whenever the next event lies beyond them, so frees match in
  // any order (find_reachable).
  std::vector<NodeId> freed_early;
  // Buffers of the replayed step still live whose Free node the path has passed (freed later than
  // on record): a replayed allocation must be clear of them (clear_of_late).
  std::vector<NodeId> late;
  std::uint64_t step_serial = 0;
  std::uint64_t event_index = 0;
  std::size_t live_in_step = 0;  // buffers of the running step not yet freed: rogues if any at end
  std::vector<std::string> scopes;
  std::size_t scopes_at_step_start = 0;  // scopes opened before the running step: kept at its end
  int pause_depth = 0;
  int pauses_in_step = 0;  // pauses opened in the running step and still open

  // Recording state of the running step.
  std::optional<tree::FreeRanges> free_ranges;
  std::unordered_map<void*, Instance> recorded;      // live arena buffers of the step
  std::unordered_map<void*, NodeId> step_pool_live;  // live learned-site buffers of the step
  NodeId first_recorded = tree::kNoNode;             // forgotten if the step aborts
  std::vector<NodeId> recorded_late;  // buffers freed late when the recording began (FreedLate)

  // Where plans lie in the arena: planned offset 0 is at base + window (a whole number of chunks).
  // A rogue keeps its bytes where they are; at the end of the step that made it, the window moves
  // to addresses clear of every live rogue (place_window), so plans never work around one.
  Bytes window = 0;
  bool rogues_in_window = false;  // the window could not move clear: replay checks each range

  // What outlives steps.
  std::unordered_map<void*, Rogue> rogues;
  tree::OccupiedRanges occupied;  // the rogues' arena ranges (from base)
  std::unordered_map<std::uint64_t, std::string> tag_names;
  // Every learned site: the pool keeps room for one buffer each.
  std::map<std::pair<const StepTree*, NodeId>, tree::AllocKey> learned_sites;
  bool pool_room_stale = false;  // a site was learned or leaked: map room at step end

  Stats stats;
  std::vector<BreakRecord> break_log;
};

}  // namespace memplan
