// Treap: an insertion walks down to where its priority belongs and splits the subtree there; an
// erasure walks down to the node and merges its children in its place. Every node on the way
// gets its longest refreshed.
#include "gap_tree.hpp"

#include <algorithm>
#include <stdexcept>

namespace memplan::plan::detail {

void GapTree::clear() {
  nodes_.clear();
  free_.clear();
  root_ = -1;
}

void GapTree::update(int node) {
  Node& n = at(node);
  n.longest = std::max({n.gap.length, longest(n.left), longest(n.right)});
}

void GapTree::split(int node, Bytes begin, int& below, int& rest) {
  if (node < 0) {
    below = rest = -1;
    return;
  }
  if (at(node).gap.begin < begin) {
    split(at(node).right, begin, at(node).right, rest);
    below = node;
  } else {
    split(at(node).left, begin, below, at(node).left);
    rest = node;
  }
  update(node);
}

int GapTree::merge(int below, int above) {
  if (below < 0) return above;
  if (above < 0) return below;
  if (at(below).priority > at(above).priority) {
    at(below).right = merge(at(below).right, above);
    update(below);
    return below;
  }
  at(above).left = merge(below, at(above).left);
  update(above);
  return above;
}

void GapTree::insert(Gap gap) {
  random_ ^= random_ << 13;
  random_ ^= random_ >> 7;
  random_ ^= random_ << 17;
  int node = 0;
  if (free_.empty()) {
    node = static_cast<int>(nodes_.size());
    nodes_.emplace_back();
  } else {
    node = free_.back();
    free_.pop_back();
  }
  at(node) = Node{gap, gap.length, static_cast<std::uint32_t>(random_ >> 32), -1, -1};
  root_ = insert(root_, node);
}

int GapTree::insert(int tree, int node) {
  // Down to where the new node's priority belongs; only the subtree there is split.
  if (tree < 0) return node;
  if (at(node).priority > at(tree).priority) {
    split(tree, at(node).gap.begin, at(node).left, at(node).right);
    update(node);
    return node;
  }
  if (at(node).gap.begin < at(tree).gap.begin) {
    at(tree).left = insert(at(tree).left, node);
  } else {
    at(tree).right = insert(at(tree).right, node);
  }
  update(tree);
  return tree;
}

void GapTree::erase(Bytes begin) { root_ = erase(root_, begin); }

int GapTree::erase(int tree, Bytes begin) {
  if (tree < 0) throw std::logic_error("GapTree::erase: no gap begins there");
  Node& n = at(tree);
  if (n.gap.begin == begin) {
    free_.push_back(tree);
    return merge(n.left, n.right);
  }
  if (begin < n.gap.begin) {
    n.left = erase(n.left, begin);
  } else {
    n.right = erase(n.right, begin);
  }
  update(tree);
  return tree;
}

std::optional<Gap> GapTree::lowest(Bytes from, Bytes min_length) const {
  return lowest(root_, from, min_length);
}

std::optional<Gap> GapTree::lowest(int node, Bytes from, Bytes min_length) const {
  // Subtrees wholly at or above `from` are entered only when they hold a long enough gap, so
  // they always succeed: the work is one path to `from` plus one path down, O(depth).
  if (node < 0 || at(node).longest < min_length) return std::nullopt;
  const Node& n = at(node);
  if (n.gap.begin < from) return lowest(n.right, from, min_length);
  if (const std::optional<Gap> left = lowest(n.left, from, min_length)) return left;
  if (n.gap.length >= min_length) return n.gap;
  return lowest(n.right, from, min_length);
}

}  // namespace memplan::plan::detail
