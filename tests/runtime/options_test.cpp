// Options are checked when the compiler is made, with a message naming the option and the
// numbers: a chunk that is not whole granules of the backend (chunk_bytes = 128 used to be
// accepted, and then every allocation failed with "alignment 0 is not a power of two"), and empty
// or absurd reservations.
#include <gmock/gmock.h>

#include "step_program.hpp"

namespace memplan::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// The message of the InvalidArgument that constructing a compiler with `options` throws.
std::string rejection(const CompilerOptions& options) {
  arena::HostBackend backend;
  try {
    Compiler compiler(backend, options);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "the options were accepted";
  return {};
}

TEST(Options, ChunksMustBeWholeGranulesOfTheBackend) {
  const std::string granule = std::to_string(arena::HostBackend().granularity());
  CompilerOptions o = Harness::small_options();
  o.chunk_bytes = 128;
  EXPECT_THAT(rejection(o), AllOf(HasSubstr("chunk_bytes 128"), HasSubstr("host backend"),
                                  HasSubstr("granularity " + granule)));
  o = Harness::small_options();
  o.pool_chunk_bytes = (std::size_t{2} << 20) + 1;
  EXPECT_THAT(rejection(o),
              AllOf(HasSubstr("pool_chunk_bytes 2097153"), HasSubstr("granularity " + granule)));
  o = Harness::small_options();
  o.chunk_bytes = 0;
  EXPECT_THAT(rejection(o), HasSubstr("chunk_bytes 0 is outside"));
  o = Harness::small_options();
  o.pool_chunk_bytes = ~std::size_t{0};
  EXPECT_THAT(rejection(o), HasSubstr("pool_chunk_bytes 18446744073709551615 is outside"));
}

TEST(Options, ReservationsMustBeNonZeroAndBelievable) {
  CompilerOptions o = Harness::small_options();
  o.reserve_bytes = 0;
  EXPECT_THAT(rejection(o), HasSubstr("reserve_bytes 0 is outside [1, 281474976710656]"));
  o = Harness::small_options();
  o.pool_reserve_bytes = static_cast<std::size_t>(-4096);  // a negative size cast to size_t
  EXPECT_THAT(rejection(o), HasSubstr("pool_reserve_bytes 18446744073709547520 is outside"));
}

TEST(Options, TheSmallestValidChunkServesEveryAlignmentUpToIt) {
  arena::HostBackend backend;
  CompilerOptions o = Harness::small_options();
  o.chunk_bytes = backend.granularity();
  o.pool_chunk_bytes = backend.granularity();
  o.default_alignment = 4096;
  Compiler compiler(backend, o);
  {
    auto step = compiler.step("s");
    void* p = compiler.allocate(100, {}, {}, backend.granularity());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % backend.granularity(), 0u);
    compiler.deallocate(p);
  }
  void* q = compiler.allocate(100);  // outside steps: the pool
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q) % 4096, 0u);
  compiler.deallocate(q);
}

}  // namespace
}  // namespace memplan::testing
