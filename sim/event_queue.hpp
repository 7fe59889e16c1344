// sim/event_queue.hpp — the future-event list.
//
// Events are totally ordered by (time, class, sequence number), as in ns-3 and SST:
// at equal times a lower class runs first, and within a class the event scheduled
// first runs first. The order therefore never depends on heap internals, and the
// same input always replays the same way.
//
// The payload is two integers interpreted by the owner (no void*, no callbacks):
// the engine dispatches on the class. Cancellation is lazy: cancel() records the
// sequence number and pop() skips it.
//
// Complexity: push/pop O(log n) on a 4-ary implicit heap (fewer cache misses than a
// binary heap for 24-byte entries); cancel O(1) amortised. No global state.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <utility>
#include <vector>

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
  /// Schedules an event; returns its id (for cancel()). `cls` < 256.
  EventId push(Time t, std::uint8_t cls, std::uint32_t a = 0, std::uint32_t b = 0) {
    const std::uint64_t seq = next_seq_++;
    heap_.push_back(Event{t, (std::uint64_t{cls} << 56) | seq, a, b});
    sift_up(heap_.size() - 1);
    return seq;
  }

  /// Cancels a pending event. Cancelling an event that already ran is harmless
  /// only if ids are not reused — they never are (56-bit counter).
  void cancel(EventId id) { cancelled_.insert(id); }

  bool empty() {
    skip_cancelled();
    return heap_.empty();
  }
  /// Precondition: !empty().
  const Event& top() {
    skip_cancelled();
    return heap_.front();
  }
  /// Precondition: !empty().
  Event pop() {
    skip_cancelled();
    Event e = heap_.front();
    remove_top();
    return e;
  }
  std::size_t size() const { return heap_.size(); }
  std::uint64_t pushed() const { return next_seq_; }
  void reserve(std::size_t n) { heap_.reserve(n); }

private:
  static bool less(const Event& x, const Event& y) {
    return x.time < y.time || (x.time == y.time && x.key < y.key);
  }
  void skip_cancelled() {
    while (!cancelled_.empty() && !heap_.empty()) {
      auto it = cancelled_.find(heap_.front().seq());
      if (it == cancelled_.end()) return;
      cancelled_.erase(it);
      remove_top();
    }
  }
  void remove_top() {
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0);
  }
  void sift_up(std::size_t i) {
    Event e = heap_[i];
    while (i > 0) {
      std::size_t p = (i - 1) / 4;
      if (!less(e, heap_[p])) break;
      heap_[i] = heap_[p];
      i = p;
    }
    heap_[i] = e;
  }
  void sift_down(std::size_t i) {
    const std::size_t n = heap_.size();
    Event e = heap_[i];
    for (;;) {
      std::size_t c = 4 * i + 1;
      if (c >= n) break;
      std::size_t best = c;
      const std::size_t end = c + 4 < n ? c + 4 : n;
      for (std::size_t k = c + 1; k < end; ++k)
        if (less(heap_[k], heap_[best])) best = k;
      if (!less(heap_[best], e)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = e;
  }

  std::vector<Event> heap_;
  std::unordered_set<std::uint64_t> cancelled_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace ls::sim
