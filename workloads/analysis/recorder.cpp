// workloads/analysis/recorder.cpp — see recorder.hpp.
#include "workloads/analysis/recorder.hpp"
#include "workloads/analysis/link_groups.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>
#include <tuple>

namespace ls::wl {

namespace {

using sim::Time;

std::uint8_t track_of(const sim::Op& op, int stream_index) {
  const auto on = static_cast<sim::Stream>(stream_index);
  if (on == stream::pp_send) return track::pp_send;
  if (on == stream::dp) return track::dp;
  if (on == stream::prefetch) return track::prefetch;
  // The overlap stream carries the CP ring and the overlapped TP collectives.
  if (op.kind == sim::OpKind::collective && axis_of(op) == Axis::cp) return track::cp;
  if (on == stream::overlap) return track::tp;
  if (op.kind == sim::OpKind::collective)
    return axis_of(op) == Axis::ep ? track::ep : (axis_of(op) == Axis::dp ? track::prefetch : track::tp);
  if (op.kind == sim::OpKind::recv) return track::pp_recv;
  return track::compute;
}

// "node12" for "node12.gpu3" or "node12.nic0"; "" for a fabric switch ("leaf2").
std::string node_prefix(const std::string& vertex) {
  const auto dot = vertex.find('.');
  if (dot == std::string::npos || vertex.rfind("node", 0) != 0) return {};
  return vertex.substr(0, dot);
}

// The process a node's link counters are drawn under: "node3" → 3 (the trace's pid
// for node 3 when GPUs are named node<N>.gpu<G>).
int node_number(const std::string& node) { return node.size() > 4 ? std::atoi(node.c_str() + 4) : 0; }

}  // namespace

std::vector<int> traced_ranks(const sim::Program& prog, int max_devices) {
  // Replica 0 first (every stage, every TP rank), then further replicas: the trace
  // shows a whole pipeline before it shows copies of it.
  std::vector<int> order(prog.ranks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const auto& x = prog.ranks[static_cast<std::size_t>(a)];
    const auto& y = prog.ranks[static_cast<std::size_t>(b)];
    return std::tie(x.dp, x.stage, x.tp) < std::tie(y.dp, y.stage, y.tp);
  });
  if (static_cast<int>(order.size()) > max_devices) order.resize(static_cast<std::size_t>(std::max(0, max_devices)));
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<int> auto_traced_ranks(const sim::Program& prog, const std::vector<int>& extra) {
  std::vector<int> out = traced_ranks(prog, kAutoTraceDevices);
  std::vector<bool> stage_seen(prog.stages.size(), false);
  for (std::size_t r = 0; r < prog.ranks.size(); ++r) {
    const auto st = static_cast<std::size_t>(prog.ranks[r].stage);
    if (st < stage_seen.size() && !stage_seen[st]) {
      stage_seen[st] = true;
      out.push_back(static_cast<int>(r));
    }
  }
  for (int r : extra)
    if (r >= 0 && static_cast<std::size_t>(r) < prog.ranks.size()) out.push_back(r);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void Recorder::add_from_op_traces(const sim::Engine& eng, const sim::Program& prog, const std::vector<int>& ranks) {
  const auto traces = eng.op_traces();
  for (int r : ranks) {
    const auto& info = prog.ranks[static_cast<std::size_t>(r)];
    const auto& stage = prog.stages[static_cast<std::size_t>(info.stage)];
    for (int st = 0; st < sim::kStreamCount; ++st) {
      const auto& ops = stage.streams[static_cast<std::size_t>(st)];
      for (std::uint32_t i = 0; i < ops.size(); ++i) {
        const std::int64_t gid = eng.op_base(r, st) + i;
        if (gid < 0 || static_cast<std::size_t>(gid) >= traces.size()) continue;
        const auto& t = traces[static_cast<std::size_t>(gid)];
        const sim::Op& op = ops[i];
        // The pairing ids the engine gives its observer (sim/engine.cpp, on completion).
        std::uint64_t flow_id = 0;
        if (op.kind == sim::OpKind::recv) {
          flow_id = (static_cast<std::uint64_t>(r) << 32) | (i + 1);
        } else if (op.kind == sim::OpKind::send) {
          const std::int32_t peer = prog.pp_peer[static_cast<std::size_t>(r) * prog.stages.size() + static_cast<std::size_t>(op.peer_stage)];
          flow_id = (static_cast<std::uint64_t>(peer) << 32) | (op.peer_op + 1);
        }
        on_op(sim::OpRecord{r, static_cast<std::uint8_t>(st), i, &op, t.start, t.end, flow_id});
      }
    }
  }
}

void Recorder::attach(sim::Engine& eng, sim::FlowNetwork& net, const topo::Cluster& cluster, const sim::Program& prog,
                      const std::vector<int>& traced) {
  eng.set_observer(this);
  net.set_observer(this);
  for (int r : traced) {
    const auto& st = prog.stages[static_cast<std::size_t>(prog.ranks[static_cast<std::size_t>(r)].stage)];
    add_memory_track(r, cluster.gpu_name(r), cluster.node_of_gpu(r), static_cast<double>(st.static_memory_bytes));
  }
  // Link counters: utilisation (Σ rate / Σ capacity) of link groups, one per node and
  // per switch so the trace stays small: every link kind of the traced devices' nodes
  // ("node3.gpu*->node3.nvswitch", "node3.nic*->leaf*", "leaf*->node3.nic*") and the
  // links leaving each fabric switch ("leaf2->spine*", "spine0->leaf*").
  std::unordered_set<std::string> traced_nodes;
  for (int r : traced) traced_nodes.insert(node_prefix(cluster.gpu_name(r)));
  std::map<std::string, std::pair<int, std::vector<sim::LinkId>>> groups;  // name -> (process, links)
  for (std::size_t l = 0; l < cluster.link_count(); ++l) {
    const auto& li = cluster.link(static_cast<sim::LinkId>(l));
    const auto arrow = li.name.find("->");
    if (arrow == std::string::npos) continue;
    const std::string from = li.name.substr(0, arrow), to = li.name.substr(arrow + 2);
    const std::string fn = node_prefix(from), tn = node_prefix(to);
    std::string group;
    int pid = 0;  // fabric switches' counters are drawn under the first process
    if (!fn.empty() || !tn.empty()) {
      const std::string& node = fn.empty() ? tn : fn;
      if (!traced_nodes.count(node)) continue;
      // Every number as '*', except the anchoring node's own.
      const auto side = [&node](const std::string& v) {
        return node_prefix(v) == node ? node + "." + name_shape(v.substr(node.size() + 1)) : name_shape(v);
      };
      group = side(from) + "->" + side(to);
      pid = node_number(node);
    } else {
      group = from + "->" + name_shape(to);
    }
    auto& g = groups[group];
    g.first = pid;
    g.second.push_back(static_cast<sim::LinkId>(l));
  }
  std::size_t added = 0;
  for (const auto& [name, group] : groups) {
    if (added++ >= kMaxLinkCounters) break;
    const auto& links = group.second;
    double cap = 0;
    for (auto id : links) cap += net.bandwidth(id);
    if (!(cap > 0)) continue;
    const int node = group.first;
    const std::size_t agg = aggs_.size();
    aggs_.push_back(LinkAggregate{result_.counters.size(), cap, 0.0});
    result_.counters.push_back(CounterTrack{"util " + name, -1, node, {CounterSample{Time::zero(), 0.0}}});
    for (auto id : links) {
      net.watch(id);
      link_agg_[id] = agg;
    }
  }
}

void Recorder::on_op(const sim::OpRecord& rec) {
  if (!keep_spans_) return;
  // A compute op that takes no time is a join (the pass waiting behind a blocking
  // pipeline send), not work: it draws nothing, and as a zero-length slice beside the
  // pass that starts at the same instant it would mis-nest in stack-based viewers.
  if (rec.op->kind == sim::OpKind::compute && rec.end == rec.start) return;
  Span s;
  s.device = rec.rank;
  s.track = track_of(*rec.op, rec.stream);
  s.work = work_of(*rec.op);
  s.kind = rec.op->kind;
  s.coll = rec.op->coll;
  s.microbatch = rec.op->labels[label::microbatch];
  s.chunk = rec.op->labels[label::chunk];
  s.layer_begin = rec.op->labels[label::layer_begin];
  s.layer_end = rec.op->labels[label::layer_end];
  s.start = rec.start;
  s.end = rec.end;
  s.flow_id = rec.flow_id;
  s.flow_out = rec.op->kind == sim::OpKind::send;
  result_.spans.push_back(s);
  // A rank the symmetric fast path mirrors has no op ids of its own (its op_base is the
  // next simulated rank's): -1, so that no critical op of another rank marks its span.
  span_gid_.push_back(engine_.simulated(rec.rank) ? engine_.op_base(rec.rank, rec.stream) + rec.index : -1);
}

void Recorder::on_memory(std::int32_t rank, Time t, std::int64_t dyn) {
  auto it = mem_track_.find(rank);
  if (it == mem_track_.end()) return;
  auto& tr = result_.counters[it->second];
  tr.samples.push_back(CounterSample{t, static_cast<double>(dyn) + base_[rank]});
}

void Recorder::on_link_rate(sim::LinkId link, Time now, double rate) {
  auto it = link_agg_.find(link);
  if (it == link_agg_.end()) return;
  auto& agg = aggs_[it->second];
  double& last = last_rate_[link];
  agg.rate += rate - last;
  last = rate;
  auto& tr = result_.counters[agg.track];
  // Drift of the running sum may leave a few ulps below 0 or above 1.
  const double u = std::clamp(agg.rate / agg.capacity, 0.0, 1.0);
  if (!tr.samples.empty() && tr.samples.back().t == now) tr.samples.back().value = u;
  else tr.samples.push_back(CounterSample{now, u});
}

void Recorder::add_memory_track(std::int32_t rank, const std::string& name, int node, double base) {
  mem_track_[rank] = result_.counters.size();
  base_[rank] = base;
  result_.counters.push_back(CounterTrack{"memory " + name, rank, node, {CounterSample{Time::zero(), base}}});
}

void Recorder::mark_critical(const std::unordered_set<std::int64_t>& critical_ops) {
  for (std::size_t i = 0; i < result_.spans.size() && i < span_gid_.size(); ++i)
    if (critical_ops.count(span_gid_[i])) result_.spans[i].critical = true;
}

void Recorder::finish(Time run_end) {
  for (auto& c : result_.counters)
    if (c.device < 0 && (c.samples.empty() || c.samples.back().t < run_end)) c.samples.push_back(CounterSample{run_end, 0.0});
}

}  // namespace ls::wl
