// human_bytes: the one way memplan shows a byte count to a person (messages, tables, pictures).
#include <fmt/format.h>

#include <array>
#include <cstdlib>

#include "memplan/types.hpp"

namespace memplan {

std::string human_bytes(Bytes bytes) {
  static constexpr std::array<const char*, 6> kUnits = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const double magnitude = std::abs(static_cast<double>(bytes));
  if (magnitude < 1024.0) return fmt::format("{} B", bytes);
  double value = magnitude / 1024.0;
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  // Three significant digits: 1.36 GiB, 13.6 GiB, 136 GiB (thresholds where the rounding would
  // print a fourth digit: 9.996 is "10.0", not "10.00").
  const char* sign = bytes < 0 ? "-" : "";
  if (value < 9.995) return fmt::format("{}{:.2f} {}", sign, value, kUnits[unit]);
  if (value < 99.95) return fmt::format("{}{:.1f} {}", sign, value, kUnits[unit]);
  return fmt::format("{}{:.0f} {}", sign, value, kUnits[unit]);
}

}  // namespace memplan
