// Progress on stderr for work that takes a while: nothing for the first second, then one line
// that updates itself ("planning big.csv (200000 buffers): 2.5 s"), cleared when the work ends.
// Only when stderr is a terminal: logs and pipes never see it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace memplan::tool {

class Progress {
 public:
  explicit Progress(std::string what);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();

 private:
  void run();

  std::string what_;
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::thread thread_;  // only when stderr is a terminal
};

}  // namespace memplan::tool
