// tools/scenario/yaml_tree.cpp — YAML text → located tree (the only file that includes
// yaml-cpp), the loader's diagnostics, and key path → location.
#include "tools/scenario/yaml_tree.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "tools/scenario/input_limits.hpp"

namespace ls::tools {
namespace {

// Limits: every input is bounded so nothing downstream can overflow or hang.
constexpr std::size_t kMaxTreeNodes = 1u << 20;   // stops alias ("billion laughs") blow-up
constexpr int kMaxDepth = 64;

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

bool looks_like_key_line(std::string_view line) {
  std::size_t i = line.find_first_not_of(' ');
  if (i == std::string_view::npos) return false;
  const std::size_t start = i;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == '.' || line[i] == '-'))
    ++i;
  return i > start && i < line.size() && line[i] == ':' && (i + 1 == line.size() || line[i + 1] == ' ');
}

/// A quoted scalar starting at `pos` whose closing quote is missing, or comes only
/// after a line that looks like "key: value": yaml-cpp folds the rest of the file
/// into the string and the real error surfaces far away ("missing required key").
/// Returns the 1-based line of the first swallowed key, or 0.
int swallowed_key_line(std::string_view text, std::size_t pos) {
  if (pos >= text.size() || (text[pos] != '"' && text[pos] != '\'')) return 0;
  const char q = text[pos];
  std::size_t i = pos + 1;
  std::size_t first_break = std::string_view::npos;
  for (; i < text.size(); ++i) {
    if (q == '"' && text[i] == '\\') {
      ++i;
      continue;
    }
    if (text[i] == q) {
      if (q == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' is an escaped quote
        continue;
      }
      break;
    }
    if (text[i] == '\n' && first_break == std::string_view::npos) first_break = i;
  }
  if (first_break == std::string_view::npos) return 0;  // closed on its own line
  std::size_t line_start = first_break + 1;
  while (line_start < std::min(i, text.size())) {
    std::size_t end = text.find('\n', line_start);
    if (end == std::string_view::npos) end = text.size();
    if (looks_like_key_line(text.substr(line_start, end - line_start)))
      return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(line_start), '\n'));
    line_start = end + 1;
  }
  return 0;
}

/// What a cheap scan of the text finds before yaml-cpp builds its own tree: the
/// deepest [ / { nesting outside quotes and comments and where it is first reached
/// (yaml-cpp's recursion limit reports a deep document as "bad file"), and an upper
/// bound on the number of values (commas + lines): yaml-cpp's tree costs hundreds of
/// bytes per value, so a 14 MiB flow list of 7 M items took 4.7 GB before any check.
struct TextShape {
  int depth = 0;
  std::size_t deepest_at = 0;
  std::size_t values = 0;
};

