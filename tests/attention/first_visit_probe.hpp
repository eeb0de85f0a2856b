// Runs kernels/first_visit.cuh on the GPU for the rotated-visit tests: one warp per query.
#pragma once

namespace memplan::attention::test {

struct FirstVisitQuery {
  int offset;  // of the list in the lists array
  int count;
  int start_block;
};

// Device pointers; answers[i] = first_visit of query i.
void run_first_visit(const int* lists, const FirstVisitQuery* queries, int n, int* answers);

}  // namespace memplan::attention::test
