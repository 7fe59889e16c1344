// sim/network.hpp — flow-level network with max-min fair sharing.
//
// A flow moves `bytes` over a path of directed links (a link may appear several
// times in one path: it then carries the flow's rate that many times — the
// "multiplicity"). All active flows share every link by max-min fairness
// (progressive filling, Bertsekas & Gallager, "Data Networks", §6.5.2). Rates are
// re-solved lazily: start()/finish() only mark links dirty; resolve() re-solves
// just the connected component(s) of flows reachable from dirty links, so one new
// flow inside a node does not touch the rest of the cluster.
//
// Units: bandwidth in bytes/s, sizes in bytes, time in sim::Time (integer ps).
// Ownership: the network owns its flows; FlowIds are recycled after finish().
// Not thread-safe; one network per simulation (no global state).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/time.hpp"

namespace ls::sim {

using LinkId = std::uint32_t;
using FlowId = std::uint32_t;

/// Receives the aggregate rate of a watched link whenever resolve() changes it.
class LinkRateObserver {
public:
  virtual ~LinkRateObserver() = default;
  virtual void on_link_rate(LinkId link, Time now, double rate_Bps) = 0;
};

class FlowNetwork {
public:
  /// One entry per directed link: its capacity in bytes/s (> 0).
  explicit FlowNetwork(std::vector<double> link_bandwidth_Bps);

  std::size_t link_count() const;
  double bandwidth(LinkId link) const;
  /// Changes a link's capacity (perturbations); marks it dirty. O(1).
  void set_bandwidth(LinkId link, double bandwidth_Bps);

  /// Starts a flow at `now`. `bytes` >= 0. The path must be non-empty.
  /// O(path length). The rate is 0 until the next resolve().
  FlowId start(Time now, std::span<const LinkId> path, double bytes);

  /// Re-solves the rates of every flow in a component touched since the last call
  /// and appends to `changed` each flow whose projected finish time changed (the
  /// caller reschedules those; see finish_time()/version()). Cost: O(F·P·log L)
  /// for the F flows and their P-link paths in the touched components.
  void resolve(Time now, std::vector<FlowId>& changed);

  /// Projected time at which the flow's last byte leaves (ceil to the picosecond),
  /// given the current rates. Time::max() while its rate is 0.
  Time finish_time(FlowId flow) const;
  /// Incremented every time finish_time(flow) changes: lets the engine drop stale
  /// completion events without a cancellable queue.
  std::uint32_t version(FlowId flow) const;
  double rate(FlowId flow) const;
  double remaining_bytes(FlowId flow, Time now) const;

  /// Removes a flow (normally at its finish time); its bytes are credited to every
  /// link of its path (times multiplicity) and its links are marked dirty.
  void finish(Time now, FlowId flow);

  std::size_t active_flows() const;

  // Per-link statistics, cumulative since construction.
  /// Bytes carried (credited when a flow finishes).
  double link_bytes(LinkId link) const;
  /// Time during which at least one flow was active on the link, up to `now`.
  Time link_busy(LinkId link, Time now) const;

  /// Optional observer for the links flagged with watch(); not owned.
  void set_observer(LinkRateObserver* observer);
  void watch(LinkId link, bool on = true);

private:
  struct Impl;
  // Kept as plain members (see network.cpp); declared there to keep this header light.
  struct Link {
    double capacity = 0;
    double rate_sum = 0;        // aggregate rate after the last resolve
    double bytes = 0;           // cumulative
    std::int64_t busy_ps = 0;   // cumulative busy time
    std::int64_t busy_since = 0;
    std::uint32_t active = 0;   // number of (flow, multiplicity) uses
    bool dirty = false;
    bool watched = false;
    std::uint32_t mark = 0;     // BFS epoch
    std::vector<FlowId> flows;  // active flows using this link (once per flow)
  };
  struct Flow {
    std::vector<std::pair<LinkId, std::uint32_t>> links;  // (link, multiplicity)
    double bytes_total = 0;
    double remaining = 0;       // as of `updated`
    double rate = 0;
    Time updated;
    Time finish = Time::max();
    std::uint32_t version = 0;
    std::uint32_t mark = 0;
    bool active = false;
  };
  std::vector<Link> links_;
  std::vector<Flow> flows_;
  std::vector<FlowId> free_ids_;
  std::vector<LinkId> dirty_;
  std::size_t active_ = 0;
  std::uint32_t epoch_ = 0;
  LinkRateObserver* observer_ = nullptr;
  // Scratch buffers reused by resolve() (no allocation in steady state).
  std::vector<FlowId> comp_flows_;
  std::vector<LinkId> comp_links_;
  std::vector<double> cap_left_;
  std::vector<double> weight_left_;
};

}  // namespace ls::sim
