// tools/scenario/scenario_convert.cpp — the located YAML tree → a partial wl::Scenario:
// name, model, layout, precision, perturbations, simulation (cluster: in
// scenario_convert_cluster.cpp).
#include "tools/scenario/scenario_convert.hpp"

#include <algorithm>
#include <optional>
#include <limits>
#include <map>

#include "tools/scenario/scenario_reader.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/cost/low_precision.hpp"
#include "workloads/model/model.hpp"
#include "workloads/model/schedule.hpp"

namespace ls::tools {
namespace {

class Converter {
public:
  Converter(Diag& d, const std::string& source) : r_(d), d_(d), source_(source) {}

  wl::Scenario convert(const YNode& root) {
    s_.source = source_;
    if (!r_.map(root, "", keys("")))
      return s_;
    if (const YEntry* e = root.find("name")) assign(s_.name, r_.string(e->value, "name"));
    const std::size_t errors_before_cluster = d_.errors.size();
    graph_gpus_ = convert_cluster(root.find("cluster"), r_, s_);
    cluster_ok_ = d_.errors.size() == errors_before_cluster;
    if (const YEntry* e = root.find("model")) model(e->value, "model");
    else d_.error(Loc{source_, 1, 1}, "model", "missing required key",
                  fmt::format("give a preset, e.g. model: {{preset: llama3-70b}}; presets: {}",
                              fmt::join(wl::model_preset_names(), ", ")));
    layout(root.find("layout"));
    if (const YEntry* e = root.find("precision")) precision(e->value, "precision");
    if (const YEntry* e = root.find("perturbations")) perturbations(e->value, "perturbations");
    if (const YEntry* e = root.find("simulation")) {
      if (r_.map(e->value, "simulation", keys("simulation")))
        for (const auto& k : e->value.entries) read_bound(k.value, join_key("simulation", k.key));
    }
    if (const YEntry* e = root.find("implementation")) implementation(e->value, "implementation");
    // training.method / frozen / lora (and checkpoint:, failures:) in
    // scenario_convert_training.cpp, which also checks the section's keys; the token
    // budget and price here.
    convert_training(root, r_, s_);
    if (const YEntry* e = root.find("training")) training(e->value, "training");
    if (const YEntry* e = root.find("memory")) {
      if (r_.map(e->value, "memory", keys("memory")))
        for (const auto& k : e->value.entries) read_bound(k.value, join_key("memory", k.key));
    }
    return s_;
  }

private:
  /// Reads a bound key (scenario_keys.hpp) through its row; false for a key read by hand.
  bool read_bound(const YNode& v, const std::string& path) { return read_bound_key(r_, v, path, s_); }

  // ── training: the whole run's token budget and GPU-hour price (workloads/model/training_cost.hpp) ──
  // Bounds far above any real run that keep the run's GPU-hours and cost finite at any
  // throughput the simulator can report.
  static constexpr double kMaxTrainingTokens = 1e18;
  static constexpr double kMaxGpuHourPrice = 1e9;
  void training(const YNode& n, const std::string& path) {
    if (n.kind != YNode::Kind::map) return;  // reported by convert_training
    if (const YEntry* t = n.find("tokens")) {
      const std::string p = path + ".tokens";
      if (auto text = r_.scalar(t->value, p, "a token count like \"15T\"")) {
        try {
          const double v = parse_count(*text);
          if (v <= 0) d_.error(t->value.loc, p, fmt::format("must be greater than zero, got \"{}\"", *text));
          else if (v > kMaxTrainingTokens)
            d_.error(t->value.loc, p, fmt::format("{} is out of range (at most {:g} tokens)", *text, kMaxTrainingTokens),
                     "published runs train on up to about 1.5e13 tokens (15T)");
          else s_.training.tokens = v;
        } catch (const UnitError& e) {
          d_.error(t->value.loc, p, e.what(), e.hint());
        }
      }
    }
    if (const YEntry* pr = n.find("gpu_hour_price")) {
      const std::string p = path + ".gpu_hour_price";
      if (auto text = r_.scalar(pr->value, p, "a price like \"2.5 USD\"")) {
        try {
          const Price price = parse_price(*text);
          if (price.amount > kMaxGpuHourPrice) {
            d_.error(pr->value.loc, p, fmt::format("{} is out of range (at most {:g} per GPU-hour)", *text, kMaxGpuHourPrice),
                     "the price of one GPU for one hour, e.g. \"2.5 USD\"");
          } else {
            s_.training.gpu_hour_price = price.amount;
            s_.training.currency = price.currency;
          }
        } catch (const UnitError& e) {
          d_.error(pr->value.loc, p, e.what(), e.hint());
        }
      }
    }
  }

