// NCCL's C ABI as memplan calls it, declared here so that no NCCL header is needed: the types'
// layouts and the enum values below are NCCL's (stable across 2.x; nccl.h of 2.28 checked), the
// functions a table of pointers filled by dlsym.
#pragma once

#include <cstddef>

#include "memplan/comm/nccl.hpp"

namespace memplan::comm {

namespace abi {
using Result = int;  // ncclResult_t: 0 is ncclSuccess
inline constexpr Result kSuccess = 0;
using Comm = void*;  // ncclComm_t
struct UniqueId {
  char internal[128];
};
using DataType = int;                  // ncclDataType_t
inline constexpr DataType kUint8 = 1;  // ncclUint8
using Stream = void*;                  // cudaStream_t
}  // namespace abi

struct NcclLibrary::Api {
  abi::Result (*GetVersion)(int*) = nullptr;
  const char* (*GetErrorString)(abi::Result) = nullptr;
  abi::Result (*GetUniqueId)(abi::UniqueId*) = nullptr;
  abi::Result (*CommInitRank)(abi::Comm*, int, abi::UniqueId, int) = nullptr;
  abi::Result (*CommInitAll)(abi::Comm*, int, const int*) = nullptr;
  abi::Result (*CommDestroy)(abi::Comm) = nullptr;
  abi::Result (*GroupStart)() = nullptr;
  abi::Result (*GroupEnd)() = nullptr;
  abi::Result (*Send)(const void*, std::size_t, abi::DataType, int, abi::Comm,
                      abi::Stream) = nullptr;
  abi::Result (*Recv)(void*, std::size_t, abi::DataType, int, abi::Comm, abi::Stream) = nullptr;
  abi::Result (*AllGather)(const void*, void*, std::size_t, abi::DataType, abi::Comm,
                           abi::Stream) = nullptr;

  // Throws CudaError naming `call` and NCCL's own words for `result`.
  void check(abi::Result result, const char* call) const;
};

}  // namespace memplan::comm
