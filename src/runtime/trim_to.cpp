// Trimming to the branches CUDA graphs hold. A graph launched outside steps (Python's
// GraphedStep) uses the addresses of one branch's plan, of one parity, and nothing else of the
// plans' window; trim() keeps the whole window, every plan's extent, mapped for it. trim_to keeps
// the chunks those branches' planned buffers touch and those of every live buffer, and unmaps the
// rest. The window then has holes, so a step no longer maps its tree's whole extent at begin_step
// (that would map the holes back for a step of a held branch too): it maps each planned range as
// it serves it, which is no backend call where the range is mapped already.
#include <fmt/format.h>

#include <algorithm>

#include "compiler_impl.hpp"
#include "core/log.hpp"

namespace memplan {
namespace {

// `ranges` rounded out to whole chunks, sorted, with touching ones merged: keep_only tests each
// mapped chunk against every range kept.
std::vector<arena::ByteRange> coalesced(std::vector<arena::ByteRange> ranges, std::size_t chunk) {
  for (arena::ByteRange& r : ranges) {
    const std::size_t start = r.offset / chunk * chunk;
    r = {start, (r.offset + r.bytes + chunk - 1) / chunk * chunk - start};
  }
  std::sort(ranges.begin(), ranges.end(), [](const arena::ByteRange& a, const arena::ByteRange& b) {
    return a.offset < b.offset;
  });
  std::vector<arena::ByteRange> out;
  for (const arena::ByteRange& r : ranges) {
    if (!out.empty() && r.offset <= out.back().offset + out.back().bytes) {
      const std::size_t end = std::max(out.back().offset + out.back().bytes, r.offset + r.bytes);
      out.back().bytes = end - out.back().offset;
    } else {
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace

void Compiler::Impl::trim_to(std::span<const BranchRef> held) {
  if (cursor.running()) {
    throw InvalidState(fmt::format("trim_to: step '{}' is running", cursor.step().name));
  }
  std::vector<arena::ByteRange> keep = live_ranges();
  for (const BranchRef& ref : held) append_branch_ranges(ref, keep);  // throws before unmapping
  const std::size_t mapped = arena.raw().mapped_bytes();
  // A held branch is mapped throughout (a graph captured in a step of it, which mapped what it
  // used) unless an earlier trim_to held others; then the chunks it lacks are mapped here, on the
  // physical chunks of those that go where there are (Arena::remap).
  arena.raw().remap(coalesced(std::move(keep), arena.raw().chunk_bytes()));
  drop_unused_loan();
  plans_have_holes =
      !arena.raw().mapped_throughout(to_size(rogues.window()), to_size(plans_bytes()));
  logger().info("trim_to {} branch(es): {} B of the planned arena mapped, {} B before", held.size(),
                arena.raw().mapped_bytes(), mapped);
}

// The ranges, from the arena's base, of every buffer `ref`'s plan places.
void Compiler::Impl::append_branch_ranges(const BranchRef& ref,
                                          std::vector<arena::ByteRange>& out) const {
  const auto it = trees.find(ref.step);
  if (it == trees.end()) {
    throw InvalidArgument(fmt::format("trim_to: no step named '{}' has run", ref.step));
  }
  const tree::AllocationTree& t = it->second->tree;
  if (ref.branch >= t.branch_count()) {
    throw InvalidArgument(fmt::format("trim_to: step '{}' has {} branch(es); there is no branch {}",
                                      ref.step, t.branch_count(), ref.branch));
  }
  if (ref.parity > 1) {
    throw InvalidArgument(fmt::format("trim_to: parity {} of step '{}' branch {} (0 or 1)",
                                      ref.parity, ref.step, ref.branch));
  }
  bool has_parity = ref.parity == 0;
  for (const NodeId n : t.path_to(t.branch(ref.branch).end)) {
    const tree::Node& node = t.node(n);
    if (node.kind != tree::EventKind::Alloc) continue;
    const Bytes offset = node.offset_at(ref.parity);
    if (offset == tree::kUnplanned) continue;
    has_parity = true;
    out.push_back(PlannedArena::range(rogues.window() + offset, node.key.size));
  }
  if (!has_parity) {
    throw InvalidArgument(fmt::format(
        "trim_to: step '{}' branch {} has no plan of parity 1 (only a branch with an output kept "
        "until the next step's exists has two)",
        ref.step, ref.branch));
  }
}

// At begin_step: the whole extent of the step's tree mapped now (a no-op once it is), or, after
// trim_to left holes in it, each planned range as the step is served it.
void Compiler::Impl::choose_mapping(const StepTree& g) {
  const std::size_t window = to_size(rogues.window());
  if (plans_have_holes) {
    plans_have_holes = !arena.raw().mapped_throughout(window, to_size(plans_bytes()));
  }
  map_as_served =
      plans_have_holes && !arena.raw().mapped_throughout(window, to_size(g.tree.arena_bytes()));
  if (!map_as_served) arena.ensure_mapped(rogues.window(), g.tree.arena_bytes());
}

// A replayed allocation of a step that maps as it serves: its planned range (pool-served sites
// have none in the arena).
void Compiler::Impl::map_replayed(const tree::Node& n) {
  if (n.persistent) return;
  arena.ensure_mapped(rogues.window() + offset_of(n), n.key.size);
}

}  // namespace memplan
