// Double-precision references; see reference.hpp.
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "device_buffer.hpp"
#include "memplan/attention/workspace.hpp"

namespace memplan::attention::test {

namespace {

std::size_t at(const AttentionShape& s, int b, std::int64_t t, int h, int d) {
  return static_cast<std::size_t>(((b * s.tokens + t) * s.heads + h) * s.head_dim + d);
}

}  // namespace

Tensor random_tensor(const AttentionShape& shape, std::mt19937& rng, float structure) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int n = shape.blocks();
  std::vector<float> pattern(static_cast<std::size_t>(shape.rows()) * shape.head_dim);
  for (float& x : pattern) x = structure * normal(rng);
  Tensor t;
  t.values.resize(static_cast<std::size_t>(shape.elements()));
  t.bits.resize(t.values.size());
  for (int b = 0; b < shape.batch; ++b) {
    for (std::int64_t tok = 0; tok < shape.tokens; ++tok) {
      const auto block = static_cast<int>(tok / kBlockTokens);
      for (int h = 0; h < shape.heads; ++h) {
        const std::size_t prow = static_cast<std::size_t>((b * shape.heads + h) * n + block);
        for (int d = 0; d < shape.head_dim; ++d) {
          const std::size_t i = at(shape, b, tok, h, d);
          t.bits[i] = to_bf16(normal(rng) + pattern[prow * shape.head_dim + d]);
          t.values[i] = from_bf16(t.bits[i]);
        }
      }
    }
  }
  return t;
}

std::vector<float> reference_attention(const AttentionShape& shape, const Tensor& q,
                                       const Tensor& k, const Tensor& v, const HostBlockList& list,
                                       const std::vector<float>* coarse, float gate) {
  const int n = shape.blocks();
  const int dim = shape.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dim));
  std::vector<float> out(static_cast<std::size_t>(shape.elements()));
  std::vector<double> p(static_cast<std::size_t>(shape.tokens));
  std::vector<char> key_on(static_cast<std::size_t>(shape.tokens));
  std::vector<double> acc(static_cast<std::size_t>(dim));
  for (int b = 0; b < shape.batch; ++b) {
    for (int h = 0; h < shape.heads; ++h) {
      for (int qb = 0; qb < n; ++qb) {
        const std::size_t row = static_cast<std::size_t>((b * shape.heads + h) * n + qb);
        // The block list as a token mask for this query block.
        const bool dense = list.count.empty() || list.count[row] >= n;
        std::fill(key_on.begin(), key_on.end(), dense ? 1 : 0);
        if (!dense) {
          for (int i = 0; i < list.count[row]; ++i) {
            const int kb = list.idx[row * list.max_k + i];
            for (std::int64_t t = kb * 64LL;
                 t < std::min<std::int64_t>(shape.tokens, kb * 64LL + 64); ++t) {
              key_on[static_cast<std::size_t>(t)] = 1;
            }
          }
        }
        for (std::int64_t tq = qb * 64LL; tq < std::min<std::int64_t>(shape.tokens, qb * 64LL + 64);
             ++tq) {
          double mx = -std::numeric_limits<double>::infinity();
          for (std::int64_t tk = 0; tk < shape.tokens; ++tk) {
            if (key_on[static_cast<std::size_t>(tk)] == 0) continue;
            double s = 0.0;
            for (int d = 0; d < dim; ++d) {
              s += static_cast<double>(q.values[at(shape, b, tq, h, d)]) *
                   k.values[at(shape, b, tk, h, d)];
            }
            p[static_cast<std::size_t>(tk)] = s * scale;
            mx = std::max(mx, s * scale);
          }
          double sum = 0.0;
          std::fill(acc.begin(), acc.end(), 0.0);
          for (std::int64_t tk = 0; tk < shape.tokens; ++tk) {
            if (key_on[static_cast<std::size_t>(tk)] == 0) continue;
            const double e = std::exp(p[static_cast<std::size_t>(tk)] - mx);
            sum += e;
            for (int d = 0; d < dim; ++d) acc[d] += e * v.values[at(shape, b, tk, h, d)];
          }
          for (int d = 0; d < dim; ++d) {
            double value = sum > 0.0 ? acc[d] / sum : 0.0;
            if (coarse != nullptr) value += gate * (*coarse)[row * dim + d];
            out[at(shape, b, tq, h, d)] = static_cast<float>(value);
          }
        }
      }
    }
  }
  return out;
}

