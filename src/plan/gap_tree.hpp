// Free gaps in address order, each subtree knowing its longest gap: "the lowest gap at or above
// an address that is at least this long" in O(log n), the query first-fit asks at every
// placement of the sweep greedy (sweep_greedy.hpp).
//
// A treap (a binary search tree by begin, a heap by random priority, so expected depth O(log n))
// in one vector of nodes with a free list: no allocation per insertion once it has grown.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "memplan/plan/problem.hpp"

namespace memplan::plan::detail {

struct Gap {
  Bytes begin = 0;
  Bytes length = 0;
  [[nodiscard]] Bytes end() const { return begin + length; }
};

class GapTree {
 public:
  void clear();
  // Begins are unique: the gaps never overlap.
  void insert(Gap gap);
  void erase(Bytes begin);
  // The lowest gap with begin >= from and length >= min_length.
  [[nodiscard]] std::optional<Gap> lowest(Bytes from, Bytes min_length) const;
  [[nodiscard]] std::size_t size() const { return nodes_.size() - free_.size(); }

 private:
  struct Node {
    Gap gap;
    Bytes longest = 0;  // the longest gap in this subtree
    std::uint32_t priority = 0;
    int left = -1;
    int right = -1;
  };

  [[nodiscard]] Bytes longest(int node) const { return node < 0 ? -1 : at(node).longest; }
  [[nodiscard]] const Node& at(int node) const { return nodes_[static_cast<std::size_t>(node)]; }
  Node& at(int node) { return nodes_[static_cast<std::size_t>(node)]; }
  void update(int node);
  // Splits `node` into the gaps beginning below `begin` and the rest.
  void split(int node, Bytes begin, int& below, int& rest);
  [[nodiscard]] int merge(int below, int above);
  [[nodiscard]] int insert(int tree, int node);
  [[nodiscard]] int erase(int tree, Bytes begin);
  [[nodiscard]] std::optional<Gap> lowest(int node, Bytes from, Bytes min_length) const;

  std::vector<Node> nodes_;
  std::vector<int> free_;
  int root_ = -1;
  std::uint64_t random_ = 0x9E3779B97F4A7C15ull;  // xorshift state: priorities, deterministic
};

}  // namespace memplan::plan::detail