  // ── implementation: the preset's bundle first, then the explicit keys ──
  void implementation(const YNode& n, const std::string& path) {
    if (!r_.map(n, path, keys("implementation"))) return;
    wl::ImplementationSpec& impl = s_.implementation;
    if (const YEntry* p = n.find("preset")) {
      if (auto name = r_.choice(p->value, path + ".preset", values("implementation.preset"))) {
        if (auto bundle = wl::implementation_preset(*name)) {
          impl.preset = *name;
          static_cast<wl::ImplementationBundle&>(impl) = *bundle;
        }
      }
    }
    // The explicit keys override the preset's choices, in any order in the file.
    for (const auto& e : n.entries) read_bound(e.value, join_key(path, e.key));
  }

  // ── model ──
  void model(const YNode& given, const std::string& path) {
    // `model: llama3-70b` is shorthand for `model: {preset: llama3-70b}`.
    YNode shorthand;
    if (given.kind == YNode::Kind::scalar) {
      shorthand.kind = YNode::Kind::map;
      shorthand.loc = given.loc;
      shorthand.entries.push_back(YEntry{"preset", given.loc, given});
    }
    const YNode& n = given.kind == YNode::Kind::scalar ? shorthand : given;
    if (!r_.map(n, path, keys("model"))) return;
    wl::ModelSpec m;
    m.name = "custom";
    bool have_preset = false;
    if (const YEntry* p = n.find("preset")) {
      const std::string pp = path + ".preset";
      if (auto name = r_.scalar(p->value, pp, "a model preset name")) {
        if (auto pm = wl::model_preset(*name)) {
          m = *pm;
          have_preset = true;
        } else {
          const auto names = wl::model_preset_names();
          const std::string near = closest_match(lower(*name), names, 3);
          d_.error(p->value.loc, pp, fmt::format("unknown model preset \"{}\"; presets: {}", *name, fmt::join(names, ", ")),
                   near.empty() ? "or give layers, hidden, heads, vocab, seq_len" : fmt::format("did you mean '{}'?", near));
          return;  // the explicit keys alone would give misleading follow-up errors
        }
      } else {
        return;
      }
    }
    const bool preset_mha = have_preset && m.kv_heads == m.heads;
    s_.model = m;  // the bound rows read into the scenario's model, over the preset
    for (const auto& e : n.entries) {
      const std::string p = join_key(path, e.key);
      const YNode& v = e.value;
      if (e.key == "preset") continue;
      if (e.key == "dropout") {
        if (auto d = r_.number(v, p, 0, 1, false)) {
          if (*d < 1) s_.model.dropout = *d;
          else d_.error(v.loc, p, "must be below 1 (a probability of dropping)");
        }
      } else if (e.key == "moe") {
        moe(v, p, s_.model);
      } else if (e.key == "mla") {
        if (r_.map(v, p, keys("model.mla")))
          for (const auto& x : v.entries) read_bound(x.value, join_key(p, x.key));
      } else {
        read_bound(v, p);
      }
    }
    if (!have_preset) {
      for (const char* k : {"layers", "hidden", "heads", "vocab", "seq_len"})
        if (!n.find(k))
          d_.error(n.loc, join_key(path, k), "missing required key: there is no preset to inherit it from",
                   fmt::format("or add preset: one of {}", fmt::join(wl::model_preset_names(), ", ")));
      // kv_heads and ffn_hidden stay unset (0): wl::resolve derives them.
    } else if (preset_mha && n.find("heads") && !n.find("kv_heads")) {
      s_.model.kv_heads = 0;  // an MHA preset stays MHA: unset, so wl::resolve makes it follow heads
    }
  }

