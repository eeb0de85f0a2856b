// Logging: memplan logs through one spdlog logger named "memplan", off by default.
// Turn it on with memplan::set_log_level(spdlog::level::info) or MEMPLAN_LOG=info in the
// environment (read once, when the logger is first used).
#pragma once

#include <spdlog/logger.h>

#include <memory>

namespace memplan {

// The library's logger. Created on first use; its level starts at "off" unless MEMPLAN_LOG says.
spdlog::logger& logger();

// The one switch: the level of memplan's logger (spdlog::level::off silences it again).
void set_log_level(spdlog::level::level_enum level);

}  // namespace memplan
