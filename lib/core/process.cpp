#include "core/process.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <random>

#include "core/hash.h"

namespace shoal {

Status DieWithParent(int parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
    return Status::IOError("cannot ask to end with the parent process");
  // Set after the fork: a parent that died in between is not our parent now.
  if (getppid() != parent)
    return Status::Unavailable("the parent process " + std::to_string(parent) + " has gone already");
  return Status::Ok();
}

uint64_t IncarnationOf(const std::string& token) {
  uint64_t value = 0;
  if (!token.empty()) {
    value = Fnv1a64(token);
  } else {
    std::random_device random;
    value = (static_cast<uint64_t>(random()) << 32) ^ random() ^ static_cast<uint64_t>(getpid());
  }
  return value == 0 ? 1 : value;
}

}  // namespace shoal
