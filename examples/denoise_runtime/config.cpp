// Command-line parsing for the runtime, with CLI11: every option is --name=value or --name value;
// --help and --version exit 0, an unknown option or a malformed value is CLI11's error (exit 2).
// Options the user gave are remembered, so that apply_preset leaves them alone.
#include "config.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "memplan/error.hpp"
#include "memplan/version.hpp"

namespace denoise {
namespace {

using memplan::InvalidArgument;

std::vector<Mode> parse_modes(const std::string& value) {
  std::vector<Mode> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t comma = std::min(value.find(',', start), value.size());
    const std::string_view m = std::string_view(value).substr(start, comma - start);
    if (m == "graphs")
      out.push_back(Mode::Graphs);
    else if (m == "eager")
      out.push_back(Mode::Eager);
    else if (m == "async" || m == "baseline" || m == "malloc")
      out.push_back(Mode::Baseline);
    else
      throw CLI::ValidationError("--modes",
                                 fmt::format("unknown mode '{}' (graphs, eager, async)", m));
    start = comma + 1;
  }
  return out;
}

void parse_window(const std::string& value, Config& c) {
  const auto colon = value.find(':');
  const auto real = [&](const std::string& part) {
    try {
      std::size_t used = 0;
      const double v = std::stod(part, &used);
      if (used == part.size()) return v;
    } catch (const std::exception&) {
    }
    throw CLI::ValidationError("--window", fmt::format("'{}' is not A:B (two numbers)", value));
  };
  if (colon == std::string::npos)
    throw CLI::ValidationError("--window", fmt::format("'{}' is not A:B", value));
  c.window_start = real(value.substr(0, colon));
  c.window_end = real(value.substr(colon + 1));
}

// An option that takes one of `names` (the first is the default) and sets `field` to its value.
template <class Enum>
void choice(CLI::App& app, const std::string& name, Enum& field,
            std::vector<std::pair<std::string, Enum>> names, const std::string& help) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : names) keys.push_back(key);
  app.add_option_function<std::string>(
         name,
         [&field, names](const std::string& v) {
           for (const auto& [key, value] : names)
             if (key == v) field = value;
         },
         help)
      ->check(CLI::IsMember(keys))
      ->default_str(keys.front());
}

