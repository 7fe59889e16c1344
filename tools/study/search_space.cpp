// tools/study/search_space.cpp — the search's layout space: default axes, --vary/--fix,
// enumeration with the divisibility rejections, the compact layout string, and the
// candidate's scenario. See search.hpp.
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tools/study/search.hpp"
#include "tools/study/sweep.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/model/schedule.hpp"

namespace ls::tools {

namespace {

std::vector<int> divisors(long long n) {
  std::vector<int> out;
  for (long long d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(static_cast<int>(d));
  return out;
}

int gpu_count(const wl::Scenario& s) { return wl::device_count(s.cluster); }

const char* schedule_short(wl::Schedule s) {
  // The "(vN)" after pN says it is interleaved.
  return s == wl::Schedule::interleaved_1f1b ? wl::schedule_name(wl::Schedule::one_f_one_b) : wl::schedule_name(s);
}

std::string join_placement(const std::vector<std::string>& p, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < p.size(); ++i) s += (i ? sep : "") + p[i];
  return s;
}

// ---- value parsing for --vary / --fix
std::string strip(std::string s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.erase(s.begin());
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

int parse_int(const std::string& key, const std::string& v, int lo, int hi) {
  std::size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || x < lo || x > hi)
    throw std::invalid_argument(fmt::format("{}: '{}' is not an integer in {}..{}", key, v, lo, hi));
  return static_cast<int>(x);
}

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "on" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "off" || v == "0" || v == "no") return false;
  throw std::invalid_argument(fmt::format("--vary/--fix {}: '{}' is not true or false", key, v));
}

wl::Recompute parse_recompute(const std::string& v) {
  if (v == "sel") return wl::Recompute::selective;  // search's short spelling
  if (const auto r = wl::from_name(wl::kRecomputeNames, v)) return *r;
  throw std::invalid_argument(fmt::format("--vary/--fix recompute: '{}' is not none, selective or full", v));
}

wl::Schedule parse_schedule(const std::string& v) {
  if (const auto s = wl::schedule_from_name(v)) return *s;
  std::vector<std::string_view> names;
  for (const auto& entry : wl::kScheduleNames) names.push_back(entry.name);
  throw std::invalid_argument(fmt::format("--vary/--fix schedule: '{}' is not one of {}", v, fmt::join(names, ", ")));
}

wl::StageLayersMode parse_stage_layers(const std::string& v) {
  if (const auto m = wl::from_name(wl::kStageLayersNames, v)) return *m;
  throw std::invalid_argument(fmt::format("--vary/--fix stage_layers: '{}' is not auto or balanced", v));
}

std::vector<std::string> parse_placement(const std::string& v) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= v.size()) {
    const std::size_t slash = v.find('/', start);
    out.push_back(strip(v.substr(start, slash == std::string::npos ? std::string::npos : slash - start)));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  std::vector<std::string> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != std::vector<std::string>{"dp", "pp", "tp"})
    throw std::invalid_argument(fmt::format("--vary/--fix placement: '{}' is not a permutation of tp/dp/pp (e.g. tp/dp/pp)", v));
  return out;
}

/// The long and short names of each axis key.
std::string canonical_key(std::string key) {
  if (key.rfind("layout.", 0) == 0) key = key.substr(7);
  if (key == "sequence_parallel") return "sp";
  if (key == "microbatch_size") return "mbs";
  if (key == "virtual_stages") return "v";
  if (key == "implementation.tp_comm_overlap" || key == "tp_comm_overlap") return "tp_overlap";
  if (key == "implementation.dp_overlap") return "dp_overlap";
  return key;
}

/// The interleavings a stage of `pp` can run: the axis's list, or with `v=all` every
/// v >= 2 dividing the stage's layers.
std::vector<int> interleavings(const SearchAxes& a, int layers, int pp) {
  if (!a.every_virtual_stages) return a.virtual_stages;
  std::vector<int> out;
  if (layers % pp != 0) return out;
  for (int v : divisors(layers / pp))
    if (v >= 2) out.push_back(v);
  return out;
}

