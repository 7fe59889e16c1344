#!/usr/bin/env python3
"""Converts the public calibration records into layoutsim validation sets.

Reads llm_foundry.yaml and megatron_bridge.yaml from the project's public calibration
records (the directory given with --src, or $LAYOUTSIM_CALIBRATION_SRC) and writes
validation/llm_foundry.yaml and validation/megatron_bridge.yaml in the RUNS format read by `layoutsim validate` and
`layoutsim calibrate` (see validation/README.md). Deterministic: the same input gives
byte-identical output, so the committed files can be re-generated and diffed.

Needs python3 and PyYAML (Debian: python3-yaml).
"""
import argparse
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))

# LLM Foundry GPU names -> layoutsim GPU presets (workloads/cost/hardware.cpp).
GPU_PRESET = {"a100_40gb": "a100-40gb", "a100_80gb": "a100-80gb", "h100_80gb": "h100-sxm"}

# Inter-node network per GPU. The A100 tables are headed "1600 Gbps node-node
# interconnect (RoCE)": 1600 Gb/s per 8-GPU node = 8 NICs x 200 Gb/s, Ethernet (RoCE).
# The H100 tables state nothing: we ASSUME 8 x 400 Gb/s InfiniBand (the usual DGX/HGX
# H100 build), recorded on every such row under metadata.assumptions.
A100_NET = {"kind": "ethernet", "bandwidth": "200 Gb/s"}
H100_NET = {"kind": "infiniband", "bandwidth": "400 Gb/s"}

# MPT's loss: llmfoundry's MPT model (mosaic_gpt.py at 300cc5c58b; models/mpt/modeling_mpt.py
# at b2a43a1477 and 5e85bd62d4, the commits the benchmark scripts are read at) defaults
# loss_fn to fused_crossentropy, flash-attn's CrossEntropyLoss, and the benchmark yamls
# leave it: a fused kernel per pass over the bf16 logits instead of eager ops on an fp32
# copy (layoutsim's fused loss counts one fp32 copy of the logits, which flash-attn's kernel
# does not make: the peak is an upper bound by that much).
LOSS_BASIS = ("loss: flash-attn's fused cross-entropy, MPT's default loss_fn fused_crossentropy "
              "(llmfoundry mosaic_gpt.py@300cc5c58b, models/mpt/modeling_mpt.py@b2a43a1477 and @5e85bd62d4; "
              "the benchmark yamls do not set loss_fn) -> implementation.fused_loss true")

FSDP_ZERO = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2}
FSDP_KIND = {"FULL_SHARD": "fsdp-full", "SHARD_GRAD_OP": "fsdp-grad-op"}


def cluster_for(gpu_preset, gpus, net):
    per_node = min(gpus, 8)
    if gpus % per_node:
        raise ValueError(f"{gpus} GPUs is not a whole number of 8-GPU nodes")
    return {"gpu": gpu_preset, "nodes": gpus // per_node, "gpus_per_node": per_node,
            "inter_node": dict(net)}


