// The choice of resident blocks and prefetch depth: a scan from the most resident blocks down,
// the first that fits at depth 1 wins; then the depth grows while the prediction still fits.
#include "memplan/stream/streaming_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "memplan/error.hpp"
#include "memplan/types.hpp"

namespace memplan::stream {
namespace {

StreamingPlan evaluate(const StreamingInputs& in, std::size_t resident, std::size_t depth) {
  StreamingPlan p;
  p.blocks = in.block_bytes.size();
  p.resident_blocks = resident;
  p.budget_bytes = in.budget_bytes;
  const auto first_streamed = in.block_bytes.begin() + static_cast<std::ptrdiff_t>(resident);
  const std::size_t streamed_count = p.blocks - resident;
  p.depth = streamed_count == 0 ? 0 : depth;
  p.resident_bytes = align_up(
      std::accumulate(in.block_bytes.begin(), first_streamed, std::size_t{0}), in.pool_chunk_bytes);
  p.streamed_bytes = std::accumulate(first_streamed, in.block_bytes.end(), std::size_t{0});
  // depth + 1 slots at once, at most: the largest streamed blocks bound them.
  std::vector<std::size_t> largest(first_streamed, in.block_bytes.end());
  std::sort(largest.begin(), largest.end(), std::greater<>());
  largest.resize(std::min(largest.size(), p.depth + 1));
  p.slot_bytes = std::accumulate(largest.begin(), largest.end(), std::size_t{0});
  p.predicted_peak_bytes = in.fixed_bytes + p.resident_bytes +
                           align_up(in.activation_peak_bytes + p.slot_bytes, in.arena_chunk_bytes);
  return p;
}

bool fits(const StreamingPlan& p) { return p.predicted_peak_bytes <= p.budget_bytes; }

}  // namespace

StreamingPlan all_resident(const std::vector<std::size_t>& block_bytes) {
  StreamingInputs in;
  in.block_bytes = block_bytes;
  return evaluate(in, block_bytes.size(), 0);
}

StreamingPlan choose_streaming(const StreamingInputs& in) {
  const std::size_t n = in.block_bytes.size();
  if (n == 0) throw InvalidArgument("weight streaming: no blocks");
  if (std::find(in.block_bytes.begin(), in.block_bytes.end(), 0) != in.block_bytes.end()) {
    throw InvalidArgument("weight streaming: a block of 0 bytes");
  }
  if (in.max_depth == 0 || in.arena_chunk_bytes == 0 || in.pool_chunk_bytes == 0) {
    throw InvalidArgument(fmt::format(
        "weight streaming: max depth {}, arena chunk {} B, pool chunk {} B (each must be >= 1)",
        in.max_depth, in.arena_chunk_bytes, in.pool_chunk_bytes));
  }
  StreamingPlan all = evaluate(in, n, 0);
  if (in.budget_bytes == 0) return all;
  if (fits(all)) return all;
  for (std::size_t resident = n; resident-- > 0;) {
    StreamingPlan p = evaluate(in, resident, 1);
    if (!fits(p)) continue;
    while (p.depth < in.max_depth && p.depth + 1 < n - resident) {
      const StreamingPlan deeper = evaluate(in, resident, p.depth + 1);
      if (!fits(deeper)) break;
      p = deeper;
    }
    return p;
  }
  const StreamingPlan least = evaluate(in, 0, 1);
  throw OutOfMemory(fmt::format(
      "weight streaming: a budget of {} ({} B) cannot hold the step even with every block "
      "streamed: fixed {} B + activation peak {} B + {} staging slots of {} B in all = {} B "
      "(arena chunk {} B)",
      human_bytes(static_cast<Bytes>(in.budget_bytes)), in.budget_bytes, in.fixed_bytes,
      in.activation_peak_bytes, std::min<std::size_t>(2, n), least.slot_bytes,
      least.predicted_peak_bytes, in.arena_chunk_bytes));
}

}  // namespace memplan::stream
