// The three families share one builder: a clock of op indices and a problem to append to. Sizes
// follow the models' tensor shapes (bf16 activations, tokens × hidden and so on) with a few tiny
// buffers per op (workspaces, scalars, statistics), as real traces have: in somas/bert_base half
// the buffers hold 4 bytes.
#include "trace_generators.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "memplan/error.hpp"

namespace memplan::plan::traces {
namespace {

constexpr Bytes kElement = 2;  // bf16

class Builder {
 public:
  explicit Builder(std::uint64_t seed) : random(seed) {}

  // A buffer alive on [lower, upper); returns its index (upper may be set later).
  std::size_t add(Time lower, Time upper, Bytes size, Bytes alignment = 256) {
    problem.buffers.push_back(Buffer{.id = std::to_string(problem.buffers.size()),
                                     .lower = lower,
                                     .upper = upper,
                                     .size = size,
                                     .alignment = alignment});
    return problem.buffers.size() - 1;
  }
  // An op's output, read by the next op only.
  std::size_t temporary(Bytes size) { return add(now, now + 2, size); }
  // 0 to 3 tiny buffers alive for this op alone: workspaces, scalars, statistics.
  void scratch() {
    std::uniform_int_distribution<int> count(0, 3);
    std::uniform_int_distribution<int> log_size(2, 16);  // 4 B .. 64 KiB
    for (int k = count(random); k > 0; --k) add(now, now + 1, Bytes{1} << log_size(random));
  }
  void step() { ++now; }
  [[nodiscard]] std::size_t size() const { return problem.buffers.size(); }
  void set_upper(std::size_t i, Time upper) { problem.buffers[i].upper = upper; }

