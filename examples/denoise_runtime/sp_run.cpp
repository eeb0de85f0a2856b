// One thread per rank (see sp_run.hpp). Setting up (platform, weights) can fail on one rank
// alone, so the ranks meet once after it and stop together; past that point every rank makes the
// same collective calls in the same order, so a failure there is a bug, not an input.
#include "sp_run.hpp"

#include <fmt/format.h>

#include <atomic>
#include <barrier>
#include <exception>
#include <memory>
#include <thread>

#include "memplan/comm/communicator.hpp"
#include "memplan/comm/nccl.hpp"
#include "memplan/error.hpp"
#include "model.hpp"
#include "platform.hpp"
#include "sequence_parallel.hpp"

namespace denoise {
namespace {

// One communicator per rank: host ranks, or NCCL over GPUs 0..ranks-1.
std::vector<std::unique_ptr<memplan::comm::Communicator>> make_comms(
    int ranks, bool gpu, std::unique_ptr<memplan::comm::HostCommGroup>& group) {
  std::vector<std::unique_ptr<memplan::comm::Communicator>> out;
  if (!gpu) {
    group = std::make_unique<memplan::comm::HostCommGroup>(ranks);
    for (int r = 0; r < ranks; ++r) out.push_back(group->rank(r));
    return out;
  }
  std::vector<int> devices;
  for (int d = 0; d < ranks; ++d) devices.push_back(d);
  for (memplan::comm::NcclComm& comm : memplan::comm::NcclComm::init_all(devices))
    out.push_back(std::make_unique<memplan::comm::NcclComm>(std::move(comm)));
  return out;
}

}  // namespace

std::vector<RankResults> run_sequence_parallel(const Config& config, bool gpu) {
  const int n = config.ranks;
  SequenceParallel::check_shape(config, n);
  if (gpu && gpu_count() < n) {
    throw memplan::InvalidArgument(fmt::format(
        "--ranks {} needs {} GPUs (one per rank); this process sees {}", n, n, gpu_count()));
  }
  std::unique_ptr<memplan::comm::HostCommGroup> group;
  auto comms = make_comms(n, gpu, group);

  std::vector<RankResults> results(static_cast<std::size_t>(n));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::atomic<bool> setup_failed{false};
  std::barrier<> set_up(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      RankResults& out = results[static_cast<std::size_t>(r)];
      out.rank = r;
      std::unique_ptr<Platform> platform;
      std::unique_ptr<Model> model;
      try {
        std::vector<int> peers;
        for (int d = 0; d < n; ++d)
          if (d != r) peers.push_back(d);
        platform = gpu ? make_gpu_platform(r, peers) : make_cpu_platform();
        out.device = platform->device_name();
        model = std::make_unique<Model>(config, platform->ops());
        platform->synchronize();
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
        setup_failed = true;
      }
      set_up.arrive_and_wait();
      if (setup_failed) return;
      try {
        SequenceParallel sp(platform->ops(), *comms[static_cast<std::size_t>(r)]);
        for (Mode mode : config.modes)
          out.modes.push_back(run_mode(mode, config, *platform, *model, &sp));
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return results;
}

ModeResult run_one_device(const Config& config, bool gpu, Mode mode) {
  auto platform = gpu ? make_gpu_platform(0) : make_cpu_platform();
  Model model(config, platform->ops());
  platform->synchronize();
  return run_mode(mode, config, *platform, model);
}

}  // namespace denoise
