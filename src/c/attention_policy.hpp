// The C attention policy and shape as memplan's attention types, checked (InvalidArgument naming
// the field and value otherwise). Host code: both libraries have it.
#pragma once

#include <cstdint>

#include "memplan/attention/policy.hpp"
#include "memplan/attention/shape.hpp"
#include "memplan/c/memplan_torch.h"

namespace memplan::c_api {

[[nodiscard]] attention::AttentionPolicy to_policy(const memplan_torch_attention_policy* policy);
[[nodiscard]] attention::AttentionShape to_shape(int batch, std::int64_t tokens, int heads,
                                                 int head_dim);

}  // namespace memplan::c_api
