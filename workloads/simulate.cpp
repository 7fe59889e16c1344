// workloads/simulate.cpp — orchestration: cluster + program + engine → Result.
#include "workloads/simulate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "sim/engine.hpp"
#include "topology/cluster.hpp"
#include "topology/planner.hpp"
#include "workloads/diagnostics.hpp"
#include "workloads/hardware.hpp"
#include "workloads/memory.hpp"
#include "workloads/model.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/schedule.hpp"

namespace ls::wl {

namespace {

using sim::Axis;
using sim::Time;

std::uint8_t track_of(const sim::Op& op, int stream) {
  switch (stream) {
    case 1: return 2;  // pp send
    case 2: return 3;  // dp
    case 3: return 5;  // prefetch
    default: break;
  }
  if (op.kind == sim::OpKind::collective) return op.axis == Axis::ep ? 4 : (op.axis == Axis::dp ? 5 : 1);
  if (op.kind == sim::OpKind::recv) return 6;
  return 0;
}

/// Keeps spans and memory samples of traced ranks (ExecutionObserver) and link rate
/// samples of watched links (LinkRateObserver).
class Recorder final : public sim::ExecutionObserver, public sim::LinkRateObserver {
public:
  Recorder(const sim::Engine& engine, Result& result) : engine_(engine), result_(result) {}
  void on_op(const sim::OpRecord& rec) override {
    Span s;
    s.device = rec.rank;
    s.track = track_of(*rec.op, rec.stream);
    s.work = rec.op->work;
    s.kind = rec.op->kind;
    s.coll = rec.op->coll;
    s.microbatch = rec.op->microbatch;
    s.chunk = rec.op->chunk;
    s.layer_begin = rec.op->layer_begin;
    s.layer_end = rec.op->layer_end;
    s.start = rec.start;
    s.end = rec.end;
    s.flow_id = rec.flow_id;
    s.flow_out = rec.op->kind == sim::OpKind::send;
    result_.spans.push_back(s);
    span_gid_.push_back(engine_.op_base(rec.rank, rec.stream) + rec.index);
  }
  void on_memory(std::int32_t rank, Time t, std::int64_t dyn) override {
    auto it = mem_track_.find(rank);
    if (it == mem_track_.end()) return;
    auto& tr = result_.counters[it->second];
    tr.samples.push_back(CounterSample{t, static_cast<double>(dyn) + base_[rank]});
  }
  void on_link_rate(sim::LinkId link, Time now, double rate) override {
    auto it = link_track_.find(link);
    if (it == link_track_.end()) return;
    auto& tr = result_.counters[it->second];
    const double u = rate / bw_[link];
    if (!tr.samples.empty() && tr.samples.back().t == now) tr.samples.back().value = u;
    else tr.samples.push_back(CounterSample{now, u});
  }
  void add_memory_track(std::int32_t rank, const std::string& name, int node, double base) {
    mem_track_[rank] = result_.counters.size();
    base_[rank] = base;
    result_.counters.push_back(CounterTrack{"memory " + name, rank, node, {CounterSample{Time::zero(), base}}});
  }
  void add_link_track(sim::LinkId id, const std::string& name, int node, double bw) {
    link_track_[id] = result_.counters.size();
    bw_[id] = bw;
    result_.counters.push_back(CounterTrack{"util " + name, -1, node, {CounterSample{Time::zero(), 0.0}}});
  }
  const std::vector<std::int64_t>& span_gids() const { return span_gid_; }

private:
  const sim::Engine& engine_;
  Result& result_;
  std::vector<std::int64_t> span_gid_;
  std::unordered_map<std::int32_t, std::size_t> mem_track_;
  std::unordered_map<std::int32_t, double> base_;
  std::unordered_map<sim::LinkId, std::size_t> link_track_;
  std::unordered_map<sim::LinkId, double> bw_;
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest-rank percentile: with few steps p99 is the max, never an interpolation.
  const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(k, v.size() - 1)];
}

/// Walks back from the op that ended the step through the ops that released each
/// other (see sim::OpTrace); every picosecond of [step start, step end] lands in
/// exactly one bucket, so the shares sum to the step time by construction.
struct CritWalk {
  Time compute, wait, comm[sim::kAxisCount];
  int device = 0;
  std::unordered_set<std::int64_t> ops;
  std::vector<CriticalSegment> segments;  // latest first while walking; reversed at the end

