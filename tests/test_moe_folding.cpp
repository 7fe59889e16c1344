// tests/test_moe_folding.cpp — MoE parallel folding (layout.expert_tp, ep drawn from
// tp·cp·dp): the expert mesh of each rank, the groups the program builds, the expert
// GEMM shapes, the bytes of the all-to-all and of the expert-TP collective, and the
// expert parameters per device, against hand arithmetic.
#include <doctest/doctest.h>

#include <set>
#include <vector>

#include "fixtures.hpp"
#include "workloads/build/program_builder.hpp"
#include "workloads/build/stage_memory.hpp"
#include "workloads/cost/layer_kernels.hpp"
#include "workloads/cost/pass_costs.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/model/model.hpp"
#include "workloads/spec/vocabulary.hpp"

using namespace ls;
using namespace ls::wl;

namespace {

/// 8 experts (top 2) on every layer of the small model; one node of 8 H100s.
Scenario folded(int tp, int cp, int dp, int expert_tp, int ep) {
  Scenario s = test::uniform_pipeline(1, 2);
  s.cluster.gpus_per_node = tp * cp * dp;
  s.model = test::small_model(2);
  s.model.activation = Activation::swiglu;
  s.model.moe.experts = 8;
  s.model.moe.top_k = 2;
  s.model.moe.expert_ffn_hidden = 2048;
  s.layout.stage_layers = {2};
  s.layout.tp = tp;
  s.layout.cp = cp;
  s.layout.dp = dp;
  s.layout.expert_tp = expert_tp;
  s.layout.ep = ep;
  s.layout.sequence_parallel = tp > 1;
  return s;
}

/// The members of every group of `axis`, as sets of ranks.
std::set<std::set<int>> groups_of(const sim::Program& prog, Axis axis) {
  std::set<std::set<int>> out;
  for (const auto& g : prog.groups)
    if (axis_of(g) == axis) out.insert(std::set<int>(g.ranks.begin(), g.ranks.end()));
  return out;
}

const Kernel& kernel(const std::vector<Kernel>& ks, std::string_view name) {
  for (const auto& k : ks)
    if (k.name == name) return k;
  FAIL("no kernel " << name);
  return ks.front();
}

}  // namespace

TEST_CASE("a stage's ranks, tp fastest then cp then dp, regroup as expert_tp, ep, expert-dp") {
  LayoutSpec L;
  L.tp = 2, L.cp = 2, L.dp = 2, L.expert_tp = 1, L.ep = 4;
  CHECK(expert_tp_of(L) == 1);
  CHECK(expert_dp_of(L) == 2);  // 2·2·2 / (1·4)
  // u = tp + 2·(cp + 2·dp): ep = u mod 4, expert-dp = u / 4.
  const ExpertCoord a = expert_coord(L, Coord{1, 1, 0, 1});  // u = 1 + 2·(1 + 2) = 7
  CHECK(a.etp == 0);
  CHECK(a.ep == 3);
  CHECK(a.edp == 1);
  // An ep group of 4 spans 4 ranks of one dp index (2 tp × 2 cp): one dp index per block.
  CHECK(expert_dp_block(L) == 1);
  L.ep = 8;
  CHECK(expert_dp_block(L) == 2);  // 8 ranks = 2 dp indices of 4
  L.ep = 1, L.expert_tp = 0;
  CHECK(expert_tp_of(L) == 2);  // unset: the attention's tp
  // The unfolded case: ep carved out of dp.
  LayoutSpec M;
  M.tp = 2, M.dp = 4, M.ep = 2;
  const ExpertCoord b = expert_coord(M, Coord{3, 1, 0, 0});
  CHECK(b.etp == 1);
  CHECK(b.ep == 3 % 2);
  CHECK(b.edp == 3 / 2);
}

