// Where a rotated block list starts (BlockList::rotate_visits): the index of the first listed
// block at or past a start block, 0 if there is none, so visit i is entry (first + i) % count.
// Lists are sorted ascending. A warp finds it: each round its 32 lanes probe evenly spaced
// entries of the range left and a ballot counts those below the start, which shrinks the range
// 32-fold: two dependent loads for lists of up to 1,024 blocks, three up to 32,768, where one
// thread's binary search takes ten to fifteen. It runs while the CTA's Q loads.
#pragma once

namespace memplan::attention::detail {

// All 32 lanes of the warp call it with the same arguments; each gets the answer. `key_block(i)`
// is list entry i.
template <typename KeyBlock>
__device__ __forceinline__ int first_visit(KeyBlock key_block, int count, int start_block,
                                           int lane) {
  int lo = 0;
  int hi = count;  // the answer is in [lo, hi]
  while (lo < hi) {
    const int step = (hi - lo + 31) / 32;
    const int i = lo + lane * step;
    const bool below = i < hi && key_block(i) < start_block;
    const int n = __popc(__ballot_sync(0xffffffffu, below));  // probes below: lanes 0 .. n - 1
    if (n == 0) break;                                        // entry lo is at or past the start
    const int next_hi = lo + n * step < hi ? lo + n * step : hi;
    lo += (n - 1) * step + 1;
    hi = next_hi;
  }
  return lo < count ? lo : 0;
}

// The list entry of visit `visit` (< count) of a list rotated to start at entry `first`.
__device__ __forceinline__ int rotated_entry(int visit, int first, int count) {
  const int entry = visit + first;
  return entry < count ? entry : entry - count;
}

}  // namespace memplan::attention::detail
