// The TMA tensor maps of flash_tma.cu (see tensor_map.hpp).
#include "tensor_map.hpp"

#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <mutex>

#include "memplan/error.hpp"

namespace memplan::attention::detail {

namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_function() {
  static std::once_flag once;
  static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  static cudaError_t status = cudaSuccess;
  static cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSuccess;
  std::call_once(once, [] {
    void* fn = nullptr;
    status = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                              cudaEnableDefault, &found);
    encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  });
  if (status != cudaSuccess || found != cudaDriverEntryPointSuccess || encode == nullptr) {
    throw CudaError(fmt::format(
        "attention: cuTensorMapEncodeTiled not found in the driver ({}, query result {})",
        cudaGetErrorString(status), static_cast<int>(found)));
  }
  return encode;
}

}  // namespace

CUtensorMap head_tensor_map(const char* name, const void* tensor, const FlashParams& params) {
  constexpr cuuint64_t kDim = 128;
  CUtensorMap map{};
  const cuuint64_t dims[4] = {kDim, static_cast<cuuint64_t>(params.heads),
                              static_cast<cuuint64_t>(params.tokens),
                              static_cast<cuuint64_t>(params.batch)};
  const cuuint64_t row = kDim * 2;  // bytes of one head of one token
  const cuuint64_t strides[3] = {row, row * dims[1], row * dims[1] * dims[2]};
  const cuuint32_t box[4] = {64, 1, 64, 1};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  const CUresult result = encode_function()(
      &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void*>(tensor), dims, strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    throw CudaError(fmt::format(
        "attention: cuTensorMapEncodeTiled failed (CUresult {}) for {} at {} with batch {}, {} "
        "tokens, {} heads",
        static_cast<int>(result), name, tensor, params.batch, params.tokens, params.heads));
  }
  return map;
}

}  // namespace memplan::attention::detail
