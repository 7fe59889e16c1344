// tests/search_fixtures.hpp — the search tests' scenario: a tiny model (8 layers, 8
// heads, 4 KV heads) on 2 nodes × 4 GPUs with a 3 GB GPU, so that every rule of the
// search, the memory one included, fires in well under a second.
#pragma once

namespace ls::test {

inline const char* const kTinySearch = R"(name: tiny
cluster:
  gpu: {preset: h100-sxm, memory: 3 GB}
  nodes: 2
  gpus_per_node: 4
model:
  name: tiny
  layers: 8
  hidden: 1024
  heads: 8
  kv_heads: 4
  ffn_hidden: 4096
  vocab: 32000
  seq_len: 1024
  activation: swiglu
layout:
  tp: 2
  global_batch: 16
)";

}  // namespace ls::test
