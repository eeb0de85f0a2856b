// Byte counts for people: "1.36 GiB (1460288880 bytes)". Private to the arena layer's messages.
#pragma once

#include <cstddef>
#include <string>

namespace memplan::arena::detail {

std::string pretty_bytes(std::size_t bytes);

}  // namespace memplan::arena::detail
