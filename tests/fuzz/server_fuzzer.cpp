// The parameter server's request handler: a live ParameterServer over
// inproc:// fed a sequence of requests, and asked for its stats after each,
// which it must answer. A request is either raw bytes or one built from the
// input's choices with a valid header (the plan's hash, a worker's
// incarnation), so that the handler's checks past Decode are reached:
// steps, keys, counts and encodings that fit the plan or almost do.
// The first byte picks the consistency model. Requests the server parks are
// left waiting (each within 20 ms of its send); the next input starts a new server.
#include <fuzzer/FuzzedDataProvider.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "comm/message.h"
#include "config/job.h"
#include "plan/plan.h"
#include "ps/server.h"
#include "tiny_job.h"

namespace shoal {
namespace {

constexpr int kModels = 4;
const char* const kConsistency[kModels] = {"bsp", "ssp, staleness: 1", "async", "easgd, easgd_tau: 2"};

// Two workers, one server (tiny_job.h), under consistency model `model`.
Plan MakeFuzzPlan(int model, const std::string& endpoint) {
  const std::string text = TinyJob(1, kConsistency[model]);
  JobConfig job;
  Plan plan;
  PlanOptions options;
  options.endpoints = {endpoint};
  Status s = ParseJob(text, "fuzz.yaml", &job);
  if (s.ok()) s = MakeDataParallelPlan(job, options, &plan);
  if (!s.ok()) {
    std::fprintf(stderr, "server_fuzzer: %s\n", s.ToString().c_str());
    std::abort();
  }
  return plan;
}

uint64_t Incarnation(uint32_t sender) { return sender < 2 ? 100 + sender : 0; }

// A request the input describes, encoded.
std::string BuildRequest(FuzzedDataProvider& in, const Plan& plan) {
  if (in.ConsumeBool()) return in.ConsumeRandomLengthString(256);
  MsgHeader h;
  h.type = static_cast<MsgType>(in.ConsumeIntegralInRange<uint16_t>(1, 13));
  h.plan_hash = in.ConsumeProbability<float>() < 0.95f ? plan.hash_value() : in.ConsumeIntegral<uint64_t>();
  h.step = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, 8) : in.ConsumeIntegral<uint64_t>();
  const uint32_t senders[] = {0, 1, 2, kToolSender};
  h.sender = senders[in.ConsumeIntegralInRange(0, 3)];
  h.incarnation =
      in.ConsumeProbability<float>() < 0.9f ? Incarnation(h.sender) : in.ConsumeIntegral<uint64_t>();
  const uint32_t slice_floats[] = {12, 3, 6, 2};
  std::vector<std::vector<float>> values;
  std::vector<EntryRef> entries;
  std::string text;
  if (CarriesText(h.type)) {
    text = in.ConsumeRandomLengthString(128);
  } else {
    const int n = in.ConsumeIntegralInRange(0, 5);
    for (int i = 0; i < n; ++i) {
      const uint32_t key = in.ConsumeIntegralInRange<uint32_t>(0, 4);
      uint32_t count = key < 4 ? slice_floats[key] : 1;
      if (in.ConsumeProbability<float>() < 0.1f) count = in.ConsumeIntegralInRange<uint32_t>(0, 16);
      values.emplace_back(count, in.ConsumeFloatingPoint<float>());
      entries.push_back(
          {key, values.back().data(), count, in.ConsumeBool() ? ValueEncoding::kF16 : ValueEncoding::kF32});
    }
  }
  std::string bytes(EncodedSize(entries, text), '\0');
  Encode(h, entries, text, reinterpret_cast<unsigned char*>(bytes.data()));
  return bytes;
}

// Sends `bytes` on a context of its own; waits up to `wait_ms` for a reply,
// leaving the context open if none came (the server parked the request).
bool Send(nng_socket sock, const std::string& bytes, int wait_ms, std::vector<nng_ctx>* parked,
          std::string* reply) {
  nng_ctx ctx;
  if (nng_ctx_open(&ctx, sock) != 0) return false;
  nng_ctx_set_ms(ctx, NNG_OPT_SENDTIMEO, 1000);
  nng_ctx_set_ms(ctx, NNG_OPT_RECVTIMEO, wait_ms);
  nng_aio* aio = nullptr;
  nng_msg* msg = nullptr;
  bool answered = false;
  if (nng_aio_alloc(&aio, nullptr, nullptr) == 0 && nng_msg_alloc(&msg, 0) == 0 &&
      nng_msg_append(msg, bytes.data(), bytes.size()) == 0) {
    nng_aio_set_msg(aio, msg);
    nng_ctx_send(ctx, aio);
    nng_aio_wait(aio);
    if (nng_aio_result(aio) == 0) {
      nng_ctx_recv(ctx, aio);
      nng_aio_wait(aio);
      if (nng_aio_result(aio) == 0) {
        nng_msg* got = nng_aio_get_msg(aio);
        if (reply) reply->assign(static_cast<const char*>(nng_msg_body(got)), nng_msg_len(got));
        nng_msg_free(got);
        answered = true;
      }
    } else {
      nng_msg_free(msg);
    }
  } else if (msg) {
    nng_msg_free(msg);
  }
  if (aio) nng_aio_free(aio);
  if (answered)
    nng_ctx_close(ctx);
  else
    parked->push_back(ctx);
  return answered;
}

}  // namespace
}  // namespace shoal

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  FuzzedDataProvider in(data, size);
  static int servers = 0;
  const std::string endpoint = "inproc://server-fuzzer-" + std::to_string(servers++);
  const Plan plan = MakeFuzzPlan(in.ConsumeIntegralInRange(0, kModels - 1), endpoint);
  ParameterServer server(plan, ServerOptions{});
  if (!server.Start().ok()) std::abort();
  nng_socket sock;
  if (nng_req0_open(&sock) != 0 || nng_dial(sock, endpoint.c_str(), nullptr, 0) != 0) std::abort();
  std::vector<nng_ctx> parked;
  std::string stats_request(EncodedSize({}, ""), '\0');
  Encode({MsgType::kStats, plan.hash_value(), 0, kToolSender, 0}, {}, "",
         reinterpret_cast<unsigned char*>(stats_request.data()));
  for (int i = 0; i < 24 && in.remaining_bytes() > 0; ++i) {
    (void)Send(sock, BuildRequest(in, plan), 20, &parked, nullptr);
    std::string reply;
    MessageView view;
    if (!Send(sock, stats_request, 5000, &parked, &reply) ||
        !Decode(reinterpret_cast<const unsigned char*>(reply.data()), reply.size(), &view).ok() ||
        view.header.type != MsgType::kStats) {
      std::fprintf(stderr, "server_fuzzer: the server stopped answering its stats after request %d\n", i);
      std::abort();
    }
  }
  for (nng_ctx ctx : parked) nng_ctx_close(ctx);
  nng_close(sock);
  return 0;
}
