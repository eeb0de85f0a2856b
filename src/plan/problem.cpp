// Problem checks and the arena-size measure shared by every stage.
#include "memplan/plan/problem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "memplan/error.hpp"

namespace memplan::plan {
namespace {

// Far above any real arena (2^52 B = 4 PiB) yet far below overflow when offsets are added.
constexpr Bytes kMaxBytes = Bytes{1} << 52;

[[noreturn]] void reject(std::size_t index, const Buffer& b, std::string_view what) {
  throw InvalidArgument(fmt::format("buffer {} (id '{}'): {}", index, b.id, what));
}

}  // namespace

void check_problem(const Problem& problem) {
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.size < 0 || b.size > kMaxBytes) {
      reject(i, b, fmt::format("size {} is outside [0, {}]", b.size, kMaxBytes));
    }
    if (b.upper < b.lower) {
      reject(i, b, fmt::format("lifetime [{}, {}) ends before it starts", b.lower, b.upper));
    }
    if (b.alignment <= 0 || !std::has_single_bit(static_cast<std::uint64_t>(b.alignment))) {
      reject(i, b, fmt::format("alignment {} is not a power of two", b.alignment));
    }
    if (b.alignment > kMaxBytes) {
      reject(i, b, fmt::format("alignment {} is above the limit {} (2^52)", b.alignment,
                               kMaxBytes));
    }
    if (b.fixed_offset) {
      const Bytes off = *b.fixed_offset;
      if (off < 0 || off > kMaxBytes) {
        reject(i, b, fmt::format("fixed offset {} is outside [0, {}]", off, kMaxBytes));
      }
      if (off % b.alignment != 0) {
        reject(i, b, fmt::format("fixed offset {} is not a multiple of its alignment {}", off,
                                 b.alignment));
      }
    }
  }
}

Bytes arena_size(const Problem& problem, std::span<const Bytes> offsets) {
  Bytes top = 0;
  const std::size_t n = std::min(problem.buffers.size(), offsets.size());
  for (std::size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.occupies()) top = std::max(top, offsets[i] + b.size);
  }
  return top;
}

}  // namespace memplan::plan
