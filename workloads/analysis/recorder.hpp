// workloads/analysis/recorder.hpp — folds what the engine and the network report about traced
// ranks and watched links into Result::spans and Result::counters (the trace).
//
// The engine calls on_op / on_memory for ranks with EngineConfig::traced set; the
// network calls on_link_rate for watched links. The recorder is only attached when
// a trace is asked for, so untraced runs pay nothing.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sim/engine.hpp"
#include "sim/network.hpp"
#include "topology/cluster.hpp"
#include "workloads/build/result.hpp"

namespace ls::wl {

/// Ranks to trace, at most `max_devices`, in rank order: replica 0 first (every
/// stage, every TP rank), then further replicas.
std::vector<int> traced_ranks(const sim::Program& program, int max_devices);

/// `--trace-devices auto`: this many devices of replica 0 ...
inline constexpr int kAutoTraceDevices = 8;
/// ... plus the first rank of every stage and every device in `extra` (perturbed
/// devices); sorted, unique. The critical path's devices are added after the run
/// (Recorder::add_from_op_traces).
std::vector<int> auto_traced_ranks(const sim::Program& program, const std::vector<int>& extra);

/// Keeps spans and memory samples of traced ranks (ExecutionObserver) and link rate
/// samples of watched links (LinkRateObserver).
class Recorder final : public sim::ExecutionObserver, public sim::LinkRateObserver {
public:
  Recorder(const sim::Engine& engine, Result& result) : engine_(engine), result_(result) {}

  /// Subscribes to the engine and the network: a memory counter per traced rank and
  /// utilisation counters (Σ rate / Σ capacity) per link shape of every traced node
  /// and per fabric switch's outgoing links, at most kMaxLinkCounters.
  void attach(sim::Engine& engine, sim::FlowNetwork& network, const topo::Cluster& cluster, const sim::Program& program,
              const std::vector<int>& traced);

  void on_op(const sim::OpRecord& rec) override;
  void on_memory(std::int32_t rank, sim::Time t, std::int64_t dynamic_bytes) override;
  void on_link_rate(sim::LinkId link, sim::Time now, double rate) override;

  /// Spans of `ranks` (untraced during the run) rebuilt from the engine's op traces of
  /// the step it ran last (EngineConfig::record_ops): how the critical path's devices
  /// join an automatic trace without a second simulation. No memory counter for them.
  void add_from_op_traces(const sim::Engine& engine, const sim::Program& program, const std::vector<int>& ranks);
  /// Flags the spans whose op is in `critical_ops` (global op ids).
  void mark_critical(const std::unordered_set<std::int64_t>& critical_ops);
  /// The trace shows one step: after the first, no more spans are kept (so memory is
  /// one step's, whatever simulation.steps); counters go on.
  void stop_spans() { keep_spans_ = false; }
  /// Closes every link counter at `run_end` with an explicit 0 so idle tails read as idle.
  void finish(sim::Time run_end);

private:
  void add_memory_track(std::int32_t rank, const std::string& name, int node, double base);

  const sim::Engine& engine_;
  Result& result_;
  std::vector<std::int64_t> span_gid_;  // global op id of each span (-1: a mirrored rank's)
  bool keep_spans_ = true;
  std::unordered_map<std::int32_t, std::size_t> mem_track_;
  std::unordered_map<std::int32_t, double> base_;
  // Link counters: one per group of links (a node's links of one shape, a switch's
  // outgoing links); the value is the group's Σ rate / Σ capacity.
  struct LinkAggregate {
    std::size_t track = 0;   // into Result::counters
    double capacity = 0;     // bytes/s
    double rate = 0;         // current Σ rate
  };
  static constexpr std::size_t kMaxLinkCounters = 256;
  std::vector<LinkAggregate> aggs_;
  std::unordered_map<sim::LinkId, std::size_t> link_agg_;
  std::unordered_map<sim::LinkId, double> last_rate_;
};

}  // namespace ls::wl
