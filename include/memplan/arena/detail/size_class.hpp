// Size classes of the persistent pool, TLSF style: sizes in 256-byte units, a first level per
// power of two and 16 linear second-level classes inside it, so a class is at most 1/16 of its
// sizes wide. Sizes below 32 units have exact classes.
#pragma once

#include <bit>
#include <cstdint>

namespace memplan::arena::detail {

inline constexpr unsigned kSlLog = 4;
inline constexpr unsigned kSlCount = 1u << kSlLog;
inline constexpr unsigned kFlCount = 40;  // units below 2^43: more than kMaxRequestBytes

struct SizeClass {
  unsigned fl;
  unsigned sl;
};

// The class a free block of `units` is filed under.
inline SizeClass class_of(std::uint64_t units) noexcept {
  if (units < kSlCount) return {0, static_cast<unsigned>(units)};
  const unsigned msb = 63u - static_cast<unsigned>(std::countl_zero(units));
  return {msb - kSlLog + 1, static_cast<unsigned>(units >> (msb - kSlLog)) & (kSlCount - 1)};
}

// The lowest class whose every block holds at least `units`.
inline SizeClass class_at_least(std::uint64_t units) noexcept {
  if (units >= kSlCount) {
    const unsigned msb = 63u - static_cast<unsigned>(std::countl_zero(units));
    units += (std::uint64_t{1} << (msb - kSlLog)) - 1;
  }
  return class_of(units);
}

}  // namespace memplan::arena::detail
