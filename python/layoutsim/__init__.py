"""layoutsim: simulate LLM training parallelism layouts on GPU clusters.

The Python face of the C++ API (tools/api/layoutsim.hpp); the numbers and the JSON are the
`layoutsim` command's own.

    import layoutsim
    summary = layoutsim.run("scenarios/tp8-in-node.yaml", overrides={"layout.microbatches": 8})
    print(summary["step_time_s"], summary["mfu"])

A scenario is a path (str or os.PathLike), YAML text, a dict (the YAML document as
Python values), or None for the built-in default. Overrides map KEY.PATH to a value: a
str is read as YAML (as `--set KEY=VALUE` reads it), anything else is converted with
json (JSON is YAML). Every user error (an invalid scenario, a bad option) raises
ScenarioError (a ValueError) whose message holds one located error per line:
FILE:LINE:COL: error: KEY.PATH: ...; a scenario file that does not exist raises
ScenarioFileNotFoundError, both a ScenarioError and a FileNotFoundError. A failure
inside layoutsim (a bug) raises InternalError (a RuntimeError).
"""

import json
import os
from collections.abc import Mapping

from ._core import InternalError, ScenarioError, __version__
from . import _core

__all__ = ["__version__", "ScenarioError", "ScenarioFileNotFoundError", "InternalError", "run", "check", "sweep",
           "search", "validate", "calibrate", "diff", "trace", "to_dataframe", "default_scenario_yaml"]


class ScenarioFileNotFoundError(ScenarioError, FileNotFoundError):
    """A scenario path that names no file; the message is the loader's."""


def _call(native, source, *args):
    """Calls a _core function on a (kind, yaml, name) source; a missing scenario file
    becomes ScenarioFileNotFoundError."""
    try:
        return native(*source, *args)
    except ScenarioError as err:
        kind, _, name = source
        if kind == "file" and not os.path.exists(name):
            raise ScenarioFileNotFoundError(str(err)) from None
        raise


def _yaml_value(value):
    """A value as the YAML text of an override: a str is already YAML."""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _source(scenario):
    """(kind, yaml, name) for _core: builtin, file (name = path) or text."""
    if scenario is None:
        return ("builtin", "", "<default>")
    if isinstance(scenario, os.PathLike):
        return ("file", "", os.fspath(scenario))
    if isinstance(scenario, Mapping):
        # JSON is YAML's flow syntax, so the loader reads it as it reads a file; errors
        # are located in this one-line text, named <dict>.
        return ("text", json.dumps(scenario), "<dict>")
    if isinstance(scenario, str):
        # A path names one line and no YAML mapping; anything else is YAML text. A
        # missing file is reported by the loader as a ScenarioError.
        if "\n" not in scenario and (os.path.exists(scenario) or ":" not in scenario):
            return ("file", "", scenario)
        return ("text", scenario, "<text>")
    raise TypeError(f"layoutsim: scenario must be a path, YAML text, a dict or None, not {type(scenario).__name__}")


def _pick(scenario, path, text):
    """The scenario argument: at most one of scenario, path= and text=; path= is always
    a file and text= always YAML, where a bare scenario string is told apart by guessing."""
    given = [x is not None for x in (scenario, path, text)]
    if sum(given) > 1:
        raise TypeError("layoutsim: give one of scenario, path= or text=")
    if path is not None:
        return ("file", "", os.fspath(path))
    if text is not None:
        return ("text", str(text), "<text>")
    return _source(scenario)


def _overrides(overrides):
    """Ordered (KEY.PATH, YAML value) pairs."""
    if not overrides:
        return []
    items = overrides.items() if isinstance(overrides, Mapping) else overrides
    return [(str(key), _yaml_value(value)) for key, value in items]


def run(scenario=None, overrides=None, *, path=None, text=None, split=False):
    """Simulates one step of a scenario (`layoutsim run --json`).

    Parameters
    ----------
    scenario : str, os.PathLike, dict or None
        A path, YAML text, the YAML document as a dict, or None for the built-in default.
    overrides : dict or list of (key, value), optional
        KEY.PATH -> value, applied in order as `--set KEY=VALUE`.
    path, text : optional
        Instead of `scenario`: a file path, or YAML text (no guessing).
    split : bool, optional
        As `layoutsim run --split`: one more simulation, and the summary's `step_split`
        (the step as micro-batches x per_microbatch_s + fixed_s).

    Returns
    -------
    dict
        The JSON summary (README "JSON reference"): step_time_s, step_time_band_s,
        tokens_per_s, mfu, hfu, bubble_fraction, stages, comm (per axis), links,
        memory (per stage, fits, verdict), warnings, engine, and the rest.
    """
    return json.loads(_call(_core.run, _pick(scenario, path, text), _overrides(overrides), bool(split)))


