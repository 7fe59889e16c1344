// tools/scenario/scenario_convert_cluster.cpp — `cluster:`: the GPU, the generated
// topology's keys, or an explicit graph.
#include <algorithm>
#include <charconv>
#include <filesystem>

#include "tools/scenario/scenario_convert.hpp"
#include "tools/scenario/gpu_profile_file.hpp"
#include "tools/scenario/scenario_reader.hpp"
#include "topology/cluster.hpp"
#include "workloads/cost/hardware.hpp"

namespace ls::tools {
namespace {

class ClusterConverter {
public:
  ClusterConverter(Reader& r, wl::Scenario& s) : r_(r), d_(r.diag()), s_(s) {}

  void cluster(const YEntry* ce) {
    if (ce) {
      const YNode& c = ce->value;
      if (!r_.map(c, "cluster", keys("cluster"))) return;
      if (const YEntry* g = c.find("gpu")) gpu(g->value, "cluster.gpu");
      for (const char* k : {"nodes", "gpus_per_node", "network"})
        if (const YEntry* e = c.find(k)) read_bound_key(r_, e->value, join_key("cluster", k), s_);
      if (const YEntry* e = c.find("nvlink_domain"))
        assign(s_.cluster.nvlink_domain, r_.count(e->value, "cluster.nvlink_domain", 1, kMaxDevices));
      if (const YEntry* e = c.find("intra_node")) intra(e->value, "cluster.intra_node");
      if (const YEntry* e = c.find("inter_node")) inter(e->value, "cluster.inter_node");
      if (const YEntry* e = c.find("graph")) {
        for (const char* k : {"nodes", "gpus_per_node", "intra_node", "inter_node", "nvlink_domain"})
          if (const YEntry* x = c.find(k))
            d_.error(x->key_loc, join_key("cluster", k), "cannot be combined with cluster.graph",
                     "an explicit graph replaces nodes, gpus_per_node, intra_node and inter_node");
        graph(e->value, "cluster.graph");
      }
      const std::int64_t devices = std::int64_t{s_.cluster.nodes} * s_.cluster.gpus_per_node;
      if (!s_.cluster.graph && devices > kMaxDevices)
        d_.error(ce->key_loc, "cluster", fmt::format("{} nodes × {} GPUs = {} devices is too many", s_.cluster.nodes,
                                                     s_.cluster.gpus_per_node, devices),
                 fmt::format("at most {}", kMaxDevices));
    }
  }

  std::optional<wl::GpuSpec> gpu_by_name(const YNode& n, const std::string& path) {
    auto name = r_.scalar(n, path, "a GPU preset name");
    if (!name) return std::nullopt;
    if (auto g = wl::gpu_preset(*name)) return g;
    const auto names = wl::gpu_preset_names();
    // A family name ("a100") is a prefix of its presets: suggest them all, before an
    // edit-distance match (which would offer "h200").
    std::vector<std::string> family;
    for (const auto& p : names)
      if (!name->empty() && p.rfind(lower(*name), 0) == 0) family.push_back("'" + p + "'");
    const std::string near =
        family.empty() ? closest_match(lower(*name), names, 3) : fmt::format("{}", fmt::join(family, " or "));
    d_.error(n.loc, path, fmt::format("unknown GPU preset \"{}\"; presets: {}", *name, fmt::join(names, ", ")),
             near.empty() ? "or give a map with peak_tflops, memory, hbm_bandwidth, ..."
                          : (family.empty() ? fmt::format("did you mean '{}'?", near) : fmt::format("did you mean {}?", near)));
    return std::nullopt;
  }

