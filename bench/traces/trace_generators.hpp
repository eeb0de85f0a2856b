// Generators of large, realistic planner traces, for the benchmarks and the tests: the shapes of
// the public trace families (SOMAS training steps, IOPDDL compute graphs) at any size up to
// hundreds of thousands of buffers, which the shipped suites do not reach.
//
// * training: a transformer training step (MindSpore SOMAS traces): weights and optimizer state
//   alive the whole step, forward activations saved until their layer's backward (nested
//   lifetimes, the longest for the first layer), short-lived temporaries, weight gradients alive
//   from their backward op to the optimizer at the end.
// * inference: a transformer serving prefill and decode steps: weights alive throughout, each
//   layer's KV cache alive from its prefill to the end, activations alive for an op or two.
// * graph: a compute graph in topological order (IOPDDL contest problems): every node's output
//   lives until its last consumer, most consumers near, some skip connections far, sizes of the
//   contest's 2^k + 1 form (odd, alignment 1).
// * random: the benchmarks' synthetic problem, no model behind it: starts uniform over 2n
//   steps, lifetimes geometric (mean 24) with 2 % long-lived ones (up to n/4 steps), sizes
//   log-uniform from 64 B to 64 MiB in 256-byte multiples.
//
// Each generator is deterministic for a seed and gives about `buffers` buffers (whole layers or
// nodes; within a layer of the target). Times are op indices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "memplan/plan/problem.hpp"

namespace memplan::plan::traces {

enum class TraceFamily { Training, Inference, Graph, Random };

[[nodiscard]] Problem training_trace(std::size_t buffers, std::uint64_t seed);
[[nodiscard]] Problem inference_trace(std::size_t buffers, std::uint64_t seed);
[[nodiscard]] Problem graph_trace(std::size_t buffers, std::uint64_t seed);
[[nodiscard]] Problem random_trace(std::size_t buffers, std::uint64_t seed);

[[nodiscard]] Problem generate(TraceFamily family, std::size_t buffers, std::uint64_t seed);
[[nodiscard]] std::string_view to_string(TraceFamily family) noexcept;
// "training", "inference", "graph" or "random"; anything else: memplan::InvalidArgument.
[[nodiscard]] TraceFamily trace_family_from(std::string_view name);

}  // namespace memplan::plan::traces
