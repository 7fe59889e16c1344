// tools/cli/cmd_keys.cpp — `layoutsim keys`: every scenario key with its type, values, doc and default, or the
// README's scenario reference tables (--markdown), from the one key table.
#include <memory>
#include <string>

#include <fmt/format.h>

#include "tools/cli/command.hpp"
#include "tools/scenario/scenario_keys.hpp"

namespace ls::cli {

namespace {

int run(bool markdown) {
  if (markdown) {
    print_out(tools::scenario_keys_markdown());
    return kExitOk;
  }
  // One line per key: path, type / allowed values / doc, default ("-": none).
  for (const auto& k : tools::scenario_keys()) {
    std::string description = tools::scenario_key_description(k);
    // The markdown table escapes the bar between values; a terminal shows it plain.
    for (std::size_t at = 0; (at = description.find("\\|", at)) != std::string::npos;) description.erase(at, 1);
    print_out(fmt::format("{:<42} {}  [default: {}]\n", k.path, description, k.default_text.empty() ? "-" : k.default_text));
  }
  return kExitOk;
}

}  // namespace

Subcommand add_keys(CLI::App& parent) {
  auto markdown = std::make_shared<bool>(false);
  auto* cmd = parent.add_subcommand("keys", "List every scenario key with its type, allowed values, doc and default (the key table)");
  cmd->add_flag("--markdown", *markdown, "Print the README's scenario reference tables");
  return {cmd, [markdown] { return run(*markdown); }};
}

}  // namespace ls::cli
