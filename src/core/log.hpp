// The library's side of logging (include/memplan/log.hpp is the user's side): the spdlog logger
// every layer writes to, as logger().warn("...{}...", value). Private: spdlog and fmt stay out of
// memplan's public headers and link interface.
#pragma once

#include "memplan/log.hpp"

#include <spdlog/logger.h>

namespace memplan {

// The logger named "memplan", registered with spdlog (so spdlog::get("memplan") finds it, and
// spdlog::set_level applies to it too). Created on first use; its level starts at off unless
// MEMPLAN_LOG says otherwise. Its one sink writes to stderr or to the user's set_log_sink.
spdlog::logger& logger();

}  // namespace memplan
