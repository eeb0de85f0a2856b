// Fuzz target: plan() on small problems decoded from the fuzzer's bytes. Sizes, alignments,
// lifetimes and fixed offsets reach the ends of their types, and a buffer may be repeated up to
// 4,200 times, so that sums of sizes and offsets can pass 2^63 from a few bytes of input.
// plan() must either throw a memplan::Error or return a plan that the library's validator and
// the independent checker (tests/support/plan_checker.hpp) both accept. A problem that is
// plainly valid (every number far inside its limit, fixed offsets disjoint) must get a plan.
// To see the problem an input decodes to, as CSV for `memplan plan`:
//   MEMPLAN_FUZZ_PRINT=1 build/fuzz/fuzz/fuzz_plan INPUT 2>/dev/null
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <string>
#include <string_view>

#include "memplan/error.hpp"
#include "memplan/plan/csv.hpp"
#include "memplan/plan/planner.hpp"
#include "memplan/plan/validator.hpp"
#include "support/plan_checker.hpp"

namespace {

using memplan::Bytes;
using memplan::Error;
using namespace memplan::plan;
using memplan::plan::testing::Wide;

constexpr std::size_t kMaxBuffers = 4200;  // 2,049 x 2^52 and 4,097 x 2^51 fit
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

[[noreturn]] void finding(std::string_view what) {
  std::fprintf(stderr, "fuzz_plan: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

Time instant(FuzzedDataProvider& data) {
  switch (data.ConsumeIntegralInRange(0, 3)) {
    case 0:
      return data.ConsumeIntegralInRange<Time>(0, 32);
    case 1:
      return data.ConsumeIntegral<Time>();
    default:
      return data.PickValueInArray<Time>(
          {kMin, kMin + 1, -(Time{1} << 62), -1, 0, 1, Time{1} << 62, kMax - 1, kMax});
  }
}

Bytes byte_count(FuzzedDataProvider& data) {
  switch (data.ConsumeIntegralInRange(0, 5)) {
    case 0:
      return data.ConsumeIntegralInRange<Bytes>(0, 64);
    case 1:
      return Bytes{1} << data.ConsumeIntegralInRange(0, 62);
    case 2:
      return (Bytes{1} << data.ConsumeIntegralInRange(1, 62)) + data.ConsumeIntegralInRange(-1, 1);
    case 3:
      return data.ConsumeIntegral<Bytes>();
    case 4:
      return (Bytes{1} << 52) - data.ConsumeIntegralInRange<Bytes>(0, 64);
    default:
      return 8 * data.ConsumeIntegralInRange<Bytes>(0, 512);
  }
}

Bytes alignment(FuzzedDataProvider& data) {
  switch (data.ConsumeIntegralInRange(0, 3)) {
    case 0:
    case 1:
      return Bytes{1} << data.ConsumeIntegralInRange(0, 12);
    case 2:
      return static_cast<Bytes>(std::uint64_t{1} << data.ConsumeIntegralInRange(0, 63));
    default:
      return data.ConsumeIntegral<Bytes>();
  }
}

Buffer decode_buffer(FuzzedDataProvider& data, std::size_t index) {
  Buffer b;
  b.id = std::to_string(index);
  b.lower = instant(data);
  if (data.ConsumeBool()) {
    const Time length = data.ConsumeIntegralInRange<Time>(0, 8);
    b.upper = b.lower > kMax - length ? kMax : b.lower + length;
  } else {
    b.upper = instant(data);
  }
  b.size = byte_count(data);
  b.alignment = alignment(data);
  if (data.ConsumeIntegralInRange(0, 3) == 0) {
    // Mostly a multiple of the alignment (when that fits), sometimes anything.
    const Wide aligned = Wide{b.alignment} * data.ConsumeIntegralInRange<Bytes>(0, 64);
    b.fixed_offset = data.ConsumeBool() && aligned >= 0 && aligned <= kMax
                         ? static_cast<Bytes>(aligned)
                         : byte_count(data);
  }
  return b;
}

Problem decode_problem(FuzzedDataProvider& data) {
  Problem problem;
  const int records = data.ConsumeIntegralInRange(0, 12);
  for (int r = 0; r < records && data.remaining_bytes() > 0; ++r) {
    const Buffer b = decode_buffer(data, problem.buffers.size());
    const std::size_t copies = data.ConsumeIntegralInRange(0, 7) == 0
                                   ? data.ConsumeIntegralInRange<std::size_t>(1, kMaxBuffers)
                                   : 1;
    for (std::size_t c = 0; c < copies && problem.buffers.size() < kMaxBuffers; ++c) {
      problem.buffers.push_back(b);
      problem.buffers.back().id = std::to_string(problem.buffers.size() - 1);
    }
  }
  return problem;
}

// Every number far inside the planner's limits (2^52 for sizes and offsets) and the fixed
// buffers disjoint: plan() has no excuse to refuse such a problem.
bool plainly_valid(const Problem& problem) {
  constexpr Wide kComfort = Wide{1} << 40;
  Problem fixed;
  std::vector<Bytes> fixed_offsets;
  for (const Buffer& b : problem.buffers) {
    const auto alignment = static_cast<std::uint64_t>(b.alignment);
    if (b.size < 0 || b.size > kComfort || b.lower > b.upper || b.lower < -kComfort ||
        b.upper > kComfort || b.alignment <= 0 || b.alignment > (1 << 20) ||
        (alignment & (alignment - 1)) != 0) {
      return false;
    }
    if (b.fixed_offset) {
      if (*b.fixed_offset < 0 || *b.fixed_offset > kComfort || *b.fixed_offset % b.alignment != 0) {
        return false;
      }
      fixed.buffers.push_back(b);
      fixed_offsets.push_back(*b.fixed_offset);
    }
  }
  return !testing::overlap_by_sweep(fixed, fixed_offsets);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  FuzzedDataProvider data(bytes, size);
  PlanOptions options;
  options.exact = data.ConsumeBool();
  options.budget = std::chrono::milliseconds(data.ConsumeIntegralInRange(0, 20));
  options.stop_within_ratio = data.ConsumeBool() ? 0.0 : 1e-4;
  const Problem problem = decode_problem(data);
  if (std::getenv("MEMPLAN_FUZZ_PRINT") != nullptr) {
    std::cout << "# budget-ms " << options.budget.count() << (options.exact ? "" : " greedy-only")
              << " stop_within_ratio " << options.stop_within_ratio << '\n';
    write_csv(std::cout, problem);
    std::cout.flush();  // before a sanitizer ends the process
  }

  Solution solution;
  try {
    solution = plan(problem, options);
  } catch (const Error& e) {
    if (plainly_valid(problem)) finding(std::string("a valid problem refused: ") + e.what());
    return 0;  // a named error for a problem past the limits: what the planner promises
  }
  try {
    validate(problem, solution);
  } catch (const Error& e) {
    finding(std::string("plan() returned a plan the validator rejects: ") + e.what());
  }
  if (const auto fault = testing::solution_fault(problem, solution)) {
    finding("plan() returned a plan the independent checker rejects: " + *fault);
  }
  return 0;
}
