#include "comm/socket_close.h"

#include <atomic>
#include <future>
#include <system_error>
#include <thread>

#include "core/log.h"

namespace shoal {
namespace {

// NNG 1.5.2 tears every socket's pipes and dialers down on one reaper
// thread: once a close has stalled there, every later close would stall as
// well, so those are given only this long.
constexpr std::chrono::milliseconds kCloseWhileStuck{100};
std::atomic<bool> reaper_stuck{false};

}  // namespace

void CloseSocket(nng_socket socket, const std::string& what) {
  if (nng_socket_id(socket) <= 0) return;
  for (nng_pipe_ev event : {NNG_PIPE_EV_ADD_PRE, NNG_PIPE_EV_ADD_POST, NNG_PIPE_EV_REM_POST})
    nng_pipe_notify(socket, event, nullptr, nullptr);
  std::packaged_task<void()> close([socket] { nng_close(socket); });
  std::future<void> closed = close.get_future();
  std::thread closer;
  try {
    closer = std::thread(std::move(close));
  } catch (const std::system_error&) {  // no thread to be had: close here, without the deadline
    nng_close(socket);
    return;
  }
  const bool stuck = reaper_stuck;
  const std::chrono::milliseconds limit = stuck ? kCloseWhileStuck : kCloseDeadline;
  if (closed.wait_for(limit) == std::future_status::ready) {
    closer.join();
    return;
  }
  closer.detach();
  if (stuck) {
    Log("closing " + what + " left to NNG's stuck reaper");
    return;
  }
  reaper_stuck = true;
  Log("closing " + what + " did not finish within " + std::to_string(kCloseDeadline.count()) +
      " s (NNG can stall a close that races a connection's teardown, and then every later close); going on "
      "without waiting for it, and giving later closes " +
      std::to_string(kCloseWhileStuck.count()) + " ms");
}

}  // namespace shoal