  void moe(const YNode& n, const std::string& path, wl::ModelSpec& m) {
    if (!r_.map(n, path, keys("model.moe")))
      return;
    auto& x = m.moe;
    for (const auto& e : n.entries)
      if (e.key != "routing") read_bound(e.value, join_key(path, e.key));
    if (x.experts <= 0 && !n.find("experts")) d_.error(n.loc, path + ".experts", "missing required key");
    if (x.top_k <= 0 && !n.find("top_k")) d_.error(n.loc, path + ".top_k", "missing required key");
    if (const YEntry* t = n.find("top_k"); t && x.experts > 0 && x.top_k > x.experts)
      d_.error(t->value.loc, path + ".top_k", fmt::format("top_k {} exceeds the {} experts", x.top_k, x.experts));
    if (const YEntry* e = n.find("routing")) routing(e->value, path + ".routing", x);
  }

  void routing(const YNode& n, const std::string& path, wl::MoeSpec& x) {
    if (n.kind == YNode::Kind::scalar) {
      if (r_.choice(n, path, values("model.moe.routing"))) x.routing = wl::RoutingKind::balanced;
      return;
    }
    if (!r_.map(n, path, keys("model.moe.routing"))) return;
    if (const YEntry* l = n.find("load")) {
      for (const char* k : {"skew", "alpha", "seed"})
        if (const YEntry* o = n.find(k))
          d_.error(o->key_loc, join_key(path, k), "cannot be combined with routing.load");
      if (!r_.seq(l->value, path + ".load", "relative loads")) return;
      std::vector<double> load;
      double sum = 0;
      for (std::size_t i = 0; i < l->value.items.size(); ++i) {
        auto v = r_.number(l->value.items[i], join_index(path + ".load", i), 0, 1e12, false);
        if (!v) return;
        load.push_back(*v);
        sum += *v;
      }
      if (x.experts > 0 && static_cast<int>(load.size()) != x.experts) {
        d_.error(l->value.loc, path + ".load",
                 fmt::format("has {} entries, expected one per expert ({})", load.size(), x.experts));
        return;
      }
      if (sum <= 0) {
        d_.error(l->value.loc, path + ".load", "all loads are zero");
        return;
      }
      x.routing = wl::RoutingKind::load;
      x.load = std::move(load);
      return;
    }
    const YEntry* sk = n.find("skew");
    if (!sk) {
      d_.error(n.loc, path + ".skew", "missing required key", "routing: balanced | {skew: zipf, alpha, seed} | {load: [...]}");
      return;
    }
    if (!r_.choice(sk->value, path + ".skew", values("model.moe.routing.skew"))) return;
    x.routing = wl::RoutingKind::zipf;
    if (const YEntry* a = n.find("alpha")) assign(x.zipf_alpha, r_.number(a->value, path + ".alpha", 0, 100, true));
    if (const YEntry* s = n.find("seed"))
      assign(x.routing_seed, r_.integer(s->value, path + ".seed", 0, std::numeric_limits<std::int64_t>::max()));
  }

  // ── layout ──
  void layout(const YEntry* le) {
    auto& l = s_.layout;
    const YEntry* mb = nullptr;
    const YEntry* gb = nullptr;
    if (le) {
      const std::string path = "layout";
      const YNode& n = le->value;
      if (!r_.map(n, path, keys("layout")))
        return;
      for (const auto& e : n.entries) {
        const std::string p = join_key(path, e.key);
        const YNode& v = e.value;
        if (e.key == "recompute") {
          recompute(v, p);
          continue;
        }
        if (read_bound(v, p)) continue;
        if (e.key == "dp") {
          if (v.kind == YNode::Kind::scalar && v.scalar == "auto") l.dp = 0;  // unset: wl::resolve derives it
          else assign(l.dp, r_.count(v, p, 1, kMaxDevices));
        }
        else if (e.key == "microbatches") { mb = &e; assign(l.microbatches, r_.count(v, p)); }
        else if (e.key == "global_batch") gb = &e;
        else if (e.key == "stage_layers") stage_layers(v, p);
        else if (e.key == "placement") placement(v, p);
        else if (e.key == "shard_group") assign(l.shard_group, r_.count(v, p, 1, kMaxDevices));
        else if (e.key == "expert_tp") assign(l.expert_tp, r_.count(v, p, 1, kMaxDevices));
        else if (e.key == "shard_over") shard_over(v, p);
        else if (e.key == "offload") {
          if (r_.map(v, p, keys("layout.offload")))
            for (const auto& o : v.entries) read_bound(o.value, join_key(p, o.key));
        }
      }
    }
    if (mb && gb) {
      // A --set of one replaces the other (sweeps override microbatches on files that
      // give a global batch); both in the file is a contradiction.
      const bool mb_set = mb->key_loc.source == "--set";
      const bool gb_set = gb->key_loc.source == "--set";
      if (mb_set && (!gb_set || mb->key_loc.line > gb->key_loc.line)) gb = nullptr;
      else if (gb_set) mb = nullptr;
      else {
        d_.error(gb->key_loc, "layout.global_batch", "cannot be combined with layout.microbatches",
                 "give one: global_batch = microbatches · microbatch_size · dp");
        return;
      }
    }
    // microbatches = global_batch / (microbatch_size·dp) once dp is known: wl::resolve.
    if (gb) assign(l.global_batch, r_.integer(gb->value, "layout.global_batch", 1, kMaxCount * 1024));
  }

