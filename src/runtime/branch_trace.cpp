// A branch's trace, its peak's tags, and writing it out (CSV or a picture). Off the hot path:
// these run when a person asks (report, export), never while a step runs.
#include "memplan/runtime/branch_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "compiler_impl.hpp"
#include "memplan/draw/picture.hpp"
#include "memplan/plan/csv.hpp"
#include "memplan/plan/json_trace.hpp"
#include "memplan/plan/lower_bound.hpp"
#include "memplan/tree/branch_planner.hpp"

namespace memplan {

std::vector<TagShare> peak_tags(const BranchTrace& trace) {
  const std::vector<plan::Buffer>& buffers = trace.problem.buffers;
  const plan::Peak peak = plan::find_peak(trace.problem);
  const plan::Time peak_time = peak.instant;
  std::map<std::string, Bytes> by_tag;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const plan::Buffer& b = buffers[i];
    if (b.occupies() && b.lower <= peak_time && peak_time < b.upper) {
      by_tag[trace.tags.empty() ? std::string() : trace.tags[i]] += b.size;
    }
  }
  std::vector<TagShare> shares;
  for (const auto& [tag, bytes] : by_tag) {
    shares.push_back({tag, bytes, static_cast<double>(bytes) / static_cast<double>(peak.bytes)});
  }
  std::sort(shares.begin(), shares.end(), [](const TagShare& a, const TagShare& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.tag < b.tag;
  });
  return shares;
}

BranchTrace Compiler::Impl::branch_trace(std::string_view step, std::size_t branch) const {
  const auto it = trees.find(step);
  if (it == trees.end()) {
    throw InvalidArgument(fmt::format("branch_trace: no step named '{}' was run", step));
  }
  const tree::AllocationTree& t = it->second->tree;
  if (branch >= t.branch_count()) {
    const std::string branches = t.branch_count() == 0
                                     ? std::string("none recorded")
                                     : fmt::format("its branches: 0..{}", t.branch_count() - 1);
    throw InvalidArgument(
        fmt::format("branch_trace: step '{}' has no branch {} ({})", step, branch, branches));
  }
  const auto id = static_cast<tree::BranchId>(branch);
  BranchTrace trace{.step = std::string(step), .branch = branch};
  std::vector<NodeId> nodes;
  trace.problem = tree::branch_problem(t, id, {}, &nodes);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const tree::Node& n = t.node(nodes[i]);
    trace.problem.buffers[i].fixed_offset.reset();
    trace.offsets.push_back(n.offset);
    const auto name = tag_names.find(n.key.tag);
    trace.tags.push_back(n.key.tag == 0 || name == tag_names.end() ? std::string() : name->second);
  }
  trace.arena_bytes = t.branch(id).arena_bytes;
  trace.lower_bound = t.branch(id).lower_bound;
  return trace;
}

void write_branch_trace(const std::filesystem::path& path, const BranchTrace& trace) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool tagged = std::any_of(trace.tags.begin(), trace.tags.end(),
                                  [](const std::string& t) { return !t.empty(); });
  const std::span<const std::string> tags =
      tagged ? std::span<const std::string>(trace.tags) : std::span<const std::string>();
  if (ext == ".csv") return plan::write_csv_file(path, trace.problem, trace.offsets, tags);
  if (ext == ".json") return plan::write_json_trace_file(path, trace.problem, trace.offsets, tags);
  if (ext == ".svg" || ext == ".html" || ext == ".htm") {
    return draw::write_picture(
        path, trace.problem, trace.offsets,
        {.title = fmt::format("step '{}', branch {}: {} buffers, plan {} (lower bound {})",
                              trace.step, trace.branch, trace.problem.buffers.size(),
                              human_bytes(trace.arena_bytes), human_bytes(trace.lower_bound)),
         .lower_bound = trace.lower_bound,
         .tags = tags});
  }
  throw InvalidArgument(fmt::format(
      "{}: cannot tell what to write from the extension '{}' (.csv or .json: the trace with its "
      "plan; .svg or .html: a picture)",
      path.string(), ext));
}

}  // namespace memplan
