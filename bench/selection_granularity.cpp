// Selection granularity, on the host (no GPU): how two neighbouring 64-row query blocks (2i,
// 2i+1 of one head, the two consumer groups of one `tma` CTA) could share one K/V ring, and what
// each way costs in accuracy. docs/attention.md, next steps 1, has the question and the numbers.
//   (a) union: each 64-row block keeps its own list (the library's host selection, as the GPU
//       selects); the CTA loads A u B once and each group computes only its own blocks. Same
//       output as today, bytes loaded |A u B| instead of |A| + |B|.
//   (b) shared list: one selection per 128-row pair. The pair's pooled query is the row-weighted
//       mean of its two 64-row pooled queries, scored against every pooled key block and
//       selected once under the same rule and percentages; the forced blocks are the union of
//       both halves' (diagonal band of each, sink keys); both halves get that list. Bytes per
//       FLOP as dense, the selection coarser.
// Inputs: Q, K, V of [1, N, heads, 128] as bench/attention_bench.cu makes them (random, smooth),
// rounded to bf16, for N in the arguments. Policies: top-k 10 % and tau 1.5 (max_keep_percent
// 30, as attention_bench), no sink keys or sink query rows.
// Accuracy: every row of `--pairs` query-block pairs per head (spread evenly over the sequence)
// attends in double precision over its list's keys only (softmax over kept keys, scale
// 1/sqrt(128)) and over every key (dense); the error is rel-L2 over all those rows together.
//
// Usage: selection_granularity [--heads=H] [--pairs=P] [tokens...]
//   defaults: --heads=2 --pairs=16 8192 16384 (2 x 16 x 128 = 4,096 rows a case)
// Columns, one line per (input, N, policy):
//   dens64     kept blocks of the 64-row lists over rows x blocks (what the GPU runs today)
//   u/(A+B)    (a): mean over pairs of |A u B| / (|A| + |B|); the union's bytes over today's
//              (1 - it is the share of L2->SM bytes saved; 0.5 would be full overlap)
//   forced     share of the 64-row lists' blocks that are forced (diagonal band)
//   rule u/(A+B)  the same ratio over the rule-chosen blocks alone (sum over pairs of
//              |A' u B'| / (|A'| + |B'|), A' = A less the pair's forced blocks): the overlap
//              selection itself gives, without the diagonal band's
//   dens128    kept blocks of (b)'s lists over rows x blocks (comparable density?)
//   b/union    (b)'s kept blocks over (a)'s union, summed over pairs: bytes of (b) over (a)
//   err64      rel-L2 of the 64-row lists (today's, and (a)'s) against dense
//   err128     rel-L2 of (b)'s shared lists against dense
//   dens128=, err128=  (b) with its knob (keep_percent, tau) lowered to the most blocks not over
//              the 64-row lists' count: the two selections compared at the same density (on
//              short sequences, where (b)'s forced blocks alone are more, the fewest it keeps)
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/attention/host_selection.hpp"
#include "memplan/attention/modes.hpp"
#include "memplan/attention/policy.hpp"
#include "memplan/attention/shape.hpp"
#include "memplan/attention/workspace.hpp"
#include "video_like_inputs.hpp"