/// The micro-batch sizes to try at data-parallel degree `dp`: the axis's list, or with
/// `mbs=all` every divisor of a rank's sequences per step (none when dp does not divide
/// the batch: the list's first size then stands for the rejected point).
std::vector<int> microbatch_sizes(const SearchAxes& a, std::int64_t global_batch, int dp) {
  if (!a.every_microbatch_size) return a.microbatch_size;
  if (global_batch % dp != 0) return {1};
  return divisors(global_batch / dp);
}

}  // namespace

const char* stage_layers_name(wl::StageLayersMode m) {
  return m == wl::StageLayersMode::explicit_list ? "explicit" : wl::name_of(wl::kStageLayersNames, m).data();
}

std::string compact_layout(const SearchLayout& l) {
  std::string s = fmt::format("t{}·p{}", l.tp, l.pp);
  const bool v = l.schedule == wl::Schedule::interleaved_1f1b, bal = l.stage_layers_mode == wl::StageLayersMode::balanced && l.pp > 1;
  if (v || bal) s += fmt::format("({}{}{})", v ? fmt::format("v{}", l.virtual_stages) : "", v && bal ? "," : "", bal ? "bal" : "");
  s += fmt::format("·d{}", l.dp);
  if (l.ep > 1) s += fmt::format("·e{}", l.ep);
  if (l.cp > 1) s += fmt::format("·c{}", l.cp);
  s += fmt::format(" z{}", l.zero);
  if (l.sequence_parallel) s += " sp";
  if (l.recompute == wl::Recompute::selective) s += " sel";
  if (l.recompute == wl::Recompute::full) s += " full";
  if (l.recompute == wl::Recompute::every_second_matmul) s += " op";  // torchtitan's name for it
  s += fmt::format(" mbs{} {}", l.microbatch_size, schedule_short(l.schedule));
  if (l.placement != std::vector<std::string>{"tp", "dp", "pp"}) s += " [" + join_placement(l.placement, ",") + "]";
  if (l.global_batch > 0) s += fmt::format(" gb{}", l.global_batch);  // a searched global batch
  if (l.shard_group > 0 && l.shard_group < l.dp) s += fmt::format(" hsdp{}", l.shard_group);
  if (l.offload.optimizer || l.offload.activations)
    s += fmt::format(" off:{}{}{}", l.offload.optimizer ? "opt" : "", l.offload.optimizer && l.offload.activations ? "+" : "",
                     l.offload.activations ? "act" : "");
  // The switches, where they act: TP collectives beside the GEMMs ("tpo"), gradient
  // reduction after the backward instead of beside it ("dp-after").
  if (l.tp_comm_overlap && l.tp > 1) s += " tpo";
  if (!l.dp_overlap && l.dp * l.cp > 1) s += " dp-after";
  return s;
}

SearchAxes default_axes(const wl::Scenario& base) {
  SearchAxes a;
  const int n = gpu_count(base);
  for (int d : divisors(n))
    if (d <= std::max(1, base.model.heads)) a.tp.push_back(d);
  a.pp = divisors(n);
  a.ep = base.model.moe.experts > 0 ? divisors(base.model.moe.experts) : std::vector<int>{1};
  a.zero = {0, 1, 2, 3};
  a.microbatch_size = {1, 2, 4, 8};
  a.virtual_stages = {2, 4};
  a.sequence_parallel = {false, true};
  a.recompute = {wl::Recompute::none, wl::Recompute::selective, wl::Recompute::full};
  a.schedule = {wl::Schedule::one_f_one_b, wl::Schedule::interleaved_1f1b, wl::Schedule::zb_h1};
  a.stage_layers = {wl::StageLayersMode::auto_even, wl::StageLayersMode::balanced};
  a.placement = {{"tp", "dp", "pp"}, {"tp", "pp", "dp"}};
  a.tp_overlap = {base.implementation.tp_comm_overlap};
  a.dp_overlap = {base.implementation.dp_overlap};
  // Context parallelism where sequences are long enough for activations to weigh:
  // cp 2 from 4k tokens (on 8k-token Llama-3-70B runs it halves the activations and wins
  // where pp alone cannot fit them), 2/4/8 from 16k, where the s² attention calls for
  // more; only degrees that split the sequence in 2·cp chunks and divide the GPUs (at
  // most 2× and 4× the space). MoE models too: ep folds over cp (Megatron-Core).
  constexpr std::int64_t kLongSequence = 4096, kVeryLongSequence = 16384;
  if (base.model.seq_len >= kLongSequence)
    for (int c : {2, 4, 8})
      if ((c == 2 || base.model.seq_len >= kVeryLongSequence) && base.model.seq_len % (2 * c) == 0 && n % c == 0) a.cp.push_back(c);
  return a;
}

