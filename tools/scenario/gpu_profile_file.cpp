// tools/scenario/gpu_profile_file.cpp — the table of fittable GPU constants and the profile file.
// (yaml-cpp is used here and in scenario.cpp/validate.cpp: a profile and a runs file
// are separate documents from a scenario, with their own keys.)
#include "tools/scenario/gpu_profile_file.hpp"
#include "tools/scenario/input_limits.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "tools/scenario/units.hpp"
#include "workloads/cost/hardware.hpp"

namespace ls::tools {

const std::vector<TunableConstant>& gpu_constants() {
  // The kernel model's constants (workloads/spec/compute_profile.hpp profile_constants()),
  // with their physical bounds, over the GPU's ComputeProfile. A GPU given as a map
  // without a preset starts from its fallback profile (hardware.hpp compute_profile_of).
  static const std::vector<TunableConstant> table = [] {
    std::vector<TunableConstant> out;
    for (const wl::ProfileConstant& pc : wl::profile_constants()) {
      const wl::ProfileConstant* c = &pc;  // the table is static: the pointer outlives the lambdas
      out.push_back(TunableConstant{
          std::string(c->name), c->lower, c->upper, c->unit == "s", c->integer,
          false, [c](const wl::Scenario& s) { return c->get(wl::compute_profile_of(s.gpu)); },
          [c](wl::Scenario& s, double v) {
            s.gpu.compute = wl::compute_profile_of(s.gpu);
            c->set(s.gpu.compute, v);
          }});
    }
    return out;
  }();
  return table;
}

namespace {
/// The scenario's implementation profile, its preset's when unset (resolve() does the same).
wl::ImplementationProfile implementation_profile_of(const wl::Scenario& s) {
  if (!s.implementation.profile.name.empty()) return s.implementation.profile;
  if (auto b = wl::implementation_preset(s.implementation.preset)) return b->profile;
  return {};
}
}  // namespace

const std::vector<TunableConstant>& implementation_tunables() {
  static const std::vector<TunableConstant> table = [] {
    std::vector<TunableConstant> out;
    for (const wl::ImplementationConstant& ic : wl::implementation_constants()) {
      const wl::ImplementationConstant* c = &ic;
      out.push_back(TunableConstant{
          std::string(c->name), c->lower, c->upper, c->unit == "s", false, true,
          [c](const wl::Scenario& s) { return c->get(implementation_profile_of(s)); },
          [c](wl::Scenario& s, double v) {
            s.implementation.profile = implementation_profile_of(s);
            c->set(s.implementation.profile, v);
          }});
    }
    return out;
  }();
  return table;
}

const std::vector<TunableConstant>& all_constants() {
  static const std::vector<TunableConstant> table = [] {
    std::vector<TunableConstant> out = gpu_constants();
    for (const auto& c : implementation_tunables()) out.push_back(c);
    return out;
  }();
  return table;
}

std::vector<TunableConstant> default_fit_constants() {
  std::vector<TunableConstant> out;
  for (const auto& c : gpu_constants())
    if (!c.integer) out.push_back(c);
  return out;
}

const TunableConstant* find_constant(const std::vector<TunableConstant>& table, const std::string& name) {
  for (const auto& c : table)
    if (c.name == name) return &c;
  return nullptr;
}

std::string format_constant(const TunableConstant& c, double value) {
  if (c.is_time) return fmt::format("{:.6g} us", value * 1e6);
  return fmt::format("{:.6g}", value);
}

GpuProfile parse_profile(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ProfileError(fmt::format("{}:{}:{}: error: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  auto fail = [&](const YAML::Node& n, const std::string& what) -> ProfileError {
    const auto m = n.Mark();
    return ProfileError(fmt::format("{}:{}:{}: error: {}", source, m.line + 1, m.column + 1, what));
  };
  if (!root.IsMap()) throw fail(root, "expected a map with keys gpu and constants");
  GpuProfile p;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (key == "gpu") {
      if (!kv.second.IsScalar()) throw fail(kv.second, "gpu: expected a GPU name");
      p.gpu = kv.second.as<std::string>();
    } else if (key == "constants") {
      if (!kv.second.IsMap()) throw fail(kv.second, "constants: expected a map NAME: VALUE");
      for (const auto& c : kv.second) {
        const std::string name = c.first.as<std::string>();
        const TunableConstant* tc = find_constant(gpu_constants(), name);
        if (!tc) {
          std::vector<std::string> names;
          for (const auto& t : gpu_constants()) names.push_back(t.name);
          const std::string near = closest_match(name, names);
          throw fail(c.first, fmt::format("constants.{}: unknown constant{}", name,
                                          near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
        }
        if (!c.second.IsScalar()) throw fail(c.second, fmt::format("constants.{}: expected a value", name));
        const std::string v = c.second.as<std::string>();
        double value = 0;
        try {
          if (tc->is_time) {
            value = parse_time(v).seconds();
          } else {
            std::size_t used = 0;
            value = std::stod(v, &used);
            if (used != v.size() || !std::isfinite(value)) throw std::invalid_argument("not a number");
          }
        } catch (const UnitError& e) {
          throw fail(c.second, fmt::format("constants.{}: {}", name, e.what()));
        } catch (const std::exception&) {
          throw fail(c.second, fmt::format("constants.{}: expected a number, got '{}'", name, v));
        }
        if (value < tc->lower || value > tc->upper)
          throw fail(c.second, fmt::format("constants.{}: {} is outside [{}, {}]", name, v, format_constant(*tc, tc->lower),
                                           format_constant(*tc, tc->upper)));
        p.constants.emplace_back(name, value);
      }
    } else {
      throw fail(kv.first, fmt::format("unknown key '{}' (expected gpu, constants)", key));
    }
  }
  if (p.gpu.empty()) throw fail(root, "missing key gpu");
  return p;
}

GpuProfile read_profile_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ProfileError(fmt::format("{}: error: cannot open the profile file", path));
  // Bounded: a profile is a page, and /dev/zero or a wrong file must not fill memory.
  std::string text;
  if (!read_at_most(f, kMaxProfileBytes, text)) throw ProfileError(fmt::format("{}: error: cannot read the profile file", path));
  if (text.size() > kMaxProfileBytes)
    throw ProfileError(fmt::format("{}: error: larger than {} bytes (1 MiB), the most a profile file may hold", path, kMaxProfileBytes));
  return parse_profile(text, path);
}

void apply_profile(wl::GpuSpec& gpu, const GpuProfile& profile) {
  if (gpu.name != profile.gpu)
    throw ProfileError(fmt::format("profile for GPU '{}' applied to GPU '{}'", profile.gpu, gpu.name));
  wl::Scenario holder;  // GPU constants touch only the scenario's GPU
  holder.gpu = gpu;
  for (const auto& [name, value] : profile.constants) find_constant(gpu_constants(), name)->set(holder, value);
  gpu = std::move(holder.gpu);
}

void apply_profile(wl::GpuSpec& gpu, const std::string& path) { apply_profile(gpu, read_profile_file(path)); }

std::string profile_yaml(const GpuProfile& profile, const std::string& origin) {
  std::string out;
  std::istringstream lines(origin);
  for (std::string line; std::getline(lines, line);) out += line.empty() ? "#\n" : "# " + line + "\n";
  out += fmt::format("gpu: {}\nconstants:\n", profile.gpu);
  for (const auto& [name, value] : profile.constants)
    out += fmt::format("  {}: {}\n", name, format_constant(*find_constant(gpu_constants(), name), value));
  return out;
}

}  // namespace ls::tools