TextShape text_shape(std::string_view text) {
  TextShape shape;
  shape.values = 1;
  int depth = 0, best = 0;
  std::size_t at = 0;
  char quote = 0;
  bool comment = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++shape.values;
    if (comment) {
      if (c == '\n') comment = false;
      continue;
    }
    if (quote) {
      if (quote == '"' && c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    else if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\n')) comment = true;
    else if (c == '[' || c == '{') {
      if (++depth > best) {
        best = depth;
        at = i;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',') {
      ++shape.values;
    }
  }
  shape.depth = best;
  shape.deepest_at = at;
  return shape;
}

struct TreeBuilder {
  const SourceMap& map;
  Diag& diag;
  std::string_view text = {};  // the whole file (empty for a --set value): quote checks
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
        if (!text.empty() && n.Tag() == "!" && n.Mark().pos >= 0) {
          if (const int line = swallowed_key_line(text, static_cast<std::size_t>(n.Mark().pos)))
            diag.error(out.loc, path, fmt::format("this quoted string runs on over line {} (a key there)", line),
                       "an unterminated quote? close it on its own line");
        }
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
        // Key → index of its entry: the duplicate check is linear in the number of
        // keys (YNode::find is a scan: 100,000 keys took 18 s).
        std::unordered_map<std::string, std::size_t> seen;
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
          if (const auto first = seen.find(key); first != seen.end()) {
            diag.error(key_loc, kpath, "duplicate key",
                       fmt::format("first given at line {}; remove one", out.entries[first->second].key_loc.line));
            continue;
          }
          seen.emplace(key, out.entries.size());
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

}  // namespace

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

void Diag::error(const Loc& l, std::string_view path, std::string_view what, std::string_view hint) {
  std::string m = fmt::format("{}:{}:{}: error: ", l.source, l.line, l.col);
  if (!path.empty()) m += fmt::format("{}: ", path);
  m += what;
  if (!hint.empty()) m += fmt::format(" ({})", hint);
  errors.push_back(std::move(m));
}

void Diag::throw_if_any() const {
  if (errors.empty()) return;
  // The first kMaxShownErrors, then a count: 100,000 bad keys must not print 100,000 lines.
  std::string all;
  for (std::size_t i = 0; i < errors.size() && i < kMaxShownErrors; ++i) {
    if (!all.empty()) all += '\n';
    all += errors[i];
  }
  if (errors.size() > kMaxShownErrors)
    all += fmt::format("\n... and {} more errors ({} in all)", errors.size() - kMaxShownErrors, errors.size());
  throw ScenarioError(all);
}

YNode parse_scenario_yaml(std::string_view yaml, const std::string& source_name) {
  Diag d;
  const Loc top{source_name, 1, 1};
  if (yaml.size() > kMaxScenarioBytes) {
    // The reader stops soon after the limit, so the size is "more than", not exact.
    d.error(top, "", fmt::format("the scenario is larger than {} bytes (16 MiB), the most a scenario may have", kMaxScenarioBytes));
    d.throw_if_any();
  }
  // Odd text that yaml-cpp reports misleadingly, named here for what it is.
  if (const auto nul = yaml.find('\0'); nul != std::string_view::npos) {
    const auto line = 1 + std::count(yaml.begin(), yaml.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    d.error(Loc{source_name, static_cast<int>(line), 1}, "", fmt::format("a NUL byte (at byte {}): the file is not text", nul),
            "is it a binary or UTF-16 file?");
    d.throw_if_any();
  }
  if (yaml.find('\r') != std::string_view::npos && yaml.find('\n') == std::string_view::npos && yaml.size() > 1) {
    d.error(top, "", "lines end in CR only (classic Mac OS line endings): YAML sees one line",
            "convert the line endings to LF or CR LF");
    d.throw_if_any();
  }
  const SourceMap sm{source_name};
  const std::string text(yaml);
  YAML::Node doc;
  try {
    const TextShape shape = text_shape(text);
    if (shape.values > kMaxTreeNodes) {
      d.error(top, "", fmt::format("the scenario has more than {} values (lines and list items)", kMaxTreeNodes),
              "a scenario is a page of YAML");
      d.throw_if_any();
    }
    if (const int depth = shape.depth; depth > kMaxDepth) {
      const std::size_t at = shape.deepest_at;
      const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
      const auto col = at - (text.rfind('\n', at) == std::string::npos ? std::size_t{0} : text.rfind('\n', at) + 1) + 1;
      d.error(Loc{source_name, static_cast<int>(line), static_cast<int>(col)}, "",
              fmt::format("nested deeper than {} levels", kMaxDepth), "a scenario is a page of YAML");
      d.throw_if_any();
    }
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

  TreeBuilder tb{sm, d, text};
  YNode root = tb.build(doc, top, "", 0);
  d.throw_if_any();
  if (root.kind != YNode::Kind::map) {
    d.error(root.loc, "", fmt::format("expected a map of keys (name, cluster, model, layout, ...), got {}", kind_name(root)));
    d.throw_if_any();
  }
  return root;
}

bool parse_set_value(const std::string& value_text, int ordinal, int value_col, const std::string& key, YNode& out, Diag& d) {
  const Loc value_loc{"--set", ordinal, value_col + 1};
  try {
    const YAML::Node parsed = YAML::Load(value_text);
    SourceMap sm{"--set", ordinal, value_col};
    TreeBuilder tb{sm, d};
    out = tb.build(parsed, value_loc, key, 0);
    return true;
  } catch (const YAML::Exception& e) {
    Loc l = value_loc;
    if (!e.mark.is_null() && e.mark.column >= 0) l.col = value_col + 1 + e.mark.column;
    d.error(l, key, fmt::format("the value is not valid YAML: {}", e.msg));
  } catch (const std::exception& e) {  // yaml-cpp's stream layer can throw others on odd input
    d.error(value_loc, key, fmt::format("the value is not valid YAML: {}", e.what()));
  }
  return false;
}

Loc locate(const YNode& root, std::string_view path, const std::string& source, bool at_value) {
  Loc best{source, 1, 1};
  const YNode* cur = &root;
  for (const auto& [key, index] : split_path(path)) {
    if (cur->kind != YNode::Kind::map) break;
    const YEntry* e = cur->find(key);
    if (!e) {
      if (const YEntry* p = cur->find("preset")) best = p->key_loc;
      break;
    }
    best = at_value ? e->value.loc : e->key_loc;
    cur = &e->value;
    if (index >= 0) {
      if (cur->kind != YNode::Kind::seq || index >= static_cast<long>(cur->items.size())) break;
      cur = &cur->items[static_cast<std::size_t>(index)];
      best = cur->loc;
    }
  }
  return best;
}

namespace {

void emit_node(YAML::Emitter& out, const YNode& n) {
  switch (n.kind) {
    case YNode::Kind::null: out << YAML::Null; break;
    case YNode::Kind::scalar: out << n.scalar; break;
    case YNode::Kind::seq:
      out << YAML::BeginSeq;
      for (const auto& item : n.items) emit_node(out, item);
      out << YAML::EndSeq;
      break;
    case YNode::Kind::map:
      out << YAML::BeginMap;
      for (const auto& e : n.entries) {
        out << YAML::Key << e.key << YAML::Value;
        emit_node(out, e.value);
      }
      out << YAML::EndMap;
      break;
  }
}

}  // namespace

std::string yaml_block_text(const YNode& root) {
  YAML::Emitter out;
  out.SetIndent(2);
  emit_node(out, root);
  std::string text = out.c_str();
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

}  // namespace ls::tools
