// tests/search_fixtures.hpp — the search tests' scenario: a tiny model (8 layers, 8
// heads, 4 KV heads) on 2 nodes × 4 GPUs with a 3 GB GPU, so that every rule of the
// search, the memory one included, fires in well under a second.
#pragma once

#include <string>

#include "model_fixtures.hpp"

namespace ls::test {

inline const std::string kTinySearch = with_small_gqa_model(R"(name: tiny
cluster:
  gpu: {preset: h100-sxm, memory: 3 GB}
  nodes: 2
  gpus_per_node: 4
)",
                                                            R"(layout:
  tp: 2
  global_batch: 16
)");

}  // namespace ls::test
