// workloads/analysis/link_groups.cpp — see link_groups.hpp.
#include "workloads/analysis/link_groups.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <string_view>
#include <tuple>

namespace ls::wl {

namespace {

// A name cut into alternating text and digit runs: digit runs are the numbers (views
// into `name`, which must outlive them).
void digit_runs(std::string_view name, std::vector<std::string_view>& runs) {
  runs.clear();
  for (std::size_t i = 0; i < name.size();) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) { ++i; continue; }
    std::size_t j = i;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
    runs.push_back(name.substr(i, j - i));
    i = j;
  }
}

void append_shape(std::string_view name, std::string& out) {
  for (std::size_t i = 0; i < name.size();) {
    if (std::isdigit(static_cast<unsigned char>(name[i]))) {
      while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
      out.push_back('*');
    } else {
      out.push_back(name[i++]);
    }
  }
}

/// Links whose figures agree within 1 % are reported as one group: a report reader
/// cannot act on a smaller difference, and ECMP spreads leave many near-equal links.
constexpr double kGroupTolerance = 0.01;

bool close(double a, double b) { return std::fabs(a - b) <= kGroupTolerance * std::max(std::fabs(a), std::fabs(b)); }

/// "5" for one value, else "{0..3,8,10..11}": the sorted values as runs of consecutive
/// integers. `values` are digit runs (no sign); leading zeros are kept for one value.
std::string value_set(std::vector<std::string_view> values) {
  std::vector<unsigned long long> v;
  for (auto d : values) v.push_back(std::stoull(std::string(d)));
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  if (v.size() == 1) return std::string(values.front());
  std::string out = "{";
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (i > 0) out += ',';
    out += std::to_string(v[i]);
    if (j > i) out += (j == i + 1 ? "," : "..") + std::to_string(v[j]);
    i = j + 1;
  }
  return out + "}";
}

}  // namespace

std::string name_shape(const std::string& name) {
  std::string out;
  append_shape(name, out);
  return out;
}

std::vector<LinkGroup> group_links(const std::vector<LinkStat>& links, double run_s) {
  // Sort by (class, statistics), then sweep: neighbours within the tolerance join.
  // A cluster of 16k GPUs has ~10^5 links in a few dozen classes: each class string
  // is stored once, in a map whose order numbers the classes, so that the sort
  // compares names only between links of equal statistics.
  std::map<std::string, int> classes;  // class → its rank in name order
  using Class = std::map<std::string, int>::const_iterator;
  std::vector<std::pair<Class, const LinkStat*>> order;
  order.reserve(links.size());
  std::string buf;
  for (const auto& l : links) {
    buf.assign(l.kind);
    buf.push_back(' ');
    append_shape(l.name, buf);
    order.emplace_back(classes.try_emplace(buf, 0).first, &l);
  }
  int next_rank = 0;
  for (auto& entry : classes) entry.second = next_rank++;
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first->second, a.second->bytes, a.second->bottleneck_s, a.second->busy_fraction, a.second->name) <
           std::tie(b.first->second, b.second->bytes, b.second->bottleneck_s, b.second->busy_fraction, b.second->name);
  });
  std::vector<LinkGroup> groups;
  std::vector<std::vector<const LinkStat*>> members;
  for (const auto& [cls, l] : order) {
    const bool join = !groups.empty() && groups.back().link_class == cls->first && close(groups.back().bytes, l->bytes) &&
                      close(groups.back().bottleneck_s, l->bottleneck_s) && close(groups.back().busy_fraction, l->busy_fraction);
    if (!join) {
      LinkGroup g;
      g.link_class = cls->first;
      g.kind = l->kind;
      g.example = l->name;
      g.bytes = l->bytes;
      g.payload_bytes = l->payload_bytes;
      g.utilization = l->utilization;
      g.busy_fraction = l->busy_fraction;
      g.busy_utilization = l->busy_utilization;
      g.bottleneck_s = l->bottleneck_s;
      g.bottleneck_fraction = run_s > 0 ? l->bottleneck_s / run_s : 0.0;
      groups.push_back(std::move(g));
      members.emplace_back();
    }
    ++groups.back().count;
    members.back().push_back(l);
  }
  // Each group is named by its first member in name order: links whose statistics differ
  // only by rounding sort either way, and the name must not follow the rounding.
  for (std::size_t gi = 0; gi < groups.size(); ++gi)
    for (const auto* m : members[gi])
      if (m->name < groups[gi].example) groups[gi].example = m->name;
  // Pattern: the shape with each number as the set of values its members have there
  // ("leaf{0..3}->node{0..15}.nic0"), so that groups of one class read apart.
  std::vector<std::string_view> runs;
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    auto& g = groups[gi];
    std::vector<std::vector<std::string_view>> at;  // [digit run] → each member's value
    for (const auto* m : members[gi]) {
      digit_runs(m->name, runs);
      if (at.size() < runs.size()) at.resize(runs.size());
      for (std::size_t k = 0; k < runs.size(); ++k) at[k].push_back(runs[k]);
    }
    const std::string shape = name_shape(g.example);
    std::size_t k = 0;
    for (char c : shape) {
      if (c == '*') g.pattern += k < at.size() ? value_set(at[k]) : std::string("*"), ++k;
      else g.pattern.push_back(c);
    }
  }
  // Value sets can still coincide (leaf0->node1 with leaf1->node0 against the two
  // straight cables): such groups also name one member.
  std::map<std::string, int> uses;
  for (const auto& g : groups) ++uses[g.pattern];
  for (auto& g : groups)
    if (uses[g.pattern] > 1 && g.count > 1) g.pattern += " (with " + g.example + ")";
  std::sort(groups.begin(), groups.end(), [](const LinkGroup& a, const LinkGroup& b) {
    return std::make_tuple(-a.bottleneck_s, -a.utilization, -a.bytes, a.pattern, a.example) <
           std::make_tuple(-b.bottleneck_s, -b.utilization, -b.bytes, b.pattern, b.example);
  });
  return groups;
}

LinkBottleneck link_bottleneck(const std::vector<LinkGroup>& ranked) {
  LinkBottleneck b;
  if (ranked.empty() || !(ranked.front().bottleneck_s > 0)) return b;
  const LinkGroup& top = ranked.front();
  b.present = true;
  b.link_class = top.link_class;
  b.kind = top.kind;
  b.pattern = top.pattern;
  b.bottleneck_s = top.bottleneck_s;
  b.fraction = top.bottleneck_fraction;
  std::set<std::string> seen{top.link_class};
  for (const auto& g : ranked)
    if (seen.insert(g.link_class).second && g.bottleneck_s > 0 && top.bottleneck_fraction - g.bottleneck_fraction <= 0.01)
      b.tied.push_back(g);
  return b;
}

std::vector<LinkGroup> reported_link_groups(const std::vector<LinkGroup>& ranked, std::size_t top) {
  std::vector<LinkGroup> out;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const auto& g = ranked[i];
    const bool first_of_class = seen.insert(g.link_class).second && g.bytes > 0;
    if ((i < top && g.bytes > 0) || first_of_class) {
      out.push_back(g);
      out.back().busiest_of_class = first_of_class;
    }
  }
  return out;
}

}  // namespace ls::wl
