// tests/model_fixtures.hpp — model blocks the scenario tests share: one definition of a
// small GQA model (8 layers, 8 heads, 4 KV heads), where every axis can take degree 2 and
// a step simulates in milliseconds.
#pragma once

#include <string>
#include <string_view>

namespace ls::test {

inline constexpr std::string_view kSmallGqaModel = R"(model:
  name: small
  layers: 8
  hidden: 1024
  heads: 8
  kv_heads: 4
  ffn_hidden: 4096
  vocab: 32000
  seq_len: 1024
  activation: swiglu
)";

/// `cluster` (the lines before the model), the small GQA model, then `rest` (layout and after).
inline std::string with_small_gqa_model(std::string_view cluster, std::string_view rest) {
  std::string yaml(cluster);
  yaml.append(kSmallGqaModel).append(rest);
  return yaml;
}

}  // namespace ls::test
