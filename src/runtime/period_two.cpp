// Outputs that outlive their step by less than one step, planned in the arena (period-two
// placement, tree/period_two_planner.hpp). A learned site of a tree with one branch that shows
// the habit at a begin_step (learned_sites.hpp) is planned twice: its branch's even and odd
// plans. Each step of the tree runs the parity that holds where the previous output is
// (carried_outputs.hpp); the output stays in the window at its step's end instead of becoming a
// rogue. Whatever breaks the habit - two outputs still live at a begin_step, an output of another
// step name, a break in the tree, the window moving - turns the carried outputs into rogues (the
// window then moves clear of them, as for any rogue) and sends the site back to the pool for good.
#include <fmt/format.h>

#include "compiler_impl.hpp"
#include "core/log.hpp"
#include "memplan/tree/period_two_planner.hpp"

namespace memplan {

// The parity step `g` runs: the other one than its previous output's, which its plan holds. Any
// other carried output (of another tree, or a second one of g) is dropped first.
std::uint8_t Compiler::Impl::settle_carried(StepTree& g) {
  if (carried.empty()) return 0;
  const CarriedOutput& only = carried.all().front().second;
  if (carried.size() == 1 && only.tree == &g && g.period_two == only.node) {
    return static_cast<std::uint8_t>(1 - only.parity);
  }
  logger().info(
      "step '{}' begins with {} output(s) of earlier steps still live in the arena ({}): "
      "they become rogues",
      g.name, carried.size(), carried.size() == 1 ? "of another step name" : "the habit keeps one");
  drop_carried();
  place_window();
  reserve_learned_sites();  // the site's pool room, so that this step's output makes no call
  return 0;
}

// At a begin_step of `g`, before it maps the arena: plans the site that shows the habit.
// As early as the habit shows (one output that outlived its step by less than one), so that the
// pool holds none of the outputs after the next trim: each output it serves keeps its chunks
// mapped until then.
void Compiler::Impl::plan_period_two_output(StepTree& g) {
  if (!options.period_two_outputs || g.period_two != tree::kNoNode || g.period_two_refused ||
      g.tree.branch_count() != 1 || rogues.in_window()) {
    return;
  }
  const std::optional<LearnedSites::PeriodTwo> candidate = learned_sites.period_two_candidate(&g);
  if (!candidate || !g.tree.node(candidate->node).persistent) return;
  tree::PeriodTwoPlan plans;
  try {
    plans = tree::plan_period_two(g.tree, 0, candidate->node, candidate->hold_until,
                                  options.plan_budget);
  } catch (const Error& e) {
    logger().warn("step '{}': planning its output in the arena failed, it stays in the pool: {}",
                  g.name, e.what());
    g.period_two_refused = true;
    return;
  }
  g.period_two = candidate->node;
  g.period_two_hold = candidate->hold_until;
  learned_sites.forget({&g, candidate->node});
  ++stats.period_two_outputs;
  // The plans grew: the window must stay clear of the rogues above it too, and of the slot of a
  // loan it left behind (window_home.cpp).
  if (!rogues.empty() || loan_left_behind()) place_window();
  const tree::Branch& branch = g.tree.branch(0);
  if (static_cast<std::uint64_t>(branch.arena_bytes) > stats.planned_peak_bytes) {
    stats.planned_peak_bytes = static_cast<std::uint64_t>(branch.arena_bytes);
    stats.lower_bound_bytes = static_cast<std::uint64_t>(branch.lower_bound);
  }
  logger().info(
      "step '{}': its {} B output, kept until the next step's exists, is planned in the arena "
      "with period two: {} B even, {} B odd (lower bound {} B{}), the previous output held {}",
      g.name, g.tree.node(g.period_two).key.size, plans.even.arena_size, plans.odd.arena_size,
      branch.lower_bound, plans.mirrored ? ", odd plan mirrored" : "",
      g.period_two_hold == tree::kToStepEnd ? std::string("for the whole step")
                                            : fmt::format("until event {}", g.period_two_hold));
}

// End of a replayed step: the period-two output stays where its plan put it.
void Compiler::Impl::carry_output(void* p, NodeId node) {
  const tree::Node& n = tree().node(node);
  carried.add(p, CarriedOutput{.tree = &cursor.step(),
                               .node = node,
                               .offset = offset_of(n),
                               .size = n.key.size,
                               .parity = cursor.parity(),
                               .step = cursor.serial()});
  live_bytes.carried(n.key.size);
  ++stats.carried_outputs;
}

bool Compiler::Impl::take_carried(void* p) {
  const std::optional<CarriedOutput> output = carried.take(p);
  if (!output) return false;
  live_bytes.carried_gone(output->size);
  if (carried.empty()) set_carried_guard(tree::kToStepEnd);  // nothing left for the plan to hold
  return true;
}

// The carried outputs become rogues (their site falls back to the pool); the caller places the
// window clear of them.
void Compiler::Impl::drop_carried() {
  for (const auto& [p, output] : carried.take_all()) {
    StepTree& g = *output.tree;
    fall_back_from_period_two(g, "an output of an earlier step outlived the habit");
    const tree::Node& n = g.tree.node(output.node);
    rogues.add(p, Rogue{.offset = rogues.window() + output.offset,
                        .size = output.size,
                        .tag = n.key.tag,
                        .step = output.step,
                        .since = n.depth,
                        .step_name = g.name});
    ++stats.rogues;
    stats.rogue_bytes += static_cast<std::uint64_t>(output.size);
    ++stats.live_rogues;
    stats.live_rogue_bytes += static_cast<std::uint64_t>(output.size);
    live_bytes.carried_gone(output.size);
    learned_sites.outlives(p, {&g, output.node}, /*in_arena=*/true);
  }
  set_carried_guard(tree::kToStepEnd);
}

// The site is served from the pool again, as a learned site whose planned range no plan keeps
// (pool_only), and never planned with period two again. The tree's plans stay valid: the even one
// serves every later step.
void Compiler::Impl::fall_back_from_period_two(StepTree& g, std::string_view why) {
  if (g.period_two == tree::kNoNode) return;
  const NodeId node = g.period_two;
  tree::Node& n = g.tree.node(node);
  n.period_two = false;
  n.persistent = true;
  n.pool_only = true;
  g.period_two = tree::kNoNode;
  g.period_two_refused = true;
  learned_sites.learn({&g, node}, n.key);
  pool_room_stale = true;
  ++stats.period_two_fallbacks;
  logger().info("step '{}': its output goes back to the pool ({})", g.name, why);
}

}  // namespace memplan
