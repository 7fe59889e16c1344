#!/usr/bin/env python3
"""Regenerate (or check) the example outputs in README.md from the built binary.

Usage:
  python3 tools/dev/readme_examples.py LAYOUTSIM [--readme README.md] [--check]

Every fenced code block of README.md whose first line starts with `$ ` is an
example: each `$ COMMAND` line is run with bash, and the lines that follow it (up
to the next `$ ` line or a blank line followed by `$ `, or the end of the block)
are replaced by what the command prints, stdout and stderr merged in the order they
arrive through one pipe (what a user sees, except that a terminal would show a
progress line where a pipe shows none). `layoutsim` in a command is the binary given
on the command line (it is put first on PATH). Commands run one block at a time in a
fresh temporary directory that holds a link to the repository's `scenarios/`, so
output files such as `mb.csv` never land in the repository; the exit code of one
command is `$?` in the next, so `$ echo $?` works.

Markers: an HTML comment on the line(s) right before the block's opening fence,
  <!-- example: DIRECTIVE; DIRECTIVE; ... -->
gives one directive per `$` command of the block, in order (missing ones are
`full`). Directives:
  full          the whole output
  skip          leave this command's output lines as they are in the README
                (a single `skip` for a block with no directives after it leaves the
                whole block alone: commands that need other tools, like AstraSim)
  head N        the first N lines, then a line `…` when there were more
  grep REGEX    only the lines matching REGEX (Python `re.search`), with a line
                `…` wherever non-matching lines were dropped between two kept ones
  file NAME     (on the comment before a non-example block) write that block's
                contents to NAME in the temporary directory of the next example
                block, so that a README can show a file and what a command says
                about it
REGEX may not contain `;` or `-->`. Blocks without a marker get `full` for every
command. Between two commands of a block, the README's own blank lines are kept.

--check leaves README.md alone and exits 1 with a unified diff when it differs from
what the binary prints now (the CTest `readme_examples`); without it, README.md is
rewritten in place (the CMake target `update-readme-examples`).
"""

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^<!--\s*example:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^```")
ELLIPSIS = "…"


def parse_directives(text):
    directives = []
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        word, _, arg = part.partition(" ")
        if word not in ("full", "skip", "head", "grep", "file"):
            raise SystemExit(f"readme_examples: unknown directive '{part}'")
        if word == "head":
            arg = int(arg)
        directives.append((word, arg.strip() if isinstance(arg, str) else arg))
    return directives


def split_blocks(lines):
    """Yields (kind, payload): ('text', line) or ('block', (directives, body_lines))."""
    i = 0
    pending = []
    while i < len(lines):
        line = lines[i]
        marker = MARKER.match(line)
        if marker:
            pending.extend(parse_directives(marker.group(1)))
            yield ("text", line)
            i += 1
            continue
        if FENCE.match(line):
            j = i + 1
            while j < len(lines) and not FENCE.match(lines[j]):
                j += 1
            yield ("text", line)
            yield ("block", (pending, lines[i + 1:j]))
            if j < len(lines):
                yield ("text", lines[j])
            pending = []
            i = j + 1
            continue
        if line.strip():
            pending = []
        yield ("text", line)
        i += 1


def filter_output(out_lines, directive):
    word, arg = directive
    if word == "head":
        return out_lines[:arg] + ([ELLIPSIS] if len(out_lines) > arg else [])
    if word == "grep":
        pattern = re.compile(arg)
        kept, gap = [], False
        for line in out_lines:
            if pattern.search(line):
                if gap and kept:
                    kept.append(ELLIPSIS)
                kept.append(line)
                gap = False
            else:
                gap = True
        return kept
    return out_lines


def run_command(command, workdir, bindir, previous_rc):
    env = dict(os.environ)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.pop("COLUMNS", None)
    proc = subprocess.run(["bash", "-c", f"(exit {previous_rc}); {command}"], cwd=workdir,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL)
    text = proc.stdout.decode("utf-8", errors="replace")
    return text.rstrip("\n").split("\n") if text.strip("\n") else [], proc.returncode


def regenerate_block(body, directives, repo, binary, files):
    """Returns the block's new body lines."""
    commands = [i for i, line in enumerate(body) if line.startswith("$ ")]
    if directives == [("skip", "")]:
        return body
    with tempfile.TemporaryDirectory(prefix="readme_examples.") as workdir:
        bindir = os.path.join(workdir, ".bin")
        os.mkdir(bindir)
        os.symlink(os.path.abspath(binary), os.path.join(bindir, "layoutsim"))
        os.symlink(os.path.join(repo, "scenarios"), os.path.join(workdir, "scenarios"))
        for name, content in files:
            with open(os.path.join(workdir, name), "w", encoding="utf-8") as handle:
                handle.write("\n".join(content) + "\n")
        result = body[:commands[0]]
        previous_rc = 0
        for n, start in enumerate(commands):
            end = commands[n + 1] if n + 1 < len(commands) else len(body)
            old_output = body[start + 1:end]
            # Blank lines that separate this command's output from the next command stay.
            trailing = 0
            while trailing < len(old_output) and old_output[len(old_output) - 1 - trailing] == "":
                trailing += 1
            directive = directives[n] if n < len(directives) else ("full", "")
            out_lines, previous_rc = run_command(body[start][2:], workdir, bindir, previous_rc)
            result.append(body[start])
            if directive[0] == "skip":
                result.extend(old_output[:len(old_output) - trailing])
            else:
                result.extend(filter_output(out_lines, directive))
            result.extend([""] * trailing)
        return result


def regenerate(text, repo, binary):
    lines = text.split("\n")
    out = []
    files = []
    for kind, payload in split_blocks(lines):
        if kind == "text":
            out.append(payload)
            continue
        directives, body = payload
        file_directives = [arg for word, arg in directives if word == "file"]
        if file_directives:
            files.append((file_directives[0], body))
            out.extend(body)
        elif body and body[0].startswith("$ "):
            out.extend(regenerate_block(body, directives, repo, binary, files))
            files = []
        else:
            out.extend(body)
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("layoutsim", help="the built binary, e.g. build/tools/layoutsim")
    parser.add_argument("--readme", default=None, help="README.md (default: the repository's)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 with a diff when README.md is stale; change nothing")
    args = parser.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/dev/ -> the repository
    readme = args.readme or os.path.join(repo, "README.md")
    with open(readme, encoding="utf-8") as handle:
        current = handle.read()
    fresh = regenerate(current, repo, args.layoutsim)
    if args.check:
        if fresh == current:
            print("README examples match the binary")
            return 0
        sys.stdout.writelines(difflib.unified_diff(
            current.splitlines(keepends=True), fresh.splitlines(keepends=True),
            fromfile="README.md", tofile="README.md (what the binary prints now)"))
        print("\nREADME examples are stale: run "
              "`cmake --build build --target update-readme-examples`")
        return 1
    if fresh != current:
        with open(readme, "w", encoding="utf-8") as handle:
            handle.write(fresh)
        print(f"updated {readme}")
    else:
        print(f"{readme} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
