// Compiles only if the installed memplan/version.hpp matches the version the package was built as.
#include <string_view>

#include "memplan/version.hpp"

static_assert(std::string_view(MEMPLAN_VERSION_STRING) == EXPECTED);
