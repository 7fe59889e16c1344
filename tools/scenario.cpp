// tools/scenario.cpp — the scenario loader (the only yaml-cpp user in layoutsim).
//
// ════════════════════════════ SCENARIO REFERENCE ════════════════════════════
// Quantities carry units as strings (tools/units.hpp): sizes "80 GiB", bandwidths
// "300 GB/s" (bytes) or "400 Gb/s" (bits), times "3 us". A bare number where a unit
// belongs is an error. Counts are integers (2.0 is not a count). Every key is
// optional unless marked REQUIRED; unknown keys are errors (with "did you mean").
//
// name: STRING                      default: the file name without directory and extension
//                                   ("default" for the built-in scenario)
// cluster:
//   gpu: PRESET | MAP               default h100-sxm. Presets: wl::gpu_preset_names()
//                                   (a100-40gb, a100-80gb, h100-sxm, h200, b200).
//     MAP keys (merged over `preset` when given; REQUIRED without a preset: peak_tflops,
//     memory, hbm_bandwidth, and nvlink_bandwidth / nic_bandwidth unless intra_node /
//     inter_node give a bandwidth):
//       preset: PRESET
//       name: STRING                default: the preset's name, else "custom"
//       peak_tflops: NUMBER         dense bf16 peak in TFLOP/s (the key carries the unit;
//                                   a string with a unit such as "312 TFLOP/s" is accepted too)
//       memory: SIZE                HBM capacity
//       hbm_bandwidth: BANDWIDTH
//       matmul_efficiency: NUMBER   in (0, 1], default 0.75
//       nvlink_bandwidth: BANDWIDTH per GPU, per direction
//       nic_bandwidth: BANDWIDTH    per GPU, per direction
//       saturation_rows: NUMBER     > 0, default 1024 (matmul rows at full efficiency)
//       kernel_overhead: TIME       default 5 us per compute op
//   nodes: INT                      default 1   (nodes·gpus_per_node ≤ 131072)
//   gpus_per_node: INT              default 8
//   intra_node:                     per GPU, per direction
//     kind: nvswitch|nvlink|pcie    default nvswitch
//     bandwidth: BANDWIDTH          default: the GPU's nvlink_bandwidth
//     latency: TIME                 default 1 us
//   inter_node:                     per NIC, per direction
//     kind: infiniband|ethernet     default infiniband
//     bandwidth: BANDWIDTH          default: the GPU's nic_bandwidth
//     latency: TIME                 default 3 us
//     nics_per_node: INT            default 0 = one NIC per GPU (rails)
//     fabric: rail-optimized|fat-tree   default rail-optimized
//     oversubscription: NUMBER      > 0, default 1 (leaf downlink : uplink capacity)
//     nodes_per_leaf: INT           default 16
//     spines: INT                   default 0 = derived from the uplinks needed
//     pcie_bandwidth: BANDWIDTH     default 64 GB/s (GPU <-> NIC, PCIe Gen5 x16)
//   graph:                          an explicit topology INSTEAD of nodes, gpus_per_node,
//                                   intra_node and inter_node (giving both is an error)
//     vertices: [{name: STRING, kind: gpu|nvswitch|pcie-switch|nic|switch}, ...]
//                                   GPU names must be node<N>.gpu<G>; names unique; ≥ 1 GPU.
//                                   nodes / gpus_per_node are set to max N+1 / max G+1.
//     links: [{from: NAME, to: NAME, kind: nvlink|pcie|infiniband|ethernet,
//              bandwidth: BANDWIDTH (REQUIRED), latency: TIME (default 1 us for nvlink
//              and pcie, 3 us otherwise), duplex: BOOL (default true)}, ...]
//   network: real|ideal             default real; ideal = communication costs nothing
// model:                            REQUIRED; `model: PRESET` is short for `model: {preset: PRESET}`
//   preset: PRESET                  wl::model_preset_names() (gpt3-175b, llama3-8b,
//                                   llama3-70b, llama3-405b, seed-70b, ...)
//   name: STRING                    default: the preset's name, else "custom"
//   layers: INT, hidden: INT, heads: INT, vocab: INT, seq_len: INT
//                                   REQUIRED without a preset; override the preset's
//   kv_heads: INT                   default heads (MHA); if the preset is MHA and only
//                                   heads is overridden, kv_heads follows heads
//   ffn_hidden: INT                 default 4·hidden without a preset
//   activation: gelu|swiglu         default gelu without a preset
//   tied_embeddings: BOOL           default false without a preset
//   moe:                            absent: dense model (merged over a MoE preset's)
//     experts: INT (REQUIRED), top_k: INT (REQUIRED, ≤ experts)
//     expert_ffn_hidden: INT        default ffn_hidden
//     every_n_layers: INT           default 1 (every layer is MoE)
//     shared_experts: INT           default 0
//     capacity_factor: NUMBER       ≥ 0, default 0 = no token dropping
//     routing: balanced | {skew: zipf, alpha: NUMBER > 0 (default 1), seed: INT (default 1)}
//              | {load: [NUMBER ≥ 0, ...] one per expert, not all 0}   default balanced
// layout:
//   dp: INT                         default devices / (tp·pp) when that divides, else 1
//   tp: INT, pp: INT, ep: INT       default 1
//   zero: INT                       0..3, default 0
//   sequence_parallel: BOOL         default false
//   recompute: none|selective|full  default none
//   microbatch_size: INT            default 1 (sequences per micro-batch)
//   microbatches: INT               default 1 (per step per pipeline)
//   global_batch: INT               instead of microbatches: must be a multiple of
//                                   microbatch_size·dp; microbatches = global_batch /
//                                   (microbatch_size·dp). Both in the file is an error;
//                                   a --set of one replaces the other.
//   schedule: gpipe|1f1b|interleaved-1f1b|zb-h1   default 1f1b
//   virtual_stages: INT             default 1
//   stage_layers: auto|balanced|[INT, ...]        default auto (even split)
//   placement: [tp, dp, pp]         a permutation, fastest-varying first; default [tp, dp, pp]
//   dp_bucket: SIZE                 gradient all-reduce bucket, default 100 MB
//   embedding_free: BOOL            default false; what-if/tests: embedding and LM head are free
// precision:                        bytes per parameter / per activation element
//   weights: fp8|bf16|fp16|fp32     default bf16 (2 B)
//   gradients: bf16|fp16|fp32       default fp32 (4 B)
//   master: fp32|none               default fp32 (4 B), none when weights are fp32
//   optimizer: adam-fp32|adam-bf16|adamw-fp32|adamw-bf16|sgd|sgd-momentum
//                                   8, 4, 8, 4, 0, 4 B/param; default adam-fp32
//   activations: fp8|bf16|fp16|fp32 default bf16 (2 B)
// perturbations:
//   devices: [{device: node<N>.gpu<G> (REQUIRED, must exist, each at most once),
//              compute_slowdown: NUMBER > 0 (default 1)}, ...]
//   links: [{link: NAME (REQUIRED; a directed link "a->b", or "a<->b" for both directions;
//            checked against the built topology),
//            bandwidth_factor: NUMBER in [0, 1e3] (default 1; 0 = the link is down and
//            routes go around it)}, ...]
//   jitter: {compute_cv: NUMBER ≥ 0, comm_cv: NUMBER ≥ 0 (default 0), seed: INT ≥ 0 (default 0)}
// simulation:
//   steps: INT                      1..10000, default 1
//
// --set KEY.PATH=VALUE: VALUE is YAML ("4", "100 Gb/s", "[20, 20]", "{skew: zipf}");
// it replaces or creates the key (intermediate maps are created; list entries are
// addressed as key[i]; a scalar cluster.gpu becomes {preset: NAME} when a sub-key
// is set). Errors in it are located at --set:N:COL.
// ════════════════════════════════════════════════════════════════════════════
#include "tools/scenario.hpp"