  /// A preset name or a map; absent: left unset (wl::resolve picks the default).
  void gpu(const YNode& given, const std::string& path) {
    const YNode* n = &given;
    if (n->kind == YNode::Kind::scalar) {
      if (auto g = gpu_by_name(*n, path)) s_.gpu = *g;
      return;
    }
    if (n->kind != YNode::Kind::map) {
      d_.error(n->loc, path, fmt::format("expected a GPU preset name or a map, got {}", kind_name(*n)),
               fmt::format("presets: {}", fmt::join(wl::gpu_preset_names(), ", ")));
      return;
    }
    if (!r_.map(*n, path, keys("cluster.gpu")))
      return;
    std::optional<wl::GpuSpec> preset;
    if (const YEntry* p = n->find("preset")) {
      preset = gpu_by_name(p->value, join_key(path, "preset"));
      if (!preset) return;
    }
    const bool have_preset = preset.has_value();
    // The bound rows read into the scenario's GPU, over the preset.
    wl::GpuSpec& gpu = s_.gpu;
    gpu = preset ? *preset : wl::GpuSpec{};
    if (!preset) gpu.name = "custom";
    for (const auto& e : n->entries) {
      const std::string p = join_key(path, e.key);
      const YNode& v = e.value;
      if (e.key == "preset" || e.key == "profile") continue;
      if (e.key == "peak_tflops") {
        // The key carries the unit (TFLOP/s); a string with an explicit unit is fine too.
        if (v.kind == YNode::Kind::scalar && v.scalar.find_first_of("Ff") != std::string::npos &&
            v.scalar.find("FLOP") != std::string::npos) {
          if (auto f = r_.quantity(v, p, "312 TFLOP/s", parse_flops)) {
            if (*f > 0) gpu.peak_flops = *f;
            else d_.error(v.loc, p, "must be greater than zero");
          }
        } else if (auto t = r_.number(v, p, 0, 1e9, true)) {
          gpu.peak_flops = *t * 1e12;
        }
      } else {
        read_bound_key(r_, v, p, s_);
      }
    }
    if (const YEntry* pf = n->find("profile")) {
      // A calibrate output fitted on this GPU type, over the preset's constants.
      const std::string pp = join_key(path, "profile");
      if (auto file = r_.string(pf->value, pp)) {
        std::filesystem::path fp(*file);
        if (fp.is_relative() && !s_.source.empty() && s_.source.front() != '<')
          fp = std::filesystem::path(s_.source).parent_path() / fp;
        try {
          apply_profile(gpu, fp.string());
        } catch (const std::exception& ex) {
          d_.error(pf->value.loc, pp, ex.what(), "a `layoutsim calibrate --out` file for this GPU's preset");
        }
      }
    }
    // The step is priced by a compute profile (tile waves, sustained GEMM fraction,
    // launch overhead), not by the map's roofline fields; an override must reach the
    // profile or it would be silently ignored. Applied after `profile:`, so that a key
    // written in the scenario wins over a calibrate file.
    if (have_preset && n->find("matmul_efficiency") && gpu.matmul_efficiency > 0)
      gpu.compute.gemm_sustained_fraction = gpu.matmul_efficiency;
    if (n->find("kernel_overhead")) gpu.compute.launch_overhead_s = gpu.kernel_overhead.seconds();
    if (!have_preset) {
      for (const char* k : {"peak_tflops", "memory", "hbm_bandwidth"})
        if (!n->find(k))
          d_.error(n->loc, join_key(path, k), "missing required key: there is no preset to inherit it from",
                   fmt::format("or add preset: one of {}", fmt::join(wl::gpu_preset_names(), ", ")));
    }
  }

  void intra(const YNode& n, const std::string& path) {
    if (!r_.map(n, path, keys("cluster.intra_node"))) return;
    for (const auto& e : n.entries) read_bound_key(r_, e.value, join_key(path, e.key), s_);
  }

  void inter(const YNode& n, const std::string& path) {
    if (!r_.map(n, path, keys("cluster.inter_node")))
      return;
    for (const auto& e : n.entries) read_bound_key(r_, e.value, join_key(path, e.key), s_);
  }