std::vector<std::string> search_axis_keys() {
  return {"tp", "pp", "dp", "ep", "cp", "zero", "sp", "recompute", "mbs", "schedule", "v", "stage_layers", "placement",
          "global_batch", "tp_overlap", "dp_overlap"};
}

void apply_axis_option(SearchAxes& a, const std::string& text, bool fix) {
  SweepAxis ax = parse_sweep_set(text);  // KEY=V1,V2,... (throws std::invalid_argument)
  const std::string key = canonical_key(strip(ax.key));
  if (fix && ax.values.size() != 1)
    throw std::invalid_argument(fmt::format("--fix {}: give exactly one value (--vary takes a list)", text));
  std::vector<std::string> vals;
  for (auto& v : ax.values) vals.push_back(strip(v));
  auto ints = [&](int lo, int hi) {
    std::vector<int> out;
    for (const auto& v : vals) out.push_back(parse_int("--vary/--fix " + key, v, lo, hi));
    return out;
  };
  constexpr int kMaxDegree = 1 << 20;
  if (key == "tp") a.tp = ints(1, kMaxDegree);
  else if (key == "pp") a.pp = ints(1, kMaxDegree);
  else if (key == "dp") a.dp = ints(1, kMaxDegree);
  else if (key == "ep") a.ep = ints(1, kMaxDegree);
  else if (key == "cp") a.cp = ints(1, kMaxDegree);
  else if (key == "zero") a.zero = ints(0, 3);
  else if (key == "mbs" || key == "v") {
    // `all`: every size dividing a rank's batch / every v dividing a stage's layers.
    const bool all = vals.size() == 1 && vals.front() == "all";
    std::vector<int> list;
    if (!all) {
      try {
        list = ints(1, key == "mbs" ? kMaxDegree : 1024);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(fmt::format("{} (or `all`, alone)", e.what()));
      }
    }
    (key == "mbs" ? a.every_microbatch_size : a.every_virtual_stages) = all;
    if (!all) (key == "mbs" ? a.microbatch_size : a.virtual_stages) = list;
  }
  else if (key == "global_batch") {
    a.global_batch.clear();
    for (const auto& v : vals) a.global_batch.push_back(parse_int("--vary/--fix " + key, v, 1, 1 << 30));
  }
  else if (key == "sp" || key == "tp_overlap" || key == "dp_overlap") {
    auto& list = key == "sp" ? a.sequence_parallel : key == "tp_overlap" ? a.tp_overlap : a.dp_overlap;
    list.clear();
    for (const auto& v : vals) list.push_back(parse_bool(key, v));
  } else if (key == "recompute") {
    a.recompute.clear();
    for (const auto& v : vals) a.recompute.push_back(parse_recompute(v));
  } else if (key == "schedule") {
    a.schedule.clear();
    for (const auto& v : vals) a.schedule.push_back(parse_schedule(v));
  } else if (key == "stage_layers") {
    a.stage_layers.clear();
    for (const auto& v : vals) a.stage_layers.push_back(parse_stage_layers(v));
  } else if (key == "placement") {
    a.placement.clear();
    for (const auto& v : vals) a.placement.push_back(parse_placement(v));
  } else {
    std::string known;
    for (const auto& k : search_axis_keys()) known += (known.empty() ? "" : ", ") + k;
    throw std::invalid_argument(fmt::format("--vary/--fix: unknown axis '{}' (axes: {})", ax.key, known));
  }
}