namespace {

using namespace memplan::attention;

// --- Inputs: bench/video_like_inputs.hpp's, as attention_bench.cu fills them on the device.

// Round to nearest even bf16, as __float2bfloat16 (the GPU bench's tensors are bf16).
float to_bf16(float x) {
  const auto bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
  return std::bit_cast<float>(rounded);
}

std::vector<float> fill(const AttentionShape& shape, std::uint64_t seed, bool smooth) {
  const auto n = static_cast<std::uint64_t>(shape.elements());
  const auto channels = static_cast<std::uint64_t>(shape.heads) * shape.head_dim;
  std::vector<float> x(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    x[i] = to_bf16(memplan::bench::video_like_value(i, channels, seed, smooth));
  }
  return x;
}

struct Inputs {
  AttentionShape shape;
  std::vector<float> q, k, v;
};

// --- Block lists: one per 64-row query block, rows [head * blocks + q_block] as the workspace.

using Lists = std::vector<std::vector<int>>;

Lists select_64(const AttentionShape& shape, const AttentionPolicy& policy,
                std::span<const double> scores) {
  const int n = shape.blocks();
  Lists lists(static_cast<std::size_t>(shape.rows()));
  for (std::size_t row = 0; row < lists.size(); ++row) {
    lists[row] = select_row(policy, static_cast<int>(row % n), scores.subspan(row * n, n));
  }
  return lists;
}

// (b): per head and pair (2i, 2i+1), the row-weighted mean of the two pooled queries scored
// against every pooled key block (scale 1/sqrt(d), as block_scores), one list for both halves.
// An odd last block is a pair of one.
Lists select_128(const AttentionShape& shape, const AttentionPolicy& policy,
                 std::span<const double> pooled_q, std::span<const double> pooled_k) {
  const int n = shape.blocks();
  const auto dim = static_cast<std::size_t>(shape.head_dim);
  const double scale = 1.0 / std::sqrt(static_cast<double>(dim));
  const auto rows_in = [&](int block) {
    return static_cast<double>(
        std::min<std::int64_t>(kBlockTokens, shape.tokens - std::int64_t{block} * kBlockTokens));
  };
  Lists lists(static_cast<std::size_t>(shape.rows()));
  std::vector<double> mean(dim);
  std::vector<double> scores(static_cast<std::size_t>(n));
  for (int h = 0; h < shape.heads; ++h) {
    const std::size_t head0 = static_cast<std::size_t>(h) * n;
    for (int first = 0; first < n; first += 2) {
      const int last = std::min(first + 1, n - 1);
      const double w0 = rows_in(first);
      const double w1 = last == first ? 0.0 : rows_in(last);
      for (std::size_t d = 0; d < dim; ++d) {
        mean[d] =
            (w0 * pooled_q[(head0 + first) * dim + d] + w1 * pooled_q[(head0 + last) * dim + d]) /
            (w0 + w1);
      }
      for (int j = 0; j < n; ++j) {
        double s = 0.0;
        for (std::size_t d = 0; d < dim; ++d) s += mean[d] * pooled_k[(head0 + j) * dim + d];
        scores[static_cast<std::size_t>(j)] = s * scale;
      }
      // The library's rule for a list shared by the pair (query_blocks_per_list 2).
      std::vector<int> list = select_list(policy, BlockRange{first, last + 1}, scores);
      lists[head0 + last] = list;
      lists[head0 + first] = std::move(list);
    }
  }
  return lists;
}

std::size_t kept_blocks(const Lists& lists) {
  std::size_t kept = 0;
  for (const std::vector<int>& list : lists) kept += list.size();
  return kept;
}

// (b) at the 64-row lists' density: the policy's knob (keep_percent for top-k, tau for the
// threshold) bisected to the most blocks that are not more than `target`. (b) forces 4 blocks a
// pair where a 64-row list forces 3, and the pair's averaged score row is flatter, so at the same
// knob (b) keeps a little more.
Lists select_128_at(const AttentionShape& shape, AttentionPolicy policy, std::size_t target,
                    std::span<const double> pooled_q, std::span<const double> pooled_k) {
  const bool topk = traits(policy.mode).rule == SelectionRule::TopK;
  float& knob = topk ? policy.keep_percent : policy.tau;
  Lists lists = select_128(shape, policy, pooled_q, pooled_k);
  if (kept_blocks(lists) <= target) return lists;
  // More blocks at `loose` (the policy's own knob) than target; the fewest the rule can keep at
  // `tight` (one block by score, or a cut above every score).
  float loose = knob;
  float tight = topk ? 0.0f : knob + 10.0f;
  std::optional<Lists> met;  // the last lists within target
  for (int step = 0; step < 40; ++step) {
    knob = 0.5f * (loose + tight);
    lists = select_128(shape, policy, pooled_q, pooled_k);
    if (kept_blocks(lists) <= target) {
      tight = knob;
      met = std::move(lists);
    } else {
      loose = knob;
    }
  }
  if (met) return std::move(*met);
  // (b)'s forced blocks alone exceed target (short sequences): the fewest it keeps.
  knob = tight;
  return select_128(shape, policy, pooled_q, pooled_k);
}

// --- What the lists cost: density, the union's bytes, forced blocks, (b) against (a).

struct ListStats {
  double density64 = 0.0;
  double union_ratio = 0.0;       // mean over pairs of |A u B| / (|A| + |B|)
  double forced_share = 0.0;      // forced blocks of the 64-row lists over their blocks
  double rule_union_ratio = 0.0;  // the union ratio of the rule-chosen blocks, summed over pairs
  double density128 = 0.0;
  double shared_over_union = 0.0;  // sum |(b)'s list| / sum |A u B| over pairs
};

std::size_t union_size(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> u;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(u));
  return u.size();
}

