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

#include "comm/socket_close.h"
#include "ops/blas.h"
#include "ops/convolution.h"
#include "ops/fast_convolution.h"
#include "ops/onednn_convolution.h"
#include "ops/winograd_convolution.h"

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
  std::vector<float> x(static_cast<size_t>(batch) * in, 0.5f), w(in * out, 0.01f),
      y(static_cast<size_t>(batch) * out), dw(in * out), dx(x.size());
  return Rate(
      6.0 * batch * in * out, seconds,
      [&] {
        Sgemm(false, true, batch, out, in, 1.0f, x.data(), w.data(), 0.0f, y.data());
        Sgemm(true, false, out, in, batch, 1.0f, y.data(), x.data(), 0.0f, dw.data());
        Sgemm(false, false, batch, in, out, 1.0f, y.data(), w.data(), 0.0f, dx.data());
      },
      times);
}

// kCalibrationConvolution's step, in direct FLOPs a second, by `fast` where
// it is not null, else by im2col + sgemm.
double ConvolutionGflops(int batch, double seconds, FastConvolution* fast) {
  const ConvGeometry& g = kCalibrationConvolution;
  std::vector<float> x(static_cast<size_t>(batch) * g.channels * g.height * g.width, 0.5f),
      w(static_cast<size_t>(g.filters) * g.col_rows(), 0.01f), b(g.filters, 0.0f),
      y(static_cast<size_t>(batch) * g.filters * g.col_cols()), dw(w.size()), db(b.size()), dx(x.size()),
      scratch;
  const double flops = 3.0 * 2.0 * batch * g.filters * g.col_rows() * g.col_cols();
  return Rate(flops, seconds, [&] {
    if (fast && fast->Forward(batch, x.data(), w.data(), b.data(), y.data())) {
      fast->Backward(batch, x.data(), w.data(), y.data(), dx.data(), GradWrite::kSet, dw.data(), db.data());
      return;
    }
    ConvolutionForward(g, batch, x.data(), w.data(), b.data(), y.data(), &scratch);
    ConvolutionBackward(g, batch, x.data(), w.data(), y.data(), dx.data(), dw.data(), db.data(),
                        GradWrite::kSet, &scratch);
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
  // The convolution rate is the direct kernel's (oneDNN where this build and
  // process use it), which every geometry has; Winograd's, on the same
  // geometry, is how much faster the layers it takes run.
  std::unique_ptr<FastConvolution> direct = NewOneDnnConvolution(kCalibrationConvolution);
  const double convolution = ConvolutionGflops(32, seconds, direct.get());
  const double rows = 32.0 * kCalibrationConvolution.col_cols();  // a row a record's output pixel
  profile->layer_gflops["convolution"] = convolution * (rows + h) / rows;
  std::unique_ptr<FastConvolution> winograd = NewWinogradConvolution(kCalibrationConvolution);
  // Within what a profile may say (a very short, noisy measurement could stray).
  if (winograd)
    profile->winograd_speedup = std::clamp(ConvolutionGflops(32, seconds, winograd.get()) / convolution,
                                           kLowestWinogradSpeedup, kHighestWinogradSpeedup);
  double mean = 0.0, square = 0.0;
  for (double t : times) mean += t / times.size();
  for (double t : times) square += (t - mean) * (t - mean) / times.size();
  // On a machine busy with other work the steps may spread more than a
  // profile holds (a cv of 1). The profile then says 1.
  profile->compute_cv = mean > 0.0 ? std::min(1.0, std::sqrt(square) / mean) : 0.0;
  profile->compute_cv_seconds = mean;
  profile->server_memory_gb_per_s = MemoryGbPerS(seconds);
}

// NNG 1.5 has no blocking send or receive on a context: these wait on `aio`.
int ContextReceive(nng_ctx ctx, nng_aio* aio, nng_msg** msg) {
  nng_ctx_recv(ctx, aio);
  nng_aio_wait(aio);
  const int rv = nng_aio_result(aio);
  *msg = rv == 0 ? nng_aio_get_msg(aio) : nullptr;
  return rv;
}

int ContextSend(nng_ctx ctx, nng_aio* aio, nng_msg* msg) {
  nng_aio_set_msg(aio, msg);
  nng_ctx_send(ctx, aio);
  nng_aio_wait(aio);
  const int rv = nng_aio_result(aio);
  if (rv != 0) nng_msg_free(msg);
  return rv;
}

// An echo server on `socket` until `stop` (polled between receive timeouts)
// or `deadline`. It answers with what it received, as a server answers
// gradients with values, on several contexts at once: a peer's next request
// comes in while an earlier echo goes out, both directions of the link busy.
void EchoLoop(nng_socket socket, const std::atomic<bool>* stop, Clock::time_point deadline) {
  constexpr int kContexts = 4;
  auto answer = [&] {
    nng_ctx ctx;
    nng_aio* aio = nullptr;
    if (nng_ctx_open(&ctx, socket) != 0) return;  // the peer's requests then time out, naming this endpoint
    if (nng_aio_alloc(&aio, nullptr, nullptr) == 0) {
      while (!stop->load() && Clock::now() < deadline) {
        nng_msg* msg = nullptr;
        nng_aio_set_timeout(aio, 100);  // then check stop
        if (ContextReceive(ctx, aio, &msg) != 0) continue;
        nng_aio_set_timeout(aio, CalibrateOptions().timeout_ms);  // as long as the peer waits for it
        ContextSend(ctx, aio, msg);
      }
      nng_aio_free(aio);
    }
    nng_ctx_close(ctx);
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < kContexts; ++i) threads.emplace_back(answer);
  for (std::thread& t : threads) t.join();
}

// A socket answering echoes (of any size) at `endpoint`; the port it bound where asked.
Status ListenEcho(const std::string& endpoint, nng_socket* socket, int* port = nullptr) {
  int rv = nng_rep0_open(socket);
  if (rv != 0) return NngError("cannot open a socket", rv);
  nng_socket_set_size(*socket, NNG_OPT_RECVMAXSZ, 0);
  nng_listener listener;
  if ((rv = nng_listen(*socket, endpoint.c_str(), &listener, 0)) != 0) {
    CloseSocket(*socket, "the echo socket");
    *socket = NNG_SOCKET_INITIALIZER;
    return NngError("cannot listen on '" + endpoint + "'", rv);
  }
  if (port != nullptr) nng_listener_get_int(listener, NNG_OPT_TCP_BOUND_PORT, port);
  return Status::Ok();
}

// Seconds per round trip of a 1-byte request and its echo, one at a time.
Status RoundTrip(nng_socket socket, double seconds, double* per_trip) {
  char byte = 'x';
  int trips = 0;
  auto start = Clock::now();
  do {
    int rv = nng_send(socket, &byte, 1, 0);
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

// Round trips of `bytes` on one context, each echo sent back as the next
// request, until `until` (one at least): how many, and when the first and
// the last came back.
struct Trips {
  long count = 0;
  Clock::time_point first, last;
};

Status Stream(nng_socket socket, size_t bytes, Clock::time_point until, int timeout_ms, Trips* trips) {
  nng_ctx ctx;
  nng_aio* aio = nullptr;
  nng_msg* msg = nullptr;
  int rv = nng_ctx_open(&ctx, socket);  // it resends as the socket does: never
  if (rv != 0) return NngError("cannot open a context", rv);
  if ((rv = nng_aio_alloc(&aio, nullptr, nullptr)) == 0 && (rv = nng_msg_alloc(&msg, bytes)) == 0) {
    nng_aio_set_timeout(aio, timeout_ms);
    do {
      if ((rv = ContextSend(ctx, aio, msg)) != 0 || (rv = ContextReceive(ctx, aio, &msg)) != 0) break;
      trips->last = Clock::now();
      if (trips->count++ == 0) trips->first = trips->last;
    } while (trips->last < until);
    if (rv == 0) nng_msg_free(msg);
  }
  if (aio != nullptr) nng_aio_free(aio);
  nng_ctx_close(ctx);
  return rv == 0 ? Status::Ok() : NngError("calibration round trip", rv);
}

// Bytes a second each way with every peer's link busy in both directions at
// once, as a step's exchange keeps a node's NIC: two round trips in flight
// per peer, all peers at once. Counted between the first echo back and the
// last, so neither the start (nothing coming back yet) nor the end (nothing
// going out) is taken for the links' rate.
Status Bandwidth(const std::vector<nng_socket>& peers, const std::vector<std::string>& endpoints,
                 double seconds, int timeout_ms, double* bytes_per_second) {
  constexpr size_t kBytes = 4 << 20;
  constexpr int kInFlight = 2;
  std::vector<Trips> trips(peers.size() * kInFlight);
  std::vector<Status> results(trips.size());
  std::vector<std::thread> threads;
  const auto until = Clock::now() + std::chrono::microseconds(static_cast<long>(seconds * 1e6));
  for (size_t i = 0; i < trips.size(); ++i)
    threads.emplace_back(
        [&, i] { results[i] = Stream(peers[i / kInFlight], kBytes, until, timeout_ms, &trips[i]); });
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < results.size(); ++i)
    if (!results[i].ok()) return results[i].Within("peer '" + endpoints[i / kInFlight] + "'");
  long count = 0;
  Clock::time_point first = trips[0].first, last = trips[0].last;
  for (const Trips& t : trips) {
    count += t.count;
    first = std::min(first, t.first);
    last = std::max(last, t.last);
  }
  const double span = std::chrono::duration<double>(last - first).count();
  if (span <= 0.0)
    return Status::IOError("the calibration's round trips all came back at once: raise --seconds");
  *bytes_per_second = static_cast<double>(count - 1) * kBytes / span;
  return Status::Ok();
}

}  // namespace

Status ServeEcho(const std::string& endpoint, double seconds) {
  nng_socket socket;
  SHOAL_RETURN_IF_ERROR(ListenEcho(endpoint, &socket));
  std::atomic<bool> stop{false};
  EchoLoop(socket, &stop, Clock::now() + std::chrono::milliseconds(static_cast<long>(seconds * 1000)));
  CloseSocket(socket, "the echo socket at '" + endpoint + "'");
  return Status::Ok();
}

Status Calibrate(const CalibrateOptions& options, ClusterProfile* profile) {
  *profile = ClusterProfile();
  profile->name = options.name;
  profile->nodes = options.nodes;

  // The peers first: one that cannot be reached fails the run before it measures anything.
  nng_socket server = NNG_SOCKET_INITIALIZER;
  std::vector<nng_socket> clients;
  std::atomic<bool> stop{false};
  std::thread echo;
  std::vector<std::string> endpoints = options.peers;
  auto cleanup = [&] {
    stop = true;
    if (echo.joinable()) echo.join();
    CloseSocket(server, "the echo socket");
    for (nng_socket client : clients) CloseSocket(client, "a connection to an echo peer");
  };
  Status s;
  if (endpoints.empty()) {  // an echo server in this process, on loopback
    int port = 0;
    s = ListenEcho("tcp://127.0.0.1:0", &server, &port);
    if (s.ok()) {
      endpoints.push_back("tcp://127.0.0.1:" + std::to_string(port));
      echo = std::thread(EchoLoop, server, &stop, Clock::time_point::max());
    }
  }
  for (size_t i = 0; s.ok() && i < endpoints.size(); ++i) {
    nng_socket client;
    int rv = nng_req0_open(&client);
    if (rv != 0) {
      s = NngError("cannot open a socket", rv);
      break;
    }
    clients.push_back(client);
    nng_socket_set_ms(client, NNG_OPT_SENDTIMEO, options.timeout_ms);
    nng_socket_set_ms(client, NNG_OPT_RECVTIMEO, options.timeout_ms);
    nng_socket_set_ms(client, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
    nng_socket_set_size(client, NNG_OPT_RECVMAXSZ, 0);
    if ((rv = nng_dial(client, endpoints[i].c_str(), nullptr, 0)) != 0)
      s = NngError("cannot reach the calibration peer '" + endpoints[i] + "'", rv);
  }
  if (s.ok()) MeasureCompute(options.seconds_each, profile);
  // Latency: each peer's in turn, averaged.
  double latency = 0.0;
  for (size_t i = 0; s.ok() && i < clients.size(); ++i) {
    double per_trip = 0.0;
    s = RoundTrip(clients[i], options.seconds_each / clients.size(), &per_trip);
    if (!s.ok()) s = s.Within("peer '" + endpoints[i] + "'");
    latency += per_trip / 2.0 / clients.size();
  }
  double bytes_per_second = 0.0;
  if (s.ok()) s = Bandwidth(clients, endpoints, options.seconds_each, options.timeout_ms, &bytes_per_second);
  cleanup();
  if (!s.ok()) return s;
  profile->latency_us = latency * 1e6;
  profile->bandwidth_gbps = bytes_per_second * 8.0 / 1e9;
  return Status::Ok();
}

}  // namespace shoal
