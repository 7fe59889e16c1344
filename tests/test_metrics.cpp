// tests/test_metrics.cpp — the metric families of workloads/analysis/metrics.hpp on hand-made
// inputs (closed forms), and the workloads vocabulary on top of the sim kernel.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "workloads/analysis/link_groups.hpp"
#include "workloads/analysis/metrics.hpp"
#include "workloads/spec/vocabulary.hpp"

using namespace ls;
using namespace ls::wl;

TEST_CASE("percentile is nearest-rank, never interpolated") {
  CHECK(percentile({}, 0.5) == 0);
  // ceil(q·n) − 1 into the sorted values [1, 2, 3, 4].
  CHECK(percentile({3, 1, 2, 4}, 0.5) == 2);
  CHECK(percentile({3, 1, 2, 4}, 0.99) == 4);
  CHECK(percentile({3, 1, 2, 4}, 0.25) == 1);
  CHECK(percentile({7}, 0.99) == 7);
}

TEST_CASE("fold_step_times: mean, p50, p99, max of the per-step times") {
  Result r;
  fold_step_times(r, {1.0, 3.0, 2.0});
  CHECK(r.step_stats.step_s == std::vector<double>{1.0, 3.0, 2.0});
  CHECK(r.step_stats.mean_s == doctest::Approx(2.0));
  CHECK(r.step_stats.p50_s == 2.0);
  CHECK(r.step_stats.p99_s == 3.0);
  CHECK(r.step_stats.max_s == 3.0);
  CHECK(r.step_time_s == r.step_stats.mean_s);
}

TEST_CASE("fold_critical_path: buckets in seconds, shares of the first step") {
  CriticalWalk w;
  w.device = 5;
  w.compute = sim::Time::from_seconds(2.0);
  w.wait = sim::Time::from_seconds(1.0);
  w.comm[slot(Axis::tp)] = sim::Time::from_seconds(0.5);
  w.comm[slot(Axis::edp)] = sim::Time::from_seconds(0.5);  // counts in share_comm, not in comm_dp_s
  Result r;
  fold_critical_path(r, w, 4.0);
  const auto& cp = r.critical_path;
  CHECK(cp.device == 5);
  CHECK(cp.compute_s == 2.0);
  CHECK(cp.wait_s == 1.0);
  CHECK(cp.comm_tp_s == 0.5);
  CHECK(cp.comm_dp_s == 0.0);
  // 2 + 1 + 0.5 + 0.5 = 4 s: the shares tile the step.
  CHECK(cp.share_compute == 0.5);
  CHECK(cp.share_wait == 0.25);
  CHECK(cp.share_comm == 0.25);
}

TEST_CASE("vocabulary: axes are group slots, kinds of work are tags, one name table") {
  for (int a = 0; a < kAxisCount; ++a) {
    const auto axis = static_cast<Axis>(a);
    CHECK(slot(axis) < sim::kGroupSlots);
    sim::Op op;
    op.group_slot = slot(axis);
    CHECK(axis_of(op) == axis);
  }
  CHECK(slot(Axis::none) == sim::kNoGroup);
  CHECK(std::string(axis_name(Axis::edp)) == "expert-dp");
  CHECK(std::string(axis_name(Axis::none)) == "none");
  CHECK(reported_axis(Axis::edp) == Axis::dp);
  CHECK(reported_axis(Axis::tp) == Axis::tp);
  // An op nobody tagged is `other`.
  CHECK(work_of(sim::Op{}) == Work::other);
  sim::Op f;
  f.tag = tag(Work::backward_weight);
  CHECK(work_of(f) == Work::backward_weight);
}