ListStats list_stats(const AttentionShape& shape, const AttentionPolicy& policy, const Lists& l64,
                     const Lists& l128) {
  const int n = shape.blocks();
  double kept64 = 0, kept128 = 0, forced = 0;
  for (std::size_t row = 0; row < l64.size(); ++row) {
    kept64 += static_cast<double>(l64[row].size());
    kept128 += static_cast<double>(l128[row].size());
    for (const int key : l64[row]) forced += forced_block(policy, static_cast<int>(row % n), key);
  }
  double ratio_sum = 0, pairs = 0, rule_union = 0, rule_sum = 0, union_total = 0, shared = 0;
  for (int h = 0; h < shape.heads; ++h) {
    for (int first = 0; first + 1 < n; first += 2) {  // an odd last block has no partner
      const std::size_t row = static_cast<std::size_t>(h) * n + first;
      const std::vector<int>& a = l64[row];
      const std::vector<int>& b = l64[row + 1];
      const auto u = static_cast<double>(union_size(a, b));
      ratio_sum += u / static_cast<double>(a.size() + b.size());
      pairs += 1;
      union_total += u;
      shared += static_cast<double>(l128[row].size());
      const auto rule_only = [&](const std::vector<int>& list) {
        std::vector<int> out;
        for (const int key : list) {
          if (!forced_block(policy, BlockRange{first, first + 2}, key)) out.push_back(key);
        }
        return out;
      };
      const std::vector<int> ra = rule_only(a);
      const std::vector<int> rb = rule_only(b);
      rule_union += static_cast<double>(union_size(ra, rb));
      rule_sum += static_cast<double>(ra.size() + rb.size());
    }
  }
  const double cells = static_cast<double>(l64.size()) * n;
  return {kept64 / cells,        ratio_sum / pairs, forced / kept64,
          rule_union / rule_sum, kept128 / cells,   shared / union_total};
}

// --- Accuracy: sampled rows attended exactly, over a list's keys and over every key.

// Squared error and squared reference summed over the sampled rows, for one set of lists.
struct ErrorSum {
  double err = 0.0;
  double ref = 0.0;
  [[nodiscard]] double rel_l2() const { return std::sqrt(err / ref); }
};

double dot4(const float* a, const float* b, int dim) {
  // Four partial sums: the dependency chain of one sum would bound the loop.
  double s[4] = {0, 0, 0, 0};
  for (int d = 0; d < dim; d += 4) {
    for (int i = 0; i < 4; ++i) s[i] += static_cast<double>(a[d + i]) * b[d + i];
  }
  return (s[0] + s[1]) + (s[2] + s[3]);
}

