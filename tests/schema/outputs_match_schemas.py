#!/usr/bin/env python3
"""Every JSON and CSV file layoutsim writes, checked: the JSON against docs/schema/, the CSV
with Python's csv module and pandas (every row as many fields as the header).

Usage: outputs_match_schemas.py LAYOUTSIM SOURCE_DIR WORK_DIR

Writes: run --json for every scenario in scenarios/ (and one with --split); sweep
--json/--csv (one point that fails to validate among them); search --json/--csv; diff
--json of two runs; validate --json, plain, --leave-out source, and on a runs file with a
micro-batch series; calibrate --json with --leave-out model (one constant, to keep the
test short).
"""
import csv
import pathlib
import subprocess
import sys

import check_schema


def layoutsim(binary, *args):
    proc = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"layoutsim {' '.join(map(str, args))}: exit {proc.returncode}\n{proc.stderr}")


def check_csv(path):
    """RFC 4180 as Python's csv module reads it, and pandas, where it is installed."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return f"{path}: empty"
    width = len(rows[0])
    for n, row in enumerate(rows[1:], start=2):
        if len(row) != width:
            return f"{path}:{n}: {len(row)} fields, the header has {width}"
    try:
        import pandas
    except ImportError:
        print("outputs_match_schemas: pandas not installed (Debian python3-pandas); csv module only")
        return None
    frame = pandas.read_csv(path)
    if frame.shape != (len(rows) - 1, width):
        return f"{path}: pandas reads {frame.shape}, the csv module {(len(rows) - 1, width)}"
    return None


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    binary, source, work = argv[1], pathlib.Path(argv[2]), pathlib.Path(argv[3])
    work.mkdir(parents=True, exist_ok=True)
    outputs = {name: [] for name in ("run", "sweep", "search", "diff", "validate", "calibrate")}

    for scenario in sorted((source / "scenarios").glob("*.yaml")):
        out = work / f"run-{scenario.stem}.json"
        layoutsim(binary, "run", scenario, "--json", out, "--quiet")
        outputs["run"].append(out)
    # The step split (--split): one more field.
    layoutsim(binary, "run", source / "scenarios" / "tp8-in-node.yaml", "--split", "--json", work / "run-split.json", "--quiet")
    outputs["run"].append(work / "run-split.json")

    # A sweep with a point that cannot run (tp 3 does not divide the heads): an error entry.
    sweep = source / "scenarios" / "bubble-sweep.yaml"
    layoutsim(binary, "sweep", sweep, "--microbatches", "8,16", "--set", "layout.tp=1,3", "--set", "cluster.gpus_per_node=8,24",
              "--json", work / "sweep.json", "--csv", work / "sweep.csv", "--quiet")
    outputs["sweep"].append(work / "sweep.json")

    search = source / "scenarios" / "tp8-in-node.yaml"
    layoutsim(binary, "search", search, "--json", work / "search.json", "--csv", work / "search.csv", "--quiet")
    outputs["search"].append(work / "search.json")

    layoutsim(binary, "diff", outputs["run"][0], outputs["run"][1], "--json", work / "diff.json")
    outputs["diff"].append(work / "diff.json")

    subset = source / "validation" / "corpus" / "subset.yaml"
    layoutsim(binary, "validate", subset, "--json", work / "validate.json", "--quiet")
    layoutsim(binary, "validate", subset, "--leave-out", "source", "--json", work / "validate-loso.json", "--quiet")
    outputs["validate"] += [work / "validate.json", work / "validate-loso.json"]
    # A runs file with a micro-batch series (MT-NLG at three widths): the series field.
    layoutsim(binary, "validate", source / "validation" / "corpus" / "smith2022_mtnlg.yaml", "--json", work / "validate-series.json",
              "--quiet")
    outputs["validate"].append(work / "validate-series.json")

    layoutsim(binary, "calibrate", source / "validation" / "subset.yaml", "--gpu", "h100-sxm", "--fit", "gemm_sustained_fraction",
              "--leave-out", "model", "--json",
              work / "calibrate.json", "--quiet")
    outputs["calibrate"].append(work / "calibrate.json")

    store = check_schema.load_schemas(source / "docs" / "schema")
    failures = 0
    for name, files in outputs.items():
        failures += check_schema.check_files(store, name, files)
    for table in (work / "sweep.csv", work / "search.csv"):
        problem = check_csv(table)
        if problem:
            print(problem, file=sys.stderr)
            failures += 1
    if failures:
        print(f"outputs_match_schemas: {failures} failure(s)", file=sys.stderr)
        return 1
    print(f"outputs_match_schemas: {sum(map(len, outputs.values()))} JSON files match their schemas, 2 CSV files read back")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
