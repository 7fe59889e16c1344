// workloads/link_groups.cpp — see link_groups.hpp.
#include "workloads/link_groups.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

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

bool close(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

}  // namespace

std::string name_shape(const std::string& name) {
  std::string out;
  append_shape(name, out);
  return out;
}

std::vector<LinkGroup> group_links(const std::vector<LinkStat>& links, double run_s) {
  // Sort by (class, statistics), then sweep: neighbours within the tolerance join.
  // A cluster of 16k GPUs has ~10^5 links in a few dozen classes: each class string
  // is built once and the sort compares class ranks (their strings' order), so that
  // names are compared only between links of equal statistics.
  std::unordered_map<std::string, int> class_id;
  std::vector<std::string> class_names;
  std::vector<std::pair<int, const LinkStat*>> order;
  order.reserve(links.size());
  std::string buf;
  for (const auto& l : links) {
    buf.assign(l.kind);
    buf.push_back(' ');
    append_shape(l.name, buf);
    const auto [it, fresh] = class_id.try_emplace(buf, static_cast<int>(class_names.size()));
    if (fresh) class_names.push_back(buf);
    order.emplace_back(it->second, &l);
  }
  std::vector<int> by_name(class_names.size());
  for (std::size_t i = 0; i < by_name.size(); ++i) by_name[i] = static_cast<int>(i);
  std::sort(by_name.begin(), by_name.end(), [&](int a, int b) { return class_names[static_cast<std::size_t>(a)] < class_names[static_cast<std::size_t>(b)]; });
  std::vector<int> rank(class_names.size());
  for (std::size_t r = 0; r < by_name.size(); ++r) rank[static_cast<std::size_t>(by_name[r])] = static_cast<int>(r);
  for (auto& entry : order) entry.first = rank[static_cast<std::size_t>(entry.first)];
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second->bytes, a.second->bottleneck_s, a.second->busy_fraction, a.second->name) <
           std::tie(b.first, b.second->bytes, b.second->bottleneck_s, b.second->busy_fraction, b.second->name);
  });
  std::vector<LinkGroup> groups;
  std::vector<std::vector<const LinkStat*>> members;
  int last_class = -1;  // the rank of groups.back()'s class
  for (const auto& [cls, l] : order) {
    const bool join = !groups.empty() && last_class == cls && close(groups.back().bytes, l->bytes) &&
                      close(groups.back().bottleneck_s, l->bottleneck_s) && close(groups.back().busy_fraction, l->busy_fraction);
    if (!join) {
      LinkGroup g;
      g.link_class = class_names[static_cast<std::size_t>(by_name[static_cast<std::size_t>(cls)])];
      g.kind = l->kind;
      g.example = l->name;
      g.bytes = l->bytes;
      g.utilization = l->utilization;
      g.busy_fraction = l->busy_fraction;
      g.busy_utilization = l->busy_utilization;
      g.bottleneck_s = l->bottleneck_s;
      g.bottleneck_fraction = run_s > 0 ? l->bottleneck_s / run_s : 0.0;
      groups.push_back(std::move(g));
      members.emplace_back();
      last_class = cls;
    }
    ++groups.back().count;
    members.back().push_back(l);
  }
  // Pattern: the shape, keeping each number all members share.
  std::vector<std::string_view> first, runs;
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    auto& g = groups[gi];
    digit_runs(members[gi].front()->name, first);
    std::vector<bool> same(first.size(), true);
    for (const auto* m : members[gi]) {
      digit_runs(m->name, runs);
      for (std::size_t k = 0; k < first.size() && k < runs.size(); ++k) same[k] = same[k] && runs[k] == first[k];
    }
    const std::string shape = name_shape(g.example);
    std::size_t k = 0;
    for (char c : shape) {
      if (c == '*') {
        if (k < first.size() && same[k]) g.pattern += first[k];
        else g.pattern += '*';
        ++k;
      } else {
        g.pattern.push_back(c);
      }
    }
  }
  std::sort(groups.begin(), groups.end(), [](const LinkGroup& a, const LinkGroup& b) {
    return std::make_tuple(-a.bottleneck_s, -a.utilization, -a.bytes, a.pattern, a.example) <
           std::make_tuple(-b.bottleneck_s, -b.utilization, -b.bytes, b.pattern, b.example);
  });
  return groups;
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
