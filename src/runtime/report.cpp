// Words for people: what a break expected and what came, the stats snapshot, the report.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <thread>

#include "compiler_impl.hpp"

namespace memplan {
namespace {

// A byte count of the arena's or Stats' unsigned kind, for people.
std::string human(std::uint64_t bytes) { return human_bytes(to_bytes(bytes)); }

}  // namespace

std::string_view to_string(BreakReason reason) noexcept {
  switch (reason) {
    case BreakReason::UnknownAllocation:
      return "unknown allocation";
    case BreakReason::RangeOccupied:
      return "range held by a rogue";
    case BreakReason::UnexpectedEnd:
      return "unexpected end of step";
  }
  return "unknown";
}

std::string_view to_string(StepKind kind) noexcept {
  switch (kind) {
    case StepKind::Replayed:
      return "replayed";
    case StepKind::Recorded:
      return "recorded";
    case StepKind::Dynamic:
      return "dynamic";
  }
  return "unknown";
}

std::string Compiler::Impl::describe_key(const tree::AllocKey& key) const {
  std::string text = fmt::format("{} B align {}", key.size, key.alignment);
  if (key.tag != 0) {
    const auto name = tag_names.find(key.tag);
    text += name != tag_names.end() ? fmt::format(" tag '{}'", name->second)
                                    : fmt::format(" tag #{:016x}", key.tag);
  }
  return text;
}

std::string Compiler::Impl::describe_expected() const {
  const tree::AllocationTree& g = cursor.tree();
  std::vector<std::string> choices;
  for (NodeId c = cursor.next(); c != tree::kNoNode; c = g.node(c).next_sibling) {
    const tree::Node& n = g.node(c);
    switch (n.kind) {
      case tree::EventKind::Alloc:
        choices.push_back("alloc " + describe_key(n.key));
        break;
      case tree::EventKind::Free:
        choices.push_back(fmt::format("free of the {} B buffer of event {}",
                                      g.node(n.buffer).key.size, g.node(n.buffer).depth - 1));
        break;
      case tree::EventKind::End:
        choices.emplace_back("end of step");
        break;
      case tree::EventKind::Root:
        break;
    }
  }
  if (choices.empty()) return "nothing (no branch continues here)";
  constexpr std::size_t kShown = 4;
  std::string text = fmt::format(
      "{}",
      fmt::join(choices.begin(),
                choices.begin() + static_cast<std::ptrdiff_t>(std::min(choices.size(), kShown)),
                " or "));
  if (choices.size() > kShown) text += fmt::format(" (or {} more)", choices.size() - kShown);
  return text;
}

std::string Compiler::Impl::scope_path() const {
  std::string path = cursor.running() ? cursor.step().name : std::string();
  for (const std::string& s : scopes) path += "/" + s;
  return path;
}

Stats Compiler::Impl::snapshot() const {
  Stats s = stats;
  s.mapped_bytes = arena.raw().mapped_bytes();
  s.reserved_bytes = arena.raw().reserved_bytes();
  const arena::PoolStats pool_stats = pool.stats();
  s.pool_mapped_bytes = pool_stats.mapped_bytes;
  s.pool_lent_bytes = pool_stats.lent_bytes;
  s.pool_live_bytes = pool_stats.allocated_bytes;
  s.arena_live_bytes =
      live_bytes.step_bytes() + live_bytes.carried_bytes() + stats.live_rogue_bytes;
  s.live_carried_outputs = carried.size();
  s.live_carried_bytes = live_bytes.carried_bytes();
  s.arena_peak_live_bytes = live_bytes.arena_peak();
  s.pool_peak_live_bytes = live_bytes.pool_peak();
  s.peak_live_rogue_bytes = live_bytes.rogue_peak();
  s.live_bytes = s.arena_live_bytes + s.pool_live_bytes;
  s.peak_live_bytes = live_bytes.total_peak();
  s.peak_mapped_bytes = budget.peak_used_bytes();
  s.memory_budget_bytes = options.memory_budget_bytes;
  s.backend_calls = backend.calls();
  return s;
}

// What is mapped and what is live when memory ran out: the running step's arena buffers (its
// learned-site buffers are in the pool), the rogues and the pool, then the largest live buffers
// with their tags, which say what holds the memory. An error path: walks are fine.
std::string Compiler::Impl::describe_memory() const {
  struct LiveBuffer {
    Bytes size;
    std::uint64_t tag;
    std::string_view kind;
  };
  std::vector<LiveBuffer> buffers;
  const tree::AllocationTree* g = cursor.running() ? &cursor.tree() : nullptr;
  if (cursor.running() && cursor.replaying()) {
    for (NodeId n = cursor.at(); n != tree::AllocationTree::root(); n = g->node(n).parent) {
      const tree::Node& node = g->node(n);
      if (node.kind != tree::EventKind::Alloc || node.persistent || cursor.live(n) == nullptr) {
        continue;
      }
      buffers.push_back({node.key.size, node.key.tag, "step"});
    }
  } else if (cursor.running()) {
    for (const auto& [p, instance] : recording.live()) {
      const std::uint64_t tag = instance.node == tree::kNoNode ? 0 : g->node(instance.node).key.tag;
      buffers.push_back({instance.size, tag, "step"});
    }
  }
  Bytes step_bytes = 0;
  for (const LiveBuffer& b : buffers) step_bytes += b.size;
  const std::size_t step_buffers = buffers.size();
  for (const auto& [p, r] : rogues.all()) buffers.push_back({r.size, r.tag, "rogue"});
  for (const auto& [p, c] : carried.all()) {
    buffers.push_back({c.size, c.tree->tree.node(c.node).key.tag, "output of an earlier step"});
  }
  std::string text = fmt::format(
      "mapped: {} in the planned arena, {} in the pool; live: {} in {} buffer(s) of the step, "
      "{} in {} rogue(s), {}{} allocated in the pool",
      human(arena.raw().mapped_bytes()), human(pool.arena().mapped_bytes()),
      human_bytes(step_bytes), step_buffers, human(stats.live_rogue_bytes), stats.live_rogues,
      carried.empty() ? std::string()
                      : fmt::format("{} in {} output(s) of earlier steps, ",
                                    human(live_bytes.carried_bytes()), carried.size()),
      human(pool.allocated_bytes()));
  if (buffers.empty()) return text;
  std::stable_sort(buffers.begin(), buffers.end(),
                   [](const LiveBuffer& a, const LiveBuffer& b) { return a.size > b.size; });
  constexpr std::size_t kShown = 8;
  text += "; largest live:";
  for (std::size_t i = 0; i < std::min(kShown, buffers.size()); ++i) {
    const auto name = tag_names.find(buffers[i].tag);
    text += fmt::format("{} {} {} ({})", i == 0 ? "" : ",",
                        name == tag_names.end() ? std::string_view("untagged") : name->second,
                        human_bytes(buffers[i].size), buffers[i].kind);
  }
  if (buffers.size() > kShown) text += fmt::format(", {} more", buffers.size() - kShown);
  return text;
}

// A failure the budget caused (the budget refused a chunk since the last failure) becomes
// BudgetExceeded, naming the budget; any other stays OutOfMemory. Both carry the request, the
// memory and the cause.
[[noreturn]] void Compiler::Impl::throw_out_of_memory(std::string_view request,
                                                      const OutOfMemory& cause) const {
  const std::uint64_t refusals = budget.refusals();
  const bool by_budget = options.memory_budget_bytes != 0 && refusals != budget_refusals_seen;
  budget_refusals_seen = refusals;
  if (by_budget) {
    throw BudgetExceeded(fmt::format(
        "{}: over the memory budget of {} (CompilerOptions::memory_budget_bytes; {} mapped "
        "now); {}. Cause: {}",
        request, human(options.memory_budget_bytes), human(budget.used_bytes()), describe_memory(),
        cause.what()));
  }
  throw OutOfMemory(
      fmt::format("{}: out of memory; {}. Cause: {}", request, describe_memory(), cause.what()));
}

void Compiler::Impl::rethrow_allocate_failure(std::size_t bytes, const OutOfMemory& cause) const {
  std::string request;
  const std::string size = human(bytes);
  if (!cursor.running()) {
    request = fmt::format("allocate {} in the persistent pool (outside steps)", size);
  } else if (pause_depth > 0 || !cursor.on_step_thread()) {
    request = fmt::format("allocate {} in the persistent pool ({}, in step '{}' at event {})", size,
                          pause_depth > 0 ? "inside a pause" : "from another thread",
                          cursor.step().name, cursor.events());
  } else {
    constexpr std::array<std::string_view, 3> kModes{"replaying", "recording",
                                                     "dynamic, past the branch cap"};
    request = fmt::format("allocate {} in step '{}' at event {} ({})", size, cursor.step().name,
                          cursor.events(), kModes[static_cast<std::size_t>(cursor.mode())]);
  }
  throw_out_of_memory(request, cause);
}

void Compiler::Impl::rethrow_begin_step_failure(std::string_view name,
                                                const OutOfMemory& cause) const {
  const auto it = trees.find(name);
  const Bytes plans = it == trees.end() ? 0 : it->second->tree.arena_bytes();
  throw_out_of_memory(
      fmt::format("begin_step '{}': mapping the {} of its plans", name, human_bytes(plans)), cause);
}

namespace {

// "attention.scores 1.00 GiB (62%), untagged 512 MiB (31%), 2 more tags 112 MiB (7%)".
std::string describe_peak(const std::vector<TagShare>& shares) {
  constexpr std::size_t kShown = 3;
  std::string text;
  Bytes rest = 0;
  double rest_share = 0;
  for (std::size_t i = 0; i < shares.size(); ++i) {
    if (i >= kShown) {
      rest += shares[i].bytes;
      rest_share += shares[i].share;
      continue;
    }
    text += fmt::format("{}{} {} ({:.0f}%)", i == 0 ? "" : ", ",
                        shares[i].tag.empty() ? "untagged" : shares[i].tag,
                        human_bytes(shares[i].bytes), 100 * shares[i].share);
  }
  if (shares.size() > kShown) {
    text += fmt::format(", {} more tags {} ({:.0f}%)", shares.size() - kShown, human_bytes(rest),
                        100 * rest_share);
  }
  return shares.empty() ? "nothing live" : text;
}

}  // namespace

std::string Compiler::Impl::report() const {
  const Stats s = snapshot();
  std::string out = fmt::format(
      "memplan compiler report\n"
      "  steps: {} recorded, {} replayed, {} aborted, {} dynamic\n"
      "  breaks: {} ({} unknown allocation, {} range held by a rogue, {} unexpected end)\n"
      "  branches: {}\n"
      "  allocations: {} replayed, {} recorded, {} paused, {} at learned rogue sites; {} frees "
      "out of order\n"
      "  rogues: {} ({}) found, {} ({}) live, {} sites learned ({} forgotten); plans moved "
      "{} times\n"
      "  planned peak: {} (lower bound {})\n"
      "  arena: {} mapped of {} reserved; pool: {} allocated, {} mapped, {} lent to the "
      "plans\n"
      "  backend calls: {} memory calls, {} in all\n",
      s.steps_recorded, s.steps_replayed, s.steps_aborted, s.steps_dynamic, s.breaks,
      s.breaks_by_reason[0], s.breaks_by_reason[1], s.breaks_by_reason[2], s.branches,
      s.replayed_allocations, s.recorded_allocations, s.paused_allocations,
      s.learned_site_allocations, s.frees_out_of_order, s.rogues, human(s.rogue_bytes),
      s.live_rogues, human(s.live_rogue_bytes), s.learned_rogue_sites, s.forgotten_rogue_sites,
      s.window_moves, human(s.planned_peak_bytes), human(s.lower_bound_bytes),
      human(s.mapped_bytes), human(s.reserved_bytes), human(s.pool_live_bytes),
      human(s.pool_mapped_bytes), human(s.pool_lent_bytes), s.backend_calls.memory_calls(),
      s.backend_calls.total());
  out += fmt::format(
      "  live: {} now ({} arena, {} pool); peak {} ({} arena, {} pool, {} rogues at most)\n"
      "  mapped: {} now, {} at most\n",
      human(s.live_bytes), human(s.arena_live_bytes), human(s.pool_live_bytes),
      human(s.peak_live_bytes), human(s.arena_peak_live_bytes), human(s.pool_peak_live_bytes),
      human(s.peak_live_rogue_bytes), human(s.mapped_bytes + s.pool_mapped_bytes),
      human(s.peak_mapped_bytes));
  if (s.period_two_outputs != 0) {
    out += fmt::format(
        "  outputs planned in the arena (period two): {} ({} fell back to the pool); {} ({}) of "
        "finished steps live\n",
        s.period_two_outputs, s.period_two_fallbacks, s.live_carried_outputs,
        human(s.live_carried_bytes));
  }
  if (s.memory_budget_bytes != 0) {
    out +=
        fmt::format("  budget: {}; headroom {} now, {} at the peak\n", human(s.memory_budget_bytes),
                    human_bytes(to_bytes(s.memory_budget_bytes) -
                                to_bytes(s.mapped_bytes + s.pool_mapped_bytes)),
                    human_bytes(to_bytes(s.memory_budget_bytes) - to_bytes(s.peak_mapped_bytes)));
  }
  for (const auto& [name, g] : trees) {
    out += fmt::format("  step '{}': {} runs, {} branches, {} events in the tree\n", name, g->steps,
                       g->tree.branch_count(), g->tree.node_count() - 1);
    for (std::size_t b = 0; b < g->tree.branch_count(); ++b) {
      const tree::Branch& br = g->tree.branch(static_cast<tree::BranchId>(b));
      out += fmt::format("    branch {}: {} events, plan {}, bound {}, gap {}, {}{}\n", b,
                         g->tree.node(br.end).depth - 1, human_bytes(br.arena_bytes),
                         human_bytes(br.lower_bound), human_bytes(br.arena_bytes - br.lower_bound),
                         br.algorithm, br.proven_optimal ? " (optimal)" : "");
      out += "      peak: " + describe_peak(peak_tags(branch_trace(name, b))) + "\n";
    }
  }
  constexpr std::size_t kShownBreaks = 8;
  const std::size_t first = break_log.size() > kShownBreaks ? break_log.size() - kShownBreaks : 0;
  for (std::size_t i = first; i < break_log.size(); ++i) {
    const BreakRecord& b = break_log[i];
    out +=
        fmt::format("  break: step {} '{}' event {} scope '{}': {}; expected {}; came {}\n", b.step,
                    b.step_name, b.event, b.scope, to_string(b.reason), b.expected, b.came);
  }
  for (const auto& [p, r] : rogues.all()) {
    const auto name = tag_names.find(r.tag);
    out += fmt::format("  live rogue: {} at offset {}{} from step {} '{}'\n", human_bytes(r.size),
                       r.offset,
                       name == tag_names.end() ? std::string() : " tagged '" + name->second + "'",
                       r.step, r.step_name);
  }
  return out;
}

}  // namespace memplan