def foundry_row(r):
    sysd, model, lay = r["system"], r["model"], r["layout"]
    gpus = sysd["gpus"]
    gpu = GPU_PRESET[sysd["gpu"]]
    assumptions = ["nodes of 8 GPUs (MosaicML platform; not stated in the source)", LOSS_BASIS]
    if gpu == "h100-sxm":
        net = H100_NET
        assumptions.append("inter-node network not stated for H100: assumed 8 x 400 Gb/s InfiniBand per node")
    else:
        net = A100_NET
    pure = sysd["fsdp_mixed_precision"] == "PURE"
    fp8 = sysd["precision"] == "amp_fp8"
    scenario = {
        "name": r["id"],
        "cluster": cluster_for(gpu, gpus, net),
        "model": {
            "name": model["name"],
            "layers": model["layers"],
            "hidden": model["hidden"],
            "heads": model["heads"],
            "ffn_hidden": model["ffn_hidden"],
            "vocab": model["vocab"],
            "seq_len": model["seq_len"],
            "activation": "gelu",
            "tied_embeddings": True,
        },
        "layout": {
            "dp": gpus, "tp": 1, "pp": 1,
            "zero": FSDP_ZERO[lay["fsdp"]],
            "recompute": "full" if lay["activation_checkpointing"] else "none",
            "microbatch_size": lay["microbatch_size"],
            "microbatches": lay["grad_accum"],
        },
        # DEFAULT: bf16 compute, fp32 gradient reduction; PURE: gradients reduced in bf16.
        "precision": {"weights": "bf16", "gradients": "bf16" if pure else "fp32",
                      "master": "fp32", "optimizer": "adamw-fp32"},
        # amp_fp8: TransformerEngine FP8 linear layers (per-tensor scaling) on H100.
        # PyTorch FSDP, eager modules; the attention kernel the row ran (triton: LLM
        # Foundry's Triton flash attention; flash: FlashAttention-2); the loss as MPT
        # computes it by default, flash-attn's fused cross-entropy (LOSS_BASIS).
        "implementation": {"preset": "pytorch-fsdp", "attention": model["attention_impl"], "fused_loss": True},
    }
    if fp8:
        scenario["precision"]["compute"] = "fp8"
    assert lay["global_batch"] == gpus * lay["microbatch_size"] * lay["grad_accum"]
    src = r["source"]
    return {
        "name": r["id"],
        "groups": {"source": "llm_foundry", "framework": "llm-foundry",
                   "gpu": gpu, "precision": "fp8" if fp8 else "bf16-pure" if pure else "bf16-amp",
                   "parallelism": FSDP_KIND[lay["fsdp"]],
                   "recompute": "full" if lay["activation_checkpointing"] else "none"},
        "citation": {"repo": src["repo"], "path": src["path"], "commit": src["commit"],
                     "table": src["table"]},
        # Facts of the row (the attention kernel is also stated in scenario.implementation).
        "metadata": {
            "attention_impl": model["attention_impl"],
            "attention_impl_basis": model["attention_impl_basis"],
            "positions": "learned absolute (seq_len x hidden table)",
            "biases": True,
            "attention": "MHA",
            "fsdp_mixed_precision": sysd["fsdp_mixed_precision"],
            "published_precision": sysd["precision"],
            "num_params_published": model["num_params"],
            "mfu_percent_published": r["measured"]["mfu"],
            "step_time_s_derived": r["derived"]["step_time_s"],
            "assumptions": assumptions,
        },
        "scenario": scenario,
        "measured": {"tokens_per_s": r["measured"]["tokens_per_s"]},
    }


def convert_foundry(src):
    data = yaml.safe_load(open(os.path.join(src, "llm_foundry.yaml")))
    runs, kept_out = [], []
    for r in data["rows"]:
        runs.append(foundry_row(r))
    return runs, kept_out, len(data.get("superseded_rows", []))


# Megatron-Bridge: only BF16 rows of models the scenario format can state exactly.
MB_KEEP = {
    "mbridge_card_h100_bf16_qwen3_8b_16gpu_functional",
}


def mb_row(r, models):
    sysd, model, lay = r["system"], r["model"], r["layout"]
    arch = models[model["key"]]
    gpus = sysd["num_gpus"]
    dp = lay["dp_derived"]
    ga = lay["ga_derived"]
    scenario = {
        "name": r["id"],
        "cluster": cluster_for("h100-sxm", gpus, H100_NET),
        "model": {
            "name": model["name"], "layers": model["layers"], "hidden": model["hidden"],
            "heads": model["heads"], "kv_heads": model["kv_heads"],
            "ffn_hidden": model["ffn_hidden"], "vocab": model["vocab"], "seq_len": model["seq_len"],
            "activation": "swiglu" if arch["activation"] == "SwiGLU" else "gelu",
            "tied_embeddings": bool(arch["tied_embeddings"]),
        },
        "layout": {"dp": dp, "tp": lay["tp"], "pp": lay["pp"], "zero": 1, "recompute": "none",
                   "microbatch_size": lay["mbs"], "microbatches": ga},
        "precision": {"weights": "bf16", "gradients": "fp32", "master": "fp32", "optimizer": "adamw-fp32"},
        "implementation": {"preset": "megatron-core"},  # TransformerEngine fused kernels, flash attention
    }
    if (lay.get("cp") or 1) > 1:  # context parallelism (layout.cp); dp_derived already excludes it
        scenario["layout"]["cp"] = lay["cp"]
    src = r["source"]
    return {
        "name": r["id"],
        "groups": {"source": "megatron_bridge", "framework": "megatron-bridge",
                   "gpu": "h100-sxm", "precision": "bf16-amp", "parallelism": "dp", "recompute": "none"},
        "citation": {"repo": src["repo"], "path": src["path"], "commit": src["commit"], "table": src["table"]},
        "metadata": {
            "attention": model["attention"],
            "flags": list(r["flags"]),
            "measurement_kind": r["measured"]["measurement_kind"],
            "assumptions": [
                "H100 form factor not stated: h100-sxm preset",
                "inter-node network not stated: assumed 8 x 400 Gb/s InfiniBand per node",
                "Megatron distributed optimizer (recipe default): zero 1",
                "no activation recompute (card states none)",
            ],
        },
        "scenario": scenario,
        "measured": {"step_time": f"{r['measured']['step_time_s']} s"},
    }


