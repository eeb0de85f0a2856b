// Whether a byte of this process is mapped and readable, asked of the kernel instead of faulting:
// write(2) from an unmapped or PROT_NONE address fails with EFAULT. The raw system call keeps
// sanitizer interceptors out of the way.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace memplan::testing {

inline bool readable(const void* p) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const long n = ::syscall(SYS_write, fds[1], p, 1);
  const int err = errno;
  ::close(fds[0]);
  ::close(fds[1]);
  if (n < 0 && err != EFAULT) throw std::runtime_error(std::string("write: ") + std::strerror(err));
  return n == 1;
}

}  // namespace memplan::testing
