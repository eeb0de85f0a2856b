// Problem checks and the arena-size measure shared by every stage. Buffers are checked one by
// one first, so that the sweeps after them (bytes alive at once, fixed offsets that collide)
// work on sizes and offsets that cannot overflow.
#include "memplan/plan/problem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>

#include "checked.hpp"
#include "checked_problem.hpp"
#include "memplan/error.hpp"
#include "memplan/plan/lower_bound.hpp"
#include "memplan/plan/validator.hpp"

namespace memplan::plan {
namespace {

[[noreturn]] void reject(std::size_t index, const Buffer& b, std::string_view what) {
  throw InvalidArgument(fmt::format("buffer {} (id '{}'): {}", index, b.id, what));
}

void check_buffer(std::size_t i, const Buffer& b) {
  if (b.size < 0 || b.size > kMaxBufferBytes) {
    reject(i, b, fmt::format("size {} is outside [0, {}]", b.size, kMaxBufferBytes));
  }
  if (b.upper < b.lower) {
    reject(i, b, fmt::format("lifetime [{}, {}) ends before it starts", b.lower, b.upper));
  }
  if (b.alignment <= 0 || !std::has_single_bit(static_cast<std::uint64_t>(b.alignment))) {
    reject(i, b, fmt::format("alignment {} is not a power of two", b.alignment));
  }
  if (b.alignment > kMaxBufferBytes) {
    reject(i, b,
           fmt::format("alignment {} is above the limit {} (2^52)", b.alignment, kMaxBufferBytes));
  }
  if (b.fixed_offset) {
    const Bytes off = *b.fixed_offset;
    if (off < 0 || off > kMaxBufferBytes) {
      reject(i, b, fmt::format("fixed offset {} is outside [0, {}]", off, kMaxBufferBytes));
    }
    if (off % b.alignment != 0) {
      reject(
          i, b,
          fmt::format("fixed offset {} is not a multiple of its alignment {}", off, b.alignment));
    }
  }
}

}  // namespace

void detail::check_buffers(const Problem& problem) {
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) check_buffer(i, problem.buffers[i]);
}

Bytes detail::checked_lower_bound(const Problem& problem) {
  check_buffers(problem);
  const Bytes bound = lower_bound(problem);  // throws past kMaxArenaBytes, naming the instant
  const std::vector<Violation> collisions = find_fixed_offset_conflicts(problem, 1);
  if (!collisions.empty()) {
    throw InvalidArgument(
        "no plan exists: two fixed offsets share bytes while both buffers are "
        "alive: " +
        collisions.front().message);
  }
  return bound;
}

void check_problem(const Problem& problem) { (void)detail::checked_lower_bound(problem); }

Bytes arena_size(const Problem& problem, std::span<const Bytes> offsets) {
  Bytes top = 0;
  const std::size_t n = std::min(problem.buffers.size(), offsets.size());
  for (std::size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    if (!b.occupies()) continue;
    const std::optional<Bytes> end = detail::checked_add(offsets[i], b.size);
    if (!end) {
      throw InvalidArgument(fmt::format("buffer {} (id '{}'): offset {} + size {} passes {}", i,
                                        b.id, offsets[i], b.size,
                                        std::numeric_limits<Bytes>::max()));
    }
    top = std::max(top, *end);
  }
  return top;
}

}  // namespace memplan::plan
