// Thin wrappers over Hopper's TMA bulk-tensor loads and shared-memory mbarriers (sm_90a), for
// the producer / consumer ring of flash_tma.cu. PTX ISA: "cp.async.bulk.tensor", "mbarrier".
// An mbarrier phase completes when its pending arrival count reaches zero and, for a barrier
// armed with expect_tx, every byte announced has landed; waiters name the phase by its parity.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace memplan::attention::detail {

__device__ __forceinline__ void mbar_init(std::uint32_t bar, std::uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}

// Makes the initialised barriers visible to the async proxy (the TMA unit) too.
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// One arrival that also announces `bytes` the current phase must receive before it completes.
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ bool mbar_try_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t ns = 0;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(ns));
  return ns;
}

// A trap that ptxas sees only as a call. A trap inline in code that runs after
// setmaxnreg.inc (more registers than at entry) makes ptxas 13.0 silently drop the raise for
// the whole region: the consumers stay at the entry count and spill (no C7508 line; C7512,
// "wgmma.mma_async instructions are serialized due to insufficient register resources",
// instead). Reached only on a timeout, so the call costs nothing.
__device__ __noinline__ inline void trap_out_of_line() { __trap(); }

// Waits until the phase of parity `parity` of `bar` has completed. A wait that lasts 10 s is a
// bug (a phase that can never complete): trap, so the launch fails instead of hanging the
// device. The clock is read only once the first try fails, so a ready phase costs one try.
// OUT_OF_LINE_TRAP: for waits in a warpgroup that raised its registers (see trap_out_of_line).
template <bool OUT_OF_LINE_TRAP = false>
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  if (mbar_try_wait(bar, parity)) return;
  const std::uint64_t start = global_timer_ns();
  while (!mbar_try_wait(bar, parity)) {
    if (global_timer_ns() - start > 10'000'000'000ull) {
      if constexpr (OUT_OF_LINE_TRAP) {
        trap_out_of_line();
      } else {
        __trap();
      }
    }
  }
}

// Loads the box at coordinates (c0, c1, c2, c3) of `map` into shared memory at `dst`; its bytes
// count towards the current phase of `bar`. Elements past the tensor's extents arrive as zeros
// (and still count).
__device__ __forceinline__ void tma_load_4d(std::uint32_t dst, const CUtensorMap* map,
                                            std::uint32_t bar, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}

// Stores the box at `src` in shared memory to coordinates (c0, c1, c2, c3) of `map`, in the
// thread's bulk async-group; parts past the tensor's extents are not written. The shared memory
// must have been written before, made visible to the async proxy (fence_proxy_async_shared by
// each writer, then a barrier).
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, std::uint32_t src, int c0,
                                             int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3, %4}], "
      "[%5];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)),
      "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
      : "memory");
}

// Closes the thread's bulk async-group and waits until its stores have read their shared
// memory (the global writes complete on their own, before the grid does).
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.commit_group;\ncp.async.bulk.wait_group.read 0;\n" ::: "memory");
}

// Orders this thread's generic-proxy writes to shared memory before later async-proxy accesses.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Fetches a tensor map (a __grid_constant__ parameter) ahead of its first copy.
__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
}

// Brings the line holding `address` into L1 (and L2) without waiting for it.
__device__ __forceinline__ void prefetch_l1(const void* address) {
  asm volatile("prefetch.global.L1 [%0];\n" ::"l"(address));
}

// Named barriers 1-15 among `Threads` threads (a multiple of 32): sync waits for the count,
// arrive counts without waiting. Barrier 0 is __syncthreads'.
template <int Threads>
__device__ __forceinline__ void named_barrier_sync(int id) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(Threads) : "memory");
}
template <int Threads>
__device__ __forceinline__ void named_barrier_arrive(int id) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "n"(Threads) : "memory");
}

// Warpgroup register reallocation: every thread of a warpgroup executes the same one, which
// hands registers back to the CTA's pool (dec) or waits until the pool has them (inc). N is a
// multiple of 8 in [24, 256]. ptxas honours these only if it knows the count at entry: the
// kernel needs __launch_bounds__ with both the thread count and a minimum of CTAs per SM, else
// it drops them with "(C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to
// determine register count at entry" (an info line, shown only with -Xptxas -v).
template <int N>
__device__ __forceinline__ void warpgroup_release_registers() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void warpgroup_claim_registers() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

}  // namespace memplan::attention::detail
