// The runtime's sequence-parallel path (--ranks N > 1): the banner, N ranks in this process
// (sp_run.hpp), the one-device reference when --reference asks for it, and the summary. Returns the
// exit code: 0 when the ranks agree bit for bit and the modes (and the reference) agree within
// bf16 tolerance, 1 when they do not.
#pragma once

#include "config.hpp"

namespace denoise {

[[nodiscard]] int run_sequence_parallel_main(Config& config, bool gpu);

}  // namespace denoise
