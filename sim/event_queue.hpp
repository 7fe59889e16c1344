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
// Complexity: a push with the time and class of the push before it appends to that
// push's run, O(1); any other push opens a run, O(log r) on the shared 4-ary heap of
// runs (sim/quad_heap.hpp); a pop takes the front of the earliest run, O(1), and
// O(log r) when that empties it. r is the number of runs waiting, not of events: a
// simulation schedules most events in runs of one time and class (every rank of a
// symmetric layout finishing alike: 71–94 % of pushes on the scenarios measured), so the
// heap holds a few runs where it held thousands of events. The order is the same:
// events of one run are in sequence order, and two runs of one time and class hold
// disjoint sequence ranges, the earlier run wholly before the later.
// No global state.
#pragma once

#include <cstddef>
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
    const std::uint64_t key = (std::uint64_t{cls} << 56) | seq;
    if (open_ == kNoRun || t != open_time_ || cls != open_cls_) {
      open_ = new_run();
      open_time_ = t;
      open_cls_ = cls;
      quad_heap::push(heap_, Head{t, key, open_}, Less{});
    }
    runs_[open_].items.push_back(Item{key, a, b});
    ++size_;
    return seq;
  }

  bool empty() const { return size_ == 0; }
  /// Precondition: !empty().
  Event top() const {
    const Head& h = heap_.front();
    const Run& run = runs_[h.run];
    const Item& it = run.items[run.next];
    return Event{h.time, it.key, it.a, it.b};
  }
  /// Precondition: !empty().
  Event pop() {
    const Head h = heap_.front();
    Run& run = runs_[h.run];
    const Item it = run.items[run.next++];
    if (run.next == run.items.size()) {
      // Drained: the run leaves the heap and its storage is kept for the next one.
      run.items.clear();
      run.next = 0;
      free_runs_.push_back(h.run);
      if (open_ == h.run) open_ = kNoRun;
      quad_heap::pop(heap_, Less{});
    }
    --size_;
    return Event{h.time, it.key, it.a, it.b};
  }
  std::size_t size() const { return size_; }
  std::uint64_t pushed() const { return next_seq_; }
  void reserve(std::size_t n) { heap_.reserve(n); }

private:
  static constexpr std::uint32_t kNoRun = UINT32_MAX;
  struct Item {
    std::uint64_t key;
    std::uint32_t a, b;
  };
  /// Events of one time and class pushed one after another, in sequence order.
  struct Run {
    std::vector<Item> items;
    std::size_t next = 0;  // the first not popped
  };
  /// A run in the heap, ordered by its time and its first event's key.
  struct Head {
    Time time;
    std::uint64_t key;
    std::uint32_t run;
  };
  // (time, key) as one 128-bit unsigned number: one compare without a branch on the
  // time's equality (the heap's sift-down runs four of these per level). The sign bit
  // is flipped so that signed time order is unsigned order.
  __extension__ typedef unsigned __int128 Key128;
  static Key128 order_key(const Head& e) {
    return (static_cast<Key128>(static_cast<std::uint64_t>(e.time.ps()) ^ (std::uint64_t{1} << 63)) << 64) | e.key;
  }
  struct Less {
    bool operator()(const Head& x, const Head& y) const { return order_key(x) < order_key(y); }
  };

  std::uint32_t new_run() {
    if (!free_runs_.empty()) {
      const std::uint32_t r = free_runs_.back();
      free_runs_.pop_back();
      return r;
    }
    runs_.emplace_back();
    return static_cast<std::uint32_t>(runs_.size() - 1);
  }

  std::vector<Head> heap_;
  std::vector<Run> runs_;
  std::vector<std::uint32_t> free_runs_;
  std::uint32_t open_ = kNoRun;  // the run the last push went to, while it waits
  Time open_time_;
  std::uint8_t open_cls_ = 0;
  std::size_t size_ = 0;
  std::uint64_t next_seq_ = 0;
};

}  // namespace ls::sim