  /// layout.recompute: a word (the ops) or {ops: WORD, layers: all | every-K | [INT, ...]}.
  void recompute(const YNode& v, const std::string& p) {
    auto& l = s_.layout;
    const auto ops = [&](const YNode& w, const std::string& path) {
      if (auto c = r_.choice(w, path, values(path)))
        if (auto rc = wl::from_name(wl::kRecomputeNames, *c)) l.recompute = *rc;
    };
    if (v.kind == YNode::Kind::scalar) {
      ops(v, p);
      return;
    }
    if (!r_.map(v, p, keys("layout.recompute"))) return;
    for (const auto& e : v.entries) {
      const std::string path = join_key(p, e.key);
      if (e.key == "ops") ops(e.value, path);
      else if (e.key == "layers") recompute_layers(e.value, path);
    }
  }

  void recompute_layers(const YNode& v, const std::string& p) {
    auto& r = s_.layout.recompute_layers;
    const std::string_view hint = "all, every-K (K >= 1) or a list of 0-based layer indices, e.g. every-2 or [0, 1, 2]";
    if (v.kind == YNode::Kind::scalar) {
      r.list.clear();
      if (v.scalar == "all") {
        r.every = 1;
        return;
      }
      const std::string_view text = v.scalar;
      int k = 0;
      const bool every = text.starts_with("every-") && text.size() > 6 &&
                         std::all_of(text.begin() + 6, text.end(), [](char c) { return c >= '0' && c <= '9'; }) && text.size() <= 13;
      if (every) k = std::stoi(std::string(text.substr(6)));
      if (!every || k < 1) {
        d_.error(v.loc, p, fmt::format("expected all, every-K or a list of layers, got '{}'", v.scalar), std::string(hint));
        return;
      }
      r.every = k;
      return;
    }
    auto layers = count_list(v, p, "all, every-K or a list of layers", hint, "leave layers out (all), or recompute: none");
    if (!layers) return;
    r.every = 1;
    r.list = std::move(*layers);
  }

  /// A non-empty list of counts (>= 0), the key's other spellings being scalars;
  /// nullopt after a located error naming `expected` (and `hint`), or `empty_hint`.
  std::optional<std::vector<int>> count_list(const YNode& v, const std::string& p, std::string_view expected,
                                             std::string_view hint, std::string_view empty_hint) {
    if (v.kind != YNode::Kind::seq) {
      d_.error(v.loc, p, fmt::format("expected {}, got {}", expected, kind_name(v)), std::string(hint));
      return std::nullopt;
    }
    std::vector<int> out;
    for (std::size_t i = 0; i < v.items.size(); ++i) {
      auto c = r_.count(v.items[i], join_index(p, i), 0);
      if (!c) return std::nullopt;
      out.push_back(*c);
    }
    if (out.empty()) {
      d_.error(v.loc, p, "the list is empty", std::string(empty_hint));
      return std::nullopt;
    }
    return out;
  }

