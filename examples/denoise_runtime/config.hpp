// The runtime's configuration: model shape, sampler, schedule window, second pass, the rope-cache
// switch and which allocation modes to run. Parsed from the command line (CLI11); presets fill
// defaults for the GPU (compute-bound, launch-bound) and for the CPU fallback.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace denoise {

enum class Device : std::uint8_t { Auto, Cpu, Gpu };
enum class RopeCache : std::uint8_t { Paused, Rogue };  // where the rope table is allocated
enum class Mode : std::uint8_t { Graphs, Eager, Baseline };

struct Config {
  Device device = Device::Auto;
  std::string preset = "compute";  // compute | launch (GPU); the CPU uses its own small shape
  int blocks = 8;
  std::int64_t tokens = 4096;
  int heads = 12;
  int head_dim = 128;
  int mlp_ratio = 4;
  int steps = 30;
  double window_start = 0.2;
  double window_end = 1.0;
  std::int64_t second_tokens = 6144;  // 0: no second pass
  int second_steps = 12;
  RopeCache rope = RopeCache::Paused;
  std::vector<Mode> modes{Mode::Graphs, Mode::Eager, Mode::Baseline};
  std::uint64_t seed = 42;
  int capture_after = 2;
  std::size_t chunk_mib = 2;
  bool per_step = true;
  std::string csv;                      // per-step rows, when set
  std::string draw;                     // a folder: one picture per recorded branch, when set
  std::set<std::string> preset_locked;  // shape options given on the command line

  [[nodiscard]] int hidden() const { return heads * head_dim; }
};

// Parses argv with CLI11 (see --help). Returns nullopt when the runtime should run, else the exit
// code: 0 after --help or --version, 2 after a bad command line (CLI11's message on stderr).
[[nodiscard]] std::optional<int> parse_args(int argc, char** argv, Config& config);

// Fills the shape for the device actually used, unless the user set it.
void apply_preset(Config& config, bool gpu);

[[nodiscard]] const char* to_string(Mode mode, bool gpu);
[[nodiscard]] const char* to_string(RopeCache rope);

}  // namespace denoise
