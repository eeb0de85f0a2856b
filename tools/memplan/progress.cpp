#include "progress.hpp"

#include <fmt/core.h>
#include <unistd.h>

namespace memplan::tool {

Progress::Progress(std::string what) : what_(std::move(what)) {
  if (isatty(STDERR_FILENO) == 1) thread_ = std::thread([this] { run(); });
}

Progress::~Progress() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  done_changed_.notify_all();
  thread_.join();
}

void Progress::run() {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::unique_lock lock(mutex_);
  if (done_changed_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; })) return;
  do {
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    fmt::print(stderr, "\r{}: {:.1f} s", what_, seconds);
    std::fflush(stderr);
  } while (!done_changed_.wait_for(lock, std::chrono::milliseconds(250), [this] { return done_; }));
  fmt::print(stderr, "\r\033[K");  // clear the line
  std::fflush(stderr);
}

}  // namespace memplan::tool
