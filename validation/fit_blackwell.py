#!/usr/bin/env python3
"""Refit the Blackwell compute constants (workloads/spec/compute_profile.cpp, "Blackwell ...
CALIBRATED") on the Blackwell rows of megatron_bridge.yaml, with leave-one-model-out.

What it fits, and why jointly: each GPU type's FP8 GEMM fraction on that type's rows only
(b200, gb200, gb300: one power envelope each), plus two constants the three types share
because they are one SM design: the MXFP8/FP8 GEMM ratio and the FlashAttention efficiencies
(forward; backward kept at the shipped backward/forward ratio). `layoutsim calibrate` fits
one GPU at a time, so this script linearises instead: per row it runs `layoutsim validate`
at the shipped presets, with both FP8 fractions × 5/6, and with the attention efficiencies
× 0.8, takes step ≈ a + b / gemm_fraction + c / attention_efficiency, and minimises the
squared log error over the parameters (coordinate search; 3 validate runs per GPU type).

Usage (repository root, after building): python3 validation/fit_blackwell.py [--layoutsim PATH]
Needs python3 + PyYAML. Deterministic. Writes nothing but temporary files.
"""
import argparse
import json
import math
import os
import subprocess
import tempfile

import yaml

TYPES = ("b200", "gb200", "gb300")
MODELS = ("llama3_8b", "llama3_70b", "llama3.1_405b")
GEMM_STEP, FLASH_STEP = 5 / 6, 0.8


def validate(layoutsim, runs, profile):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as j:
        path = j.name
    cmd = [layoutsim, "validate", runs, "-q", "--json", path] + (["--profile", profile] if profile else [])
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    rows = {r["id"]: r for r in json.load(open(path))["rows"]}
    os.unlink(path)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layoutsim", default="build/tools/layoutsim")
    ap.add_argument("--fp8", nargs=3, type=float, default=(0.57, 0.57, 0.76), help="shipped b200 gb200 gb300")
    ap.add_argument("--mx-ratio", type=float, default=0.89)
    ap.add_argument("--flash", nargs=2, type=float, default=(0.38, 0.31), help="shipped forward backward")
    a = ap.parse_args()
    runs = yaml.safe_load(open("validation/megatron_bridge.yaml"))["runs"]
    tmp = tempfile.mkdtemp()
    rows = []
    for t, f0 in zip(TYPES, a.fp8):
        mine = [r for r in runs if r["scenario"]["cluster"]["gpu"] == t]
        rf = os.path.join(tmp, f"{t}.yaml")
        yaml.safe_dump({"runs": mine}, open(rf, "w"), sort_keys=False)
        m0 = round(f0 * a.mx_ratio, 2)  # as shipped: two decimals
        profiles = {
            "gemm": {"fp8_gemm_sustained_fraction": f0 * GEMM_STEP, "mxfp8_gemm_sustained_fraction": m0 * GEMM_STEP},
            "flash": {"flash_fwd_efficiency": a.flash[0] * FLASH_STEP, "flash_bwd_efficiency": a.flash[1] * FLASH_STEP},
        }
        res = {"base": validate(a.layoutsim, rf, None)}
        for k, consts in profiles.items():
            pf = os.path.join(tmp, f"{t}_{k}.yaml")
            yaml.safe_dump({"gpu": t, "constants": consts}, open(pf, "w"))
            res[k] = validate(a.layoutsim, rf, pf)
        for r in mine:
            i, mx = r["name"], r["scenario"]["precision"].get("compute") == "mxfp8"
            g0, x0 = (m0 if mx else f0), a.flash[0]
            t0 = res["base"][i]["predicted"]
            b = (res["gemm"][i]["predicted"] - t0) / (1 / (g0 * GEMM_STEP) - 1 / g0)
            c = (res["flash"][i]["predicted"] - t0) / (1 / (x0 * FLASH_STEP) - 1 / x0)
            model = next(m for m in MODELS if m in i)
            rows.append(dict(id=i, gpu=t, mx=mx, a=t0 - b / g0 - c / x0, b=b, c=c, measured=res["base"][i]["measured"],
                             model=model))

    def predict(r, p):
        g = p[r["gpu"]] * (p["mx_ratio"] if r["mx"] else 1)
        return r["a"] + r["b"] / g + r["c"] / p["flash_fwd"]

    def loss(rs, p):
        return sum(math.log(predict(r, p) / r["measured"]) ** 2 for r in rs)

    def fit(rs):
        p = dict(zip(TYPES, a.fp8), mx_ratio=a.mx_ratio, flash_fwd=a.flash[0])
        step = 0.05
        while step > 1e-5:
            better = False
            for k in list(p):
                for d in (step, -step):
                    q = dict(p, **{k: p[k] + d})
                    if loss(rs, q) < loss(rs, p):
                        p, better = q, True
            if not better:
                step /= 2
        return p

    def errors(rs, p):
        return [predict(r, p) / r["measured"] - 1 for r in rs]

    p = fit(rows)
    print("fitted:", {k: round(v, 3) for k, v in p.items()},
          f"(flash_bwd = {p['flash_fwd'] * a.flash[1] / a.flash[0]:.3f})")
    for t in TYPES + ("all",):
        e = errors([r for r in rows if t in ("all", r["gpu"])], p)
        print(f"  {t:6s} {len(e):3d} runs  mean |err| {100 * sum(map(abs, e)) / len(e):.1f} %  "
              f"max {100 * max(map(abs, e)):.1f} %  signed {100 * sum(e) / len(e):+.1f} %")
    held = []
    for m in MODELS:
        q = fit([r for r in rows if r["model"] != m])
        e = [abs(x) for x in errors([r for r in rows if r["model"] == m], q)]
        held += e
        print(f"  leave out {m:14s} mean |err| {100 * sum(e) / len(e):.1f} %  max {100 * max(e):.1f} %")
    print(f"leave-one-model-out mean |err| {100 * sum(held) / len(held):.1f} %")


if __name__ == "__main__":
    main()
