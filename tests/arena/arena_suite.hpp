// The fixtures of the shared suites (arena_suite_test.cpp, pool_suite_test.cpp,
// check_heap_suite_test.cpp), parameterized by backend environment; each environment's file
// instantiates them.
#pragma once

#include "backend_env.hpp"
#include "memplan/arena/arena.hpp"

#include <gtest/gtest.h>

namespace memplan::arena::test {

class EnvFixture : public ::testing::TestWithParam<const BackendEnv*> {
 protected:
  void SetUp() override {
    env().skip_if_unavailable();
    if (IsSkipped()) return;
    backend_ = env().make_backend();
    chunk_ = backend_->granularity();
  }
  const BackendEnv& env() const { return *GetParam(); }
  PhysicalBackend& backend() { return *backend_; }

  std::unique_ptr<PhysicalBackend> backend_;
  std::size_t chunk_ = 0;  // the smallest chunk the backend maps: tests stay small
};

class ArenaSuite : public EnvFixture {};
class PoolSuite : public EnvFixture {};
class CheckHeapSuite : public EnvFixture {};

}  // namespace memplan::arena::test
