#include "ps/stats_poller.h"

#include <doctest/doctest.h>

#include "server_fixture.h"

namespace shoal {
namespace {

TEST_CASE("dl-top's view: a live server's counters as it reports them, and rates between two polls") {
  ServerFixture f("async");
  StatsPoller poller;
  REQUIRE(poller.Open(f.plan, kTimeoutMs).ok());
  const JobSample first = poller.Poll();
  REQUIRE(first.servers.size() == 1);
  REQUIRE(first.servers[0].status.ok());
  nlohmann::json view = JobView(f.plan, {}, first);
  CHECK(view["reachable"] == 1);
  CHECK(view["interval_s"].is_null());
  CHECK(view["servers"][0]["updates_per_s"].is_null());  // one poll: no rates yet
  CHECK(view["last_checkpoint_step"].is_null());
  CHECK(view["servers"][0]["bytes_in"].get<uint64_t>() > 0);  // the workers' joins, and this request

  auto worker0 = Connect(f), worker1 = Connect(f);
  Reply reply;
  for (int step = 0; step < 3; ++step)
    REQUIRE(Update(worker0.get(), f, step, 0, MakeGrads(0, step), &reply).ok());
  REQUIRE(Update(worker1.get(), f, 0, 1, MakeGrads(1, 0), &reply).ok());
  const JobSample second = poller.Poll();
  view = JobView(f.plan, first, second);
  const ServerStats truth = f.server->stats();
  const nlohmann::json& server = view["servers"][0];
  CHECK(server["version"] == truth.version);
  CHECK(server["updates_received"] == truth.updates_received);
  CHECK(server["updates_received"] == 4);
  CHECK(server["parked"] == 0);
  // The server's own clock: busy handling requests, encoding replies in them, decoding them.
  CHECK(truth.handle_s > 0);
  CHECK(truth.encode_s > 0);
  CHECK(truth.decode_s > 0);
  CHECK(truth.encode_s <= truth.handle_s);
  CHECK(view["worker_steps"] == nlohmann::json::array({3, 1}));
  CHECK(view["slowest_worker"] == 1);
  CHECK(view["lag"] == 2);
  const double seconds = second.seconds - first.seconds;
  CHECK(view["interval_s"].get<double>() == doctest::Approx(seconds));
  CHECK(server["updates_per_s"].get<double>() == doctest::Approx(4 / seconds));
  CHECK(server["steps_per_s"].get<double>() == doctest::Approx(truth.version / seconds));
  // Every update's bytes went in; the bytes out are the replies, this one's not yet among them.
  const uint64_t in = second.servers[0].stats["bytes_in"].get<uint64_t>() -
                      first.servers[0].stats["bytes_in"].get<uint64_t>();
  CHECK(in > 4 * (12 + 3) * sizeof(float));
  CHECK(server["bytes_in_per_s"].get<double>() == doctest::Approx(in / seconds));
  CHECK(f.Stop().ok());

  // A server that has gone is named, with why, and counts as unreachable.
  const JobSample gone = poller.Poll();
  REQUIRE_FALSE(gone.servers[0].status.ok());
  view = JobView(f.plan, second, gone);
  CHECK(view["reachable"] == 0);
  CHECK(view["servers"][0]["reachable"] == false);
  CHECK(view["servers"][0]["error"].get<std::string>().find(f.endpoint) != std::string::npos);
  CHECK(view["slowest_worker"].is_null());
}

}  // namespace
}  // namespace shoal
