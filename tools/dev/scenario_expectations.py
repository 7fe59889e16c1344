#!/usr/bin/env python3
"""Check (or refresh) the figures that scenarios/*.yaml header comments quote.

Usage:
  python3 tools/dev/scenario_expectations.py LAYOUTSIM [--check | --print | --update] [FILE.yaml...]

A header comment quotes a figure in a form this script checks:

  #   expect: JSON.PATH ≈ VALUE ±TOLERANCE[%]  (why this tolerance)
  #   expect --set KEY=VALUE [--set KEY=VALUE...]: JSON.PATH ≈ VALUE ±TOLERANCE[%]  (...)

JSON.PATH names a number in `layoutsim run FILE --json -` (the JSON reference in
README.md), with `[N]` for list elements: `step_time_s`, `mfu`,
`pipeline.bubble_fraction`, `memory.max_peak_bytes`, `comm.dp.bytes_per_device`,
`pipeline.per_stage[3].compute_s`. The `--set` arguments, when given, are passed to
that run (each `--set` word must have no spaces). TOLERANCE with `%` is relative to
VALUE, without it absolute. Each expect line should say why its tolerance is what it
is (usually: the figure is rounded to so many digits, plus a margin for model changes
that should not silently rewrite the comment's story).

--check (default) runs each file once per distinct `--set` list and exits 1 when a
figure is outside its tolerance, saying which command refreshes them (the CTest
`scenario_expectations`). --print shows each figure next to what a run gives now.
--update rewrites VALUE in place with what a run gives now, keeping its digits (the
same number of decimals, and the same power of ten when VALUE is written as `Ne9`),
the tolerance and the reason (the CMake target `update-scenario-expectations`); prose
in the comment that quotes the same figure has to be read again by hand.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys

EXPECT = re.compile(
    r"^(?P<lead>#\s*expect(?P<args>(?:\s+--set\s+\S+)*)\s*:\s*(?P<path>[\w.\[\]]+)\s*≈\s*)"
    r"(?P<value>[-+]?[0-9.]+(?:e[-+]?[0-9]+)?)"
    r"(?P<rest>\s*±\s*(?P<tol>[0-9.]+)(?P<pct>%?).*)$")
STALE = ("Scenario expectations differ from the binary: if the change is intended, run "
         "`cmake --build build --target update-scenario-expectations` and reread the "
         "comments around the updated expect: lines")


def header_lines(text):
    """The leading comment block of a scenario file, as (index, line) pairs."""
    for index, line in enumerate(text.split("\n")):
        if not line.startswith("#"):
            return
        yield index, line


def expectations(path):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    found = []
    for index, line in header_lines(text):
        if re.match(r"^#\s*expect\b", line):
            match = EXPECT.match(line)
            if not match:
                raise SystemExit(f"{path}:{index + 1}: malformed expect line: {line}")
            found.append((index, match))
    return text, found


def lookup(document, path):
    value = document
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        value = value[int(part[1:-1])] if part.startswith("[") else value[part]
    return value


def run_json(binary, scenario, args):
    command = [binary, "run", scenario, "--json", "-"] + shlex.split(args)
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)}: exit code {proc.returncode}\n"
                         f"{proc.stderr.decode(errors='replace')}")
    return json.loads(proc.stdout)


def formatted_like(template, value):
    """value written with template's digits (decimals, and its power of ten if any)."""
    mantissa, _, exponent = template.partition("e")
    decimals = len(mantissa.partition(".")[2])
    if exponent:
        return f"{value / 10 ** int(exponent):.{decimals}f}e{exponent}"
    return f"{value:.{decimals}f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("layoutsim", help="the built binary, e.g. build/tools/layoutsim")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 when a figure is off (default)")
    mode.add_argument("--print", action="store_true", help="print each figure and its value now")
    mode.add_argument("--update", action="store_true", help="rewrite the figures with the values now")
    parser.add_argument("files", nargs="*", help="scenario files (default: scenarios/*.yaml)")
    args = parser.parse_intermixed_args()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/dev/ -> the repository
    files = args.files or sorted(
        os.path.join(repo, "scenarios", name)
        for name in os.listdir(os.path.join(repo, "scenarios")) if name.endswith(".yaml"))

    failures = 0
    checked = 0
    for scenario in files:
        text, found = expectations(scenario)
        if not found:
            continue
        runs = {}
        lines = text.split("\n")
        shown = os.path.relpath(scenario, repo)
        for index, match in found:
            set_args = " ".join(match.group("args").split())
            if set_args not in runs:
                runs[set_args] = run_json(args.layoutsim, scenario, set_args)
            actual = float(lookup(runs[set_args], match.group("path")))
            expected = float(match.group("value"))
            tolerance = float(match.group("tol"))
            if match.group("pct"):
                tolerance *= abs(expected) / 100
            within = abs(actual - expected) <= tolerance
            checked += 1
            where = f"{shown}:{index + 1}: {match.group('path')}" + (f" ({set_args})" if set_args else "")
            if args.update:
                lines[index] = (match.group("lead") + formatted_like(match.group("value"), actual)
                                + match.group("rest"))
            elif args.print or not within:
                verdict = "ok" if within else "OUT OF TOLERANCE"
                print(f"{where}: expected {match.group('value')} ±{match.group('tol')}"
                      f"{match.group('pct')}, a run gives {actual:.6g}: {verdict}")
            failures += 0 if within else 1
        if args.update:
            new_text = "\n".join(lines)
            if new_text != text:
                with open(scenario, "w", encoding="utf-8") as handle:
                    handle.write(new_text)
                print(f"updated {shown}")
    if args.update:
        return 0
    print(f"{checked} figures checked, {failures} out of tolerance")
    if failures:
        print(STALE)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