def trace(scenario=None, overrides=None, file=None, devices=None, *, path=None, text=None):
    """Simulates one step and returns its Chrome trace (`layoutsim run --trace FILE`).

    Parameters
    ----------
    scenario, overrides, path, text
        As for run().
    file : str or os.PathLike, optional
        Write the trace there (atomically; gzip when the name ends in .gz) and return the
        path instead of the trace.
    devices : str or list of str, optional
        Which GPUs the trace draws, as `--trace-devices`: "auto" (the default: 8 of
        replica 0, one per stage, every perturbed device and every device on the
        critical path), "all", or GPU names such as "node0.gpu3".

    Returns
    -------
    dict or str
        The trace (Trace Event Format): {"traceEvents": [...], "displayTimeUnit": ...,
        "metadata": {...}}, one process per node, one thread per GPU stream, spans for
        compute, collectives, pipeline sends and receives; or `file` when given. Open it
        at https://ui.perfetto.dev (README "Opening a trace in Perfetto").
    """
    if devices is None:
        devices = []
    elif isinstance(devices, str):
        devices = [devices]
    out = _call(_core.trace, _pick(scenario, path, text), _overrides(overrides), [str(d) for d in devices],
                os.fspath(file) if file is not None else "")
    return out if file is not None else json.loads(out)


def check(scenario=None, overrides=None, text=False, *, path=None, yaml=None):
    """The layout report of a scenario, without simulating (`layoutsim check`).

    Parameters
    ----------
    scenario, overrides
        As for run(); `path=` / `yaml=` name a file or give YAML text explicitly.
    text : bool
        Return the text `layoutsim check` prints instead of the dict.

    Returns
    -------
    dict or str
        devices, stage_layers, groups, bubble_fraction_analytic, memory_capacity_bytes,
        memory_usable_bytes, memory_per_stage, max_peak_bytes, fits, verdict,
        params_total, model_flops_per_step, hardware_flops_per_step, warnings.
    """
    report_json, report_text = _call(_core.check, _pick(scenario, path, yaml), _overrides(overrides))
    return report_text if text else json.loads(report_json)


def sweep(scenario=None, axes=None, overrides=None, jobs=0, *, path=None, text=None):
    """Simulates the cartesian product of `axes` (first axis varying slowest), in parallel.

    Parameters
    ----------
    scenario, overrides, path, text
        As for run(); overrides apply to every point before the point's own values.
    axes : dict or list of (key, values)
        KEY.PATH -> list of values, e.g. {"layout.microbatches": [4, 8, 16]}.
    jobs : int
        Threads (0: one per hardware thread).

    Returns
    -------
    list of dict
        One row per point, in order, with the columns of `layoutsim sweep --csv`: the swept
        keys, global_batch (the sequences per step the point ran), step_time_s,
        tokens_per_s, mfu, bubble_fraction, bubble_fraction_analytic, max_peak_bytes, fits,
        with a training.tokens budget time_to_train_s and gpu_hours, with a price too cost,
        and error (None, or the message of a point whose scenario is invalid; its metrics
        are None). Pass it to to_dataframe() for a pandas DataFrame.
    """
    items = (axes or {}).items() if isinstance(axes, Mapping) or axes is None else axes
    keys, values = [], []
    for key, vals in items:
        if isinstance(vals, (str, bytes)) or not hasattr(vals, "__iter__"):
            vals = [vals]
        keys.append(str(key))
        values.append([_yaml_value(v) for v in vals])
    return json.loads(_call(_core.sweep, _pick(scenario, path, text), keys, values, _overrides(overrides), int(jobs)))


def to_dataframe(rows):
    """A pandas DataFrame of sweep() rows (or any list of flat dicts); needs pandas."""
    import pandas
    return pandas.DataFrame(list(rows))


def _axis_options(spec):
    """{"layout.tp": [1, 2]} or ["tp=1,2"] -> ["tp=1,2"], the --vary/--fix form."""
    if not spec:
        return []
    if isinstance(spec, Mapping):
        out = []
        for key, vals in spec.items():
            if isinstance(vals, (str, bytes)) or not hasattr(vals, "__iter__"):
                vals = [vals]
            out.append(f"{key}=" + ",".join(_yaml_value(v) for v in vals))
        return out
    return [str(x) for x in spec]


