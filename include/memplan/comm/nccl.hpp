// NCCL as memplan's communication engine, loaded at run time: nothing links libnccl and no NCCL
// header is needed to build, so CI compiles this everywhere and a machine without NCCL gets a
// clear error (CudaError naming every place looked at) only when a communicator is made.
//
// Where the library is looked for: $MEMPLAN_NCCL_LIBRARY (a path) when set, and then nowhere else;
// otherwise, in order, "libnccl.so.2" (the loader's path; an NCCL already loaded in the process,
// by PyTorch say, is found this way), the CUDA toolkit's lib directories, and the
// `nvidia/nccl/lib` of Python installations (where PyTorch's wheels put it).
//
// Collectives here are what a sequence-parallel step needs, written to be captured in a CUDA
// Graph: no allocation, no host synchronisation; buffers come from the caller (planned memory
// from memplan, mapped for every peer: CudaVmmOptions::peer_devices).
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "memplan/types.hpp"

namespace memplan::comm {

// The loaded library. get() loads it once (thread-safe) or throws CudaError saying why.
class NcclLibrary {
 public:
  [[nodiscard]] static const NcclLibrary& get();
  [[nodiscard]] static bool available() noexcept;

  [[nodiscard]] int version() const noexcept { return version_; }  // e.g. 22809 for 2.28.9
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] std::string version_string() const;

  struct Api;
  [[nodiscard]] const Api& api() const noexcept { return *api_; }

 private:
  NcclLibrary() = default;
  const Api* api_ = nullptr;
  std::string path_;
  int version_ = 0;
};

// What ranks share to form one communicator (ncclUniqueId), made by one rank and sent to the
// others (a pipe, a file, MPI, torch.distributed...).
struct NcclUniqueId {
  std::array<char, 128> bytes{};
};

class NcclComm {
 public:
  [[nodiscard]] static NcclUniqueId unique_id();
  // One communicator per device of this process, in one call (ncclCommInitAll): rank i uses
  // devices[i]. For one process driving several GPUs, from one thread or one per GPU.
  [[nodiscard]] static std::vector<NcclComm> init_all(std::span<const int> devices);
  // This process's rank in a communicator of `ranks` (ncclCommInitRank); the calling thread's
  // current CUDA device is the rank's.
  NcclComm(const NcclUniqueId& id, int ranks, int rank);
  NcclComm(NcclComm&& other) noexcept;
  NcclComm& operator=(NcclComm&& other) noexcept;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ~NcclComm();

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int ranks() const noexcept { return ranks_; }

  // Every rank sends block r of `send` to rank r and receives rank r's block into block r of
  // `recv`; blocks are `bytes_per_rank` long (send and recv: ranks() blocks each). Grouped sends
  // and receives, so any NCCL 2.x runs it. `stream` must be on this rank's device.
  void all_to_all(const void* send, void* recv, std::size_t bytes_per_rank, StreamRef stream) const;
  // Rank r's `bytes` land at block r of `recv` on every rank.
  void all_gather(const void* send, void* recv, std::size_t bytes, StreamRef stream) const;

 private:
  NcclComm() = default;
  void* comm_ = nullptr;  // ncclComm_t
  int rank_ = 0;
  int ranks_ = 0;
};

}  // namespace memplan::comm