TEST_CASE("link groups: identical links fold into one row, ranked by bottleneck time, every class's busiest kept") {
  // Two nodes' GPU→NVSwitch links behave the same (one group of 4, its numbers written
  // as the sets of the members' values); one NIC→leaf cable is a bottleneck longer than
  // any of them; an idle leaf→spine link forms a class of its own with no traffic.
  std::vector<LinkStat> links;
  for (int n = 0; n < 2; ++n)
    for (int g = 0; g < 2; ++g)
      links.push_back({fmt::format("node{}.gpu{}->node{}.nvswitch", n, g, n), "nvlink", 1e9, 0.1, 0.2, 0.5, 0.2});
  links.push_back({"node1.nic0->leaf0", "infiniband", 5e8, 0.05, 0.5, 0.1, 0.4});
  links.push_back({"node0.nic0->leaf0", "infiniband", 2e8, 0.02, 0.2, 0.1, 0.1});
  links.push_back({"leaf0->spine0", "infiniband", 0, 0, 0, 0, 0});
  const auto ranked = group_links(links, 1.0);
  REQUIRE(ranked.size() == 4);
  CHECK(ranked[0].pattern == "node1.nic0->leaf0");  // 0.4 s as a bottleneck: first
  CHECK(ranked[1].pattern == "node{0,1}.gpu{0,1}->node{0,1}.nvswitch");
  CHECK(ranked[1].count == 4);
  CHECK(ranked[1].link_class == "nvlink node*.gpu*->node*.nvswitch");
  CHECK(ranked[1].bottleneck_fraction == doctest::Approx(0.2));
  // Only the top one, plus the busiest of each class with traffic.
  const auto shown = reported_link_groups(ranked, 1);
  REQUIRE(shown.size() == 2);
  CHECK(shown[0].busiest_of_class);
  CHECK(shown[1].pattern == "node{0,1}.gpu{0,1}->node{0,1}.nvswitch");
  CHECK(name_shape("node12.gpu3->node12.nvswitch") == "node*.gpu*->node*.nvswitch");
  // The bottleneck: the NIC cable's class, 0.4 of the step; NVLink is 0.2 behind, not tied.
  const LinkBottleneck b = link_bottleneck(ranked);
  CHECK(b.present);
  CHECK(b.link_class == "infiniband node*.nic*->leaf*");
  CHECK(b.fraction == doctest::Approx(0.4));
  CHECK(b.tied.empty());
}

TEST_CASE("link groups: figures within 1 % merge, value sets as ranges, no two groups printed alike") {
  std::vector<LinkStat> links;
  // Leaf→NIC cables 0..3 and 8..11 carry 1 GB (one 0.5 % heavier: still one group);
  // cables 4..7 carry 2 GB.
  for (int i = 0; i < 12; ++i) {
    const double bytes = (i >= 4 && i < 8) ? 2e9 : (i == 9 ? 1.005e9 : 1e9);
    links.push_back({fmt::format("leaf{}->node{}.nic0", i / 4, i), "infiniband", bytes, bytes / 1e10, 0.1, 0.1, 0.1 * bytes / 1e9});
  }
  const auto ranked = group_links(links, 1.0);
  REQUIRE(ranked.size() == 2);
  CHECK(ranked[0].pattern == "leaf1->node{4..7}.nic0");
  CHECK(ranked[1].pattern == "leaf{0,2}->node{0..3,8..11}.nic0");
  CHECK(ranked[1].count == 8);
  // Crossed cables against straight ones: the value sets coincide, so each names a member.
  std::vector<LinkStat> crossed{{"leaf0->node0.nic0", "infiniband", 1e9, 0.1, 0.1, 0.1, 0.1},
                                {"leaf1->node1.nic0", "infiniband", 1e9, 0.1, 0.1, 0.1, 0.1},
                                {"leaf0->node1.nic0", "infiniband", 3e9, 0.3, 0.3, 0.3, 0.3},
                                {"leaf1->node0.nic0", "infiniband", 3e9, 0.3, 0.3, 0.3, 0.3}};
  const auto pair = group_links(crossed, 1.0);
  REQUIRE(pair.size() == 2);
  CHECK(pair[0].pattern != pair[1].pattern);
  CHECK(pair[0].pattern == "leaf{0,1}->node{0,1}.nic0 (with leaf0->node1.nic0)");
  // Two classes within a point of each other are both named as the bottleneck.
  crossed.push_back({"node0.gpu0->node0.nvswitch", "nvlink", 1e9, 0.295, 0.295, 1.0, 0.295});
  const LinkBottleneck b = link_bottleneck(group_links(crossed, 1.0));
  REQUIRE(b.tied.size() == 1);
  CHECK(b.tied[0].link_class == "nvlink node*.gpu*->node*.nvswitch");
}
