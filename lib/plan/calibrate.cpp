#include "plan/calibrate.h"

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "ops/blas.h"
#include "ops/convolution.h"
#include "ops/onednn_convolution.h"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

Status NngError(const std::string& what, int rv) { return Status::IOError(what + ": " + nng_strerror(rv)); }

// Runs `step` (of `flops` floating-point operations) for about `seconds`
// after one warm-up: the rate in GFLOP/s, and each run's time.
template <typename Step>
double Rate(double flops, double seconds, Step step, std::vector<double>* times = nullptr) {
  step();
  auto start = Clock::now();
  int runs = 0;
  do {
    auto t = Clock::now();
    step();
    if (times) times->push_back(Since(t));
    ++runs;
  } while (Since(start) < seconds);
  return flops * runs / Since(start) / 1e9;
}

double SgemmGflops(double seconds) {
  const int n = 384;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.0f);
  return Rate(2.0 * n * n * n, seconds,
              [&] { Sgemm(false, false, n, n, n, 1.0f, a.data(), b.data(), 0.0f, c.data()); });
}

// A fully connected layer's step (forward, weight and input gradients) on `batch` records.
double FullyConnectedGflops(int batch, double seconds, std::vector<double>* times = nullptr) {
  const int in = 1024, out = 1024;
  std::vector<float> x(static_cast<size_t>(batch) * in, 0.5f), w(in * out, 0.01f), y(static_cast<size_t>(batch) * out),
      dw(in * out), dx(x.size());
  return Rate(6.0 * batch * in * out, seconds, [&] {
    Sgemm(false, true, batch, out, in, 1.0f, x.data(), w.data(), 0.0f, y.data());
    Sgemm(true, false, out, in, batch, 1.0f, y.data(), x.data(), 0.0f, dw.data());
    Sgemm(false, false, batch, in, out, 1.0f, y.data(), w.data(), 0.0f, dx.data());
  }, times);
}

// A 5x5 convolution's step (64 to 64 channels on 28x28, padded), as the
// layers compute it: on oneDNN where this build and process use it.
double ConvolutionGflops(int batch, double seconds) {
  const ConvGeometry g{64, 28, 28, 64, 5, 1, 2};
  std::vector<float> x(static_cast<size_t>(batch) * g.channels * g.height * g.width, 0.5f),
      w(static_cast<size_t>(g.filters) * g.col_rows(), 0.01f), b(g.filters, 0.0f),
      y(static_cast<size_t>(batch) * g.filters * g.col_cols()), dw(w.size()), db(b.size()), dx(x.size()), scratch;
  const double flops = 3.0 * 2.0 * batch * g.filters * g.col_rows() * g.col_cols();
  std::unique_ptr<OneDnnConvolution> onednn = NewOneDnnConvolution(g);
  return Rate(flops, seconds, [&] {
    if (onednn && onednn->Forward(batch, x.data(), w.data(), b.data(), y.data())) {
      onednn->Backward(batch, x.data(), w.data(), y.data(), dx.data(), GradWrite::kSet, dw.data(), db.data());
      return;
    }
    ConvolutionForward(g, batch, x.data(), w.data(), b.data(), y.data(), &scratch);
    ConvolutionBackward(g, batch, x.data(), w.data(), y.data(), dx.data(), dw.data(), db.data(), GradWrite::kSet,
                        &scratch);
  });
}

// A server's memory rate: bytes read and written per second copying 64 MiB,
// as its sums, updates and replies stream values through memory.
double MemoryGbPerS(double seconds) {
  std::vector<float> from(16 << 20, 1.0f), to(from.size());
  const double gb = Rate(2.0 * from.size() * sizeof(float), seconds,
                         [&] { std::memcpy(to.data(), from.data(), from.size() * sizeof(float)); });
  volatile float keep = to[to.size() / 2];  // the copies are used
  (void)keep;
  return gb;
}

// One worker thread's compute: sgemm's rate; the fully connected and
// convolution layers' at large batches; the batch at which a layer runs at
// half its rate (rate(b) = R b / (b + h), from a small and a large batch);
// how much one step's time varies from run to run, on steps how long; and
// the memory rate a server's work runs at.
void MeasureCompute(double seconds, ClusterProfile* profile) {
  SetComputeThreads(1);
  profile->gflops_per_worker = SgemmGflops(seconds);
  std::vector<double> times;
  const double large = FullyConnectedGflops(64, seconds, &times), small = FullyConnectedGflops(4, seconds);
  // q = 4 (64 + h) / (64 (4 + h)): from 1/16 (h without bound) to 1 (h = 0); noise may step outside.
  const double q = std::clamp(small / large, 1.0 / 16 + 1e-3, 1.0);
  const double h = std::min(256.0 * (1.0 - q) / (64.0 * q - 4.0), 1e6);
  profile->half_rate_records = h;
  profile->layer_gflops["fully_connected"] = large * (64.0 + h) / 64.0;
  profile->layer_gflops["convolution"] = ConvolutionGflops(32, seconds) * (32.0 + h) / 32.0;
  double mean = 0.0, square = 0.0;
  for (double t : times) mean += t / times.size();
  for (double t : times) square += (t - mean) * (t - mean) / times.size();
  profile->compute_cv = mean > 0.0 ? std::sqrt(square) / mean : 0.0;
  profile->compute_cv_seconds = mean;
  profile->server_memory_gb_per_s = MemoryGbPerS(seconds);
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
  MeasureCompute(options.seconds_each, profile);

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
