// Errors memplan throws. Every error names the problem and the numbers involved, and leaves the
// object that threw it usable: callers catch the precise type they can handle, or memplan::Error.
#pragma once

#include <stdexcept>
#include <string>

namespace memplan {

// Base of every memplan exception.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An argument outside what the call accepts: zero or absurd sizes, bad alignment, a null pointer.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// Text input that does not parse; the message names the source, line and column.
class ParseError : public Error {
 public:
  using Error::Error;
};

// Not enough memory: the message names requested, mapped, reserved and free bytes where known.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

// A pointer memplan does not own, or one it already freed.
class InvalidPointer : public Error {
 public:
  using Error::Error;
};

// A call made in a state that does not allow it (e.g. a step ended twice).
class InvalidState : public Error {
 public:
  using Error::Error;
};

// A failure reported by the CUDA driver or runtime; the message names the call and the code.
class CudaError : public Error {
 public:
  using Error::Error;
};

}  // namespace memplan
