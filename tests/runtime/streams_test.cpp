// Streams passed to Compiler::allocate are waited for before any unmapping, so they must outlive
// the compiler or be forgotten first. These tests destroy a stream before trim() and before
// ~Compiler(): without forget_stream() both read the dead stream (ASan: stack-use-after-scope in
// HostStream::record), which the sanitizer build turns into a failure.
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "memplan/arena/host_stream.hpp"
#include "step_program.hpp"

namespace memplan::testing {
namespace {

using arena::Call;
using arena::HostStream;
using namespace std::chrono_literals;

// One step whose buffer is written by `stream`'s queued work; returns once the work is queued.
void step_with_work_on(Compiler& compiler, HostStream& stream, std::atomic<bool>& written) {
  auto step = compiler.step("denoise");
  void* p = compiler.allocate(std::size_t{1} << 20, stream.ref());
  stream.enqueue([p, &written] {
    std::this_thread::sleep_for(20ms);  // still queued when the caller goes on
    std::memset(p, 0x5a, std::size_t{1} << 20);
    written = true;
  });
  compiler.deallocate(p, stream.ref());
}

TEST(Streams, ForgetStreamWaitsForItsWorkAndTrimNoLongerTouchesIt) {
  Harness h;
  std::atomic<bool> written{false};
  {
    HostStream stream;
    step_with_work_on(h.compiler(), stream, written);
    EXPECT_TRUE(h.compiler().forget_stream(stream.ref()));
    EXPECT_TRUE(written.load());  // forgetting waited for the queued write
    EXPECT_FALSE(h.compiler().forget_stream(stream.ref()));  // already forgotten
  }
  h.compiler().release();  // unmaps: would record a fence on the destroyed stream
  h.compiler().trim();
  EXPECT_EQ(h.compiler().stats().mapped_bytes, 0u);
  h.run_step(dit_step(2, 512));  // the compiler goes on
  EXPECT_EQ(h.compiler().stats().steps_aborted, 0u);
}

TEST(Streams, AStreamForgottenBeforeTheCompilerDiesIsNotTouchedByItsDestructor) {
  auto h = std::make_unique<Harness>();
  std::atomic<bool> written{false};
  {
    HostStream stream;
    step_with_work_on(h->compiler(), stream, written);
    void* kept = h->compiler().allocate(4096, stream.ref());  // outside steps: the pool
    EXPECT_TRUE(h->compiler().forget_stream(stream.ref()));
    h->compiler().deallocate(kept);  // buffers outlive the stream they were allocated on
  }
  ASSERT_GT(h->compiler().stats().mapped_bytes, 0u);  // so the destructor has to unmap
  h.reset();
  EXPECT_TRUE(written.load());
}

TEST(Streams, ANewStreamAtAForgottenStreamsAddressIsTrackedAgain) {
  Harness h;
  std::optional<HostStream> stream;
  stream.emplace();
  const StreamRef first = stream->ref();
  h.compiler().deallocate(h.compiler().allocate(4096, first));
  const std::uint64_t fences = h.compiler().stats().backend_calls[Call::CreateFence];
  EXPECT_TRUE(h.compiler().forget_stream(first));
  stream.reset();
  stream.emplace();  // the same storage: the same address
  ASSERT_EQ(stream->ref(), first);
  h.compiler().deallocate(h.compiler().allocate(4096, stream->ref()));
  // A fence each in the planned arena and the pool, as for any stream seen the first time.
  EXPECT_EQ(h.compiler().stats().backend_calls[Call::CreateFence], fences + 2);
  EXPECT_TRUE(h.compiler().forget_stream(stream->ref()));
}

TEST(Streams, TheDefaultStreamIsTrackedLikeAnyOther) {
  Harness h;
  EXPECT_FALSE(h.compiler().forget_stream({}));  // not used yet
  h.compiler().deallocate(h.compiler().allocate(4096));
  EXPECT_EQ(h.compiler().stats().backend_calls[Call::CreateFence], 2u);
  EXPECT_TRUE(h.compiler().forget_stream({}));
  EXPECT_EQ(h.compiler().stats().backend_calls[Call::DestroyFence], 2u);
}

}  // namespace
}  // namespace memplan::testing
