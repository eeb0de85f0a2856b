// The device side of first_visit_test.cpp: one warp per query runs first_visit (kernels/).
#include <cuda_runtime.h>

#include "first_visit.cuh"
#include "first_visit_probe.hpp"
#include "memplan/cuda_check.hpp"

namespace memplan::attention::test {
namespace {

__global__ void first_visit_kernel(const int* lists, const FirstVisitQuery* queries, int n,
                                   int* answers) {
  const int query = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (query >= n) return;  // whole warps leave together
  const FirstVisitQuery q = queries[query];
  const int* list = lists + q.offset;
  const int answer = detail::first_visit([&](int i) { return list[i]; }, q.count, q.start_block,
                                         static_cast<int>(threadIdx.x % 32));
  if (threadIdx.x % 32 == 0) answers[query] = answer;
}

}  // namespace

void run_first_visit(const int* lists, const FirstVisitQuery* queries, int n, int* answers) {
  first_visit_kernel<<<(n + 3) / 4, 128>>>(lists, queries, n, answers);
  check_launch("first_visit_kernel");
}

}  // namespace memplan::attention::test