  /// Puts [from, to) of `device`'s time in one bucket and records the segment.
  void attribute(CriticalSegment::Kind kind, Axis axis, std::int32_t device, const sim::Op* op, Time from, Time to) {
    if (to <= from) return;
    if (kind == CriticalSegment::Kind::compute) compute += to - from;
    else if (kind == CriticalSegment::Kind::comm) comm[static_cast<int>(axis)] += to - from;
    else wait += to - from;
    CriticalSegment seg;
    seg.kind = kind;
    seg.axis = axis;
    seg.device = device;
    seg.start = from;
    seg.end = to;
    if (op) {
      seg.work = op->work;
      seg.microbatch = op->microbatch;
      seg.layer_begin = op->layer_begin;
      seg.layer_end = op->layer_end;
    }
    segments.push_back(seg);
  }
};

CritWalk walk_critical_path(const sim::Engine& eng, const sim::Program& prog, Time step_start, Time step_end) {
  CritWalk w;
  const auto& tr = eng.op_traces();
  // The op that finished last.
  std::int64_t cur = -1;
  for (std::size_t r = 0; r < prog.ranks.size() && cur < 0; ++r) {
    for (int s = 0; s < sim::kStreamCount; ++s) {
      const auto n = prog.stages[static_cast<std::size_t>(prog.ranks[r].stage)].streams[static_cast<std::size_t>(s)].size();
      if (n == 0) continue;
      const std::int64_t gid = eng.op_base(static_cast<std::int32_t>(r), s) + static_cast<std::int64_t>(n) - 1;
      if (tr[static_cast<std::size_t>(gid)].end == step_end) { cur = gid; break; }
    }
  }
  if (cur < 0) {
    w.attribute(CriticalSegment::Kind::wait, Axis::none, -1, nullptr, step_start, step_end);
    return w;
  }
  {
    std::int32_t r; int s; std::uint32_t i;
    eng.decode(cur, r, s, i);
    w.device = prog.ranks[static_cast<std::size_t>(r)].device;
  }
  Time cursor = step_end;
  std::size_t guard = 0;
  while (cur >= 0 && guard++ < tr.size() + 8) {
    const auto& t = tr[static_cast<std::size_t>(cur)];
    std::int32_t r; int s; std::uint32_t i;
    eng.decode(cur, r, s, i);
    const auto& op = prog.stages[static_cast<std::size_t>(prog.ranks[static_cast<std::size_t>(r)].stage)]
                         .streams[static_cast<std::size_t>(s)][i];
    w.ops.insert(cur);
    const std::int32_t dev = prog.ranks[static_cast<std::size_t>(r)].device;
    Time from = t.start;
    std::int64_t jump = -1;
    if (op.kind == sim::OpKind::compute) {
      w.attribute(CriticalSegment::Kind::compute, Axis::none, dev, &op, from, cursor);
    } else if (op.kind == sim::OpKind::collective) {
      // The rendezvous completed when the last member arrived (its op's start).
      const Time released = t.peer >= 0 ? tr[static_cast<std::size_t>(t.peer)].start : t.start;
      if (t.peer >= 0 && t.peer != cur && released > t.start) {
        from = released;  // before that this rank only waited for the last member
        jump = t.peer;
      }
      w.attribute(CriticalSegment::Kind::comm, op.axis, dev, &op, from, cursor);
    } else if (op.kind == sim::OpKind::send) {
      w.attribute(CriticalSegment::Kind::comm, Axis::pp, dev, &op, from, cursor);
    } else {  // recv
      // The data arrived when the matching send finished.
      const Time arrived = t.peer >= 0 ? tr[static_cast<std::size_t>(t.peer)].end : t.start;
      if (t.peer >= 0 && arrived > t.start) {
        from = arrived;
        jump = t.peer;  // the send that delivered the data
      }
      w.attribute(CriticalSegment::Kind::wait, Axis::none, dev, &op, from, cursor);
    }
    cursor = from;
    if (jump >= 0) {
      // Continue at the released-by op; its interval up to `cursor` is attributed there.
      const auto& pt = tr[static_cast<std::size_t>(jump)];
      std::int32_t pr; int ps; std::uint32_t pi;
      eng.decode(jump, pr, ps, pi);
      const auto& pop = prog.stages[static_cast<std::size_t>(prog.ranks[static_cast<std::size_t>(pr)].stage)]
                            .streams[static_cast<std::size_t>(ps)][pi];
      const std::int32_t pdev = prog.ranks[static_cast<std::size_t>(pr)].device;
      if (pop.kind == sim::OpKind::send) {
        // The transfer itself: [send start, arrival].
        w.ops.insert(jump);
        const Time sfrom = std::min(cursor, pt.start);
        w.attribute(CriticalSegment::Kind::comm, Axis::pp, pdev, &pop, sfrom, cursor);
        cursor = sfrom;
        cur = pt.enabler;
      } else {
        // The last member of a collective arrived at `cursor` == its start.
        w.ops.insert(jump);
        const Time pfrom = std::min(cursor, pt.start);
        w.attribute(CriticalSegment::Kind::wait, Axis::none, pdev, &pop, pfrom, cursor);
        cursor = pfrom;
        cur = pt.enabler;
      }
    } else {
      cur = t.enabler;
    }
    if (cur >= 0) {
      const Time e = tr[static_cast<std::size_t>(cur)].end;
      // Started later than its enabler finished (waited on something else).
      w.attribute(CriticalSegment::Kind::wait, Axis::none, dev, nullptr, e, cursor);
      cursor = std::min(cursor, e);
    }
  }
  w.attribute(CriticalSegment::Kind::wait, Axis::none, -1, nullptr, step_start, cursor);
  std::reverse(w.segments.begin(), w.segments.end());
  return w;
}

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

}  // namespace

