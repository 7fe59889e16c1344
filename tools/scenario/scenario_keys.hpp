// tools/scenario/scenario_keys.hpp — every scenario key, once: its path, type, allowed
// values, default and one-line doc.
//
// The table drives the loader's lists of valid keys (and so its "did you mean"
// hints and the check of every --set key), the loader's lists of allowed values,
// and the README's scenario reference, which is generated from it
// (`layoutsim keys --markdown`; a test fails when the README is out of date).
//
// A scalar key with a field of its own is *bound* (ns-3's attribute, in spirit): its
// row holds the field, its bounds, its typed default and how to read it, and the
// converter reads it through the row alone, so a new key of that kind is one row. A
// test loads every bound key's default spelled out and checks that resolve() gives
// the same field as leaving the key out. Keys read by hand (maps, lists, presets
// merged under explicit keys, keys whose reading depends on a sibling) keep their
// rows for the lists and the docs; defaults that depend on other keys are derived by
// wl::resolve and documented in default_text.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ls::wl {
struct Scenario;
}

namespace ls::tools {

class Reader;
struct YNode;

/// How the loader reads one bound key into a scenario, and reads the field back.
struct KeyBinding {
  /// Reads the YAML value at `path` (bounds and allowed values checked, a bad value
  /// reported as a located error) and stores it in the scenario's field.
  std::function<void(Reader&, const YNode&, const std::string& path, wl::Scenario&)> read;
  /// The field's value as text (an enum by its spelling, a number by "{}").
  std::function<std::string(const wl::Scenario&)> show;
  /// The default as a scenario would spell it ("1", "ring", "100 MB"): giving it must
  /// resolve to the same field as leaving the key out. Empty: derived by resolve().
  std::string default_value;
};

struct ScenarioKey {
  /// Dotted path; "[]" marks the entries of a list of maps
  /// ("cluster.graph.links[].bandwidth").
  std::string_view path;
  std::string type;                      // int, number, bool, string, size, bandwidth, time, map, list, ...
  std::vector<std::string_view> values;  // the allowed values of a choice (empty: any value of the type)
  std::string default_text;              // "" when there is none (required, or absent means absent)
  std::string_view doc;                  // one line (markdown), read after the type
  std::shared_ptr<const KeyBinding> binding = nullptr;  // null: read by hand in the converter
  std::vector<std::string_view> value_docs = {};        // what each value means, by index (empty: the doc says)
};

/// The row's type, allowed values and doc in one line (the reference's middle column).
std::string scenario_key_description(const ScenarioKey& k);

/// The row of `path`; null when the table has none.
const ScenarioKey* find_scenario_key(std::string_view path);

/// Reads the YAML value at `path` into `s` through its bound row; false (nothing
/// read) for a key the converter reads by hand.
bool read_bound_key(Reader& r, const YNode& v, const std::string& path, wl::Scenario& s);

/// Every key, parents before children, siblings in the order the loader lists them.
const std::vector<ScenarioKey>& scenario_keys();

/// The names of the keys directly under `parent` ("" for the top level,
/// "cluster.graph.links[]" for the entries of a list), in table order.
std::vector<std::string> scenario_key_names(std::string_view parent);

/// The allowed values of the choice at `path`, in table order. Throws
/// std::logic_error when the table has no such key with values (a loader bug).
std::vector<std::string> scenario_key_values(std::string_view path);

/// The README's scenario reference: one markdown table per top-level key.
std::string scenario_keys_markdown();

}  // namespace ls::tools
