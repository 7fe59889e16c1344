// tools/report/chakra_export.cpp — see chakra_export.hpp for the mapping op → Chakra node.
#include "tools/report/chakra_export.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "chakra/et_def.pb.h"  // generated from tools/report/chakra/et_def.proto
#include "workloads/spec/vocabulary.hpp"

namespace ls::tools {

namespace {

namespace fs = std::filesystem;
namespace pb = ls::chakra;
using sim::CollOp;
using sim::Op;
using sim::OpKind;
using sim::OpRef;
using sim::StageProgram;

/// Chakra's schema version string, as its own generators write it.
constexpr const char* kChakraVersion = "0.0.4";

std::size_t as_index(std::int64_t v) { return static_cast<std::size_t>(v); }

/// Nodes one op becomes: a collective run `repeat` times is that many nodes.
std::uint32_t node_count(const Op& op) {
  return op.kind == OpKind::collective ? std::max<std::uint32_t>(1, op.repeat) : 1;
}

pb::CollectiveCommType chakra_coll(CollOp c) {
  switch (c) {
    case CollOp::all_reduce: return pb::ALL_REDUCE;
    case CollOp::reduce_scatter: return pb::REDUCE_SCATTER;
    case CollOp::all_gather: return pb::ALL_GATHER;
    case CollOp::all_to_all: return pb::ALL_TO_ALL;
    case CollOp::broadcast: return pb::BROADCAST;
  }
  return pb::ALL_REDUCE;
}

const char* coll_name(CollOp c) {
  switch (c) {
    case CollOp::all_reduce: return "all_reduce";
    case CollOp::reduce_scatter: return "reduce_scatter";
    case CollOp::all_gather: return "all_gather";
    case CollOp::all_to_all: return "all_to_all";
    case CollOp::broadcast: return "broadcast";
  }
  return "collective";
}

/// What the op does and where in the model, e.g. "forward all_reduce tp mb3 chunk0 L4-4".
std::string op_label(const Op& op) {
  std::string s = wl::work_name(wl::work_of(op));
  switch (op.kind) {
    case OpKind::compute: s += " compute"; break;
    case OpKind::collective: s += fmt::format(" {} {}", coll_name(op.coll), wl::axis_name(wl::axis_of(op))); break;
    case OpKind::send: s += " send"; break;
    case OpKind::recv: s += " recv"; break;
  }
  if (op.labels[wl::label::microbatch] >= 0) s += fmt::format(" mb{}", op.labels[wl::label::microbatch]);
  s += fmt::format(" chunk{}", op.labels[wl::label::chunk]);
  const auto layer_begin = op.labels[wl::label::layer_begin], layer_end = op.labels[wl::label::layer_end];
  if (layer_begin >= 0 && layer_end > layer_begin) s += fmt::format(" L{}-{}", layer_begin, layer_end - 1);
  return s;
}

/// One stage template, laid out as nodes: the write order and each op's first node id.
struct StageNodes {
  std::vector<OpRef> order;
  std::array<std::vector<std::uint64_t>, sim::kStreamCount> first_node;
  /// Per compute-stream op: the stage whose send feeds it (recvs only, else -1).
  std::vector<std::int32_t> recv_source_stage;
  /// Per compute-stream op: the bytes of that send.
  std::vector<double> recv_bytes;
  /// Per op, in `order`: op_label() (the same on every rank of the stage).
  std::vector<std::string> labels;
};

/// Orders the ops so every dependency (previous op of the stream, explicit deps)
/// comes first: repeatedly takes, stream by stream, the ops whose dependencies are
/// all placed. The engine runs exactly this dependency graph, so it is acyclic; a
/// pass that places nothing means it is not.
StageNodes lay_out(const StageProgram& stage) {
  StageNodes out;
  std::array<std::uint32_t, sim::kStreamCount> placed{};
  std::size_t total = 0;
  for (const auto& ops : stage.streams) total += ops.size();
  out.order.reserve(total);
  out.labels.reserve(total);
  for (int s = 0; s < sim::kStreamCount; ++s) out.first_node[as_index(s)].resize(stage.streams[as_index(s)].size());
  auto ready = [&](const Op& op) {
    for (std::uint32_t d = 0; d < op.dep_count; ++d) {
      const OpRef& dep = stage.deps[op.dep_begin + d];
      if (dep.index >= placed[dep.stream]) return false;
    }
    return true;
  };
  std::uint64_t next_id = 0;
  while (out.order.size() < total) {
    const std::size_t before = out.order.size();
    for (int s = 0; s < sim::kStreamCount; ++s) {
      const auto& ops = stage.streams[as_index(s)];
      auto& pos = placed[as_index(s)];
      while (pos < ops.size() && ready(ops[pos])) {
        out.first_node[as_index(s)][pos] = next_id;
        next_id += node_count(ops[pos]);
        out.order.push_back(OpRef{static_cast<std::uint8_t>(s), pos});
        out.labels.push_back(op_label(ops[pos]));
        ++pos;
      }
    }
    if (out.order.size() == before) throw std::logic_error("chakra export: the stage program's dependencies form a cycle");
  }
  return out;
}

void add_int(pb::Node& n, const char* name, std::int64_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}

void add_bool(pb::Node& n, const char* name, bool v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_bool_val(v);
}

void add_string(pb::Node& n, const char* name, const std::string& v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_string_val(v);
}

/// Writes `text` or, through `fill`, a protobuf stream to `path` via a temporary file
/// in the same directory and a rename.
template <typename Fill>
void write_atomically(const std::string& path, Fill&& fill) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  auto discard = [&] {
    std::error_code ignored;
    fs::remove(tmp, ignored);
  };
  {
    std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
    if (!file) throw ChakraWriteError(fmt::format("cannot write {}", tmp));
    try {
      fill(file);
    } catch (...) {
      file.close();
      discard();
      throw;
    }
    file.close();
    if (!file) {
      discard();
      throw ChakraWriteError(fmt::format("cannot write {}", tmp));
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    discard();
    throw ChakraWriteError(fmt::format("cannot rename {} to {}: {}", tmp, path, ec.message()));
  }
}

void write_message(google::protobuf::io::CodedOutputStream& out, const google::protobuf::MessageLite& m) {
  out.WriteVarint32(static_cast<std::uint32_t>(m.ByteSizeLong()));
  m.SerializeWithCachedSizes(&out);
}

/// Writes one rank's nodes (ids from `layout`) to `out`; returns the node count.
std::uint64_t write_rank(google::protobuf::io::CodedOutputStream& out, const sim::Program& program, std::int32_t rank,
                         const StageNodes& layout, const std::string& scenario_name, double compute_factor) {
  const auto& info = program.ranks[as_index(rank)];
  const StageProgram& stage = program.stages[as_index(info.stage)];
  const std::size_t stages = program.stages.size();

  pb::GlobalMetadata meta;
  meta.set_version(kChakraVersion);
  auto meta_attr = [&](const char* name) {
    auto* a = meta.add_attr();
    a->set_name(name);
    return a;
  };
  meta_attr("generator")->set_string_val("layoutsim");
  meta_attr("scenario")->set_string_val(scenario_name);
  meta_attr("rank")->set_int64_val(rank);
  meta_attr("stage")->set_int64_val(info.stage);
  write_message(out, meta);

  auto last_node = [&](const OpRef& r) {
    const Op& op = stage.streams[r.stream][r.index];
    return layout.first_node[r.stream][r.index] + node_count(op) - 1;
  };

  pb::Node node;
  std::uint64_t written = 0;
  for (std::size_t at = 0; at < layout.order.size(); ++at) {
    const OpRef& ref = layout.order[at];
    const Op& op = stage.streams[ref.stream][ref.index];
    const std::uint64_t first = layout.first_node[ref.stream][ref.index];
    const std::uint32_t copies = node_count(op);
    const std::string& label = layout.labels[at];
    for (std::uint32_t copy = 0; copy < copies; ++copy) {
      node.Clear();
      node.set_id(first + copy);
      if (copy > 0) {
        node.add_ctrl_deps(first + copy - 1);
      } else {
        if (ref.index > 0) node.add_ctrl_deps(last_node(OpRef{ref.stream, ref.index - 1}));
        for (std::uint32_t d = 0; d < op.dep_count; ++d) node.add_data_deps(last_node(stage.deps[op.dep_begin + d]));
      }
      add_bool(node, "is_cpu_op", false);
      add_int(node, "ls_stream", ref.stream);
      add_int(node, "ls_op_index", ref.index);
      switch (op.kind) {
        case OpKind::compute: {
          // The engine's own scaling (sim/engine.cpp): the rank's compute factor, and the
          // expert load of expert work, so the times match the simulated step's.
          const double k = (op.scaled_by_rank ? info.work_scale : 1.0) * compute_factor;
          const sim::Time dur = k == 1.0 ? op.duration : sim::Time::from_seconds(op.duration.seconds() * k);
          node.set_name(label);
          node.set_type(pb::COMP_NODE);
          node.set_duration_micros(static_cast<std::uint64_t>((std::max<std::int64_t>(0, dur.ps()) + 500'000) / 1'000'000));
          add_int(node, "num_ops", std::llround(op.hw_flops * (op.scaled_by_rank ? info.work_scale : 1.0)));
          add_int(node, "duration_ps", dur.ps());
          break;
        }
        case OpKind::collective: {
          const std::int32_t group = info.group[static_cast<std::size_t>(op.group_slot)];
          node.set_name(copies > 1 ? fmt::format("{} [{}/{}]", label, copy + 1, copies) : label);
          if (group < 0) {  // degree-1 axis: nothing moves, the engine completes it at once
            node.set_name(node.name() + " (degree 1: no communication)");
            node.set_type(pb::COMP_NODE);
            add_int(node, "num_ops", 0);
            add_int(node, "duration_ps", 0);
            break;
          }
          node.set_type(pb::COMM_COLL_NODE);
          add_int(node, "comm_type", chakra_coll(op.coll));
          add_int(node, "comm_size", std::llround(op.bytes));
          add_string(node, "pg_name", std::to_string(group + 1));
          break;
        }
        case OpKind::send: {
          const std::int32_t peer = program.pp_peer[as_index(rank) * stages + as_index(op.peer_stage)];
          node.set_name(fmt::format("{} to rank {}", label, peer));
          node.set_type(pb::COMM_SEND_NODE);
          add_int(node, "comm_src", rank);
          add_int(node, "comm_dst", peer);
          add_int(node, "comm_size", std::llround(op.bytes));
          add_int(node, "comm_tag", op.peer_op);
          break;
        }
        case OpKind::recv: {
          const std::int32_t source_stage = layout.recv_source_stage[ref.index];
          if (source_stage < 0) throw std::logic_error("chakra export: a recv op without a matching send");
          const std::int32_t peer = program.pp_peer[as_index(rank) * stages + as_index(source_stage)];
          node.set_name(fmt::format("{} from rank {}", label, peer));
          node.set_type(pb::COMM_RECV_NODE);
          add_int(node, "comm_src", peer);
          add_int(node, "comm_dst", rank);
          add_int(node, "comm_size", std::llround(layout.recv_bytes[ref.index]));
          add_int(node, "comm_tag", ref.index);
          break;
        }
      }
      write_message(out, node);
      ++written;
    }
  }
  return written;
}

std::string comm_groups_json(const sim::Program& program) {
  std::string text = "{";
  for (std::size_t g = 0; g < program.groups.size(); ++g) {
    text += fmt::format("{}\n  \"{}\": [{}]", g == 0 ? "" : ",", g + 1, fmt::join(program.groups[g].ranks, ", "));
  }
  text += program.groups.empty() ? "}\n" : "\n}\n";
  return text;
}

}  // namespace

std::string chakra_file_stem(const std::string& scenario_name) {
  if (scenario_name.empty()) return "layoutsim";
  std::string stem = scenario_name;
  for (char& c : stem) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    if (!keep) c = '_';
  }
  return stem;
}

std::string chakra_trace_path(const std::string& dir, const std::string& scenario_name, int rank) {
  return (fs::path(dir) / fmt::format("{}.{}.et", chakra_file_stem(scenario_name), rank)).string();
}

std::string chakra_comm_groups_path(const std::string& dir, const std::string& scenario_name) {
  return (fs::path(dir) / (chakra_file_stem(scenario_name) + ".comm_groups.json")).string();
}

ChakraExportSummary write_chakra_traces(const sim::Program& program, const std::string& scenario_name,
                                        const std::string& dir, const std::vector<double>& compute_factors) {
  if (!compute_factors.empty() && compute_factors.size() != program.ranks.size())
    throw std::invalid_argument("write_chakra_traces: one compute factor per rank, or none");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw ChakraWriteError(fmt::format("cannot create directory {}{}", dir, ec ? ": " + ec.message() : std::string()));
  }

  std::vector<StageNodes> layouts;
  layouts.reserve(program.stages.size());
  for (const auto& stage : program.stages) {
    layouts.push_back(lay_out(stage));
    const auto& compute = stage.streams[static_cast<std::size_t>(wl::stream::compute)];
    layouts.back().recv_source_stage.assign(compute.size(), -1);
    layouts.back().recv_bytes.assign(compute.size(), 0.0);
  }
  // A recv's sender: the stage whose send names it (Op::peer_op on the peer stage).
  for (std::size_t s = 0; s < program.stages.size(); ++s) {
    for (const Op& op : program.stages[s].streams[static_cast<std::size_t>(wl::stream::pp_send)]) {
      if (op.kind != OpKind::send) continue;
      auto& target = layouts[as_index(op.peer_stage)];
      target.recv_source_stage.at(op.peer_op) = static_cast<std::int32_t>(s);
      target.recv_bytes.at(op.peer_op) = op.bytes;
    }
  }

  ChakraExportSummary summary;
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    const auto rank = static_cast<std::int32_t>(r);
    const StageNodes& layout = layouts[as_index(program.ranks[r].stage)];
    write_atomically(chakra_trace_path(dir, scenario_name, rank), [&](std::ofstream& file) {
      google::protobuf::io::OstreamOutputStream stream(&file);
      google::protobuf::io::CodedOutputStream coded(&stream);
      summary.nodes += write_rank(coded, program, rank, layout, scenario_name, compute_factors.empty() ? 1.0 : compute_factors[r]);
      if (coded.HadError()) throw ChakraWriteError(fmt::format("cannot write {}", chakra_trace_path(dir, scenario_name, rank)));
    });
    ++summary.files;
  }
  const std::string groups = comm_groups_json(program);
  write_atomically(chakra_comm_groups_path(dir, scenario_name), [&](std::ofstream& file) { file << groups; });
  ++summary.files;
  return summary;
}

}  // namespace ls::tools