#include "topology/cluster.hpp"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "tools/units.hpp"
#include "workloads/hardware.hpp"
#include "workloads/layout.hpp"
#include "workloads/model.hpp"

namespace ls::tools {
namespace embedded {
extern const std::string_view default_scenario_yaml_text;  // generated: default_scenario.cpp
}

namespace {

// ─── Limits: every input is bounded so nothing downstream can overflow or hang ───
constexpr std::size_t kMaxFileBytes = 16u << 20;      // a scenario is a page of YAML
constexpr std::size_t kMaxTreeNodes = 1u << 20;       // stops alias ("billion laughs") blow-up
constexpr int kMaxDepth = 64;
constexpr std::int64_t kMaxDevices = 131072;          // beyond the largest clusters built
constexpr std::int64_t kMaxCount = 1 << 20;           // layers, heads, degrees, micro-batches
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;  // hidden, ffn, vocab, seq_len
constexpr std::int64_t kMaxSteps = 10000;

// ─── A located YAML tree (yaml-cpp Marks do not say which text they came from,
//     and --set values are separate documents, so we keep our own copy) ───
struct Loc {
  std::string source;
  int line = 1;  // 1-based
  int col = 1;   // 1-based
};

struct YEntry;
struct YNode {
  enum class Kind { null, scalar, seq, map };
  Kind kind = Kind::null;
  std::string scalar;
  std::vector<YNode> items;
  std::vector<YEntry> entries;
  Loc loc;

