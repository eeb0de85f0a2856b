// The host environment, and the CPU instances of the shared suites.
#include "arena_suite.hpp"
#include "memplan/arena/host_backend.hpp"

#include <cstring>

namespace memplan::arena::test {
namespace {

class HostEnv final : public BackendEnv {
 public:
  std::string name() const override { return "Host"; }
  std::unique_ptr<PhysicalBackend> make_backend() const override {
    return std::make_unique<HostBackend>();
  }
  void write(void* dst, std::span<const std::uint8_t> bytes) const override {
    if (!bytes.empty()) std::memcpy(dst, bytes.data(), bytes.size());
  }
  std::vector<std::uint8_t> read(const void* src, std::size_t n) const override {
    std::vector<std::uint8_t> out(n);
    if (n != 0) std::memcpy(out.data(), src, n);
    return out;
  }
};

}  // namespace

const BackendEnv& host_env() {
  static const HostEnv env;
  return env;
}

INSTANTIATE_TEST_SUITE_P(Host, ArenaSuite, ::testing::Values(&host_env()), EnvName{});
INSTANTIATE_TEST_SUITE_P(Host, PoolSuite, ::testing::Values(&host_env()), EnvName{});
INSTANTIATE_TEST_SUITE_P(Host, CheckHeapSuite, ::testing::Values(&host_env()), EnvName{});

}  // namespace memplan::arena::test