  std::mt19937_64 random;
  Problem problem;
  Time now = 0;
};

// A transformer's dimensions, drawn per trace: hidden size, tokens per micro-batch, heads of 128.
struct Shape {
  Bytes hidden;
  Bytes tokens;
  Bytes sequence;
  bool flash_attention;  // no tokens × sequence score matrix saved
};

Shape draw_shape(std::mt19937_64& random) {
  constexpr std::array<Bytes, 4> kHidden = {1024, 2048, 4096, 5120};
  constexpr std::array<Bytes, 3> kSequence = {512, 1024, 2048};
  std::uniform_int_distribution<std::size_t> pick_hidden(0, kHidden.size() - 1);
  std::uniform_int_distribution<std::size_t> pick_sequence(0, kSequence.size() - 1);
  std::uniform_int_distribution<Bytes> batch(1, 8);
  const Bytes sequence = kSequence[pick_sequence(random)];
  return Shape{.hidden = kHidden[pick_hidden(random)],
               .tokens = sequence * batch(random),
               .sequence = sequence,
               .flash_attention = std::bernoulli_distribution(0.5)(random)};
}

// One layer's weights: QKV, projection, two MLP matrices, and four vectors (norms, biases).
std::vector<Bytes> weight_sizes(const Shape& s) {
  const Bytes h = s.hidden;
  return {3 * h * h * kElement, h * h * kElement, 4 * h * h * kElement, 4 * h * h * kElement,
          h * kElement,         h * kElement,     4 * h * kElement,     3 * h * kElement};
}

// The forward ops' outputs: (size, saved for backward). Temporaries are read by the next op.
std::vector<std::pair<Bytes, bool>> forward_outputs(const Shape& s) {
  const Bytes t = s.tokens;
  const Bytes h = s.hidden;
  const Bytes scores = (t / s.sequence) * (h / 128) * s.sequence * s.sequence * kElement;
  std::vector<std::pair<Bytes, bool>> outputs = {
      {t * h * kElement, true},      // norm 1
      {t * 4 * 2, true},             // its statistics (fp32 mean, rstd)
      {t * 3 * h * kElement, true},  // QKV
  };
  if (!s.flash_attention) {
    outputs.push_back({scores, false});  // scores
    outputs.push_back({scores, true});   // softmax
  } else {
    outputs.push_back({t * (h / 128) * 4, true});  // log-sum-exp
  }
  const std::vector<std::pair<Bytes, bool>> rest = {
      {t * h * kElement, true},      // attention
      {t * h * kElement, false},     // projection
      {t * h * kElement, true},      // residual
      {t * h * kElement, true},      // norm 2
      {t * 4 * 2, true},             // its statistics
      {t * 4 * h * kElement, true},  // MLP up
      {t * 4 * h * kElement, true},  // activation
      {t * h * kElement, false},     // MLP down
      {t * h * kElement, true},      // residual: the next layer's input
  };
  outputs.insert(outputs.end(), rest.begin(), rest.end());
  return outputs;
}

// About this many buffers a training layer adds (weights, forward, backward, scratch).
// (Scratch buffers average 1.5 an op.)
constexpr std::size_t kTrainingBuffersPerLayer = 78;
constexpr std::size_t kInferenceBuffersPerLayerStep = 20;

}  // namespace

Problem training_trace(std::size_t buffers, std::uint64_t seed) {
  Builder b(seed);
  const Shape shape = draw_shape(b.random);
  const std::vector<Bytes> weights = weight_sizes(shape);
  const auto outputs = forward_outputs(shape);
  std::vector<std::size_t> whole_step;                   // weights: upper set at the end
  std::vector<std::vector<std::size_t>> saved_by_layer;  // per layer, in forward order
  std::vector<std::size_t> weight_gradients;
  const std::size_t layers = std::max<std::size_t>(1, buffers / kTrainingBuffersPerLayer);
  for (std::size_t layer = 0; layer < layers; ++layer) {
    for (const Bytes w : weights) whole_step.push_back(b.add(0, 0, w));
    std::vector<std::size_t>& saved = saved_by_layer.emplace_back();
    for (const auto& [size, keep] : outputs) {
      const std::size_t out = b.temporary(size);
      if (keep) saved.push_back(out);
      b.scratch();
      b.step();
    }
  }
  // Backward, last layer first: each op reads a saved activation (freed after it), passes an
  // activation gradient to the next op, and some ops produce a weight gradient kept to the end.
  for (auto layer = saved_by_layer.rbegin(); layer != saved_by_layer.rend(); ++layer) {
    std::size_t next_weight = 0;
    for (auto act = layer->rbegin(); act != layer->rend(); ++act) {
      const Bytes size = b.problem.buffers[*act].size;
      b.set_upper(*act, b.now + 1);
      b.temporary(size);  // the gradient of the activation
      if (next_weight < weights.size() && (size >= shape.tokens * shape.hidden * kElement)) {
        weight_gradients.push_back(b.add(b.now, 0, weights[next_weight++]));
      }
      b.scratch();
      b.step();
    }
    for (; next_weight < weights.size(); ++next_weight) {  // the vectors' gradients
      weight_gradients.push_back(b.add(b.now, 0, weights[next_weight]));
    }
    b.step();
  }
  // The optimizer reads every gradient, one op per layer's worth.
  b.step();
  const Time end = b.now + 1;
  for (const std::size_t w : whole_step) b.set_upper(w, end);
  for (const std::size_t g : weight_gradients) b.set_upper(g, end);
  return std::move(b.problem);
}

Problem inference_trace(std::size_t buffers, std::uint64_t seed) {
  Builder b(seed);
  const Shape shape = draw_shape(b.random);
  const Bytes h = shape.hidden;
  const Bytes decode_batch = shape.tokens / shape.sequence;
  std::uniform_int_distribution<std::size_t> decode_steps_of(2, 8);
  const std::size_t decode_steps = decode_steps_of(b.random);
  const std::size_t per_layer = kInferenceBuffersPerLayerStep * (decode_steps + 1) + 10;
  const std::size_t layers = std::max<std::size_t>(1, buffers / per_layer);
  std::vector<std::size_t> to_the_end;  // weights and KV caches
  const std::vector<Bytes> weights = weight_sizes(shape);
  const auto activations = [&](Bytes tokens) {
    for (const Bytes size : {tokens * h, tokens * 3 * h, tokens * h, tokens * h, tokens * 4 * h,
                             tokens * 4 * h, tokens * h, tokens * h}) {
      b.temporary(size * kElement);
      b.scratch();
      b.step();
    }
  };
  for (std::size_t layer = 0; layer < layers; ++layer) {  // prefill
    for (const Bytes w : weights) to_the_end.push_back(b.add(0, 0, w));
    for (int kv = 0; kv < 2; ++kv) {  // room for the prompt and every decoded token
      to_the_end.push_back(b.add(b.now, 0, (shape.tokens + decode_batch * 64) * h * kElement));
    }
    activations(shape.tokens);
  }
  for (std::size_t s = 0; s < decode_steps; ++s) {
    for (std::size_t layer = 0; layer < layers; ++layer) activations(decode_batch);
    b.temporary(decode_batch * 32000 * 4);  // logits
    b.step();
  }
  const Time end = b.now + 1;
  for (const std::size_t i : to_the_end) b.set_upper(i, end);
  return std::move(b.problem);
}

Problem graph_trace(std::size_t buffers, std::uint64_t seed) {
  Builder b(seed);
  const auto n = static_cast<Time>(std::max<std::size_t>(buffers, 2));
  // Consumers: most within a few nodes, some a few hundred to a few thousand away (a block's
  // skip connections), and in the forward half a third kept for the mirrored backward node.
  std::geometric_distribution<Time> near(1.0 / 4);
  std::uniform_real_distribution<double> log_far(0.0, std::log(2000.0));
  std::bernoulli_distribution is_far(0.2);
  std::bernoulli_distribution is_saved(1.0 / 3);
  std::uniform_int_distribution<int> consumers(1, 3);
  std::uniform_int_distribution<int> log2_elements(1, 27);
  constexpr std::array<Bytes, 7> kFactors = {1, 1, 1, 3, 5, 7, 9};
  std::uniform_int_distribution<std::size_t> factor(0, kFactors.size() - 1);
  for (Time node = 0; node < n; ++node) {
    Time last = node + 1;
    for (int c = consumers(b.random); c > 0; --c) {
      const Time reach =
          is_far(b.random) ? static_cast<Time>(std::exp(log_far(b.random))) : near(b.random);
      last = std::max(last, node + 1 + reach);
    }
    if (node < n / 2 && is_saved(b.random)) last = std::max(last, n - 1 - node + near(b.random));
    // The contest's sizes are a shape's element count plus one byte.
    const Bytes size = kFactors[factor(b.random)] * (Bytes{1} << log2_elements(b.random)) + 1;
    b.add(node, std::min(last, n + 1), size, 1);
  }
  return std::move(b.problem);
}

Problem random_trace(std::size_t buffers, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  const auto horizon = static_cast<std::int64_t>(2 * buffers);
  std::uniform_int_distribution<std::int64_t> start(0, horizon - 1);
  std::geometric_distribution<std::int64_t> short_life(1.0 / 24);
  std::uniform_int_distribution<std::int64_t> long_life(1, horizon / 8);
  std::bernoulli_distribution is_long(0.02);
  std::uniform_real_distribution<double> log_size(6.0, 26.0);  // 64 B .. 64 MiB
  Problem problem;
  problem.buffers.reserve(buffers);
  for (std::size_t i = 0; i < buffers; ++i) {
    Buffer b;
    b.id = std::to_string(i);
    b.lower = start(random);
    b.upper =
        std::min(horizon, b.lower + 1 + (is_long(random) ? long_life(random) : short_life(random)));
    b.size = (static_cast<Bytes>(std::exp2(log_size(random))) + 255) / 256 * 256;
    b.alignment = 256;
    problem.buffers.push_back(std::move(b));
  }
  return problem;
}

Problem generate(TraceFamily family, std::size_t buffers, std::uint64_t seed) {
  switch (family) {
    case TraceFamily::Training:
      return training_trace(buffers, seed);
    case TraceFamily::Inference:
      return inference_trace(buffers, seed);
    case TraceFamily::Graph:
      return graph_trace(buffers, seed);
    case TraceFamily::Random:
      return random_trace(buffers, seed);
  }
  return {};
}

std::string_view to_string(TraceFamily family) noexcept {
  switch (family) {
    case TraceFamily::Training:
      return "training";
    case TraceFamily::Inference:
      return "inference";
    case TraceFamily::Graph:
      return "graph";
    case TraceFamily::Random:
      return "random";
  }
  return "unknown";
}

TraceFamily trace_family_from(std::string_view name) {
  for (const TraceFamily f :
       {TraceFamily::Training, TraceFamily::Inference, TraceFamily::Graph, TraceFamily::Random}) {
    if (name == to_string(f)) return f;
  }
  throw InvalidArgument(
      fmt::format("unknown trace family '{}' (training, inference, graph or random)", name));
}

}  // namespace memplan::plan::traces
