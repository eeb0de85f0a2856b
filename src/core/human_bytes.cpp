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
  // Three significant digits: 1.36 GiB, 13.6 GiB, 136 GiB.
  const int decimals = value < 10.0 ? 2 : value < 100.0 ? 1 : 0;
  return fmt::format("{}{:.{}f} {}", bytes < 0 ? "-" : "", value, decimals, kUnits[unit]);
}

}  // namespace memplan
