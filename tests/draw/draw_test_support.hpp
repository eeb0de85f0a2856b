// Plans for the drawing tests: small ones written by hand, and a large valid one built without
// the planner (buffers stacked in lanes, one after the other in time), so 100,000 buffers cost
// milliseconds.
#pragma once

#include <fmt/format.h>

#include <random>
#include <string>
#include <vector>

#include "memplan/plan/problem.hpp"

namespace memplan::draw::testing {

struct Plan {
  plan::Problem problem;
  std::vector<Bytes> offsets;
  void add(std::string id, plan::Time lower, plan::Time upper, Bytes size, Bytes offset) {
    problem.buffers.push_back({.id = std::move(id), .lower = lower, .upper = upper, .size = size});
    offsets.push_back(offset);
  }
};

// `count` buffers in `lanes` lanes of `lane_bytes` each; in a lane, lifetimes follow one another.
inline Plan lanes_plan(std::size_t count, std::size_t lanes, Bytes lane_bytes, unsigned seed) {
  std::mt19937_64 random(seed);
  std::vector<plan::Time> lane_time(lanes, 0);
  Plan out;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t lane = random() % lanes;
    const plan::Time length = 1 + static_cast<plan::Time>(random() % 20);
    const Bytes size = 1 + static_cast<Bytes>(random() % static_cast<std::uint64_t>(lane_bytes));
    out.add(fmt::format("t{}", i), lane_time[lane], lane_time[lane] + length, size,
            static_cast<Bytes>(lane) * lane_bytes);
    lane_time[lane] += length + static_cast<plan::Time>(random() % 3);
  }
  return out;
}

}  // namespace memplan::draw::testing
