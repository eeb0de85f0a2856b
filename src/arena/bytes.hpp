// Byte counts for people: "1.36 GiB (1460288880 bytes)". Private to the arena layer's messages.
#pragma once

#include <cstddef>
#include <string>

namespace memplan::arena::detail {

std::string pretty_bytes(std::size_t bytes);

inline std::size_t round_up(std::size_t value, std::size_t multiple) noexcept {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace memplan::arena::detail
