#include "plan/calibrate.h"

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "ops/blas.h"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

Status NngError(const std::string& what, int rv) { return Status::IOError(what + ": " + nng_strerror(rv)); }

double SgemmGflops(double seconds) {
  const int n = 384;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.0f);
  SetComputeThreads(1);
  Sgemm(false, false, n, n, n, 1.0f, a.data(), b.data(), 0.0f, c.data());  // warm up
  int runs = 0;
  auto start = Clock::now();
  do {
    Sgemm(false, false, n, n, n, 1.0f, a.data(), b.data(), 0.0f, c.data());
    ++runs;
  } while (Since(start) < seconds);
  return 2.0 * n * n * n * runs / Since(start) / 1e9;
}

// An echo server on `socket` until `stop` (polled between receive timeouts).
// It answers with what it received, as a server answers gradients with
// values: the bandwidth measured is that of an exchange, both ways at once.
void EchoLoop(nng_socket socket, const std::atomic<bool>* stop, Clock::time_point deadline) {
  while (!stop->load() && Clock::now() < deadline) {
    nng_msg* msg = nullptr;
    if (nng_recvmsg(socket, &msg, 0) != 0) continue;  // timed out: check stop
    if (nng_sendmsg(socket, msg, 0) != 0) nng_msg_free(msg);
  }
}

// Seconds per round trip of a `bytes` request and its echo.
Status RoundTrip(nng_socket socket, size_t bytes, double seconds, double* per_trip) {
  std::vector<char> payload(bytes, 'x');
  int trips = 0;
  auto start = Clock::now();
  do {
    int rv = nng_send(socket, payload.data(), payload.size(), 0);
    if (rv != 0) return NngError("calibration send", rv);
    char* reply = nullptr;
    size_t size = 0;
    rv = nng_recv(socket, &reply, &size, NNG_FLAG_ALLOC);
    if (rv != 0) return NngError("calibration receive", rv);
    nng_free(reply, size);
    ++trips;
  } while (Since(start) < seconds && trips < 100000);
  *per_trip = Since(start) / trips;
  return Status::Ok();
}

}  // namespace

Status ServeEcho(const std::string& endpoint, double seconds) {
  nng_socket socket;
  int rv = nng_rep0_open(&socket);
  if (rv != 0) return NngError("cannot open a socket", rv);
  nng_socket_set_ms(socket, NNG_OPT_RECVTIMEO, 200);
  nng_socket_set_size(socket, NNG_OPT_RECVMAXSZ, 0);
  rv = nng_listen(socket, endpoint.c_str(), nullptr, 0);
  if (rv != 0) {
    nng_close(socket);
    return NngError("cannot listen on '" + endpoint + "'", rv);
  }
  std::atomic<bool> stop{false};
  EchoLoop(socket, &stop, Clock::now() + std::chrono::milliseconds(static_cast<long>(seconds * 1000)));
  nng_close(socket);
  return Status::Ok();
}

Status Calibrate(const CalibrateOptions& options, ClusterProfile* profile) {
  *profile = ClusterProfile();
  profile->name = options.name;
  profile->nodes = options.nodes;
  profile->gflops_per_worker = SgemmGflops(options.seconds_each);

  nng_socket server = NNG_SOCKET_INITIALIZER, client = NNG_SOCKET_INITIALIZER;
  std::atomic<bool> stop{false};
  std::thread echo;
  std::string endpoint = options.peer;
  auto cleanup = [&] {
    stop = true;
    if (echo.joinable()) echo.join();
    if (nng_socket_id(server) > 0) nng_close(server);
    if (nng_socket_id(client) > 0) nng_close(client);
  };
  int rv;
  if (endpoint.empty()) {
    if ((rv = nng_rep0_open(&server)) != 0) return NngError("cannot open a socket", rv);
    nng_socket_set_ms(server, NNG_OPT_RECVTIMEO, 100);
    nng_socket_set_size(server, NNG_OPT_RECVMAXSZ, 0);
    nng_listener listener;
    if ((rv = nng_listen(server, "tcp://127.0.0.1:0", &listener, 0)) != 0) {
      cleanup();
      return NngError("cannot listen on loopback", rv);
    }
    int port = 0;
    nng_listener_get_int(listener, NNG_OPT_TCP_BOUND_PORT, &port);
    endpoint = "tcp://127.0.0.1:" + std::to_string(port);
    echo = std::thread(EchoLoop, server, &stop, Clock::now() + std::chrono::seconds(60));
  }
  if ((rv = nng_req0_open(&client)) != 0) {
    cleanup();
    return NngError("cannot open a socket", rv);
  }
  nng_socket_set_ms(client, NNG_OPT_SENDTIMEO, options.timeout_ms);
  nng_socket_set_ms(client, NNG_OPT_RECVTIMEO, options.timeout_ms);
  nng_socket_set_ms(client, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
  if ((rv = nng_dial(client, endpoint.c_str(), nullptr, 0)) != 0) {
    cleanup();
    return NngError("cannot reach the calibration peer '" + endpoint + "'", rv);
  }
  double small = 0.0, large = 0.0;
  const size_t kLarge = 4 << 20;
  Status s = RoundTrip(client, 1, options.seconds_each, &small);
  if (s.ok()) s = RoundTrip(client, kLarge, options.seconds_each, &large);
  cleanup();
  if (!s.ok()) return s.Within("peer '" + endpoint + "'");
  profile->latency_us = small / 2.0 * 1e6;
  // The payload went there and back: the cost model charges each direction.
  const double transfer = std::max(large - small, 1e-9);
  profile->bandwidth_gbps = 2.0 * kLarge * 8.0 / transfer / 1e9;
  return Status::Ok();
}

}  // namespace shoal