  void stage_layers(const YNode& v, const std::string& p) {
    auto& l = s_.layout;
    if (v.kind == YNode::Kind::scalar) {
      if (auto c = r_.choice(v, p, values("layout.stage_layers"))) {
        if (auto mode = wl::from_name(wl::kStageLayersNames, *c)) l.stage_layers_mode = *mode;
        l.stage_layers.clear();
      }
      return;
    }
    auto counts = count_list(v, p, "auto, balanced or a list of layer counts", "", "give one layer count per pipeline stage");
    if (!counts) return;
    l.stage_layers_mode = wl::StageLayersMode::explicit_list;
    l.stage_layers = std::move(*counts);
  }

  /// A list whose every item is one of the key's allowed words (its row's values);
  /// nullopt after a located error.
  std::optional<std::vector<std::string>> choice_list(const YNode& v, const std::string& p, std::string_view what) {
    if (!r_.seq(v, p, what)) return std::nullopt;
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v.items.size(); ++i) {
      auto a = r_.choice(v.items[i], join_index(p, i), values(p));
      if (!a) return std::nullopt;
      out.push_back(*a);
    }
    return out;
  }

  void shard_over(const YNode& v, const std::string& p) {
    const auto read = choice_list(v, p, "the axes ZeRO shards over: [dp, cp] or [dp]");
    if (!read) return;
    const std::vector<std::string>& axes = *read;
    std::vector<std::string> sorted = axes;
    std::sort(sorted.begin(), sorted.end());
    const bool with_cp = sorted == std::vector<std::string>{"cp", "dp"};
    if (!with_cp && axes != std::vector<std::string>{"dp"}) {
      d_.error(v.loc, p, fmt::format("[{}] is not [dp, cp] or [dp]", fmt::join(axes, ", ")),
               "ZeRO always shards over dp; cp may join it, once");
      return;
    }
    s_.layout.shard_over_cp = with_cp;
  }

  void placement(const YNode& v, const std::string& p) {
    auto read = choice_list(v, p, "mesh axes (a permutation of tp, dp, pp, with cp optional)");
    if (!read) return;
    std::vector<std::string> axes = std::move(*read);
    if (!wl::valid_placement(axes)) {
      d_.error(v.loc, p, fmt::format("[{}] is not a permutation of tp, dp, pp (cp optional)", fmt::join(axes, ", ")),
               "each axis exactly once, fastest-varying first, e.g. [tp, cp, dp, pp]");
      return;
    }
    s_.layout.placement = std::move(axes);
  }

  // ── precision ──
  void precision(const YNode& n, const std::string& path) {
    if (!r_.map(n, path, keys("precision"))) return;
    auto& pr = s_.precision;
    const auto dtype_bytes = [](const std::string& t) { return t == "fp32" ? 4 : t == "fp8" ? 1 : 2; };
    for (const auto& e : n.entries) {
      const std::string p = join_key(path, e.key);
      const YNode& v = e.value;
      if (e.key == "weights") {
        if (auto t = r_.choice(v, p, values("precision.weights"))) pr.weights = dtype_bytes(*t);
      } else if (e.key == "gradients") {
        if (auto t = r_.choice(v, p, values("precision.gradients"))) pr.gradients = dtype_bytes(*t);
      } else if (e.key == "grad_reduce") {
        if (auto t = r_.choice(v, p, values("precision.grad_reduce"))) pr.grad_reduce = dtype_bytes(*t);
      } else if (e.key == "master") {
        if (auto t = r_.choice(v, p, values("precision.master"))) pr.master = *t == "fp32" ? 4 : 0;
      } else if (e.key == "optimizer") {
        if (auto t = r_.choice(v, p, values("precision.optimizer")))
          pr.optimizer = (*t == "adam-fp32" || *t == "adamw-fp32") ? 8 : *t == "sgd" ? 0 : 4;
      } else if (e.key == "activations") {
        if (auto t = r_.choice(v, p, values("precision.activations"))) pr.activations = dtype_bytes(*t);
      } else if (e.key == "compute") {
        if (auto t = r_.choice(v, p, values("precision.compute")))
          if (auto c = wl::parse_compute_precision(*t)) pr.compute = *c;
      }
    }
  }