# Systems of the Megatron-Bridge / NeMo pages: GPU preset, GPUs per node (tray), the NVLink
# domain, and the inter-node NIC per GPU (DGX datasheets; see workloads/cost/hardware.cpp).
MB_SYSTEM = {
    "H100": {"gpu": "h100-sxm", "per_node": 8, "nvlink_domain": None,
             "net": {"kind": "infiniband", "bandwidth": "400 Gb/s"}},
    "B200": {"gpu": "b200", "per_node": 8, "nvlink_domain": None,
             "net": {"kind": "infiniband", "bandwidth": "400 Gb/s"}},
    "B300": {"gpu": "b300", "per_node": 8, "nvlink_domain": None,
             "net": {"kind": "infiniband", "bandwidth": "800 Gb/s"}},
    "GB200": {"gpu": "gb200", "per_node": 4, "nvlink_domain": 72,
              "net": {"kind": "infiniband", "bandwidth": "400 Gb/s"}},
    "GB300": {"gpu": "gb300", "per_node": 4, "nvlink_domain": 72,
              "net": {"kind": "infiniband", "bandwidth": "800 Gb/s"}},
}
MB_PRECISION = {"FP8": "fp8", "MXFP8": "mxfp8", "BF16": "bf16"}


def mb_stage_layers(layers, chunks):
    """Megatron's account_for_embedding / account_for_loss split when `layers` does not
    divide: layers + 2 slots over the chunks, the embedding taking one slot of the first
    chunk and the loss one of the last. None when a chunk would have no layer."""
    if layers % chunks == 0:
        return None
    per, rest = divmod(layers + 2, chunks)
    if rest or per < 2:
        return False
    return [per - 1] + [per] * (chunks - 2) + [per - 1]


