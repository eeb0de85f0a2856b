// The logging API: what passes the level reaches the user's sink with its level and bare text,
// an empty sink brings stderr back, a throwing sink does not throw at the caller, swapping sinks
// under load loses no message, and the library's logger is the one spdlog knows as "memplan".
#include "core/log.hpp"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace memplan {
namespace {

// Restores the level and stderr after each test, whatever MEMPLAN_LOG said.
class Log : public ::testing::Test {
 protected:
  void TearDown() override {
    set_log_sink({});
    set_log_level(saved_level_);
  }
  LogLevel saved_level_ = log_level();
};

TEST_F(Log, SinkGetsWhatPassesTheLevelWithItsLevelAndBareText) {
  std::vector<std::pair<LogLevel, std::string>> got;
  set_log_sink([&got](LogLevel level, std::string_view text) { got.emplace_back(level, text); });
  set_log_level(LogLevel::Warn);
  EXPECT_EQ(log_level(), LogLevel::Warn);
  logger().info("below the level: {}", 1);
  logger().warn("at the level: {} B", 4096);
  logger().error("above it");
  set_log_level(LogLevel::Off);
  logger().critical("silenced");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::make_pair(LogLevel::Warn, std::string("at the level: 4096 B")));
  EXPECT_EQ(got[1], std::make_pair(LogLevel::Error, std::string("above it")));
}

TEST_F(Log, EmptySinkBringsStderrBack) {
  int calls = 0;
  set_log_sink([&calls](LogLevel, std::string_view) { ++calls; });
  set_log_level(LogLevel::Info);
  logger().info("to the sink");
  set_log_sink({});
  ::testing::internal::CaptureStderr();
  logger().info("to stderr");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(calls, 1);
  EXPECT_NE(err.find("[memplan I] to stderr"), std::string::npos) << err;
}

// The library logs in destructors and noexcept paths: what a sink throws must not reach them.
TEST_F(Log, WhatASinkThrowsStaysInTheLogger) {
  set_log_sink([](LogLevel, std::string_view) { throw std::runtime_error("sink failed"); });
  set_log_level(LogLevel::Info);
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(logger().error("to a throwing sink"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("sink failed"), std::string::npos) << err;
}

TEST_F(Log, SwappingSinksWhileThreadsLogLosesNoMessage) {
  std::atomic<int> first{0};
  std::atomic<int> second{0};
  const auto counting = [](std::atomic<int>& n) {
    return [&n](LogLevel, std::string_view) { ++n; };
  };
  set_log_sink(counting(first));
  set_log_level(LogLevel::Debug);
  constexpr int kThreads = 2;
  constexpr int kMessages = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kMessages; ++i) logger().debug("thread {} message {}", t, i);
    });
  }
  for (int swap = 0; swap < 200; ++swap) set_log_sink(counting(swap % 2 == 0 ? second : first));
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(first + second, kThreads * kMessages);
}

TEST_F(Log, LoggerIsRegisteredWithSpdlogAsMemplan) {
  const std::shared_ptr<spdlog::logger> registered = spdlog::get("memplan");
  ASSERT_NE(registered, nullptr);
  EXPECT_EQ(registered.get(), &logger());
}

}  // namespace
}  // namespace memplan
