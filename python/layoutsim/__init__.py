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
           "default_scenario_yaml"]


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


def _overrides(overrides):
    """Ordered (KEY.PATH, YAML value) pairs."""
    if not overrides:
        return []
    items = overrides.items() if isinstance(overrides, Mapping) else overrides
    return [(str(key), _yaml_value(value)) for key, value in items]


def run(scenario=None, overrides=None):
    """Simulates one step; returns the JSON summary (`layoutsim run --json`) as a dict."""
    return json.loads(_call(_core.run, _source(scenario), _overrides(overrides)))


def check(scenario=None, overrides=None, text=False):
    """Plans the scenario without simulating (`layoutsim check`).

    Returns the plan as a dict: devices, stage_layers, groups, bubble_fraction_analytic,
    memory_capacity_bytes, memory_per_stage, max_peak_bytes, fits, params_total,
    model_flops_per_step, hardware_flops_per_step, warnings. With text=True, returns the
    text `layoutsim check` prints instead.
    """
    plan_json, plan_text = _call(_core.check, _source(scenario), _overrides(overrides))
    return plan_text if text else json.loads(plan_json)


def sweep(scenario, axes, overrides=None, jobs=0, dataframe=None):
    """Simulates the cartesian product of `axes` (first axis varying slowest), in parallel.

    axes maps KEY.PATH to a list of values (e.g. {"layout.microbatches": [4, 8, 16]});
    overrides apply to every point first. Returns one row per point, in order: the
    swept keys, step_time_s, tokens_per_s, mfu, bubble_fraction,
    bubble_fraction_analytic, max_peak_bytes, fits, error (None, or the message of a
    point whose scenario is invalid; its metrics are None). The rows are a pandas
    DataFrame when dataframe is True, or when it is None and pandas is importable;
    otherwise a list of dicts.
    """
    items = axes.items() if isinstance(axes, Mapping) else axes
    keys, values = [], []
    for key, vals in items:
        if isinstance(vals, (str, bytes)) or not hasattr(vals, "__iter__"):
            vals = [vals]
        keys.append(str(key))
        values.append([_yaml_value(v) for v in vals])
    rows = json.loads(_call(_core.sweep, _source(scenario), keys, values, _overrides(overrides), int(jobs)))
    if dataframe is False:
        return rows
    try:
        import pandas
    except ImportError:
        if dataframe:
            raise
        return rows
    return pandas.DataFrame(rows)


def default_scenario_yaml():
    """The built-in default scenario's YAML (what run() simulates with no scenario)."""
    return _core.default_scenario_yaml()