def mb_page_row(r, models):
    """A Megatron-Bridge / NeMo performance-page row of a dense model in FP8 / MXFP8."""
    sysd, model, lay = r["system"], r["model"], r["layout"]
    arch = models[model["key"]]
    fam = MB_SYSTEM[sysd["gpu_family"]]
    gpus = sysd["num_gpus"]
    per_node = min(gpus, fam["per_node"])
    dp = lay["dp_derived"]
    fsdp = lay["fsdp"] or 0
    prec = MB_PRECISION[sysd["precision"]]
    tp, pp, vp = lay["tp"], lay["pp"], lay["vp"] or 1
    cluster = {"gpu": fam["gpu"], "nodes": gpus // per_node, "gpus_per_node": per_node,
               "inter_node": dict(fam["net"])}
    assumptions = [
        f"inter-node network not stated: {fam['net']['bandwidth']} InfiniBand per GPU (the DGX system's NIC)",
        "Megatron distributed optimizer (recipe default) when FSDP is 0: zero 1; FSDP = dp: zero 3",
        "no activation recompute (the page states none)",
        "sequence parallelism on when tp > 1 (Megatron-Bridge perf recipes)",
    ]
    # Megatron-Bridge's performance recipes set `grad_reduce_in_fp32 = False` for every
    # Llama 3 / 3.1 run (scripts/performance/configs/llama/llama3_llm_pretrain.py and
    # llama31_llm_pretrain.py, set_llama3*_common_configs, in every stored version): the DDP
    # gradient buffer and its reduce-scatter are bf16. The NeMo 24.07 page names no recipe
    # that says so: those rows keep the Megatron default (fp32 gradient buffer).
    mb_recipe = r["source"]["repo"] == "NVIDIA-NeMo/Megatron-Bridge"
    grad_precision = "bf16" if mb_recipe else "fp32"
    assumptions.append(
        "gradients accumulated and reduced in bf16 (the performance recipes' grad_reduce_in_fp32 = False), "
        "fp32 master, AdamW fp32 moments" if mb_recipe else
        "gradients reduced in fp32 (Megatron's default; the page names no recipe), fp32 master, AdamW fp32 moments")
    if tp > 1:
        assumptions.append("TP communication overlapped with the GEMMs when tp > 1 (the performance recipes' "
                           "comm-overlap setting with TransformerEngine userbuffers): implementation.tp_comm_overlap")
    if fam["nvlink_domain"]:
        cluster["nvlink_domain"] = min(fam["nvlink_domain"], gpus)
        assumptions.append("trays of 4 GPUs in NVL72 racks, filled in order (72 GPUs per NVLink domain)")
    layout = {"dp": dp, "tp": tp, "pp": pp, "zero": 3 if fsdp else 1, "sequence_parallel": tp > 1,
              "recompute": "none", "microbatch_size": lay["mbs"], "microbatches": lay["ga_derived"]}
    if pp > 1 and vp > 1:
        layout["schedule"] = "interleaved-1f1b"
        layout["virtual_stages"] = vp
    if (lay.get("cp") or 1) > 1:  # context parallelism, ring (Megatron-Core); dp_derived excludes it
        layout["cp"] = lay["cp"]
        assumptions.append("context parallelism as Megatron-Core's ring (cp_comm_type p2p, the default)")
    chunks = pp * (vp if pp > 1 else 1)
    split = mb_stage_layers(arch["layers"], chunks) if pp > 1 else None
    if split:
        layout["stage_layers"] = split
        assumptions.append("uneven pipeline split as Megatron's account_for_embedding/loss: first and last chunk "
                           "one layer short")
    scenario = {
        "name": r["id"],
        "cluster": cluster,
        "model": {
            "name": model["name"], "layers": arch["layers"], "hidden": arch["hidden"],
            "heads": arch["heads"], "kv_heads": arch["kv_heads"], "ffn_hidden": arch["ffn_hidden"],
            "vocab": arch["vocab"], "seq_len": model["seq_len"], "activation": "swiglu",
            "tied_embeddings": bool(arch["tied_embeddings"]),
        },
        "layout": layout,
        "precision": {"weights": "bf16", "gradients": grad_precision, "master": "fp32", "optimizer": "adamw-fp32",
                      "compute": prec},
        "implementation": {"preset": "megatron-core", **({"tp_comm_overlap": True} if tp > 1 else {})},
    }
    src = r["source"]
    parallelism = "fsdp-full" if fsdp else ("tp-pp" if pp > 1 else "tp-dp" if tp > 1 else "dp")
    return {
        "name": r["id"],
        "groups": {"source": "megatron_bridge", "framework": "megatron-bridge",
                   "gpu": fam["gpu"], "precision": prec, "parallelism": parallelism, "recompute": "none",
                   "model": model["key"]},
        "citation": {"repo": src["repo"], "path": src["path"], "commit": src["commit"], "table": src["table"]},
        "metadata": {
            # The release the row was measured on: rows of one layout on different releases
            # are not one micro-batch series (tools/study/validate_series.hpp).
            "framework_version": src.get("release_name") or src.get("release"),
            "precision_detail": sysd.get("precision_detail"),
            "flags": list(r["flags"]),
            "measurement_kind": r["measured"]["measurement_kind"],
            "model_tflops_per_sec_per_gpu_published": r["measured"]["model_tflops_per_sec_per_gpu"],
            "assumptions": assumptions,
        },
        "scenario": scenario,
        "measured": {"tokens_per_s": r["measured"]["tokens_per_sec_per_gpu"] * gpus},
    }