void add_options(CLI::App& app, Config& c) {
  choice(app, "--device", c.device,
         {{"auto", Device::Auto}, {"gpu", Device::Gpu}, {"cpu", Device::Cpu}},
         "auto: the GPU when one is usable, else the CPU fallback (host backend)");
  app.add_option("--preset", c.preset,
                 "GPU shapes: compute-bound (default) or launch-bound (tiny, many blocks)")
      ->check(CLI::IsMember({"compute", "launch"}));
  app.add_option("--blocks", c.blocks, "transformer blocks");
  app.add_option("--tokens", c.tokens, "tokens of the first pass");
  app.add_option("--heads", c.heads, "attention heads");
  app.add_option("--head-dim", c.head_dim, "head dimension (64 or 128 on the GPU)");
  app.add_option("--mlp-ratio", c.mlp_ratio, "MLP width over hidden");
  app.add_option("--steps", c.steps, "denoise steps of the first pass");
  app.add_option_function<std::string>(
         "--window", [&c](const std::string& v) { parse_window(v, c); },
         "sparse attention for step fractions in [A, B]")
      ->type_name("A:B")
      ->default_str("0.2:1.0");
  app.add_option(
         "--query-blocks-per-list", c.query_blocks_per_list,
         "sparse attention: 1, a key-block list per 64-token query block; 2, one list per "
         "pair of query blocks, chosen from their mean scores with both diagonal bands kept")
      ->check(CLI::Range(1, 2))
      ->default_str("1");
  app.add_option("--second-tokens", c.second_tokens, "second pass at N tokens (0: none)");
  app.add_option("--second-steps", c.second_steps, "denoise steps of the second pass");
  choice(app, "--rope-cache", c.rope, {{"paused", RopeCache::Paused}, {"rogue", RopeCache::Rogue}},
         "rope table allocated inside a pause scope, or outside (a rogue)");
  choice(app, "--pooled-means", c.pooled_means,
         {{"rope", PooledMeansBy::Rope}, {"attention", PooledMeansBy::Attention}},
         "sparse attention's per-block means of q and k: written by the rope kernel (GPU), or "
         "pooled by attention from another read of q and k (the CPU always)");
  app.add_option_function<std::string>(
         "--modes", [&c](const std::string& v) { c.modes = parse_modes(v); },
         "allocation modes to run and compare (async is malloc on the CPU)")
      ->type_name("graphs,eager,async")
      ->default_str("graphs,eager,async");
  app.add_option("--seed", c.seed, "seed of the synthetic weights and latents");
  app.add_option("--capture-after", c.capture_after, "replayed steps before a capture");
  app.add_option("--chunk-mib", c.chunk_mib,
                 "mapping chunk of the planned arena and the pool, MiB");
  app.add_flag_callback(
      "--quiet", [&c] { c.per_step = false; }, "no per-step lines");
  app.add_option("--csv", c.csv, "write every step as a CSV row to FILE")->type_name("FILE");
  choice(
      app, "--weights", c.weights,
      {{"resident", Weights::Resident}, {"streamed", Weights::Streamed}, {"naive", Weights::Naive}},
      "blocks' weights: on the device; streamed from pinned host memory into planned slots "
      "ahead of use; or copied synchronously before each block (the naive offloader)");
  app.add_option_function<std::string>(
         "--vram-budget",
         [&c](const std::string& v) {
           try {
             c.vram_budget = parse_bytes(v);
           } catch (const InvalidArgument& e) {
             throw CLI::ValidationError("--vram-budget", e.what());
           }
         },
         "device memory for the run (e.g. 6GiB; 0: none): streamed weights keep as many blocks "
         "resident as fit, and the compiler refuses to map more")
      ->type_name("SIZE")
      ->default_str("0");
  app.add_option("--ranks", c.ranks,
                 "sequence parallelism over N ranks in this process, one thread each (GPUs "
                 "0..N-1, NCCL; or host ranks with --device=cpu): tokens and heads must divide by "
                 "N; 1: the one-device path")
      ->check(CLI::Range(1, 1024));
  app.add_flag("--reference", c.reference,
               "with --ranks > 1: also run the first mode on one device (GPU 0) and print its "
               "difference from the ranks' latents");
  app.add_option("--draw", c.draw, "one picture (HTML) per recorded branch of each memplan mode")
      ->type_name("DIR");
}

}  // namespace

std::size_t parse_bytes(std::string_view text) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"", 1},         {"B", 1},    {"KiB", 0x1p10}, {"MiB", 0x1p20}, {"GiB", 0x1p30},
      {"TiB", 0x1p40}, {"KB", 1e3}, {"MB", 1e6},     {"GB", 1e9},     {"TB", 1e12}};
  std::size_t end = 0;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) != 0 || text[end] == '.'))
    ++end;
  std::string_view unit = text.substr(end);
  while (unit.starts_with(' ')) unit.remove_prefix(1);
  double number = 0;
  try {
    std::size_t used = 0;
    number = std::stod(std::string(text.substr(0, end)), &used);
    if (used != end) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw InvalidArgument(fmt::format("'{}' is not a size (e.g. 6GiB, 512MiB, 4096)", text));
  }
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    const double bytes = number * scale;
    if (!(bytes < 0x1p62)) throw InvalidArgument(fmt::format("'{}' is too large", text));
    return static_cast<std::size_t>(bytes);
  }
  throw InvalidArgument(
      fmt::format("'{}': unknown unit '{}' (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)", text, unit));
}

std::optional<int> parse_args(int argc, char** argv, Config& c) {
  CLI::App app{
      "denoise_runtime: a video-DiT-shaped model denoised step by step, its memory "
      "served by memplan.",
      "denoise_runtime"};
  app.set_version_flag("--version", "denoise_runtime (memplan " MEMPLAN_VERSION_STRING ")");
  app.footer("exit codes: 0 the modes agree, 1 their outputs differ, 2 an error.");
  add_options(app, c);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a bad command line prints CLI11's message and exits 2.
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  c.preset_locked.clear();
  for (const CLI::Option* option : app.get_options()) {
    if (option->count() > 0 && !option->get_lnames().empty())
      c.preset_locked.insert(option->get_lnames().front());
  }
  return std::nullopt;
}
namespace {

// Which modes a weights placement can run: a graph cannot hold the naive offloader's host waits,
// and the baseline allocator has no plan to put staging slots in.
void resolve_modes(Config& c) {
  const bool given = c.preset_locked.contains("modes");
  const auto has = [&](Mode m) {
    return std::find(c.modes.begin(), c.modes.end(), m) != c.modes.end();
  };
  if (c.weights == Weights::Streamed) {
    if (!given) c.modes = {Mode::Graphs, Mode::Eager};
    if (has(Mode::Baseline))
      throw InvalidArgument(
          "--weights=streamed runs the memplan modes only (graphs, eager): the "
          "baseline allocator has no plan for staging slots");
  } else if (c.weights == Weights::Naive) {
    if (!given) c.modes = {Mode::Eager, Mode::Baseline};
    if (has(Mode::Graphs))
      throw InvalidArgument(
          "--weights=naive waits on the host before every block, which a graph "
          "cannot hold: run it with --modes=eager,async");
  }
}

}  // namespace