TEST_CASE("the program's ep, expert-dp and expert-tp groups follow the folding") {
  // tp 2 × dp 4 = 8 ranks; experts unsplit (expert_tp 1), ep 4: ep groups are 4
  // consecutive ranks in Megatron's order (rank = tp + 2·dp here), expert-dp pairs them.
  const BuiltProgram bp = build_program(folded(2, 1, 4, 1, 4));
  CHECK(groups_of(bp.program, Axis::ep) == std::set<std::set<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(groups_of(bp.program, Axis::edp) == std::set<std::set<int>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(groups_of(bp.program, Axis::etp).empty());  // expert_tp 1: no expert TP collective
  CHECK(groups_of(bp.program, Axis::tp).size() == 4);
  // expert_tp 4 over tp 2: expert-TP groups of 4 consecutive ranks, ep 2 across them.
  const BuiltProgram wide = build_program(folded(2, 1, 4, 4, 2));
  CHECK(groups_of(wide.program, Axis::etp) == std::set<std::set<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(groups_of(wide.program, Axis::ep) == std::set<std::set<int>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(groups_of(wide.program, Axis::edp).empty());
}

TEST_CASE("expert GEMMs: expert_tp-wide MLPs over the tokens of an expert-TP group, the same FLOPs") {
  Scenario s = folded(4, 1, 2, 1, 8);
  const KernelOptions o = kernel_options(s);
  CHECK(o.expert_tp == 1);
  const auto fwd = layer_pass_kernels(s.model, 0, o, LayerPass::forward);
  // T = b·s = 1024 tokens per TP group, 256 per rank (SP); expert_tp 1: rows per local
  // expert = 256·k·ep/E = 256·2·8/8 = 512, one local expert, width 2·2048 (gate + up).
  const Kernel& up = kernel(fwd, "expert.up");
  CHECK(up.shape.m == 512);
  CHECK(up.shape.n == 2 * 2048);
  CHECK(up.shape.batch == 1);
  s.layout.expert_tp = 4, s.layout.ep = 2;
  const auto same_tp = layer_pass_kernels(s.model, 0, kernel_options(s), LayerPass::forward);
  const Kernel& up4 = kernel(same_tp, "expert.up");
  CHECK(up4.shape.m == 1024 * 2 * 2 / 8);  // T·k·ep/E
  CHECK(up4.shape.n == 2 * 2048 / 4);
  CHECK(up4.shape.batch == 4);             // experts / ep local experts
  CHECK(up.flops == doctest::Approx(up4.flops).epsilon(1e-12));
}

TEST_CASE("bytes: the all-to-all moves each rank's s/(cp·tp) tokens; the expert-TP collective gathers expert_tp ranks' share") {
  const Scenario s = folded(2, 2, 2, 1, 8);
  const PassBytes pb = pass_bytes(s);
  const double b = 1, seq = 1024, h = 1024, k = 2, ab = 2;
  CHECK(pb.ep_all_to_all == doctest::Approx(b * seq / 2 / 2 * k * h * ab).epsilon(1e-12));
  CHECK(pb.expert_tp_all_reduce == doctest::Approx(b * seq / 2 / 2 * 1 * h * ab).epsilon(1e-12));
  // expert_tp = tp: the attention's TP buffer, b·(s/cp)·h·2 bytes.
  const Scenario t = folded(2, 2, 2, 2, 4);
  CHECK(pass_bytes(t).expert_tp_all_reduce == doctest::Approx(pass_bytes(t).tp_all_reduce).epsilon(1e-12));
}

TEST_CASE("a device keeps experts / ep experts, each 1/expert_tp of its parameters") {
  const Scenario s = folded(4, 1, 2, 1, 8);
  const DeviceParams params(s);
  CHECK(params.experts(0) == doctest::Approx(8.0 / 8 * expert_params(s.model) / 1).epsilon(1e-12));
  Scenario u = folded(4, 1, 2, 4, 2);
  CHECK(DeviceParams(u).experts(0) == doctest::Approx(8.0 / 2 * expert_params(u.model) / 4).epsilon(1e-12));
}