  const YEntry* find(std::string_view key) const;
  YEntry* find(std::string_view key);
};
struct YEntry {
  std::string key;
  Loc key_loc;
  YNode value;
};

const YEntry* YNode::find(std::string_view key) const {
  for (const auto& e : entries)
    if (e.key == key) return &e;
  return nullptr;
}
YEntry* YNode::find(std::string_view key) {
  for (auto& e : entries)
    if (e.key == key) return &e;
  return nullptr;
}

std::string_view kind_name(const YNode& n) {
  switch (n.kind) {
    case YNode::Kind::null: return "nothing";
    case YNode::Kind::scalar: return "a scalar";
    case YNode::Kind::seq: return "a list";
    case YNode::Kind::map: return "a map";
  }
  return "?";
}

std::string join_key(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
std::string join_index(const std::string& path, std::size_t i) { return fmt::format("{}[{}]", path, i); }

// ─── Diagnostics ───
struct Diag {
  std::vector<std::string> errors;

  void error(const Loc& l, std::string_view path, std::string_view what, std::string_view hint = {}) {
    std::string m = fmt::format("{}:{}:{}: error: ", l.source, l.line, l.col);
    if (!path.empty()) m += fmt::format("{}: ", path);
    m += what;
    if (!hint.empty()) m += fmt::format(" ({})", hint);
    errors.push_back(std::move(m));
  }
  void throw_if_any() const {
    if (errors.empty()) return;
    std::string all;
    for (const auto& e : errors) {
      if (!all.empty()) all += '\n';
      all += e;
    }
    throw ScenarioError(all);
  }
};

// ─── yaml-cpp → YNode ───
/// How yaml-cpp marks (0-based, relative to one text) map onto a user-visible location.
struct SourceMap {
  std::string source;
  int fixed_line = 0;  // > 0: every mark is on this line (a --set value)
  int col_offset = 0;  // added to the column (the "KEY=" before a --set value)

  Loc at(const YAML::Mark& m, const Loc& fallback) const {
    if (m.is_null() || m.line < 0 || m.column < 0) return fallback;
    Loc l{source, fixed_line > 0 ? fixed_line : m.line + 1, m.column + 1 + col_offset};
    return l;
  }
};

struct TreeBuilder {
  const SourceMap& map;
  Diag& diag;
  std::size_t nodes = 0;
  bool too_big = false;

  YNode build(const YAML::Node& n, const Loc& fallback, const std::string& path, int depth) {
    YNode out;
    out.loc = map.at(n.Mark(), fallback);
    if (too_big) return out;
    if (++nodes > kMaxTreeNodes || depth > kMaxDepth) {
      too_big = true;
      diag.error(out.loc, path,
                 depth > kMaxDepth ? fmt::format("nested deeper than {} levels", kMaxDepth)
                                   : fmt::format("the scenario expands to more than {} values", kMaxTreeNodes),
                 "aliases (*name) are expanded; a scenario is a page of YAML");
      return out;
    }
    switch (n.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        out.loc = fallback;  // yaml-cpp marks an empty value at the *next* token
        break;
      case YAML::NodeType::Scalar:
        out.kind = YNode::Kind::scalar;
        out.scalar = n.Scalar();
        break;
      case YAML::NodeType::Sequence: {
        out.kind = YNode::Kind::seq;
        std::size_t i = 0;
        for (auto it = n.begin(); it != n.end(); ++it, ++i) {
          const YAML::Node item = *it;  // a named copy: yaml-cpp's iterator yields proxies
          out.items.push_back(build(item, out.loc, join_index(path, i), depth + 1));
        }
        break;
      }
      case YAML::NodeType::Map: {
        out.kind = YNode::Kind::map;
        for (auto it = n.begin(); it != n.end(); ++it) {
          // Copies, not references: the iterator hands out a temporary proxy pair.
          const YAML::Node k = it->first;
          const YAML::Node v = it->second;
          const Loc key_loc = map.at(k.Mark(), out.loc);
          if (!k.IsScalar() || k.Scalar().empty()) {
            diag.error(key_loc, path, "keys must be plain names", "found a map, list or empty key");
            continue;
          }
          const std::string key = k.Scalar();
          const std::string kpath = join_key(path, key);
          if (const YEntry* first = out.find(key)) {
            diag.error(key_loc, kpath, "duplicate key",
                       fmt::format("first given at line {}; remove one", first->key_loc.line));
            continue;
          }
          YEntry e;
          e.key = key;
          e.key_loc = key_loc;
          e.value = build(v, key_loc, kpath, depth + 1);
          out.entries.push_back(std::move(e));
        }
        break;
      }
    }
    return out;
  }
};

// ─── Counting documents without YAML::LoadAll ───
// yaml-cpp 0.7's LoadAll loops forever, allocating, on a stray ',' at document level
// (jbeder/yaml-cpp#1040; fixed upstream by PR #1319): HandleNextDocument keeps
// reporting an empty document without consuming the token. So we drive the event
// parser ourselves, stop at the second document, and treat a document that starts
// where the previous one did as the syntax error it is.
struct DocScan {
  int documents = 0;
  YAML::Mark second;                 // where the second document starts
  std::optional<YAML::Mark> stuck;   // the parser made no progress here
};

class NullHandler : public YAML::EventHandler {
public:
  YAML::Mark start;
  void OnDocumentStart(const YAML::Mark& m) override { start = m; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

/// Throws YAML::Exception on syntax errors.
DocScan scan_documents(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  NullHandler h;
  DocScan out;
  int previous_pos = -1;
  while (out.documents < 2 && parser.HandleNextDocument(h)) {
    if (h.start.pos == previous_pos) {
      out.stuck = h.start;
      break;
    }
    previous_pos = h.start.pos;
    if (++out.documents == 2) out.second = h.start;
  }
  return out;
}

// ─── Converting YNode values, with located errors ───
std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

class Reader {
public:
  explicit Reader(Diag& d) : d_(d) {}
  Diag& diag() { return d_; }

  /// Checks that n is a map and reports every key not in `valid`. false: not a map.
  bool map(const YNode& n, const std::string& path, const std::vector<std::string>& valid) {
    if (n.kind != YNode::Kind::map) {
      d_.error(n.loc, path, fmt::format("expected a map of keys, got {}", kind_name(n)),
               fmt::format("keys: {}", fmt::join(valid, ", ")));
      return false;
    }
    for (const auto& e : n.entries) {
      if (std::find(valid.begin(), valid.end(), e.key) != valid.end()) continue;
      const std::string near = closest_match(e.key, valid);
      d_.error(e.key_loc, join_key(path, e.key), "unknown key",
               near.empty() ? fmt::format("valid keys here: {}", fmt::join(valid, ", "))
                            : fmt::format("did you mean '{}'?", near));
    }
    return true;
  }

  bool seq(const YNode& n, const std::string& path, std::string_view what) {
    if (n.kind == YNode::Kind::seq) return true;
    d_.error(n.loc, path, fmt::format("expected a list of {}, got {}", what, kind_name(n)));
    return false;
  }

  std::optional<std::string> scalar(const YNode& n, const std::string& path, std::string_view what) {
    if (n.kind == YNode::Kind::scalar) return n.scalar;
    d_.error(n.loc, path, fmt::format("expected {}, got {}", what, kind_name(n)));
    return std::nullopt;
  }

  std::optional<std::string> string(const YNode& n, const std::string& path) {
    auto s = scalar(n, path, "a string");
    if (s && s->empty()) {
      d_.error(n.loc, path, "expected a non-empty string");
      return std::nullopt;
    }
    return s;
  }

  std::optional<std::int64_t> integer(const YNode& n, const std::string& path, std::int64_t lo, std::int64_t hi) {
    auto s = scalar(n, path, "an integer");
    if (!s) return std::nullopt;
    const std::string& t = *s;
    std::int64_t v = 0;
    const char* first = t.data();
    const char* last = t.data() + t.size();
    if (first != last && *first == '+') ++first;
    auto [ptr, ec] = std::from_chars(first, last, v);
    if (ec == std::errc() && ptr == last && first != last) {
      if (v < lo || v > hi) {
        d_.error(n.loc, path, range_text(v, lo, hi));
        return std::nullopt;
      }
      return v;
    }
    // Not an int64: say whether it is out of range, fractional, or not a number at all.
    double dv = 0;
    auto [dptr, dec] = std::from_chars(first, last, dv);
    if (ec == std::errc::result_out_of_range ||
        (dec == std::errc() && dptr == last && std::isfinite(dv) && dv == std::floor(dv) &&
         (dv < static_cast<double>(lo) || dv > static_cast<double>(hi)))) {
      d_.error(n.loc, path, fmt::format("expected an integer, got {} which is out of range", t),
               range_hint(lo, hi));
    } else if (dec == std::errc::result_out_of_range) {
      d_.error(n.loc, path, fmt::format("expected an integer, got {} which is out of range", t), range_hint(lo, hi));
    } else if (dec == std::errc() && dptr == last) {
      d_.error(n.loc, path, fmt::format("expected an integer, got {}", t), "counts are whole numbers");
    } else {
      d_.error(n.loc, path, fmt::format("expected an integer, got \"{}\"", t));
    }
    return std::nullopt;
  }

  std::optional<int> count(const YNode& n, const std::string& path, std::int64_t lo = 1,
                           std::int64_t hi = kMaxCount) {
    auto v = integer(n, path, lo, hi);
    if (!v) return std::nullopt;
    return static_cast<int>(*v);
  }

  /// A plain number in [lo, hi] (lo excluded when lo_open).
  std::optional<double> number(const YNode& n, const std::string& path, double lo, double hi, bool lo_open) {
    auto s = scalar(n, path, "a number");
    if (!s) return std::nullopt;
    double v = 0;
    const char* first = s->data();
    const char* last = s->data() + s->size();
    if (first != last && *first == '+') ++first;
    auto [ptr, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || ptr != last || first == last || !std::isfinite(v)) {
      d_.error(n.loc, path, fmt::format("expected a number, got \"{}\"", *s));
      return std::nullopt;
    }
    if ((lo_open ? v <= lo : v < lo) || v > hi) {
      d_.error(n.loc, path,
               fmt::format("{} is out of range", *s),
               fmt::format("expected a number in {}{}, {}]", lo_open ? "(" : "[", lo, hi));
      return std::nullopt;
    }
    return v;
  }

  std::optional<bool> boolean(const YNode& n, const std::string& path) {
    auto s = scalar(n, path, "true or false");
    if (!s) return std::nullopt;
    const std::string v = lower(*s);
    if (v == "true" || v == "yes" || v == "on") return true;
    if (v == "false" || v == "no" || v == "off") return false;
    d_.error(n.loc, path, fmt::format("expected true or false, got \"{}\"", *s));
    return std::nullopt;
  }

  std::optional<std::string> choice(const YNode& n, const std::string& path, const std::vector<std::string>& valid) {
    auto s = scalar(n, path, fmt::format("one of {}", fmt::join(valid, ", ")));
    if (!s) return std::nullopt;
    if (std::find(valid.begin(), valid.end(), *s) != valid.end()) return s;
    const std::string near = closest_match(lower(*s), valid);
    d_.error(n.loc, path, fmt::format("unknown value \"{}\", expected one of {}", *s, fmt::join(valid, ", ")),
             near.empty() ? std::string() : fmt::format("did you mean '{}'?", near));
    return std::nullopt;
  }

  template <typename F>
  auto quantity(const YNode& n, const std::string& path, std::string_view example, F parse)
      -> std::optional<decltype(parse(std::string_view()))> {
    auto s = scalar(n, path, fmt::format("a quantity with a unit, like \"{}\"", example));
    if (!s) return std::nullopt;
    try {
      return parse(*s);
    } catch (const UnitError& e) {
      d_.error(n.loc, path, e.what(), e.hint());
      return std::nullopt;
    }
  }

  /// Size in bytes; positive unless allow_zero.
  std::optional<double> bytes(const YNode& n, const std::string& path, bool allow_zero = false) {
    auto v = quantity(n, path, "80 GiB", parse_bytes);
    return positive(n, path, v, allow_zero);
  }
  std::optional<double> bandwidth(const YNode& n, const std::string& path) {
    auto v = quantity(n, path, "300 GB/s", parse_bandwidth_Bps);
    return positive(n, path, v, false);
  }
  std::optional<sim::Time> time(const YNode& n, const std::string& path) {
    return quantity(n, path, "3 us", parse_time);
  }

private:
  std::optional<double> positive(const YNode& n, const std::string& path, std::optional<double> v, bool allow_zero) {
    if (v && !allow_zero && *v <= 0) {
      d_.error(n.loc, path, fmt::format("must be greater than zero, got \"{}\"", n.scalar));
      return std::nullopt;
    }
    return v;
  }
  static std::string range_hint(std::int64_t lo, std::int64_t hi) {
    return fmt::format("expected {} to {}", lo, hi);
  }
  static std::string range_text(std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v > hi) return fmt::format("{} is too large (at most {})", v, hi);
    if (lo >= 0) return fmt::format("must be at least {}, got {}", lo, v);
    return fmt::format("{} is out of range (expected {} to {})", v, lo, hi);
  }
  Diag& d_;
};

template <typename T, typename U>
void assign(T& field, const std::optional<U>& v) {
  if (v) field = static_cast<T>(*v);
}

// ─── The scenario converter ───
class Converter {
public:
  Converter(Diag& d, const std::string& source) : r_(d), d_(d), source_(source) {}

  wl::Scenario convert(const YNode& root) {
    s_.source = source_;
    if (!r_.map(root, "", {"name", "cluster", "model", "layout", "precision", "perturbations", "simulation"}))
      return s_;
    if (const YEntry* e = root.find("name")) assign(s_.name, r_.string(e->value, "name"));
    if (s_.name.empty()) s_.name = default_name(source_);
    const std::size_t errors_before_cluster = d_.errors.size();
    cluster(root.find("cluster"));
    cluster_ok_ = d_.errors.size() == errors_before_cluster;
    if (const YEntry* e = root.find("model")) model(e->value, "model");
    else d_.error(Loc{source_, 1, 1}, "model", "missing required key",
                  fmt::format("give a preset, e.g. model: {{preset: llama3-70b}}; presets: {}",
                              fmt::join(wl::model_preset_names(), ", ")));
    layout(root.find("layout"));
    if (const YEntry* e = root.find("precision")) precision(e->value, "precision");
    if (const YEntry* e = root.find("perturbations")) perturbations(e->value, "perturbations");
    if (const YEntry* e = root.find("simulation")) {
      if (r_.map(e->value, "simulation", {"steps"}))
        if (const YEntry* st = e->value.find("steps"))
          assign(s_.simulation.steps, r_.count(st->value, "simulation.steps", 1, kMaxSteps));
    }
    return s_;
  }

private:
  /// Spec defaults plus the loader's own (topo::InterNodeSpec leaves kind and latency empty).
  // noinline: with it inlined, GCC 12 -O3 reports a false -Wmaybe-uninitialized on
  // the aggregate-initialised topo::InterNodeSpec base.
  [[gnu::noinline]] static wl::Scenario defaults() {
    wl::Scenario s;
    s.cluster.inter.kind = "infiniband";
    s.cluster.inter.latency = sim::us(3);   // typical IB switch-to-switch + NIC latency
    s.cluster.intra.kind = "nvswitch";
    s.cluster.intra.latency = sim::us(1);
    return s;
  }

  static std::string default_name(const std::string& source) {
    if (source == "<default>") return "default";
    std::string n = source;
    if (auto p = n.find_last_of('/'); p != std::string::npos) n = n.substr(p + 1);
    if (auto p = n.find_last_of('.'); p != std::string::npos && p > 0) n = n.substr(0, p);
    return n.empty() ? "scenario" : n;
  }

  // ── cluster ──
  void cluster(const YEntry* ce) {
    bool intra_bw = false, inter_bw = false;
    const YNode* gpu_node = nullptr;
    std::string gpu_path = "cluster.gpu";
    if (ce) {
      const YNode& c = ce->value;
      if (!r_.map(c, "cluster", {"gpu", "nodes", "gpus_per_node", "intra_node", "inter_node", "graph", "network"})) {
        gpu(nullptr, gpu_path);
        return;
      }
      if (const YEntry* g = c.find("gpu")) gpu_node = &g->value;
      gpu(gpu_node, gpu_path);
      if (const YEntry* e = c.find("nodes")) assign(s_.cluster.nodes, r_.count(e->value, "cluster.nodes", 1, kMaxDevices));
      if (const YEntry* e = c.find("gpus_per_node"))
        assign(s_.cluster.gpus_per_node, r_.count(e->value, "cluster.gpus_per_node", 1, 1024));
      if (const YEntry* e = c.find("intra_node")) intra_bw = intra(e->value, "cluster.intra_node");
      if (const YEntry* e = c.find("inter_node")) inter_bw = inter(e->value, "cluster.inter_node");
      if (const YEntry* e = c.find("network")) {
        if (auto v = r_.choice(e->value, "cluster.network", {"real", "ideal"})) s_.cluster.ideal_network = *v == "ideal";
      }
      if (const YEntry* e = c.find("graph")) {
        for (const char* k : {"nodes", "gpus_per_node", "intra_node", "inter_node"})
          if (const YEntry* x = c.find(k))
            d_.error(x->key_loc, join_key("cluster", k), "cannot be combined with cluster.graph",
                     "an explicit graph replaces nodes, gpus_per_node, intra_node and inter_node");
        graph(e->value, "cluster.graph");
        intra_bw = inter_bw = true;  // the graph carries its own bandwidths
      }
      const std::int64_t devices = std::int64_t{s_.cluster.nodes} * s_.cluster.gpus_per_node;
      if (!s_.cluster.graph && devices > kMaxDevices)
        d_.error(ce->key_loc, "cluster", fmt::format("{} nodes × {} GPUs = {} devices is too many", s_.cluster.nodes,
                                                     s_.cluster.gpus_per_node, devices),
                 fmt::format("at most {}", kMaxDevices));
    } else {
      gpu(nullptr, gpu_path);
    }
    // Link defaults follow the GPU (H100: NVLink 4 450 GB/s per direction, one
    // 400 Gb/s NIC per GPU — per the preset's datasheet citations in hardware.cpp).
    const Loc where = ce ? ce->key_loc : Loc{source_, 1, 1};
    if (!intra_bw) {
      if (s_.gpu.nvlink_bandwidth_Bps > 0) s_.cluster.intra.bandwidth_Bps = s_.gpu.nvlink_bandwidth_Bps;
      else if (s_.cluster.gpus_per_node > 1 && gpu_ok_)
        d_.error(where, "cluster.intra_node.bandwidth", "missing: the GPU has no nvlink_bandwidth to default from",
                 "give cluster.intra_node.bandwidth or cluster.gpu.nvlink_bandwidth");
    }
    if (!inter_bw) {
      if (s_.gpu.nic_bandwidth_Bps > 0) s_.cluster.inter.bandwidth_Bps = s_.gpu.nic_bandwidth_Bps;
      else if (s_.cluster.nodes > 1 && gpu_ok_)
        d_.error(where, "cluster.inter_node.bandwidth", "missing: the GPU has no nic_bandwidth to default from",
                 "give cluster.inter_node.bandwidth or cluster.gpu.nic_bandwidth");
    }
  }

  std::optional<wl::GpuSpec> gpu_by_name(const YNode& n, const std::string& path) {
    auto name = r_.scalar(n, path, "a GPU preset name");
    if (!name) return std::nullopt;
    if (auto g = wl::gpu_preset(*name)) return g;
    const auto names = wl::gpu_preset_names();
    const std::string near = closest_match(lower(*name), names, 3);
    d_.error(n.loc, path, fmt::format("unknown GPU preset \"{}\"; presets: {}", *name, fmt::join(names, ", ")),
             near.empty() ? "or give a map with peak_tflops, memory, hbm_bandwidth, ..."
                          : fmt::format("did you mean '{}'?", near));
    return std::nullopt;
  }

  void gpu(const YNode* n, const std::string& path) {
    gpu_ok_ = false;
    if (!n) {
      if (auto g = wl::gpu_preset("h100-sxm")) {
        s_.gpu = *g;
        gpu_ok_ = true;
      }
      return;
    }
    if (n->kind == YNode::Kind::scalar) {
      if (auto g = gpu_by_name(*n, path)) {
        s_.gpu = *g;
        gpu_ok_ = true;
      }
      return;
    }
    if (n->kind != YNode::Kind::map) {
      d_.error(n->loc, path, fmt::format("expected a GPU preset name or a map, got {}", kind_name(*n)),
               fmt::format("presets: {}", fmt::join(wl::gpu_preset_names(), ", ")));
      return;
    }
    if (!r_.map(*n, path, {"preset", "name", "peak_tflops", "memory", "hbm_bandwidth", "matmul_efficiency",
                           "nvlink_bandwidth", "nic_bandwidth", "saturation_rows", "kernel_overhead"}))
      return;
    wl::GpuSpec g;
    g.name = "custom";
    bool have_preset = false;
    if (const YEntry* p = n->find("preset")) {
      auto pg = gpu_by_name(p->value, join_key(path, "preset"));
      if (!pg) return;
      g = *pg;
      have_preset = true;
    }
    const std::size_t errors_before = d_.errors.size();
    for (const auto& e : n->entries) {
      const std::string p = join_key(path, e.key);
      const YNode& v = e.value;
      if (e.key == "name") assign(g.name, r_.string(v, p));
      else if (e.key == "peak_tflops") {
        // The key carries the unit (TFLOP/s); a string with an explicit unit is fine too.
        if (v.kind == YNode::Kind::scalar && v.scalar.find_first_of("Ff") != std::string::npos &&
            v.scalar.find("FLOP") != std::string::npos) {
          if (auto f = r_.quantity(v, p, "312 TFLOP/s", parse_flops)) {
            if (*f > 0) g.peak_flops = *f;
            else d_.error(v.loc, p, "must be greater than zero");
          }
        } else if (auto t = r_.number(v, p, 0, 1e9, true)) {
          g.peak_flops = *t * 1e12;
        }
      } else if (e.key == "memory") assign(g.memory_bytes, r_.bytes(v, p));
      else if (e.key == "hbm_bandwidth") assign(g.hbm_bandwidth_Bps, r_.bandwidth(v, p));
      else if (e.key == "matmul_efficiency") assign(g.matmul_efficiency, r_.number(v, p, 0, 1, true));
      else if (e.key == "nvlink_bandwidth") assign(g.nvlink_bandwidth_Bps, r_.bandwidth(v, p));
      else if (e.key == "nic_bandwidth") assign(g.nic_bandwidth_Bps, r_.bandwidth(v, p));
      else if (e.key == "saturation_rows") assign(g.saturation_rows, r_.number(v, p, 0, 1e12, true));
      else if (e.key == "kernel_overhead") assign(g.kernel_overhead, r_.time(v, p));
    }
    if (!have_preset) {
      for (const char* k : {"peak_tflops", "memory", "hbm_bandwidth"})
        if (!n->find(k))
          d_.error(n->loc, join_key(path, k), "missing required key: there is no preset to inherit it from",
                   fmt::format("or add preset: one of {}", fmt::join(wl::gpu_preset_names(), ", ")));
    }
    s_.gpu = g;
    gpu_ok_ = d_.errors.size() == errors_before;
  }

  /// Returns whether a bandwidth was given.
  bool intra(const YNode& n, const std::string& path) {
    if (!r_.map(n, path, {"kind", "bandwidth", "latency"})) return true;
    auto& l = s_.cluster.intra;
    if (const YEntry* e = n.find("kind")) assign(l.kind, r_.choice(e->value, path + ".kind", {"nvswitch", "nvlink", "pcie"}));
    if (const YEntry* e = n.find("latency")) assign(l.latency, r_.time(e->value, path + ".latency"));
    if (const YEntry* e = n.find("bandwidth")) {
      assign(l.bandwidth_Bps, r_.bandwidth(e->value, path + ".bandwidth"));
      return true;
    }
    return false;
  }

  bool inter(const YNode& n, const std::string& path) {
    if (!r_.map(n, path, {"kind", "bandwidth", "latency", "nics_per_node", "fabric", "oversubscription",
                          "nodes_per_leaf", "spines", "pcie_bandwidth"}))
      return true;
    auto& l = s_.cluster.inter;
    bool bw = false;
    for (const auto& e : n.entries) {
      const std::string p = join_key(path, e.key);
      const YNode& v = e.value;
      if (e.key == "kind") assign(l.kind, r_.choice(v, p, {"infiniband", "ethernet"}));
      else if (e.key == "bandwidth") {
        assign(l.bandwidth_Bps, r_.bandwidth(v, p));
        bw = true;
      } else if (e.key == "latency") assign(l.latency, r_.time(v, p));
      else if (e.key == "nics_per_node") assign(l.nics_per_node, r_.count(v, p, 0, 1024));
      else if (e.key == "fabric") assign(l.fabric, r_.choice(v, p, {"rail-optimized", "fat-tree"}));
      else if (e.key == "oversubscription") assign(l.oversubscription, r_.number(v, p, 0, 1024, true));
      else if (e.key == "nodes_per_leaf") assign(l.nodes_per_leaf, r_.count(v, p, 1, kMaxDevices));
      else if (e.key == "spines") assign(l.spines, r_.count(v, p, 0, kMaxDevices));
      else if (e.key == "pcie_bandwidth") assign(l.pcie_bandwidth_Bps, r_.bandwidth(v, p));
    }
    return bw;
  }

  /// "node<N>.gpu<G>" → {N, G}; nullopt when the name has another shape.
  static std::optional<std::pair<long, long>> gpu_coords(std::string_view name) {
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

  void graph(const YNode& n, const std::string& path) {
    if (!r_.map(n, path, {"vertices", "links"})) return;
    topo::ExplicitGraphSpec gs;
    std::set<std::string> names;
    long max_node = -1, max_gpu = -1;
    const YEntry* ve = n.find("vertices");
    if (!ve) d_.error(n.loc, path + ".vertices", "missing required key", "a list of {name, kind}");
    else if (r_.seq(ve->value, path + ".vertices", "{name, kind} maps")) {
      for (std::size_t i = 0; i < ve->value.items.size(); ++i) {
        const YNode& v = ve->value.items[i];
        const std::string p = join_index(path + ".vertices", i);
        if (!r_.map(v, p, {"name", "kind"})) continue;
        topo::GraphVertexSpec vs;
        const YEntry* ne = v.find("name");
        const YEntry* ke = v.find("kind");
        if (!ne || !ke) {
          d_.error(v.loc, p, "each vertex needs a name and a kind");
          continue;
        }
        assign(vs.name, r_.string(ne->value, p + ".name"));
        assign(vs.kind, r_.choice(ke->value, p + ".kind", {"gpu", "nvswitch", "pcie-switch", "nic", "switch"}));
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
        if (!r_.map(v, p, {"from", "to", "kind", "bandwidth", "latency", "duplex"})) continue;
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
        assign(ls.kind, r_.choice(v.find("kind")->value, p + ".kind", {"nvlink", "pcie", "infiniband", "ethernet"}));
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
    const std::vector<std::string> keys{"preset", "name", "layers", "hidden", "heads", "kv_heads", "ffn_hidden",
                                        "vocab", "seq_len", "activation", "tied_embeddings", "moe"};
    if (!r_.map(n, path, keys)) return;
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
    for (const auto& e : n.entries) {
      const std::string p = join_key(path, e.key);
      const YNode& v = e.value;
      if (e.key == "name") assign(m.name, r_.string(v, p));
      else if (e.key == "layers") assign(m.layers, r_.count(v, p));
      else if (e.key == "hidden") assign(m.hidden, r_.integer(v, p, 1, kMaxDim));
      else if (e.key == "heads") assign(m.heads, r_.count(v, p));
      else if (e.key == "kv_heads") assign(m.kv_heads, r_.count(v, p));
      else if (e.key == "ffn_hidden") assign(m.ffn_hidden, r_.integer(v, p, 1, kMaxDim));
      else if (e.key == "vocab") assign(m.vocab, r_.integer(v, p, 1, kMaxDim));
      else if (e.key == "seq_len") assign(m.seq_len, r_.integer(v, p, 1, kMaxDim));
      else if (e.key == "activation") {
        if (auto a = r_.choice(v, p, {"gelu", "swiglu"})) m.activation = *a == "swiglu" ? wl::Activation::swiglu : wl::Activation::gelu;
      } else if (e.key == "tied_embeddings") assign(m.tied_embeddings, r_.boolean(v, p));
      else if (e.key == "moe") moe(v, p, m);
    }
    if (!have_preset) {
      for (const char* k : {"layers", "hidden", "heads", "vocab", "seq_len"})
        if (!n.find(k))
          d_.error(n.loc, join_key(path, k), "missing required key: there is no preset to inherit it from",
                   fmt::format("or add preset: one of {}", fmt::join(wl::model_preset_names(), ", ")));
      if (!n.find("kv_heads")) m.kv_heads = m.heads;
      if (!n.find("ffn_hidden")) m.ffn_hidden = 4 * m.hidden;
    } else if (preset_mha && n.find("heads") && !n.find("kv_heads")) {
      m.kv_heads = m.heads;
    }
    if (m.moe.experts > 0 && m.moe.expert_ffn_hidden == 0) m.moe.expert_ffn_hidden = m.ffn_hidden;
    s_.model = m;
  }

  void moe(const YNode& n, const std::string& path, wl::ModelSpec& m) {
    if (!r_.map(n, path, {"experts", "top_k", "expert_ffn_hidden", "every_n_layers", "shared_experts",
                          "capacity_factor", "routing"}))
      return;
    auto& x = m.moe;
    for (const auto& e : n.entries) {
      const std::string p = join_key(path, e.key);
      const YNode& v = e.value;
      if (e.key == "experts") assign(x.experts, r_.count(v, p));
      else if (e.key == "top_k") assign(x.top_k, r_.count(v, p));
      else if (e.key == "expert_ffn_hidden") assign(x.expert_ffn_hidden, r_.integer(v, p, 1, kMaxDim));
      else if (e.key == "every_n_layers") assign(x.every_n_layers, r_.count(v, p));
      else if (e.key == "shared_experts") assign(x.shared_experts, r_.count(v, p, 0));
      else if (e.key == "capacity_factor") assign(x.capacity_factor, r_.number(v, p, 0, 1e6, false));
    }
    if (x.experts <= 0 && !n.find("experts")) d_.error(n.loc, path + ".experts", "missing required key");
    if (x.top_k <= 0 && !n.find("top_k")) d_.error(n.loc, path + ".top_k", "missing required key");
    if (const YEntry* t = n.find("top_k"); t && x.experts > 0 && x.top_k > x.experts)
      d_.error(t->value.loc, path + ".top_k", fmt::format("top_k {} exceeds the {} experts", x.top_k, x.experts));
    if (const YEntry* e = n.find("routing")) routing(e->value, path + ".routing", x);
  }

  void routing(const YNode& n, const std::string& path, wl::MoeSpec& x) {
    if (n.kind == YNode::Kind::scalar) {
      if (r_.choice(n, path, {"balanced"})) x.routing = wl::RoutingKind::balanced;
      return;
    }
    if (!r_.map(n, path, {"skew", "alpha", "seed", "load"})) return;
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
    if (!r_.choice(sk->value, path + ".skew", {"zipf"})) return;
    x.routing = wl::RoutingKind::zipf;
    if (const YEntry* a = n.find("alpha")) assign(x.zipf_alpha, r_.number(a->value, path + ".alpha", 0, 100, true));
    if (const YEntry* s = n.find("seed"))
      assign(x.routing_seed, r_.integer(s->value, path + ".seed", 0, std::numeric_limits<std::int64_t>::max()));
  }

  // ── layout ──
  int devices() const {
    if (s_.cluster.graph) return static_cast<int>(graph_gpus_.size());
    return s_.cluster.nodes * s_.cluster.gpus_per_node;
  }

  void layout(const YEntry* le) {
    auto& l = s_.layout;
    const YEntry* mb = nullptr;
    const YEntry* gb = nullptr;
    const YEntry* dp = nullptr;
    if (le) {
      const std::string path = "layout";
      const YNode& n = le->value;
      if (!r_.map(n, path, {"dp", "tp", "pp", "ep", "zero", "sequence_parallel", "recompute", "microbatch_size",
                            "microbatches", "global_batch", "schedule", "virtual_stages", "stage_layers", "placement",
                            "dp_bucket", "embedding_free"}))
        return;
      for (const auto& e : n.entries) {
        const std::string p = join_key(path, e.key);
        const YNode& v = e.value;
        if (e.key == "dp") { dp = &e; assign(l.dp, r_.count(v, p, 1, kMaxDevices)); }
        else if (e.key == "tp") assign(l.tp, r_.count(v, p, 1, kMaxDevices));
        else if (e.key == "pp") assign(l.pp, r_.count(v, p, 1, kMaxDevices));
        else if (e.key == "ep") assign(l.ep, r_.count(v, p, 1, kMaxDevices));
        else if (e.key == "zero") assign(l.zero, r_.count(v, p, 0, 3));
        else if (e.key == "sequence_parallel") assign(l.sequence_parallel, r_.boolean(v, p));
        else if (e.key == "recompute") {
          if (auto c = r_.choice(v, p, {"none", "selective", "full"}))
            l.recompute = *c == "full" ? wl::Recompute::full : *c == "selective" ? wl::Recompute::selective : wl::Recompute::none;
        } else if (e.key == "microbatch_size") assign(l.microbatch_size, r_.count(v, p));
        else if (e.key == "microbatches") { mb = &e; assign(l.microbatches, r_.count(v, p)); }
        else if (e.key == "global_batch") gb = &e;
        else if (e.key == "schedule") {
          if (auto c = r_.choice(v, p, {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1"}))
            l.schedule = *c == "gpipe" ? wl::Schedule::gpipe
                         : *c == "1f1b" ? wl::Schedule::one_f_one_b
                         : *c == "interleaved-1f1b" ? wl::Schedule::interleaved_1f1b
                                                    : wl::Schedule::zb_h1;
        } else if (e.key == "virtual_stages") assign(l.virtual_stages, r_.count(v, p));
        else if (e.key == "stage_layers") stage_layers(v, p);
        else if (e.key == "placement") placement(v, p);
        else if (e.key == "dp_bucket") assign(l.dp_bucket_bytes, r_.bytes(v, p));
        else if (e.key == "embedding_free") assign(l.embedding_free, r_.boolean(v, p));
      }
    }
    // dp defaults to whatever the other degrees leave of the cluster.
    if (!dp) {
      const std::int64_t rest = std::int64_t{l.tp} * l.pp;
      const int n = devices();
      l.dp = (rest > 0 && n > 0 && n % rest == 0) ? static_cast<int>(n / rest) : 1;
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
    if (gb) {
      auto v = r_.integer(gb->value, "layout.global_batch", 1, kMaxCount * 1024);
      if (!v) return;
      const std::int64_t per = std::int64_t{l.microbatch_size} * l.dp;
      if (*v % per != 0) {
        const std::int64_t lo = *v / per * per;
        d_.error(gb->value.loc, "layout.global_batch",
                 fmt::format("{} is not a multiple of microbatch_size·dp = {}·{} = {}", *v, l.microbatch_size, l.dp, per),
                 lo > 0 ? fmt::format("try {} or {}", lo, lo + per) : fmt::format("try {}", per));
        return;
      }
      if (*v / per > kMaxCount) {
        d_.error(gb->value.loc, "layout.global_batch", fmt::format("gives {} micro-batches, at most {}", *v / per, kMaxCount));
        return;
      }
      l.microbatches = static_cast<int>(*v / per);
    }
  }

  void stage_layers(const YNode& v, const std::string& p) {
    auto& l = s_.layout;
    if (v.kind == YNode::Kind::scalar) {
      if (auto c = r_.choice(v, p, {"auto", "balanced"})) {
        l.stage_layers_mode = *c == "auto" ? wl::StageLayersMode::auto_even : wl::StageLayersMode::balanced;
        l.stage_layers.clear();
      }
      return;
    }
    if (v.kind != YNode::Kind::seq) {
      d_.error(v.loc, p, fmt::format("expected auto, balanced or a list of layer counts, got {}", kind_name(v)));
      return;
    }
    std::vector<int> counts;
    for (std::size_t i = 0; i < v.items.size(); ++i) {
      auto c = r_.count(v.items[i], join_index(p, i), 0);
      if (!c) return;
      counts.push_back(*c);
    }
    if (counts.empty()) {
      d_.error(v.loc, p, "the list is empty", "give one layer count per pipeline stage");
      return;
    }
    l.stage_layers_mode = wl::StageLayersMode::explicit_list;
    l.stage_layers = std::move(counts);
  }

  void placement(const YNode& v, const std::string& p) {
    if (!r_.seq(v, p, "mesh axes (a permutation of tp, dp, pp)")) return;
    std::vector<std::string> axes;
    for (std::size_t i = 0; i < v.items.size(); ++i) {
      auto a = r_.choice(v.items[i], join_index(p, i), {"tp", "dp", "pp"});
      if (!a) return;
      axes.push_back(*a);
    }
    std::vector<std::string> sorted = axes;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != std::vector<std::string>{"dp", "pp", "tp"}) {
      d_.error(v.loc, p, fmt::format("[{}] is not a permutation of tp, dp, pp", fmt::join(axes, ", ")),
               "each axis exactly once, fastest-varying first, e.g. [tp, dp, pp]");
      return;
    }
    s_.layout.placement = std::move(axes);
  }

  // ── precision ──
  void precision(const YNode& n, const std::string& path) {
    if (!r_.map(n, path, {"weights", "gradients", "master", "optimizer", "activations"})) return;
    auto& pr = s_.precision;
    const auto dtype_bytes = [](const std::string& t) { return t == "fp32" ? 4 : t == "fp8" ? 1 : 2; };
    bool master_given = false;
    for (const auto& e : n.entries) {
      const std::string p = join_key(path, e.key);
      const YNode& v = e.value;
      if (e.key == "weights") {
        if (auto t = r_.choice(v, p, {"fp8", "bf16", "fp16", "fp32"})) pr.weights = dtype_bytes(*t);
      } else if (e.key == "gradients") {
        if (auto t = r_.choice(v, p, {"bf16", "fp16", "fp32"})) pr.gradients = dtype_bytes(*t);
      } else if (e.key == "master") {
        master_given = true;
        if (auto t = r_.choice(v, p, {"fp32", "none"})) pr.master = *t == "fp32" ? 4 : 0;
      } else if (e.key == "optimizer") {
        if (auto t = r_.choice(v, p, {"adam-fp32", "adam-bf16", "adamw-fp32", "adamw-bf16", "sgd", "sgd-momentum"}))
          pr.optimizer = (*t == "adam-fp32" || *t == "adamw-fp32") ? 8 : *t == "sgd" ? 0 : 4;
      } else if (e.key == "activations") {
        if (auto t = r_.choice(v, p, {"fp8", "bf16", "fp16", "fp32"})) pr.activations = dtype_bytes(*t);
      }
    }
    // fp32 weights are their own master copy.
    if (!master_given && pr.weights == 4) pr.master = 0;
  }

  // ── perturbations ──
  void perturbations(const YNode& n, const std::string& path) {
    if (!r_.map(n, path, {"devices", "links", "jitter"})) return;
    auto& pt = s_.perturbations;
    if (const YEntry* de = n.find("devices"); de && r_.seq(de->value, path + ".devices", "{device, compute_slowdown} maps")) {
      std::map<std::string, std::size_t> seen;
      for (std::size_t i = 0; i < de->value.items.size(); ++i) {
        const YNode& v = de->value.items[i];
        const std::string p = join_index(path + ".devices", i);
        if (!r_.map(v, p, {"device", "compute_slowdown"})) continue;
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
        pt.devices.push_back(std::move(ds));
      }
    }
    if (const YEntry* le = n.find("links"); le && r_.seq(le->value, path + ".links", "{link, bandwidth_factor} maps")) {
      for (std::size_t i = 0; i < le->value.items.size(); ++i) {
        const YNode& v = le->value.items[i];
        const std::string p = join_index(path + ".links", i);
        if (!r_.map(v, p, {"link", "bandwidth_factor"})) continue;
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
      if (r_.map(je->value, p, {"compute_cv", "comm_cv", "seed"})) {
        if (const YEntry* e = je->value.find("compute_cv"))
          assign(pt.jitter.compute_cv, r_.number(e->value, p + ".compute_cv", 0, 10, false));
        if (const YEntry* e = je->value.find("comm_cv"))
          assign(pt.jitter.comm_cv, r_.number(e->value, p + ".comm_cv", 0, 10, false));
        if (const YEntry* e = je->value.find("seed"))
          assign(pt.jitter.seed, r_.integer(e->value, p + ".seed", 0, std::numeric_limits<std::int64_t>::max()));
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
  wl::Scenario s_ = defaults();
  bool gpu_ok_ = false;
  bool cluster_ok_ = true;
  std::set<std::string> graph_gpus_;
};

// ─── Key path → location, for wl::validate's errors ───
/// Splits "perturbations.devices[2].device" into ("perturbations", -1),
/// ("devices", 2), ("device", -1).
std::vector<std::pair<std::string, long>> split_path(std::string_view path) {
  std::vector<std::pair<std::string, long>> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t dot = path.find('.', start);
    if (dot == std::string_view::npos) dot = path.size();
    std::string_view seg = path.substr(start, dot - start);
    long index = -1;
    if (auto b = seg.find('['); b != std::string_view::npos && seg.back() == ']') {
      std::string_view num = seg.substr(b + 1, seg.size() - b - 2);
      long v = 0;
      auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
      if (ec == std::errc() && p == num.data() + num.size()) index = v;
      seg = seg.substr(0, b);
    }
    out.emplace_back(std::string(seg), index);
    start = dot + 1;
  }
  return out;
}

/// The location of the deepest existing key on `path`. A value inherited from a
/// preset is blamed on the `preset:` key that brought it in.
Loc locate(const YNode& root, std::string_view path, const std::string& source) {
  Loc best{source, 1, 1};
  const YNode* cur = &root;
  for (const auto& [key, index] : split_path(path)) {
    if (cur->kind != YNode::Kind::map) break;
    const YEntry* e = cur->find(key);
    if (!e) {
      if (const YEntry* p = cur->find("preset")) best = p->key_loc;
      break;
    }
    best = e->key_loc;
    cur = &e->value;
    if (index >= 0) {
      if (cur->kind != YNode::Kind::seq || index >= static_cast<long>(cur->items.size())) break;
      cur = &cur->items[static_cast<std::size_t>(index)];
      best = cur->loc;
    }
  }
  return best;
}

// ─── --set ───
struct SetSegment {
  std::string name;
  long index;       // -1: none
  std::size_t col;  // 0-based column of the segment in the --set text
};

/// "a.b[2].c" → segments; nullopt unless every segment is NAME or NAME[DIGITS] with
/// NAME made of letters, digits, '_' and '-'.
std::optional<std::vector<SetSegment>> parse_set_key(std::string_view key) {
  std::vector<SetSegment> out;
  std::size_t i = 0;
  while (true) {
    const std::size_t start = i;
    while (i < key.size() && (std::isalnum(static_cast<unsigned char>(key[i])) || key[i] == '_' || key[i] == '-')) ++i;
    if (i == start) return std::nullopt;
    SetSegment seg{std::string(key.substr(start, i - start)), -1, start};
    if (i < key.size() && key[i] == '[') {
      const std::size_t close = key.find(']', i);
      if (close == std::string_view::npos || close == i + 1 || close - i > 8) return std::nullopt;
      long v = 0;
      auto [p, ec] = std::from_chars(key.data() + i + 1, key.data() + close, v);
      if (ec != std::errc() || p != key.data() + close) return std::nullopt;
      seg.index = v;
      i = close + 1;
    }
    out.push_back(std::move(seg));
    if (i == key.size()) return out;
    if (key[i] != '.') return std::nullopt;
    ++i;
  }
}

void apply_set(YNode& root, const std::string& set, int ordinal, Diag& d) {
  const Loc start{"--set", ordinal, 1};
  const auto eq = set.find('=');
  if (eq == std::string::npos || eq == 0) {
    d.error(start, "", fmt::format("expected KEY=VALUE, got \"{}\"", set), "e.g. --set layout.tp=4");
    return;
  }
  const std::string key = set.substr(0, eq);
  const std::string value_text = set.substr(eq + 1);

  YNode value;
  const Loc value_loc{"--set", ordinal, static_cast<int>(eq) + 2};
  try {
    const YAML::Node parsed = YAML::Load(value_text);
    SourceMap sm{"--set", ordinal, static_cast<int>(eq) + 1};
    TreeBuilder tb{sm, d};
    value = tb.build(parsed, value_loc, key, 0);
  } catch (const YAML::Exception& e) {
    Loc l = value_loc;
    if (!e.mark.is_null() && e.mark.column >= 0) l.col = static_cast<int>(eq) + 2 + e.mark.column;
    d.error(l, key, fmt::format("the value is not valid YAML: {}", e.msg));
    return;
  } catch (const std::exception& e) {  // yaml-cpp's stream layer can throw others on odd input
    d.error(value_loc, key, fmt::format("the value is not valid YAML: {}", e.what()));
    return;
  }

  const auto segments = parse_set_key(key);
  if (!segments) {
    d.error(start, key, "malformed key path", "keys are names separated by dots; list entries are key[i]");
    return;
  }
  YNode* cur = &root;
  std::string path;
  for (std::size_t i = 0; i < segments->size(); ++i) {
    const auto& [name, index, col] = (*segments)[i];
    const Loc seg_loc{"--set", ordinal, static_cast<int>(col) + 1};
    const std::string seg_path = join_key(path, name);
    if (cur->kind == YNode::Kind::null) {
      cur->kind = YNode::Kind::map;
    } else if (cur->kind == YNode::Kind::scalar && path == "cluster.gpu") {
      // `gpu: h100-sxm` + `--set cluster.gpu.memory=...`: the name becomes the preset.
      YEntry pe{"preset", cur->loc, *cur};
      *cur = YNode{};
      cur->kind = YNode::Kind::map;
      cur->loc = pe.key_loc;
      cur->entries.push_back(std::move(pe));
    } else if (cur->kind != YNode::Kind::map) {
      d.error(seg_loc, seg_path, fmt::format("cannot set a key inside {} ({} is {})", kind_name(*cur),
                                             path.empty() ? "the scenario" : path, kind_name(*cur)));
      return;
    }
    const bool last = i + 1 == segments->size();
    YEntry* e = cur->find(name);
    if (!e) {
      if (index >= 0) {
        d.error(seg_loc, seg_path, fmt::format("there is no list '{}' to index", seg_path));
        return;
      }
      cur->entries.push_back(YEntry{name, seg_loc, YNode{}});
      e = &cur->entries.back();
      e->value.loc = seg_loc;
    }
    if (index < 0) e->key_loc = seg_loc;  // errors about this key now point at the --set
    YNode* target = &e->value;
    std::string target_path = seg_path;
    if (index >= 0) {
      if (target->kind != YNode::Kind::seq || index >= static_cast<long>(target->items.size())) {
        d.error(seg_loc, seg_path,
                target->kind == YNode::Kind::seq
                    ? fmt::format("index {} is out of range (the list has {} entries)", index, target->items.size())
                    : fmt::format("is {}, not a list", kind_name(*target)));
        return;
      }
      target = &target->items[static_cast<std::size_t>(index)];
      target_path = join_index(seg_path, static_cast<std::size_t>(index));
    }
    if (last) {
      *target = std::move(value);
      return;
    }
    cur = target;
    path = target_path;
  }
}

}  // namespace

// ─── Public API ───
// Link names exist only once the topology is built: build it (cheap: O(links)) and
// check every perturbed link, with the nearest real names as the hint.
void check_link_names(const wl::Scenario& s, const YNode& root, const std::string& source_name, Diag& d) {
  if (s.perturbations.links.empty()) return;
  std::optional<topo::Cluster> cluster;
  try {
    cluster.emplace(topo::Cluster::build(s.cluster));
  } catch (const std::exception& e) {
    d.error(locate(root, "cluster", source_name), "cluster", e.what());
    return;
  }
  std::vector<std::string> names;
  for (std::size_t i = 0; i < s.perturbations.links.size(); ++i) {
    const std::string& name = s.perturbations.links[i].link;
    if (!cluster->find_links(name).empty()) continue;
    if (names.empty())
      for (std::size_t l = 0; l < cluster->link_count(); ++l) names.push_back(cluster->link(static_cast<sim::LinkId>(l)).name);
    const std::string key = fmt::format("perturbations.links[{}].link", i);
    const std::string near = closest_match(name, names, 4);
    d.error(locate(root, key, source_name), key, fmt::format("no link named '{}' in this cluster", name),
            near.empty() ? fmt::format("links are named FROM->TO, e.g. '{}'", names.front())
                         : fmt::format("did you mean '{}'?", near));
  }
}

wl::Scenario load_scenario_string(std::string_view yaml, const std::string& source_name,
                                  const std::vector<std::string>& sets) {
  Diag d;
  const Loc top{source_name, 1, 1};
  if (yaml.size() > kMaxFileBytes) {
    d.error(top, "", fmt::format("the scenario is {} bytes, more than the {} a scenario may have", yaml.size(), kMaxFileBytes));
    d.throw_if_any();
  }
  const SourceMap sm{source_name};
  const std::string text(yaml);
  YAML::Node doc;
  try {
    const DocScan scan = scan_documents(text);
    if (scan.stuck) {
      const auto pos = static_cast<std::size_t>(std::max(0, scan.stuck->pos));
      d.error(sm.at(*scan.stuck, top), "",
              fmt::format("YAML syntax error: unexpected '{}'", pos < text.size() ? text.substr(pos, 1) : "?"),
              "a ',' belongs inside [...] or {...}");
    } else if (scan.documents == 0) {
      d.error(top, "", "the scenario is empty", "start from scenarios/default.yaml");
    } else if (scan.documents > 1) {
      d.error(sm.at(scan.second, top), "", "more than one YAML document ('---') in the scenario",
              "one scenario per file");
    }
    d.throw_if_any();
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    Loc l = top;
    if (!e.mark.is_null() && e.mark.line >= 0) l = Loc{source_name, e.mark.line + 1, e.mark.column + 1};
    d.error(l, "", fmt::format("YAML syntax error: {}", e.msg));
    d.throw_if_any();
  }
  if (doc.IsNull()) {
    d.error(top, "", "the scenario is empty", "start from scenarios/default.yaml");
    d.throw_if_any();
  }

  TreeBuilder tb{sm, d};
  YNode root = tb.build(doc, top, "", 0);
  d.throw_if_any();
  if (root.kind != YNode::Kind::map) {
    d.error(root.loc, "", fmt::format("expected a map of keys (name, cluster, model, layout, ...), got {}", kind_name(root)));
    d.throw_if_any();
  }
  for (std::size_t i = 0; i < sets.size(); ++i) apply_set(root, sets[i], static_cast<int>(i) + 1, d);
  d.throw_if_any();

  Converter conv(d, source_name);
  wl::Scenario s = conv.convert(root);
  d.throw_if_any();

  for (const auto& err : wl::validate(s)) d.error(locate(root, err.key_path, source_name), err.key_path, err.message, err.hint);
  d.throw_if_any();
  check_link_names(s, root, source_name, d);
  d.throw_if_any();
  return s;
}

wl::Scenario load_scenario_file(const std::string& path, const std::vector<std::string>& sets) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ScenarioError(fmt::format("{}:1:1: error: is a directory, not a scenario file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScenarioError(fmt::format("{}:1:1: error: cannot open the scenario file", path));
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes) break;  // load_scenario_string reports the size
  }
  if (in.bad()) throw ScenarioError(fmt::format("{}:1:1: error: cannot read the scenario file", path));
  return load_scenario_string(text, path, sets);
}

std::string_view default_scenario_yaml() { return embedded::default_scenario_yaml_text; }

wl::Scenario load_default_scenario(const std::vector<std::string>& sets) {
  return load_scenario_string(default_scenario_yaml(), "<default>", sets);
}

}  // namespace ls::tools
