// tests/test_chakra.cpp — tools/report/chakra_export.hpp: builds small programs, exports them,
// decodes the files with the classes generated from tools/report/chakra/et_def.proto (its own
// length-delimited reader, not the exporter's code) and checks every node against the
// op it came from: counts, dependencies, bytes, FLOPs, durations, send/recv pairing and
// the process groups. Then `layoutsim run --chakra` end to end, including the error exit.
#include <doctest/doctest.h>

#include "fixtures.hpp"
#include "run_binary.hpp"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <nlohmann/json.hpp>

#include "chakra/et_def.pb.h"
#include "tools/report/chakra_export.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/resolve.hpp"
#include "workloads/simulate.hpp"

#ifndef LAYOUTSIM_BIN
#error "LAYOUTSIM_BIN must be defined (path of the layoutsim executable)"
#endif

namespace fs = std::filesystem;
namespace pb = ls::chakra;
using namespace ls;

namespace {

struct DecodedFile {
  pb::GlobalMetadata meta;
  std::vector<pb::Node> nodes;
};

/// Reads the varint-length-delimited stream: GlobalMetadata, then Nodes.
DecodedFile decode(const std::string& path) {
  const std::string bytes = test::slurp(path);
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  DecodedFile f;
  auto read_one = [&](google::protobuf::MessageLite& m) {
    std::uint32_t size = 0;
    if (!in.ReadVarint32(&size)) return false;
    const auto limit = in.PushLimit(static_cast<int>(size));
    const bool ok = m.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
    in.PopLimit(limit);
    REQUIRE(ok);
    return true;
  };
  REQUIRE(read_one(f.meta));
  pb::Node n;
  while (read_one(n)) f.nodes.push_back(n);
  REQUIRE(in.CurrentPosition() == static_cast<int>(bytes.size()));
  return f;
}

const pb::AttributeProto* find_attr(const pb::Node& n, const std::string& name) {
  for (const auto& a : n.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

std::int64_t int_attr(const pb::Node& n, const std::string& name) {
  const auto* a = find_attr(n, name);
  REQUIRE_MESSAGE(a != nullptr, name);
  REQUIRE(a->value_case() == pb::AttributeProto::kInt64Val);
  return a->int64_val();
}

int chakra_coll(sim::CollOp c) {
  switch (c) {
    case sim::CollOp::all_reduce: return pb::ALL_REDUCE;
    case sim::CollOp::reduce_scatter: return pb::REDUCE_SCATTER;
    case sim::CollOp::all_gather: return pb::ALL_GATHER;
    case sim::CollOp::all_to_all: return pb::ALL_TO_ALL;
    case sim::CollOp::broadcast: return pb::BROADCAST;
  }
  return -1;
}

std::vector<std::uint64_t> ids(const google::protobuf::RepeatedField<std::uint64_t>& r) { return {r.begin(), r.end()}; }

using Message = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;  // src, dst, tag, bytes

struct Totals {
  std::multiset<Message> sends, recvs;
  std::uint64_t nodes = 0;
  int collectives = 0, repeated_collectives = 0, cross_stream_deps = 0, scaled_compute = 0;
};

/// Checks one rank's file against its stage template.
void check_rank(const sim::Program& prog, int rank, const DecodedFile& f, const nlohmann::json& groups, Totals& t) {
  CAPTURE(rank);
  const auto& info = prog.ranks[static_cast<std::size_t>(rank)];
  const auto& stage = prog.stages[static_cast<std::size_t>(info.stage)];
  CHECK(f.meta.version() == "0.0.4");

  // Node count: one per op, k per collective of repeat k.
  std::size_t expected = 0;
  for (const auto& ops : stage.streams)
    for (const auto& op : ops) expected += op.kind == sim::OpKind::collective ? std::max<std::size_t>(1, op.repeat) : 1;
  REQUIRE(f.nodes.size() == expected);
  t.nodes += f.nodes.size();

  // Ids are 0..n-1 in file order; every dependency points backwards (topological order).
  // The nodes of op (stream, index), in copy order.
  std::map<std::pair<int, std::uint32_t>, std::vector<std::uint64_t>> of_op;
  for (std::size_t i = 0; i < f.nodes.size(); ++i) {
    const auto& n = f.nodes[i];
    REQUIRE(n.id() == i);
    for (auto d : n.ctrl_deps()) CHECK(d < n.id());
    for (auto d : n.data_deps()) CHECK(d < n.id());
    const auto* cpu = find_attr(n, "is_cpu_op");
    REQUIRE(cpu != nullptr);
    CHECK(cpu->value_case() == pb::AttributeProto::kBoolVal);
    CHECK_FALSE(cpu->bool_val());
    of_op[{static_cast<int>(int_attr(n, "ls_stream")), static_cast<std::uint32_t>(int_attr(n, "ls_op_index"))}].push_back(n.id());
  }
  auto last = [&](int s, std::uint32_t i) { return of_op.at({s, i}).back(); };

  double flops_program = 0, flops_file = 0;
  int compute_nodes = 0;
  for (int s = 0; s < sim::kStreamCount; ++s) {
    const auto& ops = stage.streams[static_cast<std::size_t>(s)];
    for (std::uint32_t i = 0; i < ops.size(); ++i) {
      CAPTURE(s);
      CAPTURE(i);
      const sim::Op& op = ops[i];
      const auto& nodes = of_op.at({s, i});
      REQUIRE(nodes.size() == (op.kind == sim::OpKind::collective ? std::max<std::size_t>(1, op.repeat) : 1));
      for (std::size_t c = 0; c < nodes.size(); ++c) {
        const pb::Node& n = f.nodes[nodes[c]];
        // Dependencies: stream order (control), the op's explicit deps (data); the
        // copies of a repeated collective chain one after the other.
        std::vector<std::uint64_t> ctrl, data;
        if (c > 0) {
          ctrl.push_back(nodes[c - 1]);
        } else {
          if (i > 0) ctrl.push_back(last(s, i - 1));
          for (std::uint32_t d = 0; d < op.dep_count; ++d) {
            const auto& dep = stage.deps[op.dep_begin + d];
            data.push_back(last(dep.stream, dep.index));
            if (dep.stream != s) ++t.cross_stream_deps;
          }
        }
        CHECK(ids(n.ctrl_deps()) == ctrl);
        CHECK(ids(n.data_deps()) == data);

        switch (op.kind) {
          case sim::OpKind::compute: {
            CHECK(n.type() == pb::COMP_NODE);
            const double k = op.scaled_by_rank ? info.work_scale : 1.0;
            if (k != 1.0) ++t.scaled_compute;
            const sim::Time dur = k == 1.0 ? op.duration : sim::Time::from_seconds(op.duration.seconds() * k);
            CHECK(int_attr(n, "duration_ps") == dur.ps());
            // Nearest whole microsecond: |micros·1e6 − ps| ≤ 0.5e6.
            CHECK(std::llabs(static_cast<std::int64_t>(n.duration_micros()) * 1'000'000 - dur.ps()) <= 500'000);
            CHECK(int_attr(n, "num_ops") == std::llround(op.hw_flops * k));
            flops_program += op.hw_flops * k;
            flops_file += static_cast<double>(int_attr(n, "num_ops"));
            ++compute_nodes;
            break;
          }
          case sim::OpKind::collective: {
            const int g = info.group[static_cast<std::size_t>(op.group_slot)];
            if (g < 0) {
              CHECK(n.type() == pb::COMP_NODE);
              CHECK(int_attr(n, "num_ops") == 0);
              break;
            }
            ++t.collectives;
            if (nodes.size() > 1) ++t.repeated_collectives;
            CHECK(n.type() == pb::COMM_COLL_NODE);
            CHECK(int_attr(n, "comm_type") == chakra_coll(op.coll));
            CHECK(int_attr(n, "comm_size") == std::llround(op.bytes));
            const auto* pg = find_attr(n, "pg_name");
            REQUIRE(pg != nullptr);
            REQUIRE(pg->value_case() == pb::AttributeProto::kStringVal);
            CHECK(pg->string_val() == std::to_string(g + 1));
            REQUIRE(groups.contains(pg->string_val()));
            CHECK(groups[pg->string_val()].get<std::vector<int>>() == prog.groups[static_cast<std::size_t>(g)].ranks);
            break;
          }
          case sim::OpKind::send: {
            CHECK(n.type() == pb::COMM_SEND_NODE);
            const auto peer = prog.pp_peer[static_cast<std::size_t>(rank) * prog.stages.size() + static_cast<std::size_t>(op.peer_stage)];
            CHECK(int_attr(n, "comm_src") == rank);
            CHECK(int_attr(n, "comm_dst") == peer);
            CHECK(int_attr(n, "comm_size") == std::llround(op.bytes));
            CHECK(int_attr(n, "comm_tag") == op.peer_op);
            t.sends.insert({rank, peer, int_attr(n, "comm_tag"), int_attr(n, "comm_size")});
            break;
          }
          case sim::OpKind::recv: {
            CHECK(n.type() == pb::COMM_RECV_NODE);
            CHECK(int_attr(n, "comm_dst") == rank);
            CHECK(int_attr(n, "comm_tag") == i);  // the recv's own index: what the sender's peer_op names
            t.recvs.insert({int_attr(n, "comm_src"), rank, int_attr(n, "comm_tag"), int_attr(n, "comm_size")});
            break;
          }
        }
      }
    }
  }
  // The rank's hardware FLOPs survive, up to ½ FLOP of rounding per compute node.
  CHECK(std::fabs(flops_file - flops_program) <= 0.5 * compute_nodes);
  CHECK(flops_program > 0);
}

/// Exports `s`'s program and checks every rank; returns the totals for case-specific checks.
Totals export_and_check(const wl::Scenario& s) {
  const wl::BuiltProgram bp = wl::build_program(wl::resolve(s));
  const sim::Program& prog = bp.program;
  const std::string dir = test::tmp("chakra_" + s.name);
  const auto summary = tools::write_chakra_traces(prog, s.name, dir);
  CHECK(summary.files == static_cast<int>(prog.ranks.size()) + 1);

  const auto groups = nlohmann::json::parse(test::slurp(tools::chakra_comm_groups_path(dir, s.name)));
  CHECK(groups.size() == prog.groups.size());

  Totals t;
  for (int r = 0; r < static_cast<int>(prog.ranks.size()); ++r) {
    const std::string path = tools::chakra_trace_path(dir, s.name, r);
    CHECK(fs::path(path).filename().string() == s.name + "." + std::to_string(r) + ".et");
    check_rank(prog, r, decode(path), groups, t);
  }
  CHECK(summary.nodes == t.nodes);
  // Every send has exactly one recv with the same (src, dst, tag, bytes) and vice versa.
  CHECK(t.sends == t.recvs);
  CHECK(std::set<Message>(t.sends.begin(), t.sends.end()).size() == t.sends.size());
  // Nothing but the .et files and the JSON (no temporaries left behind).
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  CHECK(entries == summary.files);
  return t;
}

}  // namespace

TEST_CASE("dense t2·p2·d2, ZeRO-1: every op and dependency is in the files") {
  wl::Scenario s = test::uniform_pipeline(2, 4);
  s.name = "dense";
  s.cluster.gpus_per_node = 8;
  s.layout.tp = 2;
  s.layout.dp = 2;
  s.layout.zero = 1;
  const Totals t = export_and_check(s);
  CHECK(t.sends.size() == 8 * 2 * 4 / 2);  // 8 ranks, 4 micro-batches, one boundary each way: half the ranks send each way
  CHECK(t.repeated_collectives > 0);       // the two TP all-reduces of a layer pass: repeat 2
  CHECK(t.cross_stream_deps > 0);          // sends after compute, gathers before the forward
}

TEST_CASE("interleaved 1F1B (v = 2): chunk-to-chunk sends pair with their recvs") {
  wl::Scenario s = test::uniform_pipeline(2, 4, wl::Schedule::interleaved_1f1b, 2);
  s.name = "interleaved";
  const Totals t = export_and_check(s);
  // Model chunks 0..3 in a ring of 2 stages: 3 boundaries, forward and backward, 4 micro-batches.
  CHECK(t.sends.size() == 3 * 2 * 4);
}

TEST_CASE("skewed MoE: expert compute carries the rank's expert load") {
  wl::Scenario s;
  s.name = "moe skew";  // a space: the file stem replaces it
  test::a100_era_cluster(s, 1, 4);
  s.gpu = *wl::gpu_preset("h100-sxm");
  s.model = test::small_model(2);
  s.model.activation = wl::Activation::swiglu;
  s.model.moe.experts = 4;
  s.model.moe.top_k = 2;
  s.model.moe.expert_ffn_hidden = 2048;
  s.model.moe.routing = wl::RoutingKind::load;
  s.model.moe.load = {4, 1, 1, 2};
  s.layout.dp = 4;
  s.layout.ep = 4;
  s.layout.microbatches = 2;
  s.layout.embedding_free = true;
  CHECK(tools::chakra_file_stem(s.name) == "moe_skew");
  const wl::BuiltProgram bp = wl::build_program(wl::resolve(s));
  const std::string dir = test::tmp("chakra_moe_stem");
  tools::write_chakra_traces(bp.program, s.name, dir);
  CHECK(fs::exists(fs::path(dir) / "moe_skew.0.et"));
  CHECK(fs::exists(fs::path(dir) / "moe_skew.comm_groups.json"));

  // The full per-node check, under a file-safe name.
  s.name = "moe";
  const Totals t = export_and_check(s);
  CHECK(t.scaled_compute > 0);
  CHECK(t.collectives > 0);
}

TEST_CASE("layoutsim run --chakra writes one file per rank; an unwritable DIR exits 1") {
  const std::string yaml = test::tmp("chakra_small.yaml");
  {
    std::ofstream f(yaml);
    f << "name: cli-chakra\ncluster:\n  gpu: h100-sxm\n  nodes: 1\n  gpus_per_node: 4\nmodel:\n  preset: llama3-8b\n"
         "  layers: 4\nlayout:\n  tp: 2\n  pp: 2\n  microbatches: 2\n";
  }
  const std::string dir = test::tmp("chakra_cli/nested");
  const auto ok = test::run_layoutsim("run --quiet '" + yaml + "' --chakra '" + dir + "'");
  CHECK_MESSAGE(ok.rc == 0, ok.err);
  for (int r = 0; r < 4; ++r) CHECK(fs::exists(fs::path(dir) / ("cli-chakra." + std::to_string(r) + ".et")));
  CHECK(fs::exists(fs::path(dir) / "cli-chakra.comm_groups.json"));

  // A path below a regular file cannot be a directory, whoever runs the test.
  const std::string blocker = test::tmp("chakra_blocker");
  { std::ofstream f(blocker); f << "x"; }
  const auto bad = test::run_layoutsim("run --quiet '" + yaml + "' --chakra '" + blocker + "/et'");
  CHECK(bad.rc == 1);
  CHECK(bad.err.find("--chakra") != std::string::npos);
}

TEST_CASE("layoutsim run --chakra writes the simulated durations, --chakra-nominal the nominal ones") {
  const std::string yaml = test::tmp("chakra_straggler.yaml");
  {
    std::ofstream f(yaml);
    f << "name: cli-straggler\ncluster:\n  gpu: h100-sxm\n  nodes: 1\n  gpus_per_node: 2\nmodel:\n  preset: llama3-8b\n"
         "  layers: 4\nlayout:\n  pp: 2\n  microbatches: 2\nperturbations:\n  devices: [{device: node0.gpu1, compute_slowdown: 2}]\n";
  }
  const std::string sim_dir = test::tmp("chakra_simulated"), nominal_dir = test::tmp("chakra_nominal_cli");
  const auto a = test::run_layoutsim("run --quiet '" + yaml + "' --chakra '" + sim_dir + "'");
  const auto b = test::run_layoutsim("run --quiet '" + yaml + "' --chakra '" + nominal_dir + "' --chakra-nominal");
  REQUIRE_MESSAGE(a.rc == 0, a.err);
  REQUIRE_MESSAGE(b.rc == 0, b.err);
  const DecodedFile sim = decode(tools::chakra_trace_path(sim_dir, "cli-straggler", 1));
  const DecodedFile nom = decode(tools::chakra_trace_path(nominal_dir, "cli-straggler", 1));
  REQUIRE(sim.nodes.size() == nom.nodes.size());
  int compute = 0;
  for (std::size_t i = 0; i < sim.nodes.size(); ++i) {
    if (nom.nodes[i].type() != pb::COMP_NODE || int_attr(nom.nodes[i], "duration_ps") == 0) continue;
    ++compute;
    // The straggler's factor is at least its slowdown of 2 (interference can only add);
    // durations are whole picoseconds.
    CHECK(int_attr(sim.nodes[i], "duration_ps") >= 2 * int_attr(nom.nodes[i], "duration_ps") - 1);
  }
  CHECK(compute > 0);
  // The switch means nothing without --chakra: a usage error.
  CHECK(test::run_layoutsim("run --quiet '" + yaml + "' --chakra-nominal").rc == 2);
}

TEST_CASE("compute durations carry the rank's simulated compute factor: a replay reproduces the step layoutsim reports") {
  wl::Scenario s = test::uniform_pipeline(2, 4);
  s.name = "factors";
  const wl::BuiltProgram bp = wl::build_program(wl::resolve(s));
  const std::string nominal = test::tmp("chakra_nominal"), slowed = test::tmp("chakra_slowed");
  tools::write_chakra_traces(bp.program, s.name, nominal);
  const std::vector<double> factors{1.0, 1.25};  // rank 1 ran 1.25× slower (a straggler, or beside a collective)
  tools::write_chakra_traces(bp.program, s.name, slowed, factors);
  for (int r = 0; r < 2; ++r) {
    const DecodedFile a = decode(tools::chakra_trace_path(nominal, s.name, r));
    const DecodedFile b = decode(tools::chakra_trace_path(slowed, s.name, r));
    REQUIRE(a.nodes.size() == b.nodes.size());
    int compute = 0;
    for (std::size_t i = 0; i < a.nodes.size(); ++i) {
      if (a.nodes[i].type() != pb::COMP_NODE || int_attr(a.nodes[i], "duration_ps") == 0) continue;
      ++compute;
      // Durations are whole picoseconds: within one of the nominal one times the factor.
      const double expect = static_cast<double>(int_attr(a.nodes[i], "duration_ps")) * factors[static_cast<std::size_t>(r)];
      CHECK(std::abs(static_cast<double>(int_attr(b.nodes[i], "duration_ps")) - expect) <= 1.0);
      CHECK(int_attr(b.nodes[i], "num_ops") == int_attr(a.nodes[i], "num_ops"));  // the work is the same
    }
    CHECK(compute > 0);
  }
  CHECK_THROWS_AS(tools::write_chakra_traces(bp.program, s.name, slowed, {1.0}), std::invalid_argument);
  // The command passes the factors its run used: a simulated result carries one per device.
  const wl::Result res = wl::simulate(wl::resolve(s));
  CHECK(res.compute_factors.size() == bp.program.ranks.size());
}
