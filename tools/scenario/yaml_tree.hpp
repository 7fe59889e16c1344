// tools/scenario/yaml_tree.hpp — a located YAML tree and the loader's diagnostics.
//
// yaml-cpp marks do not say which text they came from, and --set values are
// separate documents, so the loader keeps its own copy of the document: every key
// and value with its FILE:LINE:COL. Diag collects compiler-style errors and throws
// them together as one ScenarioError. yaml_tree.cpp is the only file in layoutsim
// that includes yaml-cpp.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tools/scenario/scenario.hpp"

namespace ls::tools {

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

/// "nothing", "a scalar", "a list", "a map" (for messages).
std::string_view kind_name(const YNode& n);
std::string join_key(const std::string& path, std::string_view key);
std::string join_index(const std::string& path, std::size_t i);

/// Every error found so far, one compiler-style line each.
struct Diag {
  /// throw_if_any() shows at most this many errors, then a count of the rest.
  static constexpr std::size_t kMaxShownErrors = 20;
  std::vector<std::string> errors;

  /// Adds "SOURCE:LINE:COL: error: PATH: WHAT (HINT)".
  void error(const Loc& l, std::string_view path, std::string_view what, std::string_view hint = {});
  /// Throws ScenarioError with every error, one per line, if there is any.
  void throw_if_any() const;
};

/// Parses a whole scenario text (one YAML document whose top level is a map) into
/// a tree located in `source`. Throws ScenarioError on a syntax error, an empty or
/// multi-document text, or one too large or too deep.
YNode parse_scenario_yaml(std::string_view yaml, const std::string& source);

/// The tree as block-style YAML (yaml-cpp's emitter quotes what needs quoting), which
/// parse_scenario_yaml reads back as the same tree (comments and anchors are not kept).
std::string yaml_block_text(const YNode& root);

/// Parses one --set value. `ordinal` is the override's 1-based position, `value_col`
/// the 0-based column where the value starts inside "KEY=VALUE"; errors (located at
/// --set:ORDINAL:COL, blamed on `key`) go to `d`. false: the value is not valid YAML.
bool parse_set_value(const std::string& text, int ordinal, int value_col, const std::string& key, YNode& out, Diag& d);

/// The location of the deepest existing key on `path` ("a.b[2].c"); at_value: of
/// that key's value instead. A value inherited from a preset is blamed on the
/// `preset:` key that brought it in.
Loc locate(const YNode& root, std::string_view path, const std::string& source, bool at_value = false);

}  // namespace ls::tools
