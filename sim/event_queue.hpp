// sim/event_queue.hpp — the future-event list.
//
// Events are totally ordered by (time, class, sequence number), as in ns-3 and SST:
// at equal times a lower class runs first, and within a class the event scheduled
// first runs first. The order therefore never depends on heap internals, and the
// same input always replays the same way.
//
// The payload is two integers interpreted by the owner (no void*, no callbacks):
// the engine dispatches on the class. There is no cancellation: an owner that
// supersedes an event (the engine's flow completions) tags it with a version and
// drops stale ones when they surface.
//
// Complexity: push/pop O(log n) on the shared 4-ary heap (sim/quad_heap.hpp).
// No global state.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/quad_heap.hpp"
#include "sim/time.hpp"

namespace ls::sim {

struct Event {
  Time time;
  std::uint64_t key = 0;   // (class << 56) | sequence: one compare orders both
  std::uint32_t a = 0;     // payload, meaning chosen by the owner
  std::uint32_t b = 0;

  std::uint8_t cls() const { return static_cast<std::uint8_t>(key >> 56); }
  std::uint64_t seq() const { return key & ((std::uint64_t{1} << 56) - 1); }
};

using EventId = std::uint64_t;  // the sequence number

class EventQueue {
public:
  /// Schedules an event; returns its id (the sequence number). `cls` < 256.
  EventId push(Time t, std::uint8_t cls, std::uint32_t a = 0, std::uint32_t b = 0) {
    const std::uint64_t seq = next_seq_++;
    quad_heap::push(heap_, Event{t, (std::uint64_t{cls} << 56) | seq, a, b}, Less{});
    return seq;
  }

  bool empty() const { return heap_.empty(); }
  /// Precondition: !empty().
  const Event& top() const { return heap_.front(); }
  /// Precondition: !empty().
  Event pop() { return quad_heap::pop(heap_, Less{}); }
  std::size_t size() const { return heap_.size(); }
  std::uint64_t pushed() const { return next_seq_; }
  void reserve(std::size_t n) { heap_.reserve(n); }

private:
  // (time, key) as one 128-bit unsigned number: one compare without a branch on the
  // time's equality (the heap's sift-down runs four of these per level, and popping
  // is most of the engine's own work). The sign bit is flipped so that signed time
  // order is unsigned order.
  __extension__ typedef unsigned __int128 Key128;
  static Key128 order_key(const Event& e) {
    return (static_cast<Key128>(static_cast<std::uint64_t>(e.time.ps()) ^ (std::uint64_t{1} << 63)) << 64) | e.key;
  }
  struct Less {
    bool operator()(const Event& x, const Event& y) const { return order_key(x) < order_key(y); }
  };

  std::vector<Event> heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace ls::sim