def search(scenario=None, overrides=None, vary=None, fix=None, objective="step_time", simulate_top=64, jobs=0, *,
           path=None, text=None):
    """Searches the layouts of a scenario's model, cluster and global batch (`layoutsim search --json`).

    Parameters
    ----------
    scenario, overrides, path, text
        As for run(): the base scenario.
    vary : dict or list of str, optional
        The values of an axis (`--vary`): {"cp": [1, 2]} or ["cp=1,2"]; axes: tp pp dp ep
        cp zero sp recompute mbs schedule v stage_layers placement global_batch tp_overlap
        dp_overlap (several batches need objective="tokens_per_s" or "cost"; {"v": ["all"]}
        and {"mbs": ["all"]}: every divisor, as `--whole-space` sets with the two switches).
    fix : dict or list of str, optional
        An axis pinned to one value (`--fix`): {"pp": 1} or ["pp=1"].
    objective : {"step_time", "tokens_per_s", "cost"}
        What the ranking minimises or maximises ("cost" needs training.gpu_hour_price).
    simulate_top : int
        Candidates simulated after the analytic ranking.
    jobs : int
        Threads (0: one per hardware thread).

    Returns
    -------
    dict
        scenario, devices, global_batch, seq_len, objective, memory_capacity_bytes,
        memory_usable_bytes, candidates (best first: index, layout, compact, step_time_s,
        tokens_per_s, mfu, peak_memory_bytes, headroom_bytes, ...), pareto (indices of the
        step-time / memory front), counts (candidates per stage of the search),
        explanation (why the best beats the best layout of other degrees, one line per part
        of the step: compute, bubble, exposed communication by axis, memory; "" when fewer
        than two such were simulated), estimate_check (the analytic estimate against the
        simulation: simulated, rank_correlation, mean_gap, mean_abs_gap), wall_s,
        analytic_wall_s, simulate_wall_s. A remedy
        candidate (a near miss of the memory rule with the out-of-memory warning's remedy)
        carries origin, e.g. "remedy of #12: layout.offload.optimizer: true".
    """
    return json.loads(_call(_core.search, _pick(scenario, path, text), _overrides(overrides), _axis_options(vary),
                            _axis_options(fix), str(objective), int(simulate_top), int(jobs)))


def _paths(files):
    if files is None:
        return []
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    return [os.fspath(f) for f in files]


def validate(runs=None, jobs=0, leave_out=None):
    """Simulates published runs and reports the errors (`layoutsim validate --json`).

    Parameters
    ----------
    runs : path or list of paths, optional
        Runs files (validation/README.md "Row format"); None: the shipped validation set
        of the source tree this package was built from.
    jobs : int
        Threads (0: one per hardware thread).
    leave_out : str, optional
        A group kind ("source", "framework", ...): leave-one-out statistics by its labels.

    Returns
    -------
    dict
        rows (name, measured and predicted step time, error, groups, memory), count, failed,
        mean_abs_error, max_abs_error, mean_error, worst, groups (per "kind:label"), memory
        (peak-memory error where the source prints it), memory_verdicts (how many rows'
        predicted peak fits, is tight or does not fit, and which do not), leave_out (when
        asked), series (the micro-batch series).
    """
    return json.loads(_core.validate(_paths(runs), int(jobs), leave_out or ""))


def calibrate(runs, fit=None, gpu=None, jobs=0, iterations=30, leave_out=None):
    """Fits GPU-profile constants to published runs (`layoutsim calibrate --json`).

    Parameters
    ----------
    runs : path or list of paths
        Runs files.
    fit : str or list of str, optional
        Constants to fit (None: the default set).
    gpu : str, optional
        Only the runs on this GPU preset.
    iterations : int
        Levenberg–Marquardt iterations at most.
    leave_out : str, optional
        "model" or a group kind: leave-one-out re-fits.

    Returns
    -------
    dict
        gpu, constants (name, value, bounds), start (the constants before), fit and before
        (error statistics after and before the fit), leave_one_out, iterations,
        evaluations.
    """
    if fit is not None and not isinstance(fit, str):
        fit = ",".join(fit)
    return json.loads(_core.calibrate(_paths(runs), fit or "", gpu or "", int(jobs), int(iterations), leave_out or ""))


def _summary_text(summary, default_name):
    """(JSON text, name) of a run() dict or a path to a `run --json` file."""
    if isinstance(summary, Mapping):
        return json.dumps(summary), default_name
    name = os.fspath(summary)
    with open(name, encoding="utf-8") as f:
        return f.read(), name


def diff(a, b):
    """Compares two run summaries side by side (`layoutsim diff --json`).

    Parameters
    ----------
    a, b : dict or path
        run() results or `layoutsim run --json` files.

    Returns
    -------
    dict
        a, b, scenario_a, scenario_b, rows (section, label, path, unit, a, b, change).
    """
    text_a, name_a = _summary_text(a, "a")
    text_b, name_b = _summary_text(b, "b")
    return json.loads(_core.diff(text_a, name_a, text_b, name_b))


def default_scenario_yaml():
    """The built-in default scenario's YAML (what run() simulates with no scenario)."""
    return _core.default_scenario_yaml()
