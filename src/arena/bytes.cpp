#include "bytes.hpp"

#include <fmt/format.h>

namespace memplan::arena::detail {

std::string pretty_bytes(std::size_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.2f} {} ({} bytes)", value, kUnits[unit], bytes);
}

}  // namespace memplan::arena::detail
