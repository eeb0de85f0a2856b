// Communicators and the collectives a sequence-parallel step needs. Bytes travel as ncclUint8, so
// any element type works and counts are bytes.
#include <fmt/format.h>

#include <cstring>
#include <utility>

#include "core/log.hpp"
#include "memplan/error.hpp"
#include "nccl_api.hpp"

namespace memplan::comm {
namespace {

const NcclLibrary::Api& api() { return NcclLibrary::get().api(); }

abi::UniqueId to_abi(const NcclUniqueId& id) {
  abi::UniqueId out{};
  std::memcpy(out.internal, id.bytes.data(), sizeof out.internal);
  return out;
}

}  // namespace

NcclUniqueId NcclComm::unique_id() {
  abi::UniqueId raw{};
  api().check(api().GetUniqueId(&raw), "ncclGetUniqueId");
  NcclUniqueId id;
  std::memcpy(id.bytes.data(), raw.internal, id.bytes.size());
  return id;
}

std::vector<NcclComm> NcclComm::init_all(std::span<const int> devices) {
  if (devices.empty()) throw InvalidArgument("NcclComm::init_all: no devices");
  std::vector<abi::Comm> raw(devices.size(), nullptr);
  api().check(api().CommInitAll(raw.data(), static_cast<int>(devices.size()), devices.data()),
              "ncclCommInitAll");
  std::vector<NcclComm> out;
  out.reserve(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    NcclComm comm;
    comm.comm_ = raw[i];
    comm.rank_ = static_cast<int>(i);
    comm.ranks_ = static_cast<int>(devices.size());
    out.push_back(std::move(comm));
  }
  return out;
}

NcclComm::NcclComm(const NcclUniqueId& id, int ranks, int rank) : rank_(rank), ranks_(ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks) {
    throw InvalidArgument(
        fmt::format("NcclComm: rank {} of {} ranks (need 0 <= rank < ranks)", rank, ranks));
  }
  abi::Comm raw = nullptr;
  api().check(api().CommInitRank(&raw, ranks, to_abi(id), rank), "ncclCommInitRank");
  comm_ = raw;
}

NcclComm::NcclComm(NcclComm&& other) noexcept
    : comm_(std::exchange(other.comm_, nullptr)), rank_(other.rank_), ranks_(other.ranks_) {}

NcclComm& NcclComm::operator=(NcclComm&& other) noexcept {
  if (this != &other) {
    NcclComm old(std::move(*this));
    comm_ = std::exchange(other.comm_, nullptr);
    rank_ = other.rank_;
    ranks_ = other.ranks_;
  }
  return *this;
}

NcclComm::~NcclComm() {
  if (comm_ == nullptr) return;
  const abi::Result r = api().CommDestroy(comm_);
  if (r != abi::kSuccess) logger().error("ncclCommDestroy failed (ncclResult_t {})", r);
}

void NcclComm::all_to_all(const void* send, void* recv, std::size_t bytes_per_rank,
                          StreamRef stream) const {
  const auto& a = api();
  const auto* from = static_cast<const std::byte*>(send);
  auto* to = static_cast<std::byte*>(recv);
  a.check(a.GroupStart(), "ncclGroupStart");
  // Every call of the group is made before the group ends, even after an error, so that NCCL's
  // group state stays balanced; the first error is reported.
  abi::Result first = abi::kSuccess;
  const char* failed = nullptr;
  for (int peer = 0; peer < ranks_; ++peer) {
    const std::size_t at = static_cast<std::size_t>(peer) * bytes_per_rank;
    const abi::Result s =
        a.Send(from + at, bytes_per_rank, abi::kUint8, peer, comm_, stream.native);
    const abi::Result r = a.Recv(to + at, bytes_per_rank, abi::kUint8, peer, comm_, stream.native);
    if (first == abi::kSuccess && (s != abi::kSuccess || r != abi::kSuccess)) {
      first = s != abi::kSuccess ? s : r;
      failed = s != abi::kSuccess ? "ncclSend" : "ncclRecv";
    }
  }
  const abi::Result end = a.GroupEnd();
  if (first != abi::kSuccess) a.check(first, failed);
  a.check(end, "ncclGroupEnd");
}

void NcclComm::all_gather(const void* send, void* recv, std::size_t bytes, StreamRef stream) const {
  api().check(api().AllGather(send, recv, bytes, abi::kUint8, comm_, stream.native),
              "ncclAllGather");
}

}  // namespace memplan::comm
