#include "comm/socket_close.h"

#include <future>
#include <thread>

#include "core/log.h"

namespace shoal {

void CloseSocket(nng_socket socket, const std::string& what) {
  if (nng_socket_id(socket) <= 0) return;
  for (nng_pipe_ev event : {NNG_PIPE_EV_ADD_PRE, NNG_PIPE_EV_ADD_POST, NNG_PIPE_EV_REM_POST})
    nng_pipe_notify(socket, event, nullptr, nullptr);
  std::packaged_task<void()> close([socket] { nng_close(socket); });
  std::future<void> closed = close.get_future();
  std::thread closer(std::move(close));
  if (closed.wait_for(kCloseDeadline) == std::future_status::ready) {
    closer.join();
    return;
  }
  closer.detach();
  Log("closing " + what + " did not finish within " + std::to_string(kCloseDeadline.count()) +
      " s (NNG can stall a close that races a connection's teardown); going on without waiting for it");
}

}  // namespace shoal
