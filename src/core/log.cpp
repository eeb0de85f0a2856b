// The memplan logger: a stderr sink, off unless asked for, thread safe.
#include "memplan/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

namespace memplan {
namespace {

std::shared_ptr<spdlog::logger> make_logger() {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto log = std::make_shared<spdlog::logger>("memplan", sink);
  log->set_pattern("[memplan %L] %v");
  const char* env = std::getenv("MEMPLAN_LOG");
  log->set_level(env != nullptr ? spdlog::level::from_str(env) : spdlog::level::off);
  return log;
}

}  // namespace

spdlog::logger& logger() {
  static const std::shared_ptr<spdlog::logger> instance = make_logger();
  return *instance;
}

void set_log_level(spdlog::level::level_enum level) { logger().set_level(level); }

}  // namespace memplan
