// workloads/recorder.cpp — see recorder.hpp.
#include "workloads/recorder.hpp"

#include <algorithm>
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

void Recorder::attach(sim::Engine& eng, sim::FlowNetwork& net, const topo::Cluster& cluster, const sim::Program& prog,
                      const std::vector<int>& traced) {
  eng.set_observer(this);
  net.set_observer(this);
  for (int r : traced) {
    const auto& st = prog.stages[static_cast<std::size_t>(prog.ranks[static_cast<std::size_t>(r)].stage)];
    add_memory_track(r, cluster.gpu_name(r), cluster.node_of_gpu(r), static_cast<double>(st.static_memory_bytes));
  }
  // Link counters: the links leaving traced GPUs' nodes towards the fabric and their
  // NVLinks (bounded so the trace stays readable).
  int added = 0;
  std::unordered_set<int> tg(traced.begin(), traced.end());
  for (std::size_t l = 0; l < cluster.link_count() && added < 64; ++l) {
    const auto& li = cluster.link(static_cast<sim::LinkId>(l));
    const std::string& from = li.name.substr(0, li.name.find("->"));
    const int g = cluster.gpu_index(from);
    if (g < 0 || !tg.count(g)) continue;
    net.watch(static_cast<sim::LinkId>(l));
    add_link_track(static_cast<sim::LinkId>(l), li.name, cluster.node_of_gpu(g), li.bandwidth_Bps);
    ++added;
  }
}

void Recorder::on_op(const sim::OpRecord& rec) {
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
  span_gid_.push_back(engine_.op_base(rec.rank, rec.stream) + rec.index);
}

void Recorder::on_memory(std::int32_t rank, Time t, std::int64_t dyn) {
  auto it = mem_track_.find(rank);
  if (it == mem_track_.end()) return;
  auto& tr = result_.counters[it->second];
  tr.samples.push_back(CounterSample{t, static_cast<double>(dyn) + base_[rank]});
}

void Recorder::on_link_rate(sim::LinkId link, Time now, double rate) {
  auto it = link_track_.find(link);
  if (it == link_track_.end()) return;
  auto& tr = result_.counters[it->second];
  const double u = rate / bw_[link];
  if (!tr.samples.empty() && tr.samples.back().t == now) tr.samples.back().value = u;
  else tr.samples.push_back(CounterSample{now, u});
}

void Recorder::add_memory_track(std::int32_t rank, const std::string& name, int node, double base) {
  mem_track_[rank] = result_.counters.size();
  base_[rank] = base;
  result_.counters.push_back(CounterTrack{"memory " + name, rank, node, {CounterSample{Time::zero(), base}}});
}

void Recorder::add_link_track(sim::LinkId id, const std::string& name, int node, double bw) {
  link_track_[id] = result_.counters.size();
  bw_[id] = bw;
  result_.counters.push_back(CounterTrack{"util " + name, -1, node, {CounterSample{Time::zero(), 0.0}}});
}

void Recorder::mark_critical(const std::unordered_set<std::int64_t>& critical_ops) {
  for (std::size_t i = 0; i < result_.spans.size() && i < span_gid_.size(); ++i)
    if (critical_ops.count(span_gid_[i])) result_.spans[i].critical = true;
}

void Recorder::finish(Time first_step_end, Time run_end, int steps) {
  if (steps > 1) {
    std::vector<Span> keep;
    for (auto& s : result_.spans)
      if (s.end <= first_step_end) keep.push_back(s);
    result_.spans.swap(keep);
  }
  for (auto& c : result_.counters)
    if (c.device < 0 && (c.samples.empty() || c.samples.back().t < run_end)) c.samples.push_back(CounterSample{run_end, 0.0});
}

}  // namespace ls::wl
