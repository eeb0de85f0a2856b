// The CUDA copy engine: a non-blocking copy stream, and two events per copy made once by
// prepare(). copy_after records an event on the compute stream, makes the copy stream wait for it,
// and enqueues cudaMemcpyAsync (host to device) and the copy's done event; wait_for makes the
// compute stream wait for that event. No call allocates or waits on the host, so a step that
// streams is captured like any other: the copy stream joins the capture through the first event
// and rejoins the compute stream through the second (a fork and a join in the graph). The host
// source must be pinned (cudaMallocHost / cudaHostRegister) for the copy to be asynchronous and
// capturable. Every CUDA call is checked (CudaError names it). Built only with CUDA.
#pragma once

#include <vector>

#include "memplan/stream/copy_engine.hpp"

namespace memplan::stream {

class CudaCopyEngine final : public CopyEngine {
 public:
  CudaCopyEngine();  // creates the copy stream on the current device
  ~CudaCopyEngine() override;

  void prepare(std::size_t copies) override;
  void copy_after(StreamRef compute, void* dst, const void* src, std::size_t bytes,
                  std::size_t id) override;
  void wait_for(StreamRef compute, std::size_t id) override;
  void synchronize() override;
  [[nodiscard]] std::string_view name() const noexcept override { return "CUDA copy stream"; }
  // The copy stream (a cudaStream_t).
  [[nodiscard]] StreamRef copy_stream() const noexcept { return StreamRef{stream_}; }

 private:
  void* stream_ = nullptr;    // cudaStream_t
  std::vector<void*> freed_;  // cudaEvent_t per copy: the compute stream reached the copy
  std::vector<void*> done_;   // cudaEvent_t per copy: the copy completed
};

}  // namespace memplan::stream
