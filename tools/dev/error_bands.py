#!/usr/bin/env python3
"""Writes validation/error_bands.csv, the held-out residuals the error band of every
prediction is read from (workloads/analysis/error_band.hpp), from the JSON of
`layoutsim validate --leave-out source`: the rows of the sources the shipped constants
were not fitted on (fitted: false), outliers included, each with its signed error and the
features the band groups runs by.

  layoutsim validate --leave-out source --json /tmp/validate.json
  python3 tools/dev/error_bands.py /tmp/validate.json          # writes validation/error_bands.csv

Rerun both whenever the model's predictions move (the error_bands_current test fails
until then). Deterministic: rows sorted by id, errors rounded to 6 decimals. Python 3
standard library only.
"""
import json
import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    data = json.load(open(sys.argv[1], encoding="utf-8"))
    rows = []
    for r in data["rows"]:
        if r.get("fitted", False) or r.get("error") is None:
            continue
        f = r["features"]
        rows.append({"id": r["id"], "error": round(r["error"], 6), "preset": f["preset"],
                     "gpu_family": f["gpu_family"], "kind": f["kind"], "scale": f["scale"]})
    rows.sort(key=lambda x: x["id"])
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = os.path.join(repo, "validation", "error_bands.csv")
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("id,error,preset,gpu_family,kind,scale\n")
        for r in rows:
            fh.write(f"{r['id']},{r['error']:.6f},{r['preset']},{r['gpu_family']},{r['kind']},{r['scale']}\n")
    print(f"{out}: {len(rows)} held-out rows")


if __name__ == "__main__":
    main()
