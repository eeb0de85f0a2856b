// Lookups in the table of sparsity modes (modes.hpp). Host only.
#include "memplan/attention/modes.hpp"

#include <fmt/format.h>

#include "memplan/error.hpp"

namespace memplan::attention {

const ModeTraits& traits(SparsityMode mode) {
  const ModeTraits* found = find_traits(mode);
  if (found == nullptr) {
    throw InvalidArgument(fmt::format("attention: unknown sparsity mode {} (the table has {})",
                                      static_cast<int>(mode), kModeTraits.size()));
  }
  return *found;
}

std::string_view to_string(SparsityMode mode) noexcept {
  const ModeTraits* found = find_traits(mode);
  return found != nullptr ? found->name : "unknown";
}

}  // namespace memplan::attention