def mb_reason(r, models):
    """Why a row stays out (None: it is admitted). Model features first, then precision,
    then layout features the simulator does not state yet."""
    sysd, model, lay = r["system"], r["model"], r["layout"]
    prec = sysd["precision"] or sysd.get("precision_likely")
    if "superseded" in r.get("flags", []):
        return "superseded: removed from the page by the maintainers"
    attention = str(model.get("attention") or "")
    arch = models.get(model["key"]) or {}
    if "mamba" in model["kind"]:
        return "hybrid Mamba/MoE model: Mamba layers are not modelled"
    if "MLA" in attention:
        return "multi-head latent attention (MLA) is not modelled"
    if "sliding window" in attention:
        return "sliding-window attention (and attention sinks) not modelled"
    if "DSA" in attention or "sparse" in attention:
        return "sparse attention (DSA) is not modelled"
    head_dim = arch.get("head_dim") or model.get("head_dim")
    if head_dim and model["heads"] and head_dim * model["heads"] != model["hidden"]:
        return (f"attention width heads x head_dim = {model['heads']} x {head_dim} differs from hidden "
                f"{model['hidden']}: the scenario format assumes head_dim = hidden / heads")
    if model["kind"] != "dense":
        return "MoE model: not admitted (every MoE row here also has an attention form above or no stated shape)"
    activation = arch.get("activation")
    if activation is None:
        return "activation and embedding tying not stated in the source config"
    if activation != "SwiGLU":
        return f"{activation} activation is not modelled (gelu or swiglu only)"
    if not arch.get("vocab"):
        return "vocabulary size not stated in the source"
    if sysd["precision"] is None:
        return f"precision not stated on the page (25.09; likely {prec}): not admitted on an inference"
    if prec == "NVFP4":
        return "precision NVFP4: no FP4 compute model"
    if prec not in ("FP8", "MXFP8", "BF16"):
        return f"precision {prec}: not modelled"
    fsdp = lay["fsdp"] or 0
    if fsdp and fsdp != lay["dp_derived"]:
        return f"FSDP sharding group {fsdp} smaller than dp {lay['dp_derived']} (hybrid sharding) not modelled"
    if fsdp and model["key"] in ("llama3_70b", "llama3.1_405b"):
        return ("Megatron-FSDP perf preset with activation CPU offloading (cpu_offloading_num_layers; not on the page): "
                "offload not modelled")
    pp, vp = lay["pp"], lay["vp"] or 1
    if pp > 1 and mb_stage_layers(arch["layers"], pp * vp) is False:
        return (f"{arch['layers']} layers over pp x vp = {pp * vp} pipeline chunks leaves a chunk with no layer "
                "(Megatron's embedding/loss slots): not expressible")
    return None


# Rows whose published layout cells contradict their own recipe and table: simulating them
# as published would test the table's typo, not the simulator.
MB_LAYOUT_NOT_TRUSTED = {
    "mbridge_26.02.01_gb300_mxfp8_llama3_70b_64gpu": (
        "layout as published (MBS 2, PP 4, VP n/a) contradicts the performance recipe "
        "(scripts/performance/configs/llama/llama3_workload_base_configs.py, "
        "LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_MX: PP 4, VP 5, MBS 1 in every stored version) and the "
        "same table's GB300 NVFP4 row states TP = PP = 1 without FSDP for 70B, which cannot fit: "
        "the table's GB300 layout cells are not trusted (as published: 27 % pipeline bubble, "
        "+32 % error; with the recipe's VP 5: +5 %)"),
}


def convert_mb(src):
    data = yaml.safe_load(open(os.path.join(src, "megatron_bridge.yaml")))
    models = data["models"]
    runs, kept_out = [], []
    for r in data["rows"]:
        if r["id"] in MB_KEEP:
            runs.append(mb_row(r, models))
            continue
        why = MB_LAYOUT_NOT_TRUSTED.get(r["id"]) or mb_reason(r, models)
        if why is None and r["source"]["path"].endswith("card.yaml"):
            why = "model-verification card row: only the Qwen3-8B functional card is converted"
        if why is None and r["system"]["precision"] == "BF16":
            why = "BF16 row not converted"
        if why is None:
            runs.append(mb_page_row(r, models))
        else:
            kept_out.append((r["id"], why))
    return runs, kept_out


