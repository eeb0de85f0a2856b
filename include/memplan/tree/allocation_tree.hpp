// The allocation tree: every trace seen for one kind of step, merged as a tree of events so that
// shared prefixes are stored once. A node is an event (allocate, free, or the end of a step); the
// path from the root to an End node is a branch, and each branch has a plan. Offsets live on the
// Alloc nodes, so every branch through a node gives its buffer the same offset: a branch that
// forks from another keeps its parent's offsets for the shared prefix (fixed when it is planned).
//
// The tree knows offsets, not devices or pointers. Children are a singly linked sibling list:
// most nodes have one child, so a match is one comparison and nodes need no heap of their own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "memplan/tree/alloc_key.hpp"

namespace memplan::tree {

using NodeId = std::uint32_t;
using BranchId = std::uint32_t;
inline constexpr NodeId kNoNode = std::numeric_limits<NodeId>::max();
inline constexpr Bytes kUnplanned = -1;

enum class EventKind : std::uint8_t { Root, Alloc, Free, End };

struct Node {
  EventKind kind = EventKind::Root;
  bool persistent = false;       // Alloc: a learned rogue site, served from the persistent pool
  std::uint8_t quiet_steps = 0;  // persistent: steps in a row that freed its buffer in the step
  std::uint8_t forgotten = 0;    // times it was learned and forgotten again
  // persistent: a replay served it from the pool where its planned range was not free for it
  // (its buffer outlived its Free node, or a buffer freed late or a rogue held the range). Plans
  // made since may use that range, so it stays in the pool and plans no longer keep its range.
  bool pool_only = false;
  // Alloc: a step output planned with period-two placement (period_two_planner.hpp): its buffer
  // outlives the step, and the branch has a second plan, offset_odd, for the steps of odd parity.
  bool period_two = false;
  std::uint32_t depth = 0;  // events between the root and this node
  NodeId parent = kNoNode;
  NodeId first_child = kNoNode;
  NodeId next_sibling = kNoNode;
  NodeId buffer = kNoNode;    // Free: the Alloc node whose buffer it frees
  BranchId branch = 0;        // End: the branch it closes
  AllocKey key;               // Alloc: what the event asked for
  Bytes offset = kUnplanned;  // Alloc: the planned offset in the arena
  // Alloc: the offset in the plan of odd parity, only in a branch with a period-two output.
  Bytes offset_odd = kUnplanned;

  // The offset in the plan of `parity` (0 in every branch without a period-two output).
  [[nodiscard]] Bytes offset_at(std::uint8_t parity) const noexcept {
    return parity == 0 ? offset : offset_odd;
  }
};

struct Branch {
  NodeId end = kNoNode;   // its End node
  Bytes arena_bytes = 0;  // the plan's size
  Bytes lower_bound = 0;  // the planner's bound for this branch
  bool proven_optimal = false;
  std::string algorithm;  // which planner stage won
};

class AllocationTree {
 public:
  AllocationTree();

  [[nodiscard]] static constexpr NodeId root() noexcept { return 0; }
  [[nodiscard]] const Node& node(NodeId id) const { return nodes_[id]; }
  [[nodiscard]] Node& node(NodeId id) { return nodes_[id]; }
  [[nodiscard]] std::size_t node_count() const noexcept { return nodes_.size(); }

  // Matching: the first child of `parent` that is the given event, or kNoNode. Alloc children
  // must also pass `fits(child)`, so a caller can refuse a node whose range is occupied.
  template <class Fits>
  [[nodiscard]] NodeId find_alloc(NodeId parent, const AllocKey& key, Fits&& fits) const {
    for (NodeId c = nodes_[parent].first_child; c != kNoNode; c = nodes_[c].next_sibling) {
      const Node& n = nodes_[c];
      if (n.kind == EventKind::Alloc && n.key == key && fits(c)) return c;
    }
    return kNoNode;
  }
  [[nodiscard]] NodeId find_free(NodeId parent, NodeId buffer) const {
    for (NodeId c = nodes_[parent].first_child; c != kNoNode; c = nodes_[c].next_sibling) {
      if (nodes_[c].kind == EventKind::Free && nodes_[c].buffer == buffer) return c;
    }
    return kNoNode;
  }
  [[nodiscard]] NodeId find_end(NodeId parent) const {
    for (NodeId c = nodes_[parent].first_child; c != kNoNode; c = nodes_[c].next_sibling) {
      if (nodes_[c].kind == EventKind::End) return c;
    }
    return kNoNode;
  }

  // Recording: append a new child (never merged with an existing one: the caller found none).
  NodeId add_alloc(NodeId parent, const AllocKey& key);
  NodeId add_free(NodeId parent, NodeId buffer);
  // Closes a branch at `parent`; the branch is unplanned until plan_branch().
  BranchId add_end(NodeId parent);
  // Forgets every node from `first` on (an aborted recording, a branch whose planning failed),
  // with the branches they close.
  void truncate(NodeId first);

  [[nodiscard]] const Branch& branch(BranchId id) const { return branches_[id]; }
  [[nodiscard]] Branch& branch(BranchId id) { return branches_[id]; }
  [[nodiscard]] std::size_t branch_count() const noexcept { return branches_.size(); }

  // The events from the root (excluded) to `node` (included), in order.
  [[nodiscard]] std::vector<NodeId> path_to(NodeId node) const;

  // The largest plan of any branch: the arena this tree needs.
  [[nodiscard]] Bytes arena_bytes() const noexcept { return arena_bytes_; }
  void note_plan(Bytes bytes) noexcept { arena_bytes_ = std::max(arena_bytes_, bytes); }

 private:
  NodeId add_child(NodeId parent, Node node);

  std::vector<Node> nodes_;
  std::vector<Branch> branches_;
  Bytes arena_bytes_ = 0;
};

}  // namespace memplan::tree
