// sim/mailboxes.hpp — the pipeline recvs' mailboxes: for each receiving rank, a ring of
// the messages sent to it and not yet received.
//
// Why a ring per rank and not a record per recv op: a rank's recvs complete in program
// order (they sit on its main stream), so the messages that need a record at any instant
// are those from its next recv to the furthest one a peer has already started sending:
// a few, where a step holds thousands of recvs per rank. A record per recv op (1,680 per
// rank at 11,200 ranks: 450 MB, reset at every step) made every touch a cache miss; the
// rings of all ranks take a few MB. A ring grows (doubling, moved to the pool's end)
// when a sender runs further ahead than it holds, so no bound on the run-ahead is
// assumed.
//
// A message is named by its receiver and its ordinal q: the recv's index among its
// stage's recvs. Invariant per rank: every live record has head ≤ q < head + capacity,
// head being the ordinal of the rank's next recv to complete; record q lives at
// q mod capacity.
//
// Cost: O(1) per touch (amortised over growth); memory O(ranks × the largest run-ahead).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ls::sim {

class Mailboxes {
public:
  /// One message's record. Plain integers: picoseconds, global op ids.
  struct Message {
    std::int64_t arrival = -1;         // ps; -1: not arrived
    std::int64_t source = -1;          // global op id of the send (record_ops)
    std::int64_t transfer_start = -1;  // ps; -1: not started
  };

  /// Sets up `ranks` empty rings of the first capacity each (a rank that never receives
  /// keeps its 8 empty records: 192 bytes).
  void reset(std::size_t ranks) {
    rings_.assign(ranks, Ring{});
    pool_.clear();
    for (std::size_t r = 0; r < ranks; ++r) {
      rings_[r].offset = static_cast<std::uint32_t>(pool_.size());
      pool_.resize(pool_.size() + kInitialCapacity);
    }
  }

  /// Empties every ring (a new step: its recvs count from ordinal 0 again).
  void clear() {
    std::fill(pool_.begin(), pool_.end(), Message{});
    for (auto& r : rings_) r.head = 0;
  }

  /// Message q to `rank`, made room for: a sender's start or its data's arrival.
  Message& at(std::size_t rank, std::uint32_t q) {
    Ring& ring = rings_[rank];
    if (q - ring.head > ring.mask) grow(ring, q);
    return pool_[ring.offset + (q & ring.mask)];
  }

  /// Message q to `rank` as it stands (q is the rank's next recv, or later).
  const Message& peek(std::size_t rank, std::uint32_t q) const {
    const Ring& ring = rings_[rank];
    static const Message kNone{};
    if (q - ring.head > ring.mask) return kNone;  // nothing sent that far ahead yet
    return pool_[ring.offset + (q & ring.mask)];
  }

  /// The rank's recv q completes: its message, whose record is then free for q + capacity.
  Message take(std::size_t rank, std::uint32_t q) {
    const Message m = peek(rank, q);
    Ring& ring = rings_[rank];
    if (q - ring.head <= ring.mask) pool_[ring.offset + (q & ring.mask)] = Message{};
    ring.head = q + 1;
    return m;
  }

  /// Records held in all (capacity, not messages in flight): for tests and footprints.
  std::size_t capacity() const { return pool_.size(); }

private:
  static constexpr std::uint32_t kInitialCapacity = 8;  // a power of two
  struct Ring {
    std::uint32_t offset = 0;  // first record in pool_
    std::uint32_t mask = kInitialCapacity - 1;
    std::uint32_t head = 0;  // ordinal of the next recv to complete
  };

  void grow(Ring& ring, std::uint32_t q) {
    std::uint32_t cap = ring.mask + 1;
    while (q - ring.head >= cap) cap *= 2;
    const auto offset = static_cast<std::uint32_t>(pool_.size());
    pool_.resize(pool_.size() + cap);
    for (std::uint32_t k = ring.head; k != ring.head + ring.mask + 1; ++k)
      pool_[offset + (k & (cap - 1))] = pool_[ring.offset + (k & ring.mask)];
    ring.offset = offset;
    ring.mask = cap - 1;
  }

  std::vector<Ring> rings_;
  std::vector<Message> pool_;
};

}  // namespace ls::sim