namespace {
Result simulate_once(const Scenario& sc, const SimOptions& opts);
void price_warnings(const Scenario& sc, Result& res);
}  // namespace

Result simulate(const Scenario& sc, const SimOptions& opts) {
  Result res = simulate_once(sc, opts);
  if (opts.what_if) price_warnings(sc, res);
  return res;
}

namespace {

Result simulate_once(const Scenario& sc, const SimOptions& opts) {
  const auto t0 = std::chrono::steady_clock::now();
  if (auto errs = validate(sc); !errs.empty())
    throw std::invalid_argument(fmt::format("{}: {}", errs.front().key_path, errs.front().message));
  const auto cluster = topo::Cluster::build(effective_cluster(sc));
  topo::Planner planner(cluster, sc.cluster.ideal_network, collective_costs_of(sc.gpu));
  sim::FlowNetwork net(cluster.link_bandwidths());
  for (const auto& lf : sc.perturbations.links) {
    if (lf.bandwidth_factor == 0) continue;  // down, named and checked by Cluster::build (effective_cluster)
    const auto ids = cluster.find_links(lf.link);
    if (ids.empty()) throw std::invalid_argument(fmt::format("perturbations.links: no link named '{}' in the cluster (links are named like 'node0.gpu0->node0.nvswitch', or 'a<->b' for both directions)", lf.link));
    for (const auto id : ids) net.set_bandwidth(id, cluster.link(id).bandwidth_Bps * lf.bandwidth_factor);
  }
  const BuiltProgram bp = build_program(sc);
  const auto& prog = bp.program;
  const int D = static_cast<int>(prog.ranks.size());

  sim::EngineConfig cfg;
  cfg.compute_factor.assign(static_cast<std::size_t>(D), 1.0);
  for (const auto& ds : sc.perturbations.devices) {
    const int g = cluster.gpu_index(ds.device);
    if (g < 0) throw std::invalid_argument(fmt::format("perturbations.devices: no GPU named '{}'", ds.device));
    cfg.compute_factor[static_cast<std::size_t>(g)] *= ds.compute_slowdown;
  }
  cfg.compute_cv = sc.perturbations.jitter.compute_cv;
  cfg.comm_cv = sc.perturbations.jitter.comm_cv;
  cfg.seed = sc.perturbations.jitter.seed;
  std::size_t total_ops = 0;
  for (std::size_t r = 0; r < prog.ranks.size(); ++r)
    for (const auto& s : prog.stages[static_cast<std::size_t>(prog.ranks[r].stage)].streams) total_ops += s.size();
  // The critical path needs one 40-byte record per executed op; past ~25 M ops
  // (≈1 GB) it is skipped and the summary says so.
  cfg.record_ops = total_ops <= 25'000'000;
  std::vector<int> traced;
  if (opts.trace) {
    traced = traced_ranks(prog, opts.trace_max_devices);
    cfg.traced.assign(static_cast<std::size_t>(D), 0);
    for (int r : traced) cfg.traced[static_cast<std::size_t>(r)] = 1;
  }

  Result res;
  res.scenario = sc.name;
  res.devices = D;
  res.steps = std::max(1, sc.simulation.steps);
  res.gpus_per_node = sc.cluster.gpus_per_node;
  for (int g = 0; g < cluster.gpu_count(); ++g) res.device_names.push_back(cluster.gpu_name(g));

  sim::Engine eng(prog, planner, net, cfg);
  Recorder rec(eng, res);
  if (opts.trace) {
    eng.set_observer(&rec);
    net.set_observer(&rec);
    for (int r : traced) {
      const auto& st = prog.stages[static_cast<std::size_t>(prog.ranks[static_cast<std::size_t>(r)].stage)];
      rec.add_memory_track(r, cluster.gpu_name(r), cluster.node_of_gpu(r), static_cast<double>(st.static_memory_bytes));
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
      rec.add_link_track(static_cast<sim::LinkId>(l), li.name, cluster.node_of_gpu(g), li.bandwidth_Bps);
      ++added;
    }
  }

  Time t = Time::zero();
  std::vector<double> step_s;
  CritWalk crit;
  std::vector<sim::RankStats> first_stats;
  for (int k = 0; k < res.steps; ++k) {
    const Time end = eng.run_step(t, k);
    step_s.push_back((end - t).seconds());
    if (k == 0) {
      first_stats = eng.stats();
      if (cfg.record_ops) crit = walk_critical_path(eng, prog, t, end);
    }
    t = end;
  }
  const Time total = t;
  const auto& stats = first_stats;

  // ---- headline numbers ----
  res.step_stats.step_s = step_s;
  res.step_stats.mean_s = std::accumulate(step_s.begin(), step_s.end(), 0.0) / static_cast<double>(step_s.size());
  res.step_stats.p50_s = percentile(step_s, 0.5);
  res.step_stats.p99_s = percentile(step_s, 0.99);
  res.step_stats.max_s = *std::max_element(step_s.begin(), step_s.end());
  res.step_time_s = res.step_stats.mean_s;
  const double step0 = step_s.front();
  for (const auto& st : stats) {
    res.model_flops_per_step += st.model_flops;
    res.hardware_flops_per_step += st.hw_flops;
  }
  res.tokens_per_s = bp.tokens_per_step / res.step_time_s;
  res.tflops_per_gpu = res.hardware_flops_per_step / res.step_time_s / D / 1e12;
  res.mfu = res.model_flops_per_step / (res.step_time_s * D * sc.gpu.peak_flops);
  res.hfu = res.hardware_flops_per_step / (res.step_time_s * D * sc.gpu.peak_flops);

  // ---- pipeline ----
  const auto& L = sc.layout;
  res.stages = L.pp;
  res.microbatches = L.microbatches;
  res.virtual_stages = std::max(1, L.virtual_stages);
  res.schedule = schedule_name(L.schedule);
  res.bubble_fraction_analytic = analytic_bubble(L.schedule, L.pp, L.microbatches, res.virtual_stages);
  Time win_start = Time::max(), win_end = Time::zero();
  for (const auto& st : stats) {
    win_start = std::min(win_start, st.first_mb_start);
    win_end = std::max(win_end, st.last_mb_end);
  }
  const double window = (win_end - win_start).seconds();
  std::vector<int> per_stage_count(static_cast<std::size_t>(L.pp), 0);
  res.per_stage.resize(static_cast<std::size_t>(L.pp));
  for (int st = 0; st < L.pp; ++st) {
    auto& sr = res.per_stage[static_cast<std::size_t>(st)];
    sr.stage = st;
    sr.layers = bp.stage_layers[static_cast<std::size_t>(st)];
    sr.bubble_fraction_analytic = res.bubble_fraction_analytic;
  }
  for (int r = 0; r < D; ++r) {
    const auto& st = stats[static_cast<std::size_t>(r)];
    const int s = prog.ranks[static_cast<std::size_t>(r)].stage;
    auto& sr = res.per_stage[static_cast<std::size_t>(s)];
    ++per_stage_count[static_cast<std::size_t>(s)];
    sr.compute_s += st.compute_busy.seconds();
    sr.bubble_fraction += window > 0 ? 1.0 - st.mb_busy.seconds() / window : 0.0;
    sr.idle_fraction += 1.0 - st.compute_busy.seconds() / step0;
  }
  for (int st = 0; st < L.pp; ++st) {
    auto& sr = res.per_stage[static_cast<std::size_t>(st)];
    const double n = std::max(1, per_stage_count[static_cast<std::size_t>(st)]);
    sr.compute_s /= n;
    sr.bubble_fraction /= n;
    sr.idle_fraction /= n;
    res.bubble_fraction += sr.bubble_fraction / L.pp;
  }

  // ---- communication per axis (expert-data-parallel traffic is reported as dp) ----
  for (int ax = 1; ax < sim::kAxisCount; ++ax) {
    if (ax == static_cast<int>(Axis::edp)) continue;
    const bool is_dp = ax == static_cast<int>(Axis::dp);
    double bytes = 0, exposed = 0;
    int n = 0;
    for (int r = 0; r < D; ++r) {
      const auto& ri = prog.ranks[static_cast<std::size_t>(r)];
      const auto& st = stats[static_cast<std::size_t>(r)];
      bool member = ax == static_cast<int>(Axis::pp) ? L.pp > 1 : ri.group[static_cast<std::size_t>(ax)] >= 0;
      if (is_dp) member = member || ri.group[static_cast<int>(Axis::edp)] >= 0;
      if (!member) continue;
      ++n;
      bytes += st.bytes_sent[ax];
      exposed += st.exposed[ax].seconds();
      if (is_dp) {
        bytes += st.bytes_sent[static_cast<int>(Axis::edp)];
        exposed += st.exposed[static_cast<int>(Axis::edp)].seconds();
      }
    }
    if (n > 0) {
      res.comm[ax].bytes_per_device = bytes / n;
      res.comm[ax].exposed_s = exposed / n;
    }
  }

  // ---- MoE ----
  if (sc.model.moe.experts > 0) {
    auto& mo = res.moe;
    mo.present = true;
    mo.experts = sc.model.moe.experts;
    mo.top_k = sc.model.moe.top_k;
    mo.ep = L.ep;
    mo.expert_load = bp.routing.expert_load;
    mo.device_factor = bp.routing.device_factor;
    mo.dropped_fraction = bp.routing.dropped_fraction;
    int moe_layers = 0;
    for (int l = 0; l < sc.model.layers; ++l) moe_layers += layer_is_moe(sc.model, l) ? 1 : 0;
    mo.dropped_tokens_per_step = bp.routing.dropped_fraction * bp.tokens_per_step * sc.model.moe.top_k * moe_layers;
  }

  // ---- links ----
  {
    std::map<std::string, LinkKindStats> by_kind;
    std::vector<LinkStat> all;
    const double span_s = total.seconds();
    for (std::size_t l = 0; l < cluster.link_count(); ++l) {
      const auto& li = cluster.link(static_cast<sim::LinkId>(l));
      const double bytes = net.link_bytes(static_cast<sim::LinkId>(l));
      const double bw = net.bandwidth(static_cast<sim::LinkId>(l));
      const double u = span_s > 0 ? bytes / (bw * span_s) : 0.0;
      auto& k = by_kind[li.kind];
      k.kind = li.kind;
      ++k.count;
      k.bytes += bytes;
      k.mean_utilization += u;
      k.max_utilization = std::max(k.max_utilization, u);
      if (bytes > 0) all.push_back(LinkStat{li.name, li.kind, bytes, u});
    }
    for (auto& [name, k] : by_kind) {
      k.mean_utilization /= std::max(1, k.count);
      res.links_by_kind.push_back(k);
    }
    std::stable_sort(all.begin(), all.end(), [](const LinkStat& a, const LinkStat& b) {
      return a.utilization > b.utilization || (a.utilization == b.utilization && a.name < b.name);
    });
    if (all.size() > 10) all.resize(10);
    res.busiest_links = std::move(all);
  }

  // ---- memory ----
  res.memory_capacity_bytes = sc.gpu.memory_bytes;
  res.memory_per_stage.resize(static_cast<std::size_t>(L.pp));
  for (int st = 0; st < L.pp; ++st) res.memory_per_stage[static_cast<std::size_t>(st)] = bp.static_memory[static_cast<std::size_t>(st)];
  for (int r = 0; r < D; ++r) {
    const int s = prog.ranks[static_cast<std::size_t>(r)].stage;
    auto& mt = res.memory_per_stage[static_cast<std::size_t>(s)];
    mt.activations = std::max(mt.activations, static_cast<double>(stats[static_cast<std::size_t>(r)].mem_peak));
  }
  for (auto& mt : res.memory_per_stage) {
    mt.peak = mt.weights + mt.gradients + mt.master + mt.optimizer + mt.buffers + mt.activations;
    res.max_peak_bytes = std::max(res.max_peak_bytes, mt.peak);
  }
  res.memory_fits = res.max_peak_bytes <= res.memory_capacity_bytes;

  // ---- critical path ----
  if (cfg.record_ops) {
    const double tot = step0;
    auto& cp = res.critical_path;
    cp.device = crit.device;
    cp.compute_s = crit.compute.seconds();
    cp.wait_s = crit.wait.seconds();
    cp.comm_tp_s = crit.comm[static_cast<int>(Axis::tp)].seconds();
    cp.comm_pp_s = crit.comm[static_cast<int>(Axis::pp)].seconds();
    cp.comm_dp_s = crit.comm[static_cast<int>(Axis::dp)].seconds();
    cp.comm_ep_s = crit.comm[static_cast<int>(Axis::ep)].seconds();
    Time comm;
    for (int ax = 0; ax < sim::kAxisCount; ++ax) comm += crit.comm[ax];
    cp.share_compute = crit.compute.seconds() / tot;
    cp.share_comm = comm.seconds() / tot;
    cp.share_wait = crit.wait.seconds() / tot;
    if (opts.trace) {
      res.critical_segments = std::move(crit.segments);
      const auto& gids = rec.span_gids();
      for (std::size_t i = 0; i < res.spans.size() && i < gids.size(); ++i)
        if (crit.ops.count(gids[i])) res.spans[i].critical = true;
    }
  }
  if (opts.trace && res.steps > 1) {
    // The trace shows the first step only; drop spans of later steps.
    const Time end0 = Time::from_seconds(step0);
    std::vector<Span> keep;
    for (auto& s : res.spans)
      if (s.end <= end0) keep.push_back(s);
    res.spans.swap(keep);
  }
  // Close every counter at the end with an explicit 0 so idle tails read as idle.
  for (auto& c : res.counters)
    if (c.device < 0 && (c.samples.empty() || c.samples.back().t < total)) c.samples.push_back(CounterSample{total, 0.0});

  // ---- TP groups that leave their node ----
  for (const auto& grp : prog.groups) {
    if (grp.axis != Axis::tp) continue;
    std::vector<std::int32_t> devs;
    for (auto r : grp.ranks) devs.push_back(prog.ranks[static_cast<std::size_t>(r)].device);
    if (!cluster.crosses_nodes(devs)) continue;
    if (res.tp_groups_crossing_nodes++ == 0) {
      for (auto dv : devs) res.tp_crossing_example.push_back(cluster.gpu_name(dv));
      for (std::size_t k = 0; k < devs.size(); ++k)
        for (auto& kind : cluster.link_kinds_on_route(devs[k], devs[(k + 1) % devs.size()]))
          if (std::find(res.tp_crossing_link_kinds.begin(), res.tp_crossing_link_kinds.end(), kind) ==
              res.tp_crossing_link_kinds.end())
            res.tp_crossing_link_kinds.push_back(kind);
    }
  }

  res.warnings = dynamic_warnings(sc, bp, res, cfg.record_ops);
  res.events = eng.events_processed();
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

Warning* find_warning(Result& r, const std::string& code) {
  for (auto& w : r.warnings)
    if (w.code == code) return &w;
  return nullptr;
}

std::string delta_text(double base_s, double fixed_s) {
  return fmt::format("{:.4g} s per step instead of {:.4g} s ({:+.1f}%)", fixed_s, base_s, 100.0 * (fixed_s - base_s) / base_s);
}

void price_warnings(const Scenario& sc, Result& res) {
  SimOptions sub;
  sub.what_if = false;
  const double base = res.step_time_s;
  if (Warning* w = find_warning(res, "straggler")) {
    Scenario fixed = sc;
    fixed.perturbations.devices.clear();
    const double t = simulate_once(fixed, sub).step_time_s;
    w->message += fmt::format(". Without the slow device(s) the step would take {}: the straggler costs {:.4g} s ({:.1f}% of the step)",
                              delta_text(base, t), base - t, 100.0 * (base - t) / base);
  }
  if (Warning* w = find_warning(res, "stage-imbalance"); w && sc.layout.stage_layers_mode != StageLayersMode::balanced) {
    Scenario fixed = sc;
    fixed.layout.stage_layers_mode = StageLayersMode::balanced;
    fixed.layout.stage_layers.clear();
    if (validate(fixed).empty()) {
      const auto layers = resolve_stage_layers(fixed);
      std::string list;
      for (int n : layers) list += fmt::format("{}{}", list.empty() ? "" : ", ", n);
      const double t = simulate_once(fixed, sub).step_time_s;
      if (t < base * (1 - 1e-9))
        w->message += fmt::format("; stage_layers: balanced gives [{}] and {}", list, delta_text(base, t));
      else
        w->message += fmt::format("; stage_layers: balanced ([{}]) would not help ({}): the imbalance is not in the layer split "
                                  "(an uneven LM head that no whole-layer move can offset, or a slow device)",
                                  list, delta_text(base, t));
    }
  }
  if (Warning* w = find_warning(res, "moe-imbalance")) {
    Scenario fixed = sc;
    fixed.model.moe.routing = RoutingKind::balanced;
    fixed.model.moe.load.clear();
    const double t = simulate_once(fixed, sub).step_time_s;
    w->message += fmt::format(". With balanced routing the step would take {}: the skew costs {:.4g} s ({:.1f}% of the step)",
                              delta_text(base, t), base - t, 100.0 * (base - t) / base);
  }
  if (Warning* w = find_warning(res, "tp-crosses-nodes")) {
    // An in-node placement exists when a TP group fits in a node: make tp the
    // fastest-varying mesh axis so every group is 8 consecutive GPUs.
    if (sc.layout.tp <= sc.cluster.gpus_per_node && !sc.cluster.graph && sc.layout.placement.front() != "tp") {
      Scenario fixed = sc;
      fixed.layout.placement = {"tp", "dp", "pp"};
      const double t = simulate_once(fixed, sub).step_time_s;
      w->message += fmt::format(". With placement [tp, dp, pp] every TP group stays in a node: {}", delta_text(base, t));
    } else {
      w->message += fmt::format(". No in-node placement exists (tp = {} > {} GPUs per node); the exposed TP time is the cost",
                                sc.layout.tp, sc.cluster.gpus_per_node);
    }
  }
}

}  // namespace

}  // namespace ls::wl
