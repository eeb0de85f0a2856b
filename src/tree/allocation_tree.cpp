// Appending to the tree. New children go to the end of the sibling list, so matching tries the
// oldest branch first: a path that replayed once keeps matching the same nodes whatever branches
// are added beside it later (guarantee 4; a newest-first order let a new branch with the same key
// capture an old path, which then broke again further down).
#include "memplan/tree/allocation_tree.hpp"

#include <algorithm>

#include "memplan/error.hpp"

namespace memplan::tree {

AllocationTree::AllocationTree() { nodes_.push_back(Node{}); }

NodeId AllocationTree::add_child(NodeId parent, Node node) {
  if (nodes_.size() >= kNoNode) throw InvalidState("allocation tree: too many events");
  const auto id = static_cast<NodeId>(nodes_.size());
  node.parent = parent;
  node.depth = nodes_[parent].depth + 1;
  nodes_.push_back(node);
  NodeId* link =
      &nodes_[parent].first_child;  // recording only: the sibling walk is off the hot path
  while (*link != kNoNode) link = &nodes_[*link].next_sibling;
  *link = id;
  return id;
}

NodeId AllocationTree::add_alloc(NodeId parent, const AllocKey& key) {
  return add_child(parent, Node{.kind = EventKind::Alloc, .key = key});
}

NodeId AllocationTree::add_free(NodeId parent, NodeId buffer) {
  return add_child(parent, Node{.kind = EventKind::Free, .buffer = buffer});
}

BranchId AllocationTree::add_end(NodeId parent) {
  const auto id = static_cast<BranchId>(branches_.size());
  const NodeId end = add_child(parent, Node{.kind = EventKind::End, .branch = id});
  branches_.push_back(Branch{.end = end});
  return id;
}

void AllocationTree::truncate(NodeId first) {
  // Nodes from `first` on are the newest, so each is the last child of its parent: unlink it there.
  for (auto id = static_cast<NodeId>(nodes_.size()); id-- > first;) {
    const Node& n = nodes_[id];
    // Branches are numbered in node order, so the ones closed in the suffix are the newest.
    if (n.kind == EventKind::End) branches_.pop_back();
    if (n.parent >= first) continue;
    NodeId* link = &nodes_[n.parent].first_child;
    while (*link != id) link = &nodes_[*link].next_sibling;
    *link = kNoNode;
  }
  nodes_.resize(std::max<std::size_t>(first, 1));
}

std::vector<NodeId> AllocationTree::path_to(NodeId node) const {
  std::vector<NodeId> path;
  path.reserve(nodes_[node].depth);
  for (NodeId n = node; n != root(); n = nodes_[n].parent) path.push_back(n);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace memplan::tree
