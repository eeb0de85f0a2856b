// Command-line parsing for the runtime. Every option is --name=value or --name value; an unknown
// option or a malformed value is an InvalidArgument naming both.
#include "config.hpp"

#include <fmt/format.h>

#include <charconv>
#include <set>
#include <string_view>

#include "memplan/error.hpp"

namespace denoise {
namespace {

using memplan::InvalidArgument;

template <class T>
T number(std::string_view name, std::string_view value) {
  T out{};
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc{} || end != value.data() + value.size()) {
    throw InvalidArgument(fmt::format("--{}: '{}' is not a number", name, value));
  }
  return out;
}

double real(std::string_view name, std::string_view value) {
  try {
    std::size_t used = 0;
    const double v = std::stod(std::string(value), &used);
    if (used == value.size()) return v;
  } catch (const std::exception&) {
  }
  throw InvalidArgument(fmt::format("--{}: '{}' is not a number", name, value));
}

std::vector<Mode> modes(std::string_view value) {
  std::vector<Mode> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t comma = std::min(value.find(',', start), value.size());
    const std::string_view m = value.substr(start, comma - start);
    if (m == "graphs")
      out.push_back(Mode::Graphs);
    else if (m == "eager")
      out.push_back(Mode::Eager);
    else if (m == "async" || m == "baseline" || m == "malloc")
      out.push_back(Mode::Baseline);
    else
      throw InvalidArgument(fmt::format("--modes: unknown mode '{}' (graphs, eager, async)", m));
    start = comma + 1;
  }
  return out;
}

constexpr const char* kHelp =
    R"(denoise_runtime: a video-DiT-shaped model denoised step by step, its memory served by memplan.

  --device=auto|gpu|cpu     auto: the GPU when one is usable, else the CPU fallback (host backend)
  --preset=compute|launch   GPU shapes: compute-bound (default) or launch-bound (tiny, many blocks)
  --blocks N --tokens N --heads N --head-dim 64|128 --mlp-ratio N
  --steps N                 denoise steps of the first pass
  --window A:B              sparse attention for step fractions in [A, B] (default 0.2:1.0)
  --second-tokens N         second pass at N tokens (0: none)   --second-steps N
  --rope-cache=paused|rogue rope table allocated inside a pause scope, or outside (a rogue)
  --modes=graphs,eager,async  allocation modes to run and compare (async is malloc on the CPU)
  --seed N --capture-after N --chunk-mib N --quiet (no per-step lines) --csv FILE
  --draw DIR                one picture (HTML) per recorded branch of each memplan mode, in DIR
)";

}  // namespace

bool parse_args(int argc, char** argv, Config& c) {
  std::set<std::string> given;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      fmt::print("{}", kHelp);
      return false;
    }
    if (!arg.starts_with("--")) throw InvalidArgument(fmt::format("unexpected argument '{}'", arg));
    arg.remove_prefix(2);
    std::string_view name = arg, value;
    if (const auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (name != "quiet") {
      if (i + 1 >= argc) throw InvalidArgument(fmt::format("--{} needs a value", name));
      value = argv[++i];
    }
    given.insert(std::string(name));
    if (name == "device") {
      if (value == "auto")
        c.device = Device::Auto;
      else if (value == "gpu")
        c.device = Device::Gpu;
      else if (value == "cpu")
        c.device = Device::Cpu;
      else
        throw InvalidArgument(fmt::format("--device: '{}' (auto, gpu, cpu)", value));
    } else if (name == "preset") {
      if (value != "compute" && value != "launch") {
        throw InvalidArgument(fmt::format("--preset: '{}' (compute, launch)", value));
      }
      c.preset = value;
    } else if (name == "blocks")
      c.blocks = number<int>(name, value);
    else if (name == "tokens")
      c.tokens = number<std::int64_t>(name, value);
    else if (name == "heads")
      c.heads = number<int>(name, value);
    else if (name == "head-dim")
      c.head_dim = number<int>(name, value);
    else if (name == "mlp-ratio")
      c.mlp_ratio = number<int>(name, value);
    else if (name == "steps")
      c.steps = number<int>(name, value);
    else if (name == "window") {
      const auto colon = value.find(':');
      if (colon == std::string_view::npos)
        throw InvalidArgument(fmt::format("--window: '{}' is not A:B", value));
      c.window_start = real(name, value.substr(0, colon));
      c.window_end = real(name, value.substr(colon + 1));
    } else if (name == "second-tokens")
      c.second_tokens = number<std::int64_t>(name, value);
    else if (name == "second-steps")
      c.second_steps = number<int>(name, value);
    else if (name == "rope-cache") {
      if (value == "paused")
        c.rope = RopeCache::Paused;
      else if (value == "rogue")
        c.rope = RopeCache::Rogue;
      else
        throw InvalidArgument(fmt::format("--rope-cache: '{}' (paused, rogue)", value));
    } else if (name == "modes")
      c.modes = modes(value);
    else if (name == "seed")
      c.seed = number<std::uint64_t>(name, value);
    else if (name == "capture-after")
      c.capture_after = number<int>(name, value);
    else if (name == "chunk-mib")
      c.chunk_mib = number<std::size_t>(name, value);
    else if (name == "quiet")
      c.per_step = false;
    else if (name == "csv")
      c.csv = value;
    else if (name == "draw")
      c.draw = value;
    else
      throw InvalidArgument(fmt::format("unknown option --{} (see --help)", name));
  }
  // Shape options the user gave survive apply_preset.
  c.preset_locked = given;
  return true;
}

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

const char* to_string(RopeCache rope) { return rope == RopeCache::Paused ? "paused" : "rogue"; }

}  // namespace denoise
