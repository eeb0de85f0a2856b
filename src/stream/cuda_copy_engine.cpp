// The CUDA copy engine: events made once, then only record, wait and cudaMemcpyAsync, which
// stream capture records as graph edges and a memcpy node.
#include "memplan/stream/cuda_copy_engine.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "core/log.hpp"
#include "memplan/cuda_check.hpp"
#include "memplan/error.hpp"

namespace memplan::stream {
namespace {

cudaStream_t cuda(StreamRef s) { return static_cast<cudaStream_t>(s.native); }
cudaEvent_t event(void* e) { return static_cast<cudaEvent_t>(e); }

void check_id(std::size_t id, std::size_t prepared) {
  if (id >= prepared) {
    throw InvalidArgument("CudaCopyEngine: copy " + std::to_string(id) + " was not prepared (" +
                          std::to_string(prepared) + " are)");
  }
}

}  // namespace

CudaCopyEngine::CudaCopyEngine() {
  cudaStream_t s = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  stream_ = s;
}

CudaCopyEngine::~CudaCopyEngine() {
  const auto warn = [](cudaError_t status, const char* call) {
    if (status != cudaSuccess) logger().error("{} failed: {}", call, cudaGetErrorString(status));
  };
  warn(cudaStreamSynchronize(cuda(copy_stream())), "cudaStreamSynchronize");
  for (void* e : freed_) warn(cudaEventDestroy(event(e)), "cudaEventDestroy");
  for (void* e : done_) warn(cudaEventDestroy(event(e)), "cudaEventDestroy");
  warn(cudaStreamDestroy(cuda(copy_stream())), "cudaStreamDestroy");
}

void CudaCopyEngine::prepare(std::size_t copies) {
  while (done_.size() < copies) {
    cudaEvent_t freed = nullptr;
    cudaEvent_t done = nullptr;
    check_cuda(cudaEventCreateWithFlags(&freed, cudaEventDisableTiming),
               "cudaEventCreateWithFlags");
    freed_.push_back(freed);
    check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    done_.push_back(done);
  }
}

void CudaCopyEngine::copy_after(StreamRef compute, void* dst, const void* src, std::size_t bytes,
                                std::size_t id) {
  check_id(id, done_.size());
  cudaStream_t copy = cuda(copy_stream());
  check_cuda(cudaEventRecord(event(freed_[id]), cuda(compute)), "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(copy, event(freed_[id]), 0), "cudaStreamWaitEvent");
  check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, copy), "cudaMemcpyAsync");
  check_cuda(cudaEventRecord(event(done_[id]), copy), "cudaEventRecord");
}

void CudaCopyEngine::wait_for(StreamRef compute, std::size_t id) {
  check_id(id, done_.size());
  check_cuda(cudaStreamWaitEvent(cuda(compute), event(done_[id]), 0), "cudaStreamWaitEvent");
}

void CudaCopyEngine::synchronize() {
  check_cuda(cudaStreamSynchronize(cuda(copy_stream())), "cudaStreamSynchronize");
}

}  // namespace memplan::stream
