// sim/quad_heap.hpp — the 4-ary implicit min-heap shared by the event queue and the
// flow network's progressive filling.
//
// Why 4-ary: half the depth of a binary heap, and a node's four children share a
// cache line for the 16–24-byte entries both users store. The caller supplies the
// strict order `less`; ties must be broken inside it (the event queue by sequence
// number, the network by id) so the pop order never depends on heap internals.
//
// Complexity: push/pop O(log4 n), make O(n). Free functions on a std::vector so
// each owner keeps its own storage and reserve policy.
#pragma once

#include <cstddef>
#include <vector>

namespace ls::sim::quad_heap {

template <class E, class Less>
void sift_down(std::vector<E>& h, std::size_t i, Less less) {
  const std::size_t n = h.size();
  const E e = h[i];
  for (;;) {
    const std::size_t c = 4 * i + 1;
    if (c >= n) break;
    std::size_t best = c;
    const std::size_t end = c + 4 < n ? c + 4 : n;
    for (std::size_t k = c + 1; k < end; ++k)
      if (less(h[k], h[best])) best = k;
    if (!less(h[best], e)) break;
    h[i] = h[best];
    i = best;
  }
  h[i] = e;
}

/// Turns an arbitrary vector into a heap (Floyd's bottom-up construction).
template <class E, class Less>
void make(std::vector<E>& h, Less less) {
  if (h.size() < 2) return;
  for (std::size_t i = (h.size() - 2) / 4 + 1; i-- > 0;) sift_down(h, i, less);
}

template <class E, class Less>
void push(std::vector<E>& h, const E& e, Less less) {
  std::size_t i = h.size();
  h.push_back(e);
  while (i > 0) {
    const std::size_t p = (i - 1) / 4;
    if (!less(e, h[p])) break;
    h[i] = h[p];
    i = p;
  }
  h[i] = e;
}

/// Precondition: !h.empty().
template <class E, class Less>
E pop(std::vector<E>& h, Less less) {
  const E top = h.front();
  h.front() = h.back();
  h.pop_back();
  if (!h.empty()) sift_down(h, 0, less);
  return top;
}

}  // namespace ls::sim::quad_heap
