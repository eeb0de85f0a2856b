#include "bytes.hpp"

#include <fmt/format.h>

#include "memplan/types.hpp"

namespace memplan::arena::detail {

std::string pretty_bytes(std::size_t bytes) {
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  return fmt::format("{} ({} bytes)", human_bytes(static_cast<Bytes>(bytes)), bytes);
}

}  // namespace memplan::arena::detail
