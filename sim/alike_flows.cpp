// sim/alike_flows.cpp — see alike_flows.hpp.
#include "sim/alike_flows.hpp"

#include "sim/hash.hpp"

#include <bit>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

namespace ls::sim {

CommPlan fold_alike_flows(const CommPlan& plan, const FlowNetwork& network) {
  CommPlan out;
  out.bytes_per_member = plan.bytes_per_member;
  out.phases.reserve(plan.phases.size());
  out.links.reserve(plan.links.size());
  // Per link, what the phase's flows put on it: a sum of a hash of each crossing flow's
  // bytes (order-free, so equal multisets of flow sizes give equal sums).
  std::unordered_map<LinkId, std::uint64_t> load;
  std::map<std::vector<std::uint64_t>, std::size_t> set_of;
  std::vector<std::vector<std::size_t>> sets;  // flow indices, in order of first member
  std::vector<std::uint64_t> key;
  for (const CommPhase& ph : plan.phases) {
    load.clear();
    for (const PlanFlow& f : ph.flows)
      for (std::uint32_t i = 0; i < f.path_len; ++i)
        load[plan.links[f.path_begin + i]] += splitmix64(std::bit_cast<std::uint64_t>(f.bytes) ^ f.copies);
    set_of.clear();
    sets.clear();
    for (std::size_t k = 0; k < ph.flows.size(); ++k) {
      const PlanFlow& f = ph.flows[k];
      // Bit patterns: equal keys mean exactly equal values (no tolerance to argue).
      key.assign({std::bit_cast<std::uint64_t>(f.bytes), std::bit_cast<std::uint64_t>(f.efficiency), f.copies, f.path_len, f.check_len, f.check_part});
      for (std::uint32_t i = 0; i < f.path_len; ++i) {
        const LinkId l = plan.links[f.path_begin + i];
        key.push_back(std::bit_cast<std::uint64_t>(network.bandwidth(l)));
        key.push_back(load[l]);
      }
      const auto [it, fresh] = set_of.try_emplace(key, sets.size());
      if (fresh) sets.emplace_back();
      sets[it->second].push_back(k);
    }
    CommPhase folded;
    folded.latency = ph.latency;
    folded.flows.reserve(sets.size());
    for (const auto& members : sets) {
      PlanFlow nf = ph.flows[members.front()];
      nf.path_begin = static_cast<std::uint32_t>(out.links.size());
      for (const std::size_t k : members) {
        const PlanFlow& f = ph.flows[k];
        out.links.insert(out.links.end(), plan.links.begin() + f.path_begin, plan.links.begin() + f.path_begin + f.path_len);
      }
      nf.path_len = static_cast<std::uint32_t>(out.links.size()) - nf.path_begin;
      if (nf.check_len > 0) {
        // Check paths (a tied plan's with mirrored links left out) concatenate alike.
        nf.check_begin = static_cast<std::uint32_t>(out.check_links.size());
        for (const std::size_t k : members) {
          const PlanFlow& f = ph.flows[k];
          out.check_links.insert(out.check_links.end(), plan.check_links.begin() + f.check_begin,
                                 plan.check_links.begin() + f.check_begin + f.check_len);
        }
        nf.check_len = static_cast<std::uint32_t>(out.check_links.size()) - nf.check_begin;
      }
      nf.copies = nf.copies * static_cast<std::uint32_t>(members.size());
      folded.flows.push_back(nf);
    }
    out.phases.push_back(std::move(folded));
  }
  return out;
}

}  // namespace ls::sim