  // ── perturbations ──
  void perturbations(const YNode& n, const std::string& path) {
    if (!r_.map(n, path, keys("perturbations"))) return;
    auto& pt = s_.perturbations;
    if (const YEntry* de = n.find("devices"); de && r_.seq(de->value, path + ".devices", "{device, compute_slowdown} maps")) {
      std::map<std::string, std::size_t> seen;
      for (std::size_t i = 0; i < de->value.items.size(); ++i) {
        const YNode& v = de->value.items[i];
        const std::string p = join_index(path + ".devices", i);
        if (!r_.map(v, p, keys("perturbations.devices[]"))) continue;
        wl::DeviceSlowdown ds;
        const YEntry* dev = v.find("device");
        if (!dev) {
          d_.error(v.loc, p + ".device", "missing required key", "e.g. device: node0.gpu3");
          continue;
        }
        auto name = r_.string(dev->value, p + ".device");
        if (!name) continue;
        if (!cluster_ok_) continue;  // the device set is unknown; do not pile on follow-up errors
        if (!device_exists(*name)) {
          const bool shaped = gpu_coords(*name).has_value() || s_.cluster.graph;
          d_.error(dev->value.loc, p + ".device",
                   shaped ? fmt::format("no device \"{}\" in this cluster", *name)
                          : fmt::format("\"{}\" is not a device name", *name),
                   s_.cluster.graph ? "use a GPU vertex name of cluster.graph"
                                    : fmt::format("devices are node0.gpu0 … node{}.gpu{}", s_.cluster.nodes - 1,
                                                  s_.cluster.gpus_per_node - 1));
          continue;
        }
        if (auto [it, fresh] = seen.emplace(*name, i); !fresh) {
          d_.error(dev->value.loc, p + ".device", fmt::format("\"{}\" is already listed at devices[{}]", *name, it->second));
          continue;
        }
        ds.device = *name;
        if (const YEntry* c = v.find("compute_slowdown"))
          assign(ds.compute_slowdown, r_.number(c->value, p + ".compute_slowdown", 0, 1e6, true));
        if (const YEntry* dr = v.find("drift"); dr && r_.map(dr->value, p + ".drift", keys("perturbations.devices[].drift"))) {
          if (const YEntry* ps = dr->value.find("per_step"))
            assign(ds.drift_per_step, r_.number(ps->value, p + ".drift.per_step", 0, 1, false));
          else
            d_.error(dr->value.loc, p + ".drift.per_step", "missing required key", "drift: {per_step: 0.02} grows the slowdown 2 % a step");
        }
        pt.devices.push_back(std::move(ds));
      }
    }
    if (const YEntry* le = n.find("links"); le && r_.seq(le->value, path + ".links", "{link, bandwidth_factor} maps")) {
      for (std::size_t i = 0; i < le->value.items.size(); ++i) {
        const YNode& v = le->value.items[i];
        const std::string p = join_index(path + ".links", i);
        if (!r_.map(v, p, keys("perturbations.links[]"))) continue;
        wl::LinkFactor lf;
        const YEntry* l = v.find("link");
        if (!l) {
          d_.error(v.loc, p + ".link", "missing required key", "e.g. link: node3.nic5->leaf5");
          continue;
        }
        auto name = r_.string(l->value, p + ".link");
        if (!name) continue;
        lf.link = *name;  // checked against the topology by simulate()
        if (const YEntry* f = v.find("bandwidth_factor"))
          assign(lf.bandwidth_factor, r_.number(f->value, p + ".bandwidth_factor", 0, 1e3, false));
        pt.links.push_back(std::move(lf));
      }
    }
    if (const YEntry* je = n.find("jitter")) {
      const std::string p = path + ".jitter";
      if (r_.map(je->value, p, keys("perturbations.jitter"))) {
        for (const auto& e : je->value.entries) read_bound(e.value, join_key(p, e.key));
      }
    }
  }

  bool device_exists(const std::string& name) const {
    if (s_.cluster.graph) return graph_gpus_.count(name) > 0;
    auto c = gpu_coords(name);
    return c && c->first < s_.cluster.nodes && c->second < s_.cluster.gpus_per_node;
  }

  Reader r_;
  Diag& d_;
  std::string source_;
  wl::Scenario s_;
  bool cluster_ok_ = true;
  std::set<std::string> graph_gpus_;
};

}  // namespace

wl::Scenario convert_scenario(const YNode& root, const std::string& source, Diag& d) {
  Converter conv(d, source);
  return conv.convert(root);
}

}  // namespace ls::tools
