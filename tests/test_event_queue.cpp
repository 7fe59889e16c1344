// tests/test_event_queue.cpp — EventQueue: total order (time, class, sequence),
// bulk random order, determinism; the shared 4-ary heap (sim/quad_heap.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "sim/event_queue.hpp"
#include "sim/quad_heap.hpp"

using namespace ls::sim;

namespace {
std::vector<std::uint32_t> drain_a(EventQueue& q) {
  std::vector<std::uint32_t> out;
  while (!q.empty()) out.push_back(q.pop().a);
  return out;
}
}  // namespace

TEST_CASE("orders by time first") {
  EventQueue q;
  q.push(ns(30), 0, 3);
  q.push(ns(10), 5, 1);
  q.push(ns(20), 0, 2);
  CHECK(q.size() == 3);
  CHECK(q.top().a == 1);
  CHECK(drain_a(q) == std::vector<std::uint32_t>{1, 2, 3});
}

TEST_CASE("ties: lower class first, then scheduling order") {
  EventQueue q;
  q.push(ns(5), 2, 10);
  q.push(ns(5), 1, 20);
  q.push(ns(5), 2, 11);
  q.push(ns(5), 0, 30);
  q.push(ns(5), 1, 21);
  q.push(ns(4), 255, 0);
  CHECK(drain_a(q) == std::vector<std::uint32_t>{0, 30, 20, 21, 10, 11});
}

TEST_CASE("time order holds across the whole int64 range (the 128-bit key flips the sign bit)") {
  EventQueue q;
  q.push(Time::max(), 0, 4);
  q.push(Time::from_ps(0), 255, 2);
  q.push(Time::from_ps(-1), 0, 1);
  q.push(Time::from_ps(std::numeric_limits<std::int64_t>::min()), 255, 0);
  q.push(Time::from_ps(1), 0, 3);
  CHECK(drain_a(q) == std::vector<std::uint32_t>{0, 1, 2, 3, 4});
}

TEST_CASE("payload, class and sequence are preserved") {
  EventQueue q;
  const EventId id0 = q.push(us(1), 7, 123, 456);
  const EventId id1 = q.push(us(1), 7, 1, 2);
  CHECK(id1 == id0 + 1);
  CHECK(q.pushed() == 2);
  const Event e = q.pop();
  CHECK(e.time == us(1));
  CHECK(e.cls() == 7);
  CHECK(e.seq() == id0);
  CHECK(e.a == 123);
  CHECK(e.b == 456);
}

TEST_CASE("1e5 random pushes pop in (time, class, seq) order") {
  std::mt19937_64 rng(7);
  EventQueue q;
  q.reserve(100'000);
  struct Ref {
    std::int64_t t;
    std::uint8_t cls;
    std::uint64_t seq;
  };
  std::vector<Ref> ref;
  for (std::uint32_t i = 0; i < 100'000; ++i) {
    // Few distinct times and classes so that ties are frequent.
    const std::int64_t t = static_cast<std::int64_t>(rng() % 5'000);
    const auto cls = static_cast<std::uint8_t>(rng() % 4);
    const EventId id = q.push(ps(t), cls, i);
    ref.push_back({t, cls, id});
  }
  std::sort(ref.begin(), ref.end(), [](const Ref& x, const Ref& y) {
    return std::tie(x.t, x.cls, x.seq) < std::tie(y.t, y.cls, y.seq);
  });
  bool all_match = true;
  for (const Ref& r : ref) {
    const Event e = q.pop();
    if (e.time.ps() != r.t || e.cls() != r.cls || e.seq() != r.seq) all_match = false;
  }
  CHECK(all_match);
  CHECK(q.empty());
}

TEST_CASE("deterministic: the same operations replay identically") {
  // Interleaved pushes and pops driven by a seeded generator; two queues
  // fed the same stream must pop the same (time, key, a) sequence.
  auto run = [](std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    EventQueue q;
    std::vector<std::tuple<std::int64_t, std::uint64_t, std::uint32_t>> out;
    Time now;
    for (std::uint32_t i = 0; i < 20'000; ++i) {
      const auto op = rng() % 10;
      if (op < 7) {
        q.push(now + ps(static_cast<std::int64_t>(rng() % 100)), static_cast<std::uint8_t>(rng() % 3), i);
      } else {
        if (!q.empty()) {
          const Event e = q.pop();
          CHECK(e.time >= now);  // never goes back in time
          now = e.time;
          out.emplace_back(e.time.ps(), e.key, e.a);
        }
      }
    }
    return out;
  };
  const auto a = run(99), b = run(99);
  CHECK(a.size() > 1000);
  CHECK(a == b);
}

TEST_CASE("runs of one time and class: pushed between pops, into the run being drained, the same total order") {
  // What a simulation does: many events of one time and class in a row (a run), some
  // pushed at the time being popped (into the run that is draining), others later; a
  // run of a (time, class) seen before opens a second run. Against a reference that
  // sorts by (time, class, seq), over interleaved pushes and pops.
  std::mt19937_64 rng(11);
  EventQueue q;
  std::vector<std::tuple<std::int64_t, std::uint8_t, std::uint64_t>> pending;  // the reference
  Time now;
  std::size_t popped = 0, in_runs = 0;
  Time last_t = Time::max();
  std::uint8_t last_cls = 255;
  for (std::uint32_t i = 0; i < 50'000; ++i) {
    if (rng() % 3 != 0 || pending.empty()) {
      // Runs: repeat the last (time, class) most of the time; otherwise now or a little later.
      Time t = last_t;
      std::uint8_t cls = last_cls;
      if (last_t == Time::max() || last_t < now || rng() % 4 == 0) {
        t = now + ps(static_cast<std::int64_t>(rng() % 3));
        cls = static_cast<std::uint8_t>(rng() % 2);
      } else {
        ++in_runs;
      }
      const EventId id = q.push(t, cls, i);
      pending.emplace_back(t.ps(), cls, id);
      last_t = t;
      last_cls = cls;
    } else {
      const auto it = std::min_element(pending.begin(), pending.end());
      const Event e = q.pop();
      CHECK(std::make_tuple(e.time.ps(), e.cls(), e.seq()) == *it);
      now = e.time;
      pending.erase(it);
      ++popped;
    }
    CHECK(q.size() == pending.size());
  }
  CHECK(popped > 10'000);
  CHECK(in_runs > 10'000);
  while (!q.empty()) {
    const auto it = std::min_element(pending.begin(), pending.end());
    const Event e = q.pop();
    CHECK(std::make_tuple(e.time.ps(), e.cls(), e.seq()) == *it);
    pending.erase(it);
  }
  CHECK(pending.empty());
}

TEST_CASE("quad_heap: make, push and pop give sorted order, duplicates included") {
  std::mt19937_64 rng(7);
  std::vector<int> values(1000);
  for (auto& v : values) v = static_cast<int>(rng() % 50);  // many duplicates
  const auto less = [](int x, int y) { return x < y; };
  std::vector<int> heap(values.begin(), values.begin() + 500);
  quad_heap::make(heap, less);
  for (std::size_t i = 500; i < values.size(); ++i) quad_heap::push(heap, values[i], less);
  std::vector<int> out;
  while (!heap.empty()) out.push_back(quad_heap::pop(heap, less));
  std::sort(values.begin(), values.end());
  CHECK(out == values);
}
