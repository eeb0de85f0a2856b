// Branch -> planner problem -> offsets on the nodes. Frees on the path end lifetimes; a buffer
// never freed on the path lives to the End node (only a rogue does that, and rogue sites are
// persistent by the time a branch is planned, so normally none is left). A persistent site that
// has an offset (it was learned after a plan placed it) keeps its range in every later plan, so
// that it can be forgotten - served from the plan again - without overlapping anything; unless a
// replay served it from the pool while its range was not free for it (pool_only: its buffer
// outlived its Free node, or a buffer freed late or a rogue held the range), which rules that out.
#include "memplan/tree/branch_planner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "memplan/error.hpp"
#include "memplan/plan/planner.hpp"

namespace memplan::tree {

plan::Problem branch_problem(const AllocationTree& tree, BranchId branch,
                             std::span<const FixedRange> fixed_ranges, std::vector<NodeId>* nodes,
                             FreedLate freed_late) {
  const NodeId end = tree.branch(branch).end;
  const auto end_time = static_cast<plan::Time>(tree.node(end).depth);
  plan::Problem problem;
  std::unordered_map<NodeId, std::size_t> index_of;  // Alloc node -> buffer index
  if (nodes != nullptr) nodes->clear();
  for (const NodeId id : tree.path_to(end)) {
    const Node& n = tree.node(id);
    if (n.kind == EventKind::Alloc && (!n.persistent || (n.offset != kUnplanned && !n.pool_only))) {
      index_of.emplace(id, problem.buffers.size());
      plan::Buffer b{.id = fmt::format("node{}", id),
                     .lower = static_cast<plan::Time>(n.depth),
                     .upper = end_time,
                     .size = n.key.size,
                     .alignment = n.key.alignment};
      if (n.offset != kUnplanned) b.fixed_offset = n.offset;
      problem.buffers.push_back(std::move(b));
      if (nodes != nullptr) nodes->push_back(id);
    } else if (n.kind == EventKind::Free) {
      const bool passed_live = id < freed_late.first_new &&
                               std::find(freed_late.buffers.begin(), freed_late.buffers.end(),
                                         n.buffer) != freed_late.buffers.end();
      if (const auto it = index_of.find(n.buffer); it != index_of.end() && !passed_live) {
        problem.buffers[it->second].upper = static_cast<plan::Time>(n.depth);
      }
    }
  }
  for (const FixedRange& o : fixed_ranges) {
    problem.buffers.push_back(plan::Buffer{
        .id = fmt::format("fixed range@{}", o.offset),
        .lower = static_cast<plan::Time>(o.since),
        .upper = o.until == kToStepEnd ? end_time + 1 : std::min<plan::Time>(o.until, end_time + 1),
        .size = o.size,
        .fixed_offset = o.offset});
  }
  return problem;
}

plan::Solution plan_branch(AllocationTree& tree, BranchId branch,
                           std::span<const FixedRange> fixed_ranges,
                           std::chrono::milliseconds budget, FreedLate freed_late) {
  std::vector<NodeId> nodes;
  const plan::Problem problem = branch_problem(tree, branch, fixed_ranges, &nodes, freed_late);
  plan::Solution solution = plan::plan(problem, {.budget = budget});
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    Node& n = tree.node(nodes[i]);
    if (n.offset == kUnplanned) n.offset = solution.offsets[i];
  }
  Branch& b = tree.branch(branch);
  b.arena_bytes = solution.arena_size;
  b.lower_bound = solution.lower_bound;
  b.proven_optimal = solution.proven_optimal;
  b.algorithm = solution.algorithm;
  tree.note_plan(solution.arena_size);
  return solution;
}

}  // namespace memplan::tree
