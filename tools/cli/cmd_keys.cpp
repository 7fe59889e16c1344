// tools/cli/cmd_keys.cpp — `layoutsim keys`: every scenario key with its default, or the
// README's scenario reference tables (--markdown), from the one key table.
#include <memory>

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
  for (const auto& k : tools::scenario_keys()) print_out(fmt::format("{:<42} {}\n", k.path, k.default_text.empty() ? "-" : k.default_text));
  return kExitOk;
}

}  // namespace

Subcommand add_keys(CLI::App& parent) {
  auto markdown = std::make_shared<bool>(false);
  auto* cmd = parent.add_subcommand("keys", "List every scenario key with its default (the key table)");
  cmd->add_flag("--markdown", *markdown, "Print the README's scenario reference tables");
  return {cmd, [markdown] { return run(*markdown); }};
}

}  // namespace ls::cli
