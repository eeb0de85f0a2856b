// The greedy portfolio: place buffers one at a time, each into a gap left by the already-placed
// buffers alive at the same time, and keep the best of several orders and fits.
//
// No single order wins everywhere (big buffers first packs tall stacks well, long lifetimes first
// leaves clean layers, crowded moments first protects the peak), so the portfolio runs them all
// and stops as soon as one meets the lower bound (or a caller's "good enough"), or its deadline
// passes. Each run costs O(E log d) over an interval graph (E overlapping pairs, d the largest
// degree), or O(n²) on problems so dense that this is less, or on large problems O(n log n)
// times the fragments of the placed buffers' unions (see GreedyIndex); the start and end orders
// run as a sweep over time in O(n log n) however wide the live sets are.
//
// Every function here checks each buffer as check_problem does (memplan::InvalidArgument), expects
// fixed offsets that do not collide (check_problem checks that too), and keeps every buffer's top
// within kMaxArenaBytes: where no plan it can find does (alignment padding), it throws
// memplan::InvalidArgument naming the buffer that passes and the numbers.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/plan/problem.hpp"

namespace memplan::plan {

enum class GreedyOrder {
  Size,       // largest first, longer lifetime breaks ties
  Length,     // longest lifetime first, larger size breaks ties
  Area,       // largest size × lifetime first
  Conflicts,  // most overlapping buffers first, larger size breaks ties
  Pressure,   // busiest moment of its lifetime (live bytes) first, larger size breaks ties
  Start,      // allocation order (earliest start first), larger size breaks ties
  End,        // release order backwards (latest end first), larger size breaks ties: the start
              // order of the problem with time reversed
};

enum class Fit {
  Best,   // the smallest gap that holds the buffer (lowest on ties); the top if none
  First,  // the lowest gap that holds the buffer
};

// How a run finds the placed buffers alive with the next one. All give identical plans; they
// differ in cost. Overlaps: O(E log d) per run plus building the overlap graph (E overlapping
// pairs, d the largest degree). Scan: O(n²) per run, nothing to build; it wins on dense problems,
// where most buffers overlap most others. TimeTree: O(n log n) per run times the fragments of
// the unions it merges; it wins on large problems. Sweep: GreedyOrder::Start and End only,
// O(n log n) per run.
enum class GreedyIndex {
  Auto,      // Sweep for the start and end orders; else TimeTree above 8,192 buffers, else Scan
             // when n² is small next to E log d (or the graph would pass 2^26 entries), else Graph
  Overlaps,  // each buffer's placed neighbours from the overlap graph, sorted by offset
  Scan,      // one offset-ordered list of every placed buffer, filtered by lifetime
  TimeTree,  // a segment tree over time whose nodes keep the union of the ranges placed under
             // them: O(log n) unions a placement, where long-lived buffers stacked together are
             // one range (problems whose long-lived buffers overlap most others)
  Sweep,     // the start (end) order as a sweep forwards (backwards) over time, the live
             // buffers' gaps indexed (any other order: memplan::InvalidArgument)
};

struct GreedyPlan {
  std::vector<Bytes> offsets;  // one per buffer, in the problem's order
  Bytes arena_size = 0;
  std::string algorithm;  // e.g. "greedy:size/best-fit"
};

// One order and one fit. Fixed-offset buffers are placed first, as obstacles; buffers that
// occupy nothing go to their fixed offset or 0. Alignment is honoured.
[[nodiscard]] GreedyPlan greedy_plan(const Problem& problem, GreedyOrder order, Fit fit,
                                     GreedyIndex index = GreedyIndex::Auto);

// Every order × fit; the smallest arena wins (earlier strategies win ties). Stops as soon as a
// plan's arena is no larger than `good_enough` (pass the lower bound), or at `deadline`, with
// the best plan so far. The first strategy always runs to the end, whatever the deadline: the
// size order with best fit; above 8,192 buffers the size order with first fit (time tree);
// on problems where a run of the other orders costs about half a second or more (wide live
// sets, many overlaps, above 32,768 buffers) the start order's sweep with first fit. On large
// problems (above 8,192 buffers), squeaky-wheel rounds follow while the deadline allows: the
// buffers that ended above `good_enough` go first in the winning strategy's sequence, which
// runs again (algorithm "greedy:<order>/<fit>+squeaky<round>").
[[nodiscard]] GreedyPlan greedy_portfolio(
    const Problem& problem, Bytes good_enough,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

[[nodiscard]] std::string_view to_string(GreedyOrder order) noexcept;
[[nodiscard]] std::string_view to_string(Fit fit) noexcept;

}  // namespace memplan::plan