std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) throw std::invalid_argument(fmt::format("--shard '{}': expected I/N, e.g. 0/4", text));
  const int index = parse_int("--shard I", text.substr(0, slash), 0, 1 << 30);
  const int count = parse_int("--shard N", text.substr(slash + 1), 1, 1 << 30);
  if (index >= count) throw std::invalid_argument(fmt::format("--shard {}: need 0 <= I < N", text));
  return {index, count};
}

std::int64_t base_global_batch(const wl::Scenario& base) {
  if (base.layout.global_batch > 0) return base.layout.global_batch;
  return static_cast<std::int64_t>(base.layout.microbatches) * base.layout.microbatch_size * std::max(1, base.layout.dp);
}

namespace {

/// The space at one global batch (enumerate_candidates).
std::vector<Candidate> enumerate_at_batch(const wl::Scenario& base, std::int64_t global_batch, const SearchAxes& a) {
  const int n = gpu_count(base);
  const auto& m = base.model;
  std::vector<Candidate> out;
  const wl::Schedule interleaved = wl::Schedule::interleaved_1f1b;
  // An axis a candidate makes meaningless takes its first value only.
  auto first_only = [](const auto& list, bool collapse) { return collapse && !list.empty() ? 1 : list.size(); };
  for (int cp : a.cp) {
  for (int tp : a.tp) {
    for (int pp : a.pp) {
      if (n % (static_cast<long long>(tp) * pp * cp) != 0) continue;  // dp·tp·cp·pp = GPUs by construction
      const int dp = n / (tp * pp * cp);
      if (!a.dp.empty() && std::find(a.dp.begin(), a.dp.end(), dp) == a.dp.end()) continue;
      for (std::size_t isl = 0; isl < first_only(a.stage_layers, pp == 1); ++isl) {
        for (std::size_t isc = 0; isc < first_only(a.schedule, pp == 1); ++isc) {
          const wl::Schedule sched = a.schedule[isc];
          // zb-v and dualpipe always run two chunks per stage.
          const std::vector<int> vs = sched == interleaved              ? interleavings(a, m.layers, pp)
                                      : wl::two_chunks_per_stage(sched) ? std::vector<int>{2}
                                                                        : std::vector<int>{1};
          for (int v : vs) {
            for (int ep : a.ep) {
              for (std::size_t iz = 0; iz < first_only(a.zero, dp == 1); ++iz) {
                for (std::size_t isp = 0; isp < first_only(a.sequence_parallel, tp == 1); ++isp) {
                  for (wl::Recompute rc : a.recompute) {
                    for (int mbs : microbatch_sizes(a, global_batch, dp)) {
                      for (std::size_t ito = 0; ito < first_only(a.tp_overlap, tp == 1); ++ito) {
                        for (std::size_t ido = 0; ido < first_only(a.dp_overlap, dp * cp == 1); ++ido) {
                          // Placements that order the same axes of degree > 1 alike are one layout.
                          std::vector<std::vector<std::string>> seen;
                          for (const auto& place : a.placement) {
                            std::vector<std::string> reduced;
                            for (const auto& axis : place)
                              if ((axis == "tp" ? tp : axis == "pp" ? pp : dp) > 1) reduced.push_back(axis);
                            if (std::find(seen.begin(), seen.end(), reduced) != seen.end()) continue;
                            seen.push_back(reduced);

                            Candidate c;
                            c.index = out.size();
                            SearchLayout& l = c.layout;
                            l.tp = tp, l.pp = pp, l.dp = dp, l.ep = ep, l.cp = cp, l.zero = a.zero[iz];
                            l.sequence_parallel = a.sequence_parallel[isp];
                            l.recompute = rc;
                            l.microbatch_size = mbs;
                            l.schedule = sched;
                            l.virtual_stages = v;
                            l.stage_layers_mode = a.stage_layers[isl];
                            l.placement = place;
                            l.tp_comm_overlap = a.tp_overlap[ito];
                            l.dp_overlap = a.dp_overlap[ido];
                            // Not searched: the base's own (a remedy candidate sets them; search.cpp).
                            l.offload = base.layout.offload;
                            l.shard_group = base.layout.shard_group;
                            const long long per_step = static_cast<long long>(dp) * mbs;
                            // Clamped: a count past the limit stays past it (and is rejected).
                            const std::int64_t count = std::min<std::int64_t>(global_batch / per_step, wl::kMaxMicrobatches + 1);
                            l.microbatches = global_batch % per_step == 0 ? static_cast<int>(count) : 0;
                            const int chunks = wl::model_chunk_count(sched, pp, v);
                            const bool moe = m.moe.experts > 0;
                            if (m.heads % tp != 0 || m.kv_heads % tp != 0 || m.ffn_hidden % tp != 0 ||
                                (moe && m.moe.expert_ffn_hidden % tp != 0))
                              c.rejected = "tp-indivisible";
                            else if (ep > 1 && (!moe || m.moe.experts % ep != 0 || (static_cast<long long>(cp) * dp) % ep != 0))
                              c.rejected = "ep-indivisible";  // expert_tp = tp: ep folds over cp·dp
                            else if (cp > 1 && m.seq_len % (2 * cp) != 0)
                              c.rejected = "cp-indivisible";
                            else if (chunks > m.layers)
                              c.rejected = "too-few-layers";
                            else if (l.stage_layers_mode == wl::StageLayersMode::auto_even && m.layers % chunks != 0)
                              c.rejected = "layers-indivisible";
                            else if (l.microbatches == 0)
                              c.rejected = "batch-indivisible";
                            else if (sched == interleaved && l.microbatches % pp != 0)
                              c.rejected = "interleaved-microbatches";
                            // Megatron-Core shards gradients (ZeRO-2/3) only without pipeline
                            // parallelism: such a layout would warn zero-with-pp and is not
                            // something a user can run, so the search does not rank it.
                            else if (l.zero >= 2 && pp > 1)
                              c.rejected = "zero-with-pp";
                            out.push_back(std::move(c));
                          }
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  }
  return out;
}

}  // namespace

std::vector<Candidate> enumerate_candidates(const wl::Scenario& base, std::int64_t global_batch, const SearchAxes& a) {
  if (a.global_batch.empty()) return enumerate_at_batch(base, global_batch, a);
  // Each batch of the list is a space of its own; the candidate carries its batch.
  std::vector<Candidate> out;
  for (const std::int64_t batch : a.global_batch)
    for (auto& c : enumerate_at_batch(base, batch, a)) {
      c.index = out.size();
      c.layout.global_batch = batch;
      out.push_back(std::move(c));
    }
  return out;
}

wl::Scenario candidate_scenario(const wl::Scenario& base, std::int64_t global_batch, const SearchLayout& l) {
  wl::Scenario s = base;
  wl::LayoutSpec& L = s.layout;
  L.tp = l.tp, L.pp = l.pp, L.dp = l.dp, L.ep = l.ep, L.cp = l.cp, L.zero = l.zero;
  L.sequence_parallel = l.sequence_parallel;
  L.recompute = l.recompute;
  L.recompute_layers = {};  // the search's recompute applies to every layer
  L.expert_tp = 0;          // experts split as the attention (no folding searched)
  L.microbatch_size = l.microbatch_size;
  L.global_batch = l.global_batch > 0 ? l.global_batch : global_batch;  // a searched batch, else the base's
  L.microbatches = std::max(1, l.microbatches);
  L.schedule = l.schedule;
  L.virtual_stages = l.virtual_stages;
  L.stage_layers_mode = l.stage_layers_mode;
  L.stage_layers.clear();
  L.placement = l.placement;
  L.offload = l.offload;
  L.shard_group = l.shard_group;
  s.implementation.tp_comm_overlap = l.tp_comm_overlap;
  s.implementation.dp_overlap = l.dp_overlap;
  return s;
}

}  // namespace ls::tools
