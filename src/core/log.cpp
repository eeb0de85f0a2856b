// The memplan logger: one spdlog logger with one sink of our own, which hands each message to the
// user's callback when one is installed and to stderr otherwise. Swapping the callback takes the
// sink's lock, so it is safe while other threads log. Off unless asked for.
#include "core/log.hpp"

#include <spdlog/details/log_msg.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <mutex>
#include <utility>

namespace memplan {
namespace {

// LogLevel mirrors spdlog's levels one to one, so converting is a cast.
static_assert(static_cast<int>(LogLevel::Trace) == spdlog::level::trace);
static_assert(static_cast<int>(LogLevel::Warn) == spdlog::level::warn);
static_assert(static_cast<int>(LogLevel::Off) == spdlog::level::off);

spdlog::level::level_enum to_spdlog(LogLevel level) {
  return static_cast<spdlog::level::level_enum>(level);
}
LogLevel from_spdlog(spdlog::level::level_enum level) { return static_cast<LogLevel>(level); }

class SwitchableSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  SwitchableSink() { stderr_.set_pattern("[memplan %L] %v"); }

  void set_user_sink(LogSink callback) {
    const std::lock_guard lock(mutex_);
    user_sink_ = std::move(callback);
  }

 protected:
  // Called with mutex_ held: one message at a time, never while the callback is being swapped.
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (user_sink_) {
      user_sink_(from_spdlog(msg.level), std::string_view(msg.payload.data(), msg.payload.size()));
    } else {
      stderr_.log(msg);
    }
  }
  void flush_() override { stderr_.flush(); }

 private:
  LogSink user_sink_;
  spdlog::sinks::stderr_color_sink_st stderr_;  // guarded by mutex_, like user_sink_
};

struct Logger {
  std::shared_ptr<SwitchableSink> sink = std::make_shared<SwitchableSink>();
  std::shared_ptr<spdlog::logger> log = std::make_shared<spdlog::logger>("memplan", sink);

  Logger() {
    const char* env = std::getenv("MEMPLAN_LOG");
    log->set_level(env != nullptr ? spdlog::level::from_str(env) : spdlog::level::off);
    try {
      spdlog::register_logger(log);
    } catch (const spdlog::spdlog_ex&) {
      // The application already registered a logger named "memplan": keep ours unregistered
      // rather than take its name or fail the library's first log call.
    }
  }
};

Logger& instance() {
  static Logger logger;
  return logger;
}

}  // namespace

spdlog::logger& logger() { return *instance().log; }

void set_log_level(LogLevel level) { logger().set_level(to_spdlog(level)); }

LogLevel log_level() { return from_spdlog(logger().level()); }

void set_log_sink(LogSink sink) { instance().sink->set_user_sink(std::move(sink)); }

}  // namespace memplan
