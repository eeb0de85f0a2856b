// What every strategy of one problem's greedy shares: the occupying buffers in start order, their
// lifetimes and overlap degrees, and, built on first use, what only some strategies need (the
// order keys, the overlap graph, the sweep). A portfolio that stops after one cheap run on a wide
// problem so builds nothing it does not use.
#pragma once

#include <array>
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "memplan/plan/greedy.hpp"
#include "overlap_index.hpp"
#include "placed_by_offset.hpp"
#include "sweep_greedy.hpp"
#include "time_tree.hpp"

namespace memplan::plan::detail {

// Per-buffer keys the orders sort by, for the occupying buffers.
struct OrderKeys {
  std::vector<Bytes> size;
  std::vector<std::uint64_t> length;  // unsigned: a lifetime may span more than INT64_MAX
  std::vector<double> area;           // double: size × length may exceed 64 bits; only compared
  std::vector<Bytes> pressure;
  std::vector<Time> start;
  std::vector<Time> end;
};

class GreedyContext {
 public:
  using Clock = std::chrono::steady_clock;

  // `index`: Auto picks per order (see GreedyIndex); Overlaps or Scan serve every order.
  GreedyContext(const Problem& problem, GreedyIndex index);

  [[nodiscard]] GreedyIndex index_for(GreedyOrder order) const;
  // Whether one run of an order other than start and end costs more than tens of milliseconds:
  // more than 2^22 overlap entries to sort (graph index), 2^26 pairs to scan, or the time tree
  // (more than 8,192 buffers).
  [[nodiscard]] bool expensive() const;
  // Whether such a run costs about half a second or more: 2^29 pairs to scan, 2^24 overlap
  // entries (the graph alone then takes a few hundred milliseconds to build), or 32,768 buffers
  // in the time tree.
  [[nodiscard]] bool wide() const;
  // Whether no such run is tried: more than 2^38 pairs to scan (minutes; the graph index is not
  // built that large), or more than 2^19 buffers for the time tree (its memory).
  [[nodiscard]] bool hopeless() const;
  // Whether the other orders run on the time tree (problems above 8,192 buffers).
  [[nodiscard]] bool large() const { return generic_ == GreedyIndex::TimeTree; }

  // Runs one strategy. Gives up as soon as a buffer's top passes `give_up_above` (an arena only
  // grows, so the plan could no longer win), and stops at `deadline`.
  RunEnd run(GreedyOrder order, Fit fit, Bytes give_up_above, Clock::time_point deadline);
  // The free buffers (local indices) in the order's sequence.
  [[nodiscard]] std::vector<int> order_of(GreedyOrder order);
  // Runs the free buffers in the given sequence (any permutation of order_of's), on the index
  // of the orders other than start and end.
  RunEnd run_in(std::span<const int> free, Fit fit, Bytes give_up_above,
                Clock::time_point deadline);
  // After a run: per local index, [offset, top) ({-1, -1} for a buffer not placed).
  [[nodiscard]] std::span<const std::pair<Bytes, Bytes>> spans() const { return span_; }
  // After RunEnd::Done: the plan.
  [[nodiscard]] GreedyPlan plan(GreedyOrder order, Fit fit) const;
  [[nodiscard]] GreedyPlan plan_named(std::string algorithm) const;
  // After RunEnd::GaveUp: the buffer that passed and the top it would have reached.
  [[nodiscard]] std::string describe_stop(GreedyOrder order, Fit fit) const;

 private:
  struct CostScale {
    double measure;
    double large;
    double wide;
    double hopeless;
  };
  [[nodiscard]] CostScale cost_scale() const;
  static bool out_of_time(Clock::time_point started, Clock::time_point deadline, std::size_t placed,
                          std::size_t total);
  void sort_by(GreedyOrder order, std::vector<int>& free) const;
  Bytes settle(int v, Bytes offset);
  Bytes place(int v, Fit fit);
  void place_by_overlaps(int v, GapFit& gap);
  const OrderKeys& keys();

  const Problem& problem_;
  std::vector<std::size_t> occupying_;  // local index -> problem index, in start order
  std::vector<Lifetime> lifetimes_;
  std::vector<std::int64_t> degrees_;  // overlapping buffers of each
  GreedyIndex requested_;
  GreedyIndex generic_;  // Overlaps or Scan: the index of the other orders
  std::optional<OrderKeys> keys_;
  std::optional<OverlapIndex> overlaps_;              // Overlaps index only
  std::array<std::optional<SweepGreedy>, 2> sweeps_;  // forwards (start), backwards (end)
  PlacedByOffset by_offset_;                          // Scan index only
  std::optional<TimeTree> tree_;                      // TimeTree index only
  std::vector<std::pair<Bytes, Bytes>> span_;         // per buffer: [offset, top), kUnplaced before
  RunStop stop_;
  bool packable_ = false;                       // offsets and degrees small enough for taken_keys_
  std::vector<std::pair<Bytes, Bytes>> taken_;  // scratch: [begin, end) of placed neighbours
  std::vector<std::uint64_t> taken_keys_;       // scratch: begin << kPositionBits | position
  std::vector<Bytes> taken_end_;                // scratch: ends, by position
};

}  // namespace memplan::plan::detail
