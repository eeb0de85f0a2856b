// An ordered set of the integers [0, n): one bit per integer, and above it a summary level per
// 64 (bit w set when word w below is not empty), up to a single word. Insert, erase and the
// nearest member above or below a value cost one word operation per level, O(log_64 n): four
// for a million members, all within a few cache lines, where a balanced tree chases twenty
// pointers. The validator keeps its live buffers in one, by their rank in address order.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

namespace memplan::plan::detail {

class RankSet {
 public:
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

  explicit RankSet(std::size_t n) {
    do {
      n = (n + 63) / 64;
      levels_.emplace_back(n, 0);
    } while (n > 1);
  }

  void insert(std::size_t x) {
    for (auto& level : levels_) {
      level[x / 64] |= std::uint64_t{1} << (x % 64);
      x /= 64;
    }
  }

  void erase(std::size_t x) {
    for (auto& level : levels_) {
      level[x / 64] &= ~(std::uint64_t{1} << (x % 64));
      if (level[x / 64] != 0) return;  // the levels above still see a member
      x /= 64;
    }
  }

  // The smallest member above x, or npos.
  [[nodiscard]] std::size_t next_after(std::size_t x) const {
    for (std::size_t k = 0; k < levels_.size(); ++k, x /= 64) {
      const unsigned bit = x % 64;
      const std::uint64_t above = bit == 63 ? 0 : ~std::uint64_t{0} << (bit + 1);
      const std::uint64_t found = levels_[k][x / 64] & above;
      if (found == 0) continue;
      std::size_t at = x / 64 * 64 + static_cast<std::size_t>(std::countr_zero(found));
      while (k-- > 0) at = at * 64 + static_cast<std::size_t>(std::countr_zero(levels_[k][at]));
      return at;
    }
    return npos;
  }

  // The largest member below x, or npos.
  [[nodiscard]] std::size_t before(std::size_t x) const {
    for (std::size_t k = 0; k < levels_.size(); ++k, x /= 64) {
      const std::uint64_t below = (std::uint64_t{1} << (x % 64)) - 1;
      const std::uint64_t found = levels_[k][x / 64] & below;
      if (found == 0) continue;
      std::size_t at = x / 64 * 64 + static_cast<std::size_t>(63 - std::countl_zero(found));
      while (k-- > 0) {
        at = at * 64 + static_cast<std::size_t>(63 - std::countl_zero(levels_[k][at]));
      }
      return at;
    }
    return npos;
  }

 private:
  std::vector<std::vector<std::uint64_t>> levels_;  // levels_[0]: the members
};

}  // namespace memplan::plan::detail
