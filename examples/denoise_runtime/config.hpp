// The runtime's configuration: model shape, sampler, schedule window, second pass, the rope-cache
// and pooled-means switches and which allocation modes to run. Parsed from the command line
// (CLI11); presets fill defaults for the GPU (compute-bound, launch-bound) and for the CPU
// fallback.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace denoise {

enum class Device : std::uint8_t { Auto, Cpu, Gpu };
enum class RopeCache : std::uint8_t { Paused, Rogue };  // where the rope table is allocated
// Who pools q and k per 64-token block for sparse attention's selection: the rope kernel, which
// writes them anyway (the GPU; memplan/attention/pooled_means.cuh), or attention, which reads
// them once more (the CPU twin always).
enum class PooledMeansBy : std::uint8_t { Rope, Attention };
enum class Mode : std::uint8_t { Graphs, Eager, Baseline };
// Where the blocks' weights are during a step: all on the device; streamed from pinned host
// memory into planned staging slots, depth blocks ahead, on a copy stream (memplan::stream); or
// copied synchronously before each block runs (the naive offloader, the baseline to beat).
enum class Weights : std::uint8_t { Resident, Streamed, Naive };

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
  // Sparse attention: 1, a key-block list per query block; 2, one per pair of query blocks.
  int query_blocks_per_list = 1;
  std::int64_t second_tokens = 6144;  // 0: no second pass
  int second_steps = 12;
  RopeCache rope = RopeCache::Paused;
  PooledMeansBy pooled_means = PooledMeansBy::Rope;
  std::vector<Mode> modes{Mode::Graphs, Mode::Eager, Mode::Baseline};
  std::uint64_t seed = 42;
  int capture_after = 2;
  std::size_t chunk_mib = 2;
  bool per_step = true;
  std::string csv;   // per-step rows, when set
  std::string draw;  // a folder: one picture per recorded branch, when set
  Weights weights = Weights::Resident;
  std::size_t vram_budget = 0;  // bytes of device memory for the run; 0: none
  int ranks = 1;                // sequence-parallel ranks (threads; GPUs 0..ranks-1); 1: one device
  bool reference = false;       // with ranks > 1: also run one device and compare the latents
  std::set<std::string> preset_locked;  // shape options given on the command line

  [[nodiscard]] int hidden() const { return heads * head_dim; }
};

// Parses argv with CLI11 (see --help). Returns nullopt when the runtime should run, else the exit
// code: 0 after --help or --version, 2 after a bad command line (CLI11's message on stderr).
[[nodiscard]] std::optional<int> parse_args(int argc, char** argv, Config& config);

// "6GiB", "512 MiB", "1.5GB", "4096": binary units (KiB..TiB), decimal ones (KB..TB), or bytes.
// Throws InvalidArgument naming the text.
[[nodiscard]] std::size_t parse_bytes(std::string_view text);

// Fills the shape for the device actually used, unless the user set it; picks the modes that
// the weights allow (streamed: graphs, eager; naive: eager, async) unless the user set them, and
// refuses a combination that cannot run.
void apply_preset(Config& config, bool gpu);

[[nodiscard]] const char* to_string(Mode mode, bool gpu);
[[nodiscard]] const char* to_string(RopeCache rope);
[[nodiscard]] const char* to_string(PooledMeansBy by);
[[nodiscard]] const char* to_string(Weights weights);

}  // namespace denoise
