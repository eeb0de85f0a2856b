// The TMA tensor maps of flash_tma.cu (see tensor_map.hpp).
#include "tensor_map.hpp"

#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "memplan/error.hpp"

namespace memplan::attention::detail {

namespace {

struct EncodeLookup {
  PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  cudaError_t status = cudaSuccess;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSuccess;
};

// Looked up once per process.
const EncodeLookup& encode_lookup() {
  static const EncodeLookup lookup = [] {
    EncodeLookup l;
    void* fn = nullptr;
    l.status = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                cudaEnableDefault, &l.found);
    if (l.status == cudaSuccess && l.found == cudaDriverEntryPointSuccess) {
      l.encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    } else {
      (void)cudaGetLastError();  // clear it: the default path then falls back, and checks launches
    }
    return l;
  }();
  return lookup;
}

PFN_cuTensorMapEncodeTiled_v12000 encode_function() {
  const EncodeLookup& l = encode_lookup();
  if (l.encode == nullptr) {
    throw CudaError(fmt::format(
        "attention: cuTensorMapEncodeTiled not found in the driver ({}, query result {})",
        cudaGetErrorString(l.status), static_cast<int>(l.found)));
  }
  return l.encode;
}

}  // namespace

bool tensor_maps_available() { return encode_lookup().encode != nullptr; }

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
