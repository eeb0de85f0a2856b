// Logging: memplan's log is off by default. One switch turns it on: set_log_level(LogLevel::Info),
// or MEMPLAN_LOG=info in the environment (read once, when the library first logs). Lines go to
// stderr as "[memplan I] ..." unless a sink is installed with set_log_sink. The library logs
// through spdlog internally; spdlog and fmt are not part of this API.
#pragma once

#include <functional>
#include <string_view>

namespace memplan {

// Severity, lowest first. A message is passed on when its level is at least the current one;
// Off passes nothing.
enum class LogLevel { Trace, Debug, Info, Warn, Error, Critical, Off };

// The one switch: the least severe level passed on (Off silences the log again).
void set_log_level(LogLevel level);
[[nodiscard]] LogLevel log_level();

// Receives each message that passes the level: its level and its text (no prefix, no newline;
// the view is valid only during the call). Called on the thread that logs, one call at a time,
// under the sink's lock: it must not call set_log_sink, and should not throw (what it throws is
// reported on stderr and dropped).
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

// Installs `sink` in place of stderr; an empty sink restores stderr. The level is unchanged.
void set_log_sink(LogSink sink);

}  // namespace memplan
