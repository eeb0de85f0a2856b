// Thin wrappers over Hopper's warpgroup MMA (sm_90a): shared-memory matrix descriptors for the
// 128-byte-swizzled tiles of flash_wgmma.cu, the fence / commit / wait protocol, and the shapes
// the kernels issue (S = Q K^T with Q from shared memory or registers, O += P V with P from
// registers).
// Layouts follow the PTX ISA "Asynchronous Warpgroup Level Matrix" sections: a tile of 64 rows
// of 64 bf16 (128 bytes) is stored row after row with 16-byte chunk c of row r at c ^ (r & 7),
// which is the hardware's 128B swizzle when the tile starts on a 1024-byte boundary.
#pragma once

#include <cstdint>

namespace memplan::attention::detail {

// Descriptor of a 128B-swizzled operand at shared address `addr`: `lbo` / `sbo` are the leading
// and stride byte offsets (K-major: lbo unused, sbo = 8 rows = 1024; MN-major: lbo = distance
// between 64-element column atoms, sbo = 8 rows of K).
__device__ __forceinline__ std::uint64_t wgmma_desc(std::uint32_t addr, std::uint32_t lbo,
                                                    std::uint32_t sbo) {
  return static_cast<std::uint64_t>((addr & 0x3FFFFu) >> 4) |
         (static_cast<std::uint64_t>((lbo & 0x3FFFFu) >> 4) << 16) |
         (static_cast<std::uint64_t>((sbo & 0x3FFFFu) >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
// wgmma_wait<Pending>, kept below the instructions that computed `value`. ptxas moves a
// wgmma.wait_group up to the top of its basic block: a wait for products issued before a softmax
// then lands above the softmax, which no longer overlaps them (flash_tma.cu on the H200,
// 2026-12-03: all 96 exponentials of a 192-key tile sat after the wait for P V). A shared store
// of `value` ahead of the wait, predicated on `value` being -1, keeps the wait below: callers pass
// a sum of exponentials, which is never -1 (NaN compares unequal too), so the store never runs.
// `scratch` is the shared word it would write.
template <int Pending>
__device__ __forceinline__ void wgmma_wait_after(float value, std::uint32_t scratch) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.eq.f32 p, %0, 0fBF800000;\n@p st.shared.f32 [%1], %0;\n}\n"
      "wgmma.wait_group.sync.aligned %2;\n" ::"f"(value),
      "r"(scratch), "n"(Pending)
      : "memory");
}
// Orders this thread's generic-proxy shared-memory writes (cp.async included) before later
// async-proxy reads (wgmma operands); a barrier after it publishes them to the warpgroup.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The accumulator operands of the wrappers below, 32 at a time: the asm names %BASE..%BASE+31
// and the matching "+f" constraints on d[BASE..BASE+31].
#define MEMPLAN_WGMMA_NAMES_0                                                                  \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define MEMPLAN_WGMMA_NAMES_32                                                                 \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, " \
  "%50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define MEMPLAN_WGMMA_NAMES_64                                                                 \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, " \
  "%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define MEMPLAN_WGMMA_ACC8(d, i)                                                              \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define MEMPLAN_WGMMA_ACC32(d, i)                                                        \
  MEMPLAN_WGMMA_ACC8(d, i), MEMPLAN_WGMMA_ACC8(d, i + 8), MEMPLAN_WGMMA_ACC8(d, i + 16), \
      MEMPLAN_WGMMA_ACC8(d, i + 24)

// d (+)= A(shared, K-major) * B(shared, K-major) for m64n64k16; `accumulate` 0 overwrites d.
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], std::uint64_t desc_a,
                                                   std::uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{" MEMPLAN_WGMMA_NAMES_0 "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : MEMPLAN_WGMMA_ACC32(d, 0)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// d (+)= A(shared, K-major) * B(shared, K-major) for m64n128k16; `accumulate` 0 overwrites d.
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], std::uint64_t desc_a,
                                                    std::uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{" MEMPLAN_WGMMA_NAMES_0 ", " MEMPLAN_WGMMA_NAMES_32 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : MEMPLAN_WGMMA_ACC32(d, 0), MEMPLAN_WGMMA_ACC32(d, 32)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// d (+)= A(shared, K-major) * B(shared, K-major) for m64n192k16; `accumulate` 0 overwrites d.
__device__ __forceinline__ void wgmma_m64n192k16_ss(float (&d)[96], std::uint64_t desc_a,
                                                    std::uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 "
      "{" MEMPLAN_WGMMA_NAMES_0 ", " MEMPLAN_WGMMA_NAMES_32 ", " MEMPLAN_WGMMA_NAMES_64
      "}, %96, %97, p, 1, 1, 0, 0;\n}\n"
      : MEMPLAN_WGMMA_ACC32(d, 0), MEMPLAN_WGMMA_ACC32(d, 32), MEMPLAN_WGMMA_ACC32(d, 64)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// d (+)= A(registers) * B(shared, K-major) for m64n64k16 and m64n128k16; `accumulate` 0
// overwrites d. A is the m16n8k16 A fragment of the warp's 16 rows (as mma.sync's).
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const std::uint32_t (&a)[4],
                                                   std::uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{" MEMPLAN_WGMMA_NAMES_0 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
      : MEMPLAN_WGMMA_ACC32(d, 0)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], const std::uint32_t (&a)[4],
                                                    std::uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{" MEMPLAN_WGMMA_NAMES_0 ", " MEMPLAN_WGMMA_NAMES_32
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
      : MEMPLAN_WGMMA_ACC32(d, 0), MEMPLAN_WGMMA_ACC32(d, 32)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}

// d += A(registers) * B(shared, N-major: the transposed operand) for m64n128k16.
__device__ __forceinline__ void wgmma_m64n128k16_rs_tb(float (&d)[64], const std::uint32_t (&a)[4],
                                                       std::uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{" MEMPLAN_WGMMA_NAMES_0 ", " MEMPLAN_WGMMA_NAMES_32
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : MEMPLAN_WGMMA_ACC32(d, 0), MEMPLAN_WGMMA_ACC32(d, 32)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b));
}

#undef MEMPLAN_WGMMA_ACC32
#undef MEMPLAN_WGMMA_ACC8
#undef MEMPLAN_WGMMA_NAMES_64
#undef MEMPLAN_WGMMA_NAMES_32
#undef MEMPLAN_WGMMA_NAMES_0

}  // namespace memplan::attention::detail
