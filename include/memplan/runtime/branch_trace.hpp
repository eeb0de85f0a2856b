// A recorded branch as a planner problem: what the compiler planned for one path of a step,
// exported so that a person can see it (a picture), re-plan it (`memplan plan` on the CSV gives
// the branch's plan size back) or compare it with another allocator. Buffers are the allocations
// on the branch's path, in order ("node<N>": the allocation tree's node), with their planned
// offsets and their tags.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "memplan/plan/problem.hpp"
#include "memplan/types.hpp"

namespace memplan {

struct BranchTrace {
  std::string step;
  std::size_t branch = 0;
  plan::Problem problem;          // no fixed offsets: the plan is in `offsets`
  std::vector<Bytes> offsets;     // one per buffer: where the branch's plan put it
  std::vector<std::string> tags;  // one per buffer: its allocation's tag, "" when untagged
  Bytes arena_bytes = 0;          // the branch's plan size
  Bytes lower_bound = 0;          // the planner's bound for it
};

// What makes up a branch's peak: at the first instant with the most bytes live, those bytes
// summed by tag ("" for untagged buffers), largest first; shares of the peak sum to 1.
struct TagShare {
  std::string tag;
  Bytes bytes = 0;
  double share = 0;
};
[[nodiscard]] std::vector<TagShare> peak_tags(const BranchTrace& trace);

// By the path's extension: .csv writes MiniMalloc CSV with the offset and tag columns, .json
// memplan's JSON trace with offsets and tags (plan/json_trace.hpp); `memplan plan --fixed-offsets`
// reads the plan back from either, `memplan plan` re-plans it. .svg or .html: a picture (see
// docs/drawing.md). Another extension throws InvalidArgument naming the path; a failed write
// memplan::Error.
void write_branch_trace(const std::filesystem::path& path, const BranchTrace& trace);

}  // namespace memplan