// softmax(scores over `keys`) V of one head, into `out` (head_dim values).
template <typename Keys>
void attend(const Inputs& in, int h, std::span<const double> scores, const Keys& keys,
            std::vector<double>& out) {
  const AttentionShape& s = in.shape;
  double top = -INFINITY;
  keys([&](std::int64_t t) { top = std::max(top, scores[t]); });
  std::fill(out.begin(), out.end(), 0.0);
  double sum = 0.0;
  keys([&](std::int64_t t) {
    const double w = std::exp(scores[t] - top);
    sum += w;
    const float* v = &in.v[static_cast<std::size_t>((t * s.heads + h) * s.head_dim)];
    for (int d = 0; d < s.head_dim; ++d) out[d] += w * v[d];
  });
  for (double& o : out) o /= sum;
}

// rel-L2 against dense for every set of lists in `variants`, over every row of `pairs` query
// block pairs per head spread over the sequence.
std::vector<ErrorSum> errors(const Inputs& in, const std::vector<const Lists*>& variants,
                             int pairs) {
  const AttentionShape& s = in.shape;
  const int n = s.blocks();
  const int total_pairs = (n + 1) / 2;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  std::vector<ErrorSum> sums(variants.size());
  std::vector<double> scores(static_cast<std::size_t>(s.tokens));
  std::vector<double> dense(static_cast<std::size_t>(s.head_dim));
  std::vector<double> sparse(dense.size());
  for (int h = 0; h < s.heads; ++h) {
    for (int p = 0; p < std::min(pairs, total_pairs); ++p) {
      const int pair = static_cast<int>((2 * std::int64_t{p} + 1) * total_pairs / (2 * pairs));
      const std::int64_t t0 = std::int64_t{pair} * 2 * kBlockTokens;
      const std::int64_t t1 = std::min(s.tokens, t0 + 2 * kBlockTokens);
      for (std::int64_t t = t0; t < t1; ++t) {
        const float* q = &in.q[static_cast<std::size_t>((t * s.heads + h) * s.head_dim)];
        for (std::int64_t key = 0; key < s.tokens; ++key) {
          const float* k = &in.k[static_cast<std::size_t>((key * s.heads + h) * s.head_dim)];
          scores[static_cast<std::size_t>(key)] = dot4(q, k, s.head_dim) * scale;
        }
        attend(
            in, h, scores,
            [&](auto&& f) {
              for (std::int64_t key = 0; key < s.tokens; ++key) f(key);
            },
            dense);
        const std::size_t row = static_cast<std::size_t>(h) * n + t / kBlockTokens;
        for (std::size_t i = 0; i < variants.size(); ++i) {
          attend(
              in, h, scores,
              [&](auto&& f) {
                for (const int block : (*variants[i])[row]) {
                  const std::int64_t k0 = std::int64_t{block} * kBlockTokens;
                  for (std::int64_t key = k0; key < std::min(s.tokens, k0 + kBlockTokens); ++key) {
                    f(key);
                  }
                }
              },
              sparse);
          for (std::size_t d = 0; d < dense.size(); ++d) {
            sums[i].err += (sparse[d] - dense[d]) * (sparse[d] - dense[d]);
            sums[i].ref += dense[d] * dense[d];
          }
        }
      }
    }
  }
  return sums;
}

// --- The run.

struct Options {
  int heads = 2;
  int pairs = 16;
  std::vector<std::int64_t> tokens;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--heads=")) {
      o.heads = std::atoi(argv[i] + 8);
    } else if (arg.starts_with("--pairs=")) {
      o.pairs = std::atoi(argv[i] + 8);
    } else {
      o.tokens.push_back(std::atoll(argv[i]));
    }
  }
  if (o.tokens.empty()) o.tokens = {8192, 16384};
  if (o.heads < 1 || o.pairs < 1 ||
      std::any_of(o.tokens.begin(), o.tokens.end(), [](std::int64_t t) { return t < 128; })) {
    fmt::print(stderr,
               "usage: selection_granularity [--heads=H] [--pairs=P] [tokens...] "
               "(H, P >= 1; tokens >= 128)\n");
    std::exit(2);
  }
  return o;
}

