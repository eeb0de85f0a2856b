// The start-order greedy as a sweep over time: O(n log n) however many buffers are alive at once.
//
// Placed in allocation order, a buffer's placed neighbours are exactly the buffers alive when it
// starts, plus the fixed-offset buffers that start later within its lifetime ("late
// obstacles"). So a sweep that frees buffers as they end and keeps the live ones in LiveSpans
// finds each offset in O(log n), where the other indexes walk every placed neighbour. The plans
// are the same as theirs for GreedyOrder::Start (the greedy tests check it), which makes this
// the cheap strategy that always completes on wide live sets (greedy.cpp). Swept backwards
// (lifetime [l, u) read as [~u, ~l), which keeps every intersection and never overflows) it is
// the end order's greedy, as cheap. Late obstacles cost
// O(log n) each under first fit; under best fit a buffer that has any walks the live spans.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "live_spans.hpp"

namespace memplan::plan::detail {

enum class RunEnd {
  Done,       // every buffer placed
  GaveUp,     // a buffer's top passed the cap (see the run's stop)
  OutOfTime,  // the deadline passed
};

// Where a run gave up: a buffer (local index) and the top it would have reached.
struct RunStop {
  int buffer = -1;
  Bytes top = 0;
};

class SweepGreedy {
 public:
  using Clock = std::chrono::steady_clock;

  // `occupying`: the buffers to place (problem indices, each occupying memory); local index v
  // is position v in it. `backwards`: sweep from the last instant to the first, which places
  // the buffers in the end order (latest end first) as the forward sweep does in start order.
  SweepGreedy(const Problem& problem, std::span<const std::size_t> occupying, bool backwards);

  // Fills `span` (per local index: [offset, top)) for every buffer; fixed-offset ones keep
  // theirs. Stops when a top passes `give_up_above`, or at `deadline` (checked every few
  // placements).
  RunEnd run(Fit fit, Bytes give_up_above, Clock::time_point deadline,
             std::span<std::pair<Bytes, Bytes>> span);
  [[nodiscard]] RunStop stop() const { return stop_; }

 private:
  // Frees the buffers that ended and takes the fixed ones that started, up to instant t.
  void advance_to(Time t, std::span<const std::pair<Bytes, Bytes>> span);
  [[nodiscard]] Bytes place(std::size_t v, Fit fit, std::span<const int> late);

  struct Shape {
    Time lower;
    Time upper;
    Bytes size;
    Bytes alignment;
    Bytes fixed;  // -1 for none
  };
  std::vector<Shape> shape_;         // per local index
  std::vector<int> free_order_;      // free buffers by start, larger first, problem order
  std::vector<int> fixed_by_lower_;  // fixed buffers by start
  std::vector<int> by_upper_;        // every buffer by end
  Bytes granule_ = 1;                // divides every size, alignment and fixed offset
  std::size_t next_end_ = 0;         // run state: positions in by_upper_ and fixed_by_lower_
  std::size_t next_fixed_ = 0;
  LiveSpans live_;
  std::vector<std::pair<Bytes, Bytes>> late_spans_;  // scratch: late obstacles by begin
  std::vector<Bytes> late_reach_;                    // scratch: running max of their ends
  RunStop stop_;
};

}  // namespace memplan::plan::detail
