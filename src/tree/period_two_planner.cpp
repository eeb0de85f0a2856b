// The two plans of a branch with a period-two output (see period_two_planner.hpp). The even plan
// holds the previous output at offset 0 and places everything else, the output included; the odd
// plan must then hold the previous output where the even plan put the output (A) and put the
// output at 0. When the even plan put the output at its top (A + size = extent), the odd plan
// may also be the even one upside down (offset -> extent - offset - size), which is as small;
// the smaller of the two is kept.
#include "memplan/tree/period_two_planner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "memplan/error.hpp"
#include "memplan/plan/planner.hpp"
#include "memplan/tree/branch_planner.hpp"

namespace memplan::tree {
namespace {

void check_output(const AllocationTree& tree, const std::vector<NodeId>& path, NodeId output) {
  if (std::find(path.begin(), path.end(), output) == path.end() ||
      tree.node(output).kind != EventKind::Alloc) {
    throw InvalidArgument(
        fmt::format("period-two output: node {} is not an allocation on the branch", output));
  }
  for (const NodeId id : path) {
    if (tree.node(id).kind == EventKind::Free && tree.node(id).buffer == output) {
      throw InvalidArgument(
          fmt::format("period-two output: node {} is freed at event {} of its own step", output,
                      tree.node(id).depth));
    }
  }
}

// The mirror of `even` (extent - offset - size for each buffer), when every buffer stays aligned.
std::optional<std::vector<Bytes>> mirrored(const plan::Problem& problem,
                                           const plan::Solution& even) {
  std::vector<Bytes> offsets;
  offsets.reserve(even.offsets.size());
  for (std::size_t i = 0; i < even.offsets.size(); ++i) {
    const plan::Buffer& b = problem.buffers[i];
    const Bytes offset = even.arena_size - even.offsets[i] - b.size;
    if (offset < 0 || offset % b.alignment != 0) return std::nullopt;
    offsets.push_back(offset);
  }
  return offsets;
}

}  // namespace

PeriodTwoPlan plan_period_two(AllocationTree& tree, BranchId branch, NodeId output,
                              std::uint32_t hold_until, std::chrono::milliseconds budget) {
  const std::vector<NodeId> path = tree.path_to(tree.branch(branch).end);
  check_output(tree, path, output);
  const Node before = tree.node(output);
  std::vector<std::pair<NodeId, Node>> saved;  // to put back on an error
  for (const NodeId id : path) {
    if (tree.node(id).kind == EventKind::Alloc) saved.emplace_back(id, tree.node(id));
  }
  const auto restore = [&] {
    for (const auto& [id, node] : saved) tree.node(id) = node;
  };
  const Bytes size = before.key.size;
  PeriodTwoPlan result;
  try {
    for (const auto& [id, node] : saved) {
      tree.node(id).offset = kUnplanned;
      tree.node(id).offset_odd = kUnplanned;
    }
    Node& out = tree.node(output);
    out.persistent = false;
    out.pool_only = false;
    out.period_two = true;

    // Even: the previous output at 0 while it lives, the output anywhere.
    std::vector<NodeId> nodes;
    const FixedRange previous_at_zero{0, size, 0, hold_until};
    const plan::Problem even_problem = branch_problem(tree, branch, {&previous_at_zero, 1}, &nodes);
    result.even = plan::plan(even_problem, {.budget = budget});
    std::size_t output_index = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i] == output) output_index = i;
    }
    const Bytes a = result.even.offsets[output_index];

    // Odd: the previous output at A while it lives, the output at 0.
    out.offset = 0;
    const FixedRange previous_at_a{a, size, 0, hold_until};
    const plan::Problem odd_problem = branch_problem(tree, branch, {&previous_at_a, 1});
    result.odd = plan::plan(odd_problem, {.budget = budget});
    if (a + size == result.even.arena_size && result.odd.arena_size > result.even.arena_size) {
      if (auto offsets = mirrored(even_problem, result.even)) {
        // The even plan upside down: the output at 0, the previous output (at 0 in the even
        // plan) at the top, which is A. Its fixed range is the problem's last buffer.
        result.odd.offsets = std::move(*offsets);
        result.odd.arena_size = result.even.arena_size;
        result.odd.proven_optimal = result.even.proven_optimal;
        result.odd.algorithm = result.even.algorithm + " mirrored";
        result.mirrored = true;
      }
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      tree.node(nodes[i]).offset = result.even.offsets[i];
      tree.node(nodes[i]).offset_odd = result.odd.offsets[i];
    }
  } catch (...) {
    restore();
    throw;
  }
  Branch& b = tree.branch(branch);
  b.arena_bytes = std::max(result.even.arena_size, result.odd.arena_size);
  b.lower_bound = std::max(result.even.lower_bound, result.odd.lower_bound);
  b.proven_optimal = result.even.proven_optimal && result.odd.proven_optimal;
  b.algorithm = fmt::format("period-two: {} / {}", result.even.algorithm, result.odd.algorithm);
  tree.note_plan(b.arena_bytes);
  return result;
}

}  // namespace memplan::tree
