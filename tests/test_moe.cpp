// tests/test_moe.cpp — workloads/model/moe.hpp: expert loads, device shares, capacity drops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "workloads/model/moe.hpp"

using namespace ls::wl;

namespace {
MoeSpec spec(int experts) {
  MoeSpec m;
  m.experts = experts;
  m.top_k = 2;
  return m;
}
}  // namespace

TEST_CASE("balanced routing gives every expert 1/E and every device factor 1") {
  const Routing r = route_tokens(spec(8), 4);
  for (double l : r.expert_load) CHECK(l == doctest::Approx(1.0 / 8));
  for (double s : r.device_share) CHECK(s == doctest::Approx(0.25));
  for (double f : r.device_factor) CHECK(f == doctest::Approx(1.0));
  CHECK(r.dropped_fraction == 0.0);
}

TEST_CASE("an explicit load vector is normalised; devices own contiguous expert blocks") {
  MoeSpec m = spec(4);
  m.routing = RoutingKind::load;
  m.load = {4, 1, 1, 2};
  const Routing r = route_tokens(m, 2);
  // Device 0 owns experts 0,1: (4+1)/8; device 1 owns 2,3: (1+2)/8.
  CHECK(r.device_share[0] == doctest::Approx(5.0 / 8));
  CHECK(r.device_share[1] == doctest::Approx(3.0 / 8));
  CHECK(r.device_factor[0] == doctest::Approx(1.25));
}

TEST_CASE("zipf routing: deterministic per seed, skewed, sums to one") {
  MoeSpec m = spec(16);
  m.routing = RoutingKind::zipf;
  m.zipf_alpha = 1.2;
  m.routing_seed = 3;
  const Routing a = route_tokens(m, 4), b = route_tokens(m, 4);
  CHECK(a.expert_load == b.expert_load);
  CHECK(std::accumulate(a.expert_load.begin(), a.expert_load.end(), 0.0) == doctest::Approx(1.0));
  // The hottest expert has rank 1: share 1 / H(16, 1.2).
  double h = 0;
  for (int k = 1; k <= 16; ++k) h += std::pow(k, -1.2);
  CHECK(*std::max_element(a.expert_load.begin(), a.expert_load.end()) == doctest::Approx(1.0 / h));
  m.routing_seed = 4;
  CHECK(route_tokens(m, 4).expert_load != a.expert_load);
}

TEST_CASE("capacity factor drops the tokens above capacity") {
  // Loads 4:1:1:2 of 8 → shares 0.5, 0.125, 0.125, 0.25. Capacity 1.25 × 1/4 =
  // 0.3125 per expert: expert 0 drops 0.5 − 0.3125 = 0.1875 of the routed tokens.
  MoeSpec m = spec(4);
  m.routing = RoutingKind::load;
  m.load = {4, 1, 1, 2};
  m.capacity_factor = 1.25;
  const Routing r = route_tokens(m, 4);
  CHECK(r.dropped_fraction == doctest::Approx(0.1875));
  CHECK(r.device_share[0] == doctest::Approx(0.3125));
  CHECK(r.device_factor[0] == doctest::Approx(1.25));
}

TEST_CASE("bad routing input throws") {
  MoeSpec m = spec(4);
  m.routing = RoutingKind::load;
  m.load = {1, 2};
  CHECK_THROWS_AS(route_tokens(m, 2), std::invalid_argument);
  CHECK_THROWS_AS(route_tokens(spec(6), 4), std::invalid_argument);
}