# validation/subset.yaml: a dozen rows for the CTest `validation_subset`, spanning the
# three GPUs, 125m..70b, 8..512 GPUs, ZeRO 2 and 3, recompute on and off, and the one
# Megatron-Bridge row.
SUBSET = [
    "llmfoundry_h100_80gb_mpt_70b_seq2048_512gpu_bf16",
    "llmfoundry_h100_80gb_mpt_3b_seq2048_512gpu_bf16",
    "llmfoundry_h100_80gb_mpt_1b_seq2048_128gpu_bf16",
    "llmfoundry_h100_80gb_mpt_30b_seq8192_8gpu_bf16",
    "llmfoundry_h100_80gb_mpt_760m_seq2048_8gpu_bf16",
    "llmfoundry_h100_80gb_mpt_13b_seq2048_64gpu_bf16",
    "llmfoundry_a100_80gb_mpt_70b_seq2048_64gpu_bf16",
    "llmfoundry_a100_80gb_mpt_7b_seq2048_8gpu_bf16",
    "llmfoundry_a100_80gb_mpt_125m_seq2048_8gpu_bf16_mb32_gb512",
    "llmfoundry_a100_40gb_mpt_13b_seq2048_128gpu_bf16",
    "llmfoundry_a100_40gb_mpt_1b_seq2048_8gpu_bf16",
    "llmfoundry_a100_40gb_mpt_350m_seq32768_8gpu_bf16",
    "mbridge_card_h100_bf16_qwen3_8b_16gpu_functional",
]

HEADER = """# {what}
# GENERATED by validation/convert.py from {src} -- do not edit by hand; re-run the script.
# Format: validation/README.md (a RUNS file: `layoutsim validate` and `layoutsim calibrate` read it).
# The shipped constants were fitted on these rows (source.fitted: validate --leave-out source
# reports them as in-sample).
# Each run: name (the row id of the source), groups (source, framework, gpu, precision, parallelism kind), citation
# (repo, path, commit, table of the published number), metadata (facts the scenario format cannot
# state yet, and the assumptions made), scenario (layoutsim's own format), measured.
"""


class Dumper(yaml.SafeDumper):
    pass


def _repr_list(dumper, data):
    flow = all(not isinstance(x, (dict, list)) for x in data) and len(data) <= 8 and \
        all(not isinstance(x, str) or len(x) < 30 for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


Dumper.add_representer(list, _repr_list)


def write_runs(path, what, src, runs):
    with open(path, "w") as f:
        f.write(HEADER.format(what=what, src=src))
        yaml.dump({"source": {"fitted": True}, "runs": runs}, f, Dumper=Dumper, sort_keys=False, width=120, allow_unicode=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", default=os.environ.get("LAYOUTSIM_CALIBRATION_SRC"),
                    help="the directory of the calibration records (default: $LAYOUTSIM_CALIBRATION_SRC)")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--kept-out", action="store_true", help="print the rows left out, with reasons")
    a = ap.parse_args()
    if not a.src:
        ap.error("give the calibration records' directory with --src DIR (or set LAYOUTSIM_CALIBRATION_SRC)")

    runs, kept_out, superseded = convert_foundry(a.src)
    write_runs(os.path.join(a.out, "llm_foundry.yaml"),
               "LLM Foundry (MosaicML) MPT training throughput, BF16 rows", "llm_foundry.yaml", runs)
    mb_runs, mb_out = convert_mb(a.src)
    write_runs(os.path.join(a.out, "megatron_bridge.yaml"),
               "NVIDIA Megatron-Bridge pre-training measurements the simulator can express", "megatron_bridge.yaml", mb_runs)
    by_name = {r["name"]: r for r in runs + mb_runs}
    write_runs(os.path.join(a.out, "subset.yaml"),
               "Validation subset for the CTest validation_subset (rows copied from llm_foundry.yaml and megatron_bridge.yaml)",
               "llm_foundry.yaml and megatron_bridge.yaml", [by_name[n] for n in SUBSET])
    print(f"llm_foundry: {len(runs)} runs, {len(kept_out)} kept out, {superseded} superseded rows not read")
    print(f"megatron_bridge: {len(mb_runs)} runs, {len(mb_out)} kept out")
    with open(os.path.join(a.out, "kept_out.txt"), "w") as f:
        f.write("# Rows of the calibration records (convert.py --src DIR) NOT in the validation set, with the reason.\n")
        f.write("# GENERATED by validation/convert.py. The 84 superseded_rows of llm_foundry.yaml are not listed\n")
        f.write("# (the maintainers replaced that table; see README.md).\n")
        for rid, why in kept_out + mb_out:
            f.write(f"{rid}: {why}\n")
    if a.kept_out:
        for rid, why in kept_out + mb_out:
            print(f"  {rid}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