struct NamedPolicy {
  const char* name;
  AttentionPolicy policy;
};

std::vector<NamedPolicy> policies() {
  AttentionPolicy topk;
  topk.mode = SparsityMode::TopK;
  topk.keep_percent = 10.0f;
  topk.max_keep_percent = 30.0f;
  AttentionPolicy tau;
  tau.mode = SparsityMode::Tau;
  tau.tau = 1.5f;
  tau.max_keep_percent = 30.0f;  // attention_bench's cap for tau
  return {{"topk10", topk}, {"tau1.5", tau}};
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  const auto start = std::chrono::steady_clock::now();
  fmt::print(
      "selection granularity: batch 1, {} heads, head_dim 128; rel-L2 over {} query pairs "
      "(128 rows each) per head\n",
      options.heads, options.pairs);
  fmt::print("{:<7} {:>6} {:<7} {:>7} {:>8} {:>7} {:>13} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9}\n",
             "input", "N", "policy", "dens64", "u/(A+B)", "forced", "rule u/(A+B)", "dens128",
             "b/union", "err64", "err128", "dens128=", "err128=");
  for (const std::int64_t tokens : options.tokens) {
    for (const bool smooth : {false, true}) {
      Inputs in{AttentionShape{1, tokens, options.heads, 128}, {}, {}, {}};
      validate(in.shape);
      const auto seed = static_cast<std::uint64_t>(tokens * 3 + (smooth ? 1 : 0));
      in.q = fill(in.shape, seed, smooth);
      in.k = fill(in.shape, seed + 1, smooth);
      in.v = fill(in.shape, seed + 2, smooth);
      const std::vector<double> pooled_q = pool_blocks(in.shape, in.q);
      const std::vector<double> pooled_k = pool_blocks(in.shape, in.k);
      const std::vector<double> scores = block_scores(in.shape, pooled_q, pooled_k);

      const std::vector<NamedPolicy> named = policies();
      // Per policy: the 64-row lists, (b)'s at the same knob, (b)'s at the 64-row density.
      std::vector<Lists> lists;
      for (const NamedPolicy& p : named) {
        lists.push_back(select_64(in.shape, p.policy, scores));
        const std::size_t kept64 = kept_blocks(lists.back());
        lists.push_back(select_128(in.shape, p.policy, pooled_q, pooled_k));
        lists.push_back(select_128_at(in.shape, p.policy, kept64, pooled_q, pooled_k));
      }
      std::vector<const Lists*> variants;
      for (const Lists& l : lists) variants.push_back(&l);
      const std::vector<ErrorSum> errs = errors(in, variants, options.pairs);

      for (std::size_t i = 0; i < named.size(); ++i) {
        const std::size_t v = 3 * i;
        const ListStats st = list_stats(in.shape, named[i].policy, lists[v], lists[v + 1]);
        const double matched = static_cast<double>(kept_blocks(lists[v + 2])) /
                               static_cast<double>(in.shape.rows() * in.shape.blocks());
        fmt::print(
            "{:<7} {:>6} {:<7} {:>6.2f}% {:>8.3f} {:>6.1f}% {:>13.3f} {:>7.2f}% {:>8.3f} {:>9.2e} "
            "{:>9.2e} {:>8.2f}% {:>9.2e}\n",
            smooth ? "smooth" : "random", tokens, named[i].name, 100 * st.density64, st.union_ratio,
            100 * st.forced_share, st.rule_union_ratio, 100 * st.density128, st.shared_over_union,
            errs[v].rel_l2(), errs[v + 1].rel_l2(), 100 * matched, errs[v + 2].rel_l2());
      }
    }
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  fmt::print("took {:.1f} s\n", took.count());
  return 0;
}