  void graph(const YNode& n, const std::string& path) {
    if (!r_.map(n, path, keys("cluster.graph"))) return;
    topo::ExplicitGraphSpec gs;
    std::set<std::string> names;
    long max_node = -1, max_gpu = -1;
    const YEntry* ve = n.find("vertices");
    if (!ve) d_.error(n.loc, path + ".vertices", "missing required key", "a list of {name, kind}");
    else if (r_.seq(ve->value, path + ".vertices", "{name, kind} maps")) {
      for (std::size_t i = 0; i < ve->value.items.size(); ++i) {
        const YNode& v = ve->value.items[i];
        const std::string p = join_index(path + ".vertices", i);
        if (!r_.map(v, p, keys("cluster.graph.vertices[]"))) continue;
        topo::GraphVertexSpec vs;
        const YEntry* ne = v.find("name");
        const YEntry* ke = v.find("kind");
        if (!ne || !ke) {
          d_.error(v.loc, p, "each vertex needs a name and a kind");
          continue;
        }
        assign(vs.name, r_.string(ne->value, p + ".name"));
        assign(vs.kind, r_.choice(ke->value, p + ".kind", values("cluster.graph.vertices[].kind")));
        if (vs.name.empty() || vs.kind.empty()) continue;
        if (!names.insert(vs.name).second) {
          d_.error(ne->value.loc, p + ".name", fmt::format("duplicate vertex name \"{}\"", vs.name));
          continue;
        }
        if (vs.kind == "gpu") {
          auto c = gpu_coords(vs.name);
          if (!c) {
            d_.error(ne->value.loc, p + ".name", fmt::format("GPU vertex \"{}\" must be named node<N>.gpu<G>", vs.name),
                     "e.g. node0.gpu3");
            continue;
          }
          max_node = std::max(max_node, c->first);
          max_gpu = std::max(max_gpu, c->second);
          graph_gpus_.insert(vs.name);
        }
        gs.vertices.push_back(std::move(vs));
      }
      if (graph_gpus_.empty()) d_.error(ve->value.loc, path + ".vertices", "the graph has no GPU (kind: gpu) vertex");
    }
    if (const YEntry* le = n.find("links"); le && r_.seq(le->value, path + ".links", "link maps")) {
      for (std::size_t i = 0; i < le->value.items.size(); ++i) {
        const YNode& v = le->value.items[i];
        const std::string p = join_index(path + ".links", i);
        if (!r_.map(v, p, keys("cluster.graph.links[]"))) continue;
        topo::GraphLinkSpec ls;
        bool ok = true;
        for (const char* k : {"from", "to", "kind", "bandwidth"})
          if (!v.find(k)) {
            d_.error(v.loc, join_key(p, k), "missing required key");
            ok = false;
          }
        if (!ok) continue;
        for (const char* k : {"from", "to"}) {
          const YEntry* e = v.find(k);
          auto name = r_.string(e->value, join_key(p, k));
          if (!name) continue;
          if (!names.count(*name)) {
            std::vector<std::string> all(names.begin(), names.end());
            const std::string near = closest_match(*name, all);
            d_.error(e->value.loc, join_key(p, k), fmt::format("no vertex named \"{}\"", *name),
                     near.empty() ? "" : fmt::format("did you mean '{}'?", near));
          }
          (std::string_view(k) == "from" ? ls.from : ls.to) = *name;
        }
        assign(ls.kind, r_.choice(v.find("kind")->value, p + ".kind", values("cluster.graph.links[].kind")));
        assign(ls.bandwidth_Bps, r_.bandwidth(v.find("bandwidth")->value, p + ".bandwidth"));
        ls.latency = (ls.kind == "nvlink" || ls.kind == "pcie") ? sim::us(1) : sim::us(3);
        if (const YEntry* e = v.find("latency")) assign(ls.latency, r_.time(e->value, p + ".latency"));
        if (const YEntry* e = v.find("duplex")) assign(ls.duplex, r_.boolean(e->value, p + ".duplex"));
        gs.links.push_back(std::move(ls));
      }
    }
    if (max_node >= 0) {
      s_.cluster.nodes = static_cast<int>(max_node + 1);
      s_.cluster.gpus_per_node = static_cast<int>(max_gpu + 1);
    }
    s_.cluster.graph = std::move(gs);
  }

  std::set<std::string> graph_gpus_;

private:
  Reader& r_;
  Diag& d_;
  wl::Scenario& s_;
};

}  // namespace

/// "node<N>.gpu<G>" → {N, G}; nullopt when the name has another shape.
std::optional<std::pair<long, long>> gpu_coords(std::string_view name) {
  const auto digits = [](std::string_view s, long& out) {
    if (s.empty() || s.size() > 7) return false;
    if (s.size() > 1 && s[0] == '0') return false;  // one spelling per device
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
  };
  if (name.substr(0, 4) != "node") return std::nullopt;
  const auto dot = name.find(".gpu");
  if (dot == std::string_view::npos) return std::nullopt;
  long n = 0, g = 0;
  if (!digits(name.substr(4, dot - 4), n) || !digits(name.substr(dot + 4), g)) return std::nullopt;
  return std::pair{n, g};
}

std::set<std::string> convert_cluster(const YEntry* cluster, Reader& r, wl::Scenario& s) {
  ClusterConverter c(r, s);
  c.cluster(cluster);
  return std::move(c.graph_gpus_);
}

}  // namespace ls::tools
