// The two ways a pointer handed back to memplan can be wrong, as named errors. Both are
// InvalidPointer, so callers that do not care which can catch that.
#pragma once

#include "memplan/error.hpp"

namespace memplan::arena {

// A pointer outside the memory the callee owns, or inside it but not the start of an allocation.
class ForeignPointer : public InvalidPointer {
 public:
  using InvalidPointer::InvalidPointer;
};

// A pointer freed again: it lies in free memory of the callee.
class DoubleFree : public InvalidPointer {
 public:
  using InvalidPointer::InvalidPointer;
};

}  // namespace memplan::arena
