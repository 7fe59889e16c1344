// tests/test_layout.cpp — layout rules (one broken rule at a time), the mesh map, and
// the stage/chunk layer maps.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <set>
#include <stdexcept>

#include "workloads/build/rank_groups.hpp"
#include "workloads/cost/hardware.hpp"
#include "workloads/model/layout.hpp"
#include "workloads/model/model.hpp"

using namespace ls::wl;

namespace {

/// 64 A100s, GPT-3 175B, dp 2 · tp 8 · pp 4, 1F1B: valid.
Scenario good() {
  Scenario s;
  s.cluster.nodes = 8;
  s.cluster.gpus_per_node = 8;
  s.gpu = *gpu_preset("a100-80gb");
  s.model = *model_preset("gpt3-175b");
  s.layout.dp = 2;
  s.layout.tp = 8;
  s.layout.pp = 4;
  s.layout.microbatches = 8;
  s.precision.master = 4;  // unset by default; wl::resolve derives it, validate() reads it as set
  return s;
}

/// The keys of the errors, for "exactly this rule broke" checks.
std::vector<std::string> keys(const Scenario& s) {
  std::vector<std::string> out;
  for (const auto& e : validate(s)) {
    CHECK_FALSE(e.message.empty());
    CHECK_FALSE(e.hint.empty());
    out.push_back(e.key_path);
  }
  return out;
}

bool mentions(const Scenario& s, const std::string& what) {
  for (const auto& e : validate(s))
    if (e.message.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("a good layout has no errors; device_count") {
  CHECK(validate(good()).empty());
  CHECK(device_count(good().cluster) == 64);
  Scenario g = good();
  ls::topo::ExplicitGraphSpec graph;
  graph.vertices = {{"node0.gpu0", "gpu"}, {"node0.gpu1", "gpu"}, {"sw", "nvswitch"}};
  g.cluster.graph = graph;
  CHECK(device_count(g.cluster) == 2);
}

TEST_CASE("each broken rule is reported under its key, with the numbers") {
  auto s = good();
  s.layout.dp = 4;  // 4·8·4 = 128 != 64
  CHECK(keys(s) == std::vector<std::string>{"layout"});
  CHECK(mentions(s, "128"));
  CHECK(mentions(s, "64"));

  s = good();
  s.layout.tp = 16;  // 1·16·4 = 64 and 16 divides 96 heads and 4h: valid
  s.layout.dp = 1;
  CHECK(validate(s).empty());
  s.layout.tp = 64;  // 64 divides neither 96 heads nor 96 KV heads (4h = 49152 is fine)
  s.layout.pp = 1;
  CHECK(keys(s) == std::vector<std::string>{"layout.tp", "layout.tp"});

  s = good();
  s.model = *model_preset("llama3-70b");  // 8 KV heads
  s.layout.tp = 16;
  s.layout.dp = 1;
  CHECK(keys(s) == std::vector<std::string>{"layout.tp"});
  CHECK(mentions(s, "kv_heads (8)"));

  s = good();
  s.layout.pp = 64;  // 96 % 64 != 0
  s.layout.tp = 1;
  s.layout.dp = 1;
  CHECK(keys(s) == std::vector<std::string>{"layout.pp"});

  s = good();
  s.layout.stage_layers_mode = StageLayersMode::explicit_list;
  s.layout.stage_layers = {24, 24, 24};
  // 3 entries for pp 4, and they sum to 72, not 96: two errors.
  CHECK(keys(s) == std::vector<std::string>{"layout.stage_layers", "layout.stage_layers"});
  s.layout.stage_layers = {30, 30, 30, 6};
  CHECK(validate(s).empty());
  s.layout.stage_layers = {48, 48, 0, 0};
  CHECK(validate(s).size() == 1);  // stage 2 is empty and not an end: only the last may be
  CHECK(mentions(s, "stage_layers[2] = 0"));
  s.layout.stage_layers = {0, 48, 48, 0};  // the embedding alone first, the LM head alone last
  CHECK(validate(s).empty());
  s.layout.stage_layers = {-1, 49, 48, 0};
  CHECK(mentions(s, "cannot be negative"));

  s = good();
  s.layout.ep = 2;  // dense model
  CHECK(keys(s) == std::vector<std::string>{"layout.ep"});
  s.model.moe.experts = 6;
  s.model.moe.top_k = 2;
  s.layout.ep = 4;  // divides neither dp (2) nor 6 experts
  CHECK(keys(s) == std::vector<std::string>{"layout.ep", "layout.ep"});

  s = good();
  s.layout.microbatches = 0;
  s.layout.microbatch_size = 0;
  s.layout.zero = 4;
  CHECK(keys(s) == std::vector<std::string>{"layout.microbatches", "layout.microbatch_size", "layout.zero"});
}

TEST_CASE("interleaving rules") {
  auto s = good();
  s.layout.schedule = Schedule::interleaved_1f1b;
  s.layout.virtual_stages = 1;
  CHECK(keys(s) == std::vector<std::string>{"layout.virtual_stages"});
  s.layout.virtual_stages = 2;
  CHECK(validate(s).empty());  // 96 % (4·2) == 0, m = 8 multiple of 4
  s.layout.microbatches = 6;
  CHECK(keys(s) == std::vector<std::string>{"layout.microbatches"});
  CHECK(mentions(s, "multiple of pp"));
  CHECK(mentions(s, "Megatron"));
  s.layout.microbatches = 8;
  s.layout.virtual_stages = 5;  // 96 % 20 != 0
  CHECK(keys(s) == std::vector<std::string>{"layout.pp"});
  s.layout.stage_layers_mode = StageLayersMode::explicit_list;
  s.layout.stage_layers = std::vector<int>(20, 5);  // 100 layers
  CHECK(keys(s) == std::vector<std::string>{"layout.stage_layers"});
  s.layout.stage_layers[0] = 1;  // 96
  CHECK(validate(s).empty());

  s = good();
  s.layout.virtual_stages = 2;  // 1f1b
  CHECK(keys(s) == std::vector<std::string>{"layout.virtual_stages"});
}

TEST_CASE("placement must be a permutation of tp, dp, pp; ep is not an axis") {
  auto s = good();
  s.layout.placement = {"tp", "ep", "pp"};
  CHECK(keys(s) == std::vector<std::string>{"layout.placement"});
  CHECK(validate(s)[0].hint.find("ep is not a placement axis") != std::string::npos);
  s.layout.placement = {"tp", "tp", "pp"};
  CHECK(keys(s) == std::vector<std::string>{"layout.placement"});
  s.layout.placement = {"pp", "dp", "tp"};
  CHECK(validate(s).empty());
  // Sequence parallelism with tp = 1 is allowed (a no-op).
  s = good();
  s.layout.tp = 1;
  s.layout.dp = 16;
  s.layout.sequence_parallel = true;
  CHECK(validate(s).empty());
}

TEST_CASE("Mesh: rank = tp + T·(dp + D·pp) for placement [tp, dp, pp]") {
  const Mesh m(2, 8, 4, {"tp", "dp", "pp"});
  CHECK(m.size() == 64);
  CHECK(m.rank({1, 3, 2}) == 3 + 8 * (1 + 2 * 2));
  std::set<int> seen;
  for (int r = 0; r < m.size(); ++r) {
    const Coord c = m.coord(r);
    CHECK(c.tp == r % 8);
    CHECK(c.dp == (r / 8) % 2);
    CHECK(c.pp == r / 16);
    CHECK(m.rank(c) == r);
    seen.insert(r);
  }
  CHECK(seen.size() == 64);
  // [pp, tp, dp]: pp fastest.
  const Mesh p(2, 8, 4, {"pp", "tp", "dp"});
  CHECK(p.rank({1, 3, 2}) == 2 + 4 * (3 + 8 * 1));
  CHECK(p.coord(2 + 4 * (3 + 8 * 1)).tp == 3);
  CHECK_THROWS_AS(Mesh(2, 8, 4, {"tp", "dp"}), std::invalid_argument);
  CHECK_THROWS_AS(m.coord(64), std::out_of_range);
}

TEST_CASE("Mesh::next steps to the next rank's coordinate, for every placement, degree-1 axes included") {
  std::vector<std::string> order{"cp", "dp", "pp", "tp"};
  int placements = 0;
  do {
    for (const std::array<int, 4>& degrees : {std::array{2, 2, 3, 2}, std::array{4, 1, 3, 1}, std::array{1, 8, 1, 2}}) {
      // Named copies, not structured bindings: CAPTURE's lambda may not capture those (clang).
      const int dp = degrees[0], tp = degrees[1], pp = degrees[2], cp = degrees[3];
      CAPTURE(dp);
      CAPTURE(tp);
      CAPTURE(pp);
      CAPTURE(cp);
      const Mesh mesh(dp, tp, pp, order, cp);
      Coord c = mesh.coord(0);
      for (int r = 0; r < mesh.size(); ++r, mesh.next(c)) {
        const Coord want = mesh.coord(r);
        CHECK((c.dp == want.dp && c.tp == want.tp && c.pp == want.pp && c.cp == want.cp));
      }
      CHECK((c.dp == 0 && c.tp == 0 && c.pp == 0 && c.cp == 0));  // past the last rank: rank 0's
    }
    ++placements;
  } while (std::next_permutation(order.begin(), order.end()));
  CHECK(placements == 24);
}

TEST_CASE("the pipeline peers of every rank are the mesh's ranks at each stage, for every placement") {
  // assign_ranks_and_groups steps through a rank's stages by the mesh's pp stride; the
  // mesh itself is the reference, on every permutation of the four axes.
  std::vector<std::string> order{"cp", "dp", "pp", "tp"};
  int placements = 0;
  do {
    Scenario s = good();
    s.layout.dp = 2;
    s.layout.tp = 2;
    s.layout.pp = 3;
    s.layout.cp = 2;
    s.layout.placement = order;
    ls::sim::Program prog;
    assign_ranks_and_groups(s, nullptr, prog);
    const Mesh mesh(2, 2, 3, order, 2);
    REQUIRE(prog.pp_peer.size() == 24u * 3u);
    for (int r = 0; r < 24; ++r) {
      const Coord c = mesh.coord(r);
      for (int st = 0; st < 3; ++st)
        CHECK(prog.pp_peer[static_cast<std::size_t>(r * 3 + st)] == mesh.rank(Coord{c.dp, c.tp, st, c.cp}));
    }
    ++placements;
  } while (std::next_permutation(order.begin(), order.end()));
  CHECK(placements == 24);
}

TEST_CASE("stage and chunk layer maps") {
  CHECK(even_stage_layers(96, 4) == std::vector<int>{24, 24, 24, 24});
  CHECK(even_stage_layers(10, 4) == std::vector<int>{3, 3, 2, 2});
  CHECK_THROWS_AS(even_stage_layers(3, 4), std::invalid_argument);

  // Interleaved p = 4, v = 2, 16 layers: model chunk k = c·4 + s holds layers [2k, 2k+2).
  LayoutSpec L;
  L.pp = 4;
  L.schedule = Schedule::interleaved_1f1b;
  L.virtual_stages = 2;
  const auto cl = model_chunk_layers(L, 16);
  CHECK(cl == std::vector<int>(8, 2));
  CHECK(chunk_layer_range(cl, 4, 0, 0).begin == 0);
  CHECK(chunk_layer_range(cl, 4, 1, 0).begin == 2);
  CHECK(chunk_layer_range(cl, 4, 0, 1).begin == 8);  // stage 0's second chunk is model chunk 4
  CHECK(chunk_layer_range(cl, 4, 3, 1).end == 16);
  CHECK(chunk_layer_range(cl, 4, 3, 1).size() == 2);
  CHECK(stage_layer_counts(cl, 4) == std::vector<int>{4, 4, 4, 4});
  L.stage_layers_mode = StageLayersMode::explicit_list;
  L.stage_layers = {1, 2, 3, 4, 1, 2, 2, 1};
  CHECK(stage_layer_counts(model_chunk_layers(L, 16), 4) == std::vector<int>{2, 4, 5, 5});
  CHECK_THROWS_AS(model_chunk_layers(L, 17), std::invalid_argument);

  // Balanced: the last stage carries an LM head worth 3 layers -> it gets fewer layers.
  // 30 layers, 4 stages, costs n_i + extra_i: [8, 8, 8, 6+3] -> max 9 (optimal:
  // 30 + 3 = 33 over 4 stages needs max >= 8.25).
  const auto bal = balanced_stage_layers(30, 4, {0, 0, 0, 3});
  CHECK(std::accumulate(bal.begin(), bal.end(), 0) == 30);
  double worst = 0;
  for (int i = 0; i < 4; ++i) worst = std::max(worst, bal[static_cast<std::size_t>(i)] + (i == 3 ? 3.0 : 0.0));
  CHECK(worst == 9);
  CHECK(bal[3] <= 6);
  CHECK(balanced_stage_layers(8, 4, {}) == std::vector<int>{2, 2, 2, 2});
}
