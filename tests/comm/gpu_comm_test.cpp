// NCCL on memplan memory, on every GPU of the machine (1 on the H200 machine, 2 on the two-GPU
// one): one compiler per device, each backend mapping its memory for the other devices too, one
// thread per device; the all-to-all is captured in a CUDA Graph with buffers planned by the
// compiler and replayed, and every rank receives every other rank's block. Skips without a GPU or
// without NCCL.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "memplan/arena/cuda_vmm_backend.hpp"
#include "memplan/comm/nccl.hpp"
#include "memplan/runtime/compiler.hpp"
#include "support/gpu.hpp"

namespace memplan::comm {
namespace {

constexpr std::size_t kInts = 1 << 16;  // per rank and peer

int device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

// What rank `from` sends to rank `to`, int i of the block.
int value(int from, int to, std::size_t i) {
  return from * 1'000'000 + to * 100'000 + static_cast<int>(i % 100'000);
}

// One rank's run: a compiler on its device, the exchange recorded once, then captured and
// replayed; returns the failures it saw (empty: all good).
std::vector<std::string> run_rank(NcclComm& comm, int device, int devices) {
  std::vector<std::string> failures;
  const auto fail = [&](const std::string& what) { failures.push_back(what); };
  if (cudaSetDevice(device) != cudaSuccess) return {"cudaSetDevice"};
  std::vector<int> peers;
  for (int d = 0; d < devices; ++d) {
    if (d != device) peers.push_back(d);
  }
  arena::CudaVmmBackend backend({.device = device, .peer_devices = peers});
  Compiler compiler(backend, {.reserve_bytes = std::size_t{4} << 30,
                              .pool_reserve_bytes = std::size_t{1} << 30,
                              .pool_chunk_bytes = std::size_t{2} << 20});
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return {"stream"};
  const std::size_t bytes = kInts * sizeof(int) * static_cast<std::size_t>(devices);
  std::vector<int> send_host(kInts * static_cast<std::size_t>(devices));
  for (int to = 0; to < devices; ++to) {
    for (std::size_t i = 0; i < kInts; ++i) send_host[to * kInts + i] = value(device, to, i);
  }
  std::vector<int> recv_host(send_host.size());
  cudaGraphExec_t exec = nullptr;
  std::uint64_t calls_after_capture = 0;
  for (int step = 0; step < 4; ++step) {
    compiler.begin_step("exchange");
    void* send = compiler.allocate(bytes, StreamRef{stream}, "send");
    void* recv = compiler.allocate(bytes, StreamRef{stream}, "recv");
    if (cudaMemcpyAsync(send, send_host.data(), bytes, cudaMemcpyHostToDevice, stream) != 0) {
      fail("copy in");
    }
    if (step < 2) {  // eager: the first records, the second replays
      comm.all_to_all(send, recv, kInts * sizeof(int), StreamRef{stream});
    } else if (exec == nullptr) {  // capture once, on replayed (stable) addresses
      cudaGraph_t graph = nullptr;
      if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != 0) fail("capture");
      comm.all_to_all(send, recv, kInts * sizeof(int), StreamRef{stream});
      if (cudaStreamEndCapture(stream, &graph) != 0) fail("end capture");
      if (cudaGraphInstantiate(&exec, graph, 0) != 0) fail("instantiate");
      cudaGraphDestroy(graph);
      calls_after_capture = compiler.stats().backend_calls.memory_calls();
      if (cudaGraphLaunch(exec, stream) != 0) fail("launch");
    } else {
      if (cudaGraphLaunch(exec, stream) != 0) fail("launch");
    }
    if (cudaMemcpyAsync(recv_host.data(), recv, bytes, cudaMemcpyDeviceToHost, stream) != 0) {
      fail("copy out");
    }
    if (cudaStreamSynchronize(stream) != cudaSuccess) fail("synchronize");
    compiler.deallocate(recv, StreamRef{stream});
    compiler.deallocate(send, StreamRef{stream});
    compiler.end_step();
    for (int from = 0; from < devices; ++from) {
      for (std::size_t i = 0; i < kInts; i += 997) {
        if (recv_host[from * kInts + i] != value(from, device, i)) {
          fail("step " + std::to_string(step) + ": block from rank " + std::to_string(from));
          break;
        }
      }
    }
  }
  if (compiler.stats().backend_calls.memory_calls() != calls_after_capture) {
    fail("memory calls after capture");
  }
  if (compiler.stats().steps_replayed != 3) fail("steps replayed");
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  compiler.forget_stream(StreamRef{stream});
  cudaStreamDestroy(stream);
  return failures;
}

TEST(GpuComm, AllToAllOnPlannedMemoryIsCapturedAndReplayedOnEveryGpu) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  if (!NcclLibrary::available()) GTEST_SKIP() << "NCCL not available on this machine";
  const int devices = device_count();
  std::vector<int> ordinals;
  for (int d = 0; d < devices; ++d) ordinals.push_back(d);
  std::vector<NcclComm> comms = NcclComm::init_all(ordinals);
  std::vector<std::vector<std::string>> failures(devices);
  std::vector<std::thread> threads;
  for (int d = 0; d < devices; ++d) {
    threads.emplace_back([&, d] { failures[d] = run_rank(comms[d], d, devices); });
  }
  for (std::thread& t : threads) t.join();
  for (int d = 0; d < devices; ++d) {
    for (const std::string& f : failures[d]) ADD_FAILURE() << "rank " << d << ": " << f;
  }
  RecordProperty("gpus", devices);
}

TEST(GpuComm, APeerThatDoesNotExistIsNamed) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const int devices = device_count();
  try {
    arena::CudaVmmBackend backend({.device = 0, .peer_devices = {devices}});
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(
        std::string(e.what()).find("peer device " + std::to_string(devices) + " does not exist"),
        std::string::npos)
        << e.what();
  }
  EXPECT_THROW(arena::CudaVmmBackend({.device = 0, .peer_devices = {0}}), InvalidArgument);
}

}  // namespace
}  // namespace memplan::comm
