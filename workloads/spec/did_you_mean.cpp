// workloads/spec/did_you_mean.cpp — edit distance and the nearest candidate.
#include "workloads/spec/did_you_mean.hpp"

#include <algorithm>

namespace ls::wl {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Two-row dynamic programme (Wagner–Fischer).
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates,
                          std::size_t max_distance) {
  std::string best;
  std::size_t best_d = max_distance + 1;
  for (const auto& c : candidates) {
    // Long inputs cannot be near short names; skip the quadratic work for them.
    const std::size_t diff = word.size() > c.size() ? word.size() - c.size() : c.size() - word.size();
    if (diff > max_distance) continue;
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace ls::wl
