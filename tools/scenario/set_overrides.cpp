// tools/scenario/set_overrides.cpp — `--set KEY.PATH=VALUE` applied to the located tree.
#include "tools/scenario/set_overrides.hpp"

#include "tools/scenario/scenario_keys.hpp"

#include <cctype>
#include <charconv>
#include <optional>

#include <fmt/format.h>

namespace ls::tools {
namespace {

/// A key whose value may be a preset's name for short (its row's type says so).
bool takes_preset_name(const std::string& path) {
  const ScenarioKey* k = find_scenario_key(path);
  return k && k->type == "preset name or map";
}


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

}  // namespace

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
  if (!parse_set_value(value_text, ordinal, static_cast<int>(eq) + 1, key, value, d)) return;

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
    } else if (cur->kind == YNode::Kind::scalar && takes_preset_name(path)) {
      // `gpu: h100-sxm` + `--set cluster.gpu.memory=...` (or `model: llama3-8b` +
      // `--set model.layers=...`): the name becomes the map's `preset`, as the loader
      // reads it.
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

void apply_sets(YNode& root, const std::vector<std::string>& sets, Diag& d) {
  for (std::size_t i = 0; i < sets.size(); ++i) apply_set(root, sets[i], static_cast<int>(i) + 1, d);
}

}  // namespace ls::tools