void apply_preset(Config& c, bool gpu) {
  const auto keep = [&](const char* name) { return c.preset_locked.contains(name); };
  auto set = [&](const char* name, auto& field, auto value) {
    if (!keep(name)) field = value;
  };
  if (!gpu) {
    set("blocks", c.blocks, 4);
    set("tokens", c.tokens, std::int64_t{256});
    set("heads", c.heads, 4);
    set("head-dim", c.head_dim, 32);
    set("steps", c.steps, 12);
    set("second-tokens", c.second_tokens, std::int64_t{384});
    set("second-steps", c.second_steps, 6);
  } else if (c.preset == "launch") {
    set("blocks", c.blocks, 24);
    set("tokens", c.tokens, std::int64_t{256});
    set("heads", c.heads, 2);
    set("head-dim", c.head_dim, 64);
    set("second-tokens", c.second_tokens, std::int64_t{384});
  }
  if (c.blocks < 1 || c.tokens < 64 || c.heads < 1 || c.steps < 2 || c.mlp_ratio < 1) {
    throw InvalidArgument(
        fmt::format("shape: blocks {} (>= 1), tokens {} (>= 64), heads {} (>= 1), steps {} (>= 2), "
                    "mlp ratio {}",
                    c.blocks, c.tokens, c.heads, c.steps, c.mlp_ratio));
  }
  if (gpu && c.head_dim != 64 && c.head_dim != 128) {
    throw InvalidArgument(
        fmt::format("--head-dim {}: the GPU attention supports 64 and 128", c.head_dim));
  }
  if (c.head_dim < 2 || c.head_dim % 2 != 0) {
    throw InvalidArgument(fmt::format("--head-dim {}: must be even (rope pairs)", c.head_dim));
  }
  if (c.second_tokens != 0 && (c.second_tokens < 64 || c.second_steps < 2)) {
    throw InvalidArgument(fmt::format("second pass: tokens {} (>= 64) and steps {} (>= 2)",
                                      c.second_tokens, c.second_steps));
  }
  if (!(c.window_start >= 0 && c.window_start <= c.window_end && c.window_end <= 1)) {
    throw InvalidArgument(
        fmt::format("--window {}:{}: need 0 <= A <= B <= 1", c.window_start, c.window_end));
  }
  if (c.chunk_mib < 1) throw InvalidArgument("--chunk-mib must be >= 1");
  resolve_modes(c);
  if (c.ranks > 1 && (c.weights != Weights::Resident || c.vram_budget != 0)) {
    throw InvalidArgument(fmt::format(
        "--ranks {} keeps every block's weights on every rank: --weights={} and --vram-budget "
        "are for one device",
        c.ranks, to_string(c.weights)));
  }
}

const char* to_string(Mode mode, bool gpu) {
  switch (mode) {
    case Mode::Graphs:
      return "memplan+graphs";
    case Mode::Eager:
      return "memplan eager";
    case Mode::Baseline:
      return gpu ? "cudaMallocAsync" : "malloc";
  }
  return "?";
}

const char* to_string(Weights weights) {
  switch (weights) {
    case Weights::Resident:
      return "resident";
    case Weights::Streamed:
      return "streamed";
    case Weights::Naive:
      return "naive";
  }
  return "?";
}

const char* to_string(RopeCache rope) { return rope == RopeCache::Paused ? "paused" : "rogue"; }

const char* to_string(PooledMeansBy by) { return by == PooledMeansBy::Rope ? "rope" : "attention"; }

}  // namespace denoise