std::vector<double> reference_coarse(const AttentionShape& shape, const std::vector<double>& scores,
                                     const std::vector<double>& vbar) {
  const int n = shape.blocks();
  const int dim = shape.head_dim;
  std::vector<double> out(static_cast<std::size_t>(shape.rows()) * dim, 0.0);
  for (std::int64_t row = 0; row < shape.rows(); ++row) {
    const std::int64_t head0 = row / n * n;
    const double* s = &scores[static_cast<std::size_t>(row * n)];
    const double mx = *std::max_element(s, s + n);
    double sum = 0.0;
    for (int j = 0; j < n; ++j) sum += std::exp(s[j] - mx);
    for (int j = 0; j < n; ++j) {
      const double w = std::exp(s[j] - mx) / sum;
      for (int d = 0; d < dim; ++d) out[row * dim + d] += w * vbar[(head0 + j) * dim + d];
    }
  }
  return out;
}

std::string check_selection_row(const AttentionPolicy& policy, BlockRange queries, int blocks,
                                const double* scores, const int* idx, int count, int max_k) {
  std::ostringstream why;
  const int top_k = rule_blocks(policy, blocks);
  bool sink_query = false;
  for (int q = queries.begin; q < queries.end; ++q) sink_query |= policy.sink_queries.contains(q);
  if (sink_query) {
    if (count != blocks) why << "sink query row has count " << count << ", want " << blocks;
    for (int i = 0; i < std::min(max_k, blocks) && why.str().empty(); ++i) {
      if (idx[i] != i) why << "sink query row entry " << i << " is " << idx[i];
    }
    return why.str();
  }
  if (count < 1 || count > max_k) {
    why << "count " << count << " outside [1, " << max_k << "]";
    return why.str();
  }
  std::vector<char> in(static_cast<std::size_t>(blocks), 0);
  for (int i = 0; i < count; ++i) {
    if (idx[i] < 0 || idx[i] >= blocks || (i > 0 && idx[i] <= idx[i - 1])) {
      why << "entry " << i << " = " << idx[i] << " not ascending in [0, " << blocks << ")";
      return why.str();
    }
    in[static_cast<std::size_t>(idx[i])] = 1;
  }
  auto forced = [&](int j) { return forced_block(policy, queries, j); };
  const RowStats st = row_stats({scores, static_cast<std::size_t>(blocks)});
  const double tol = 1e-3 * st.std + 1e-9;
  int kept = 0;
  int candidates = 0;
  double min_kept = std::numeric_limits<double>::infinity();
  double max_dropped = -std::numeric_limits<double>::infinity();
  for (int j = 0; j < blocks; ++j) {
    if (forced(j)) {
      if (in[static_cast<std::size_t>(j)] == 0) why << "forced block " << j << " missing; ";
      continue;
    }
    ++candidates;
    if (in[static_cast<std::size_t>(j)] != 0) {
      ++kept;
      min_kept = std::min(min_kept, scores[j]);
    } else {
      max_dropped = std::max(max_dropped, scores[j]);
    }
  }
  const bool ranked_ok = min_kept >= max_dropped - tol;
  if (traits(policy.mode).rule != SelectionRule::Threshold) {
    if (kept != std::min(top_k, candidates))
      why << "kept " << kept << " want " << std::min(top_k, candidates) << "; ";
    if (!ranked_ok) why << "a dropped block outscores a kept one; ";
    return why.str();
  }
  const double thr = st.mean + policy.tau * st.std;
  int surely_above = 0;
  int maybe_above = 0;
  for (int j = 0; j < blocks; ++j) {
    if (forced(j)) continue;
    surely_above += scores[j] > thr + tol;
    maybe_above += scores[j] > thr - tol;
  }
  if (kept > top_k) why << "kept " << kept << " above the cap " << top_k << "; ";
  if (maybe_above <= top_k) {  // the cap cannot bind: a pure threshold
    if (!(min_kept > thr - tol)) why << "kept a block below the threshold; ";
    if (!(max_dropped <= thr + tol)) why << "dropped a block above the threshold; ";
  } else if (surely_above > top_k) {  // the cap binds: the top `cap`
    if (kept != top_k || !ranked_ok) why << "capped row is not the top " << top_k << "; ";
  } else if (!(min_kept > thr - tol) || !ranked_ok) {
    why << "borderline row kept an out-of-rule block; ";
  }
  return why.str();
}

double relative_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0.0;
  double ref = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::infinity();
    const double d = static_cast<double>(got[i]) - want[i];
    err += d * d;
    ref += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(err / ref);
}

}  // namespace memplan::attention::test
