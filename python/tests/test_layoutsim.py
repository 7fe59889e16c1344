"""Tests of the layoutsim Python package against the `layoutsim` command.

Run by CTest (tests/CMakeLists.txt) with PYTHONPATH=build/python; the environment
names the command (LAYOUTSIM_BIN) and the scenarios folder (LAYOUTSIM_SCENARIOS).
Every expectation is exact: the package and the command run the same C++ code on the
same scenario, so the JSON summaries must be equal, not merely close.
"""

import json
import os
import pathlib
import re
import subprocess

import pytest

import layoutsim

BIN = os.environ.get("LAYOUTSIM_BIN", "build/tools/layoutsim")
SCENARIOS = pathlib.Path(os.environ.get("LAYOUTSIM_SCENARIOS", "scenarios"))


def cli_json(*args):
    """`layoutsim run ARGS --json -` parsed."""
    out = subprocess.run([BIN, "run", *args, "--json", "-"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_version_is_the_commands():
    out = subprocess.run([BIN, "--version"], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["layoutsim", layoutsim.__version__]


def test_default_scenario_equals_cli():
    summary = layoutsim.run(None, overrides={})
    assert summary == cli_json()
    assert summary["step_time_s"] > 0


def test_scenario_file_equals_cli():
    path = SCENARIOS / "tp8-in-node.yaml"
    cli = cli_json(str(path))
    assert layoutsim.run(str(path), overrides={}) == cli
    assert layoutsim.run(path)["step_time_s"] == cli["step_time_s"]  # os.PathLike


def test_yaml_text_and_dict_scenarios(tmp_path):
    # YAML text: the built-in default's own text simulates the same step.
    assert layoutsim.run(layoutsim.default_scenario_yaml())["step_time_s"] == layoutsim.run()["step_time_s"]
    # A dict: the same document written to a file (JSON is YAML) and run by the command.
    scenario = {"model": {"preset": "llama3-8b"}, "cluster": {"nodes": 1, "gpus_per_node": 8},
                "layout": {"tp": 2, "pp": 2, "dp": 2, "microbatches": 4}}
    path = tmp_path / "as_dict.yaml"
    path.write_text(json.dumps(scenario))
    summary = layoutsim.run(scenario)
    assert summary["step_time_s"] == cli_json(str(path))["step_time_s"]
    assert summary["devices"] == 8


def test_overrides_match_cli_set():
    path = str(SCENARIOS / "straggler.yaml")
    overridden = layoutsim.run(path, overrides={"layout.microbatches": 8})
    assert overridden == cli_json(path, "--set", "layout.microbatches=8")
    assert overridden["pipeline"]["microbatches"] == 8
    assert overridden["step_time_s"] != layoutsim.run(path)["step_time_s"]
    # A str value is YAML text, as after `--set KEY=`.
    assert layoutsim.run(path, overrides={"layout.microbatches": "8"}) == overridden


def test_split_equals_cli_split():
    path = str(SCENARIOS / "tp8-in-node.yaml")
    split = layoutsim.run(path, split=True)
    assert split == cli_json(path, "--split")
    assert "step_split" not in layoutsim.run(path)
    s = split["step_split"]
    assert s["microbatches"] == split["pipeline"]["microbatches"]
    # The line through the two steps: m × per micro-batch + fixed is the step.
    assert abs(s["microbatches"] * s["per_microbatch_s"] + s["fixed_s"] - split["step_time_s"]) < 1e-9 * split["step_time_s"]


def test_bad_scenario_raises_located_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  preset: llama3-8b\nlayout:\n  tp: many\n")
    with pytest.raises(layoutsim.ScenarioError) as err:
        layoutsim.run(str(bad))
    assert f"{bad}:4:7: error: layout.tp" in str(err.value)
    cli = subprocess.run([BIN, "run", str(bad)], capture_output=True, text=True)
    assert cli.returncode == 1 and str(err.value).strip() == cli.stderr.strip()  # the command's message

    with pytest.raises(layoutsim.ScenarioError) as err:
        layoutsim.run(None, overrides={"layout.tp": 3})
    assert re.search(r"--set:1:\d+: error: layout\.tp", str(err.value))

    with pytest.raises(layoutsim.ScenarioError) as err:
        layoutsim.run("model:\n  preset: llama3-8b\n  no_such_key: 1\n")
    assert re.search(r"<text>:3:3: error: model\.no_such_key", str(err.value))

    with pytest.raises(layoutsim.ScenarioError) as err:
        layoutsim.run(str(SCENARIOS / "no-such-file.yaml"))
    assert "no-such-file.yaml" in str(err.value)

    assert issubclass(layoutsim.ScenarioError, ValueError)


def test_check_returns_the_plan():
    path = str(SCENARIOS / "tp8-in-node.yaml")
    plan = layoutsim.check(path)
    summary = layoutsim.run(path)
    assert plan["devices"] == summary["devices"]
    assert plan["model_flops_per_step"] == summary["model_flops_per_step"]
    assert plan["bubble_fraction_analytic"] == summary["pipeline"]["bubble_fraction_analytic"]
    assert len(plan["stage_layers"]) == summary["pipeline"]["stages"]
    # Bytes per FLOP per axis come from the program: the run reports the same ratios.
    for axis in ("tp", "dp"):
        assert plan["comm"][axis]["bytes_per_flop"] == summary["comm"][axis]["bytes_per_flop"]
        assert plan["comm"][axis]["comm_to_compute"] == summary["comm"][axis]["comm_to_compute"]
        assert "exposed_s" not in plan["comm"][axis]
    check_text = subprocess.run([BIN, "check", path], check=True, capture_output=True, text=True).stdout
    assert layoutsim.check(path, text=True) == check_text


def test_sweep_returns_rows_in_order():
    path = str(SCENARIOS / "straggler.yaml")
    rows = layoutsim.sweep(path, {"layout.microbatches": [4, 8]})
    assert isinstance(rows, list)
    assert [row["layout.microbatches"] for row in rows] == [4, 8]
    for row in rows:
        expected = layoutsim.run(path, overrides={"layout.microbatches": row["layout.microbatches"]})
        assert row["step_time_s"] == expected["step_time_s"]
        assert row["mfu"] == expected["mfu"]
        assert row["error"] is None

    bad = layoutsim.sweep(path, {"layout.tp": [3]})
    assert bad[0]["step_time_s"] is None
    assert "layout.tp" in bad[0]["error"]


def test_sweep_rows_have_the_cli_csv_columns():
    # The global batch each point ran (dp 1, micro-batch size 1: the micro-batch count),
    # and with a token budget and a price the training columns, as `sweep --csv` has them.
    path = str(SCENARIOS / "straggler.yaml")
    overrides = {"training.tokens": "1T", "training.gpu_hour_price": "2 USD"}
    rows = layoutsim.sweep(path, {"layout.microbatches": [4, 8]}, overrides=overrides)
    sets = [arg for key, value in overrides.items() for arg in ("--set", f"{key}={value}")]
    csv = subprocess.run([BIN, "sweep", path, "--microbatches", "4,8", *sets, "--csv", "-", "--quiet"], check=True,
                         capture_output=True, text=True).stdout
    header = [column for column in csv.splitlines()[0].split(",") if column not in overrides]  # the CLI's --set are columns too
    assert [list(row) for row in rows] == [header, header]
    assert [row["global_batch"] for row in rows] == [4, 8]
    assert all(row["cost"] > 0 and row["time_to_train_s"] > 0 for row in rows)


def test_to_dataframe_when_pandas_is_importable():
    pandas = pytest.importorskip("pandas")
    frame = layoutsim.to_dataframe(layoutsim.sweep(str(SCENARIOS / "straggler.yaml"), {"layout.microbatches": [4, 8]}))
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame["layout.microbatches"]) == [4, 8]


def test_error_types():
    # Every user error is a ScenarioError; a missing file is also a FileNotFoundError.
    with pytest.raises(FileNotFoundError) as err:
        layoutsim.run(str(SCENARIOS / "no-such-file.yaml"))
    assert isinstance(err.value, layoutsim.ScenarioError)
    assert "no-such-file.yaml" in str(err.value)
    assert issubclass(layoutsim.ScenarioFileNotFoundError, layoutsim.ScenarioError)
    assert issubclass(layoutsim.InternalError, RuntimeError)
    assert not issubclass(layoutsim.InternalError, layoutsim.ScenarioError)


def test_path_and_text_are_explicit():
    path = SCENARIOS / "straggler.yaml"
    by_path = layoutsim.run(path=str(path))
    assert by_path == layoutsim.run(text=path.read_text())  # same bytes, other source name aside
    with pytest.raises(TypeError):
        layoutsim.run(str(path), path=str(path))
    # text= is never read as a path, even when it names a file.
    with pytest.raises(layoutsim.ScenarioError):
        layoutsim.run(text=str(path))


def test_search_equals_the_command():
    path = str(SCENARIOS / "tp8-in-node.yaml")
    args = ["--vary", "tp=1,2", "--fix", "pp=1", "--simulate-top", "2", "--jobs", "1"]
    out = subprocess.run([BIN, "search", path, *args, "--json", "-", "-q"], check=True, capture_output=True, text=True)
    def timeless(report):  # wall-clock fields differ run to run
        return {k: v for k, v in report.items() if not k.endswith("wall_s")}
    expected = timeless(json.loads(out.stdout))
    assert timeless(layoutsim.search(path, vary=["tp=1,2"], fix=["pp=1"], simulate_top=2, jobs=1)) == expected
    assert timeless(layoutsim.search(path, vary={"tp": [1, 2]}, fix={"pp": 1}, simulate_top=2, jobs=1)) == expected
    assert expected["estimate_check"]["simulated"] == sum(c["simulated"] for c in expected["candidates"])
    # The switches and `all` spell the same through Python.
    args = ["--vary", "tp_overlap=false,true", "--vary", "mbs=all", "--fix", "tp=2", "--fix", "pp=1", "--simulate-top", "2",
            "--jobs", "1"]
    out = subprocess.run([BIN, "search", path, *args, "--json", "-", "-q"], check=True, capture_output=True, text=True)
    got = layoutsim.search(path, vary={"tp_overlap": [False, True], "mbs": ["all"]}, fix={"tp": 2, "pp": 1}, simulate_top=2, jobs=1)
    assert timeless(got) == timeless(json.loads(out.stdout))
    assert {c["layout"]["tp_comm_overlap"] for c in got["candidates"]} == {False, True}


def test_validate_calibrate_and_diff_equal_the_command(tmp_path):
    runs = os.environ.get("LAYOUTSIM_VALIDATION", "validation") + "/corpus/subset.yaml"
    out = subprocess.run([BIN, "validate", runs, "--json", "-", "-q", "--jobs", "1"], check=True, capture_output=True,
                         text=True)
    assert layoutsim.validate(runs, jobs=1) == json.loads(out.stdout)

    a = layoutsim.run(str(SCENARIOS / "straggler.yaml"))
    b = layoutsim.run(str(SCENARIOS / "straggler.yaml"), overrides={"layout.microbatches": 8})
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    out = subprocess.run([BIN, "diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json", "-"], check=True,
                         capture_output=True, text=True)
    assert layoutsim.diff(tmp_path / "a.json", tmp_path / "b.json") == json.loads(out.stdout)
    assert layoutsim.diff(a, b)["rows"] == json.loads(out.stdout)["rows"]

    with pytest.raises(layoutsim.ScenarioError):
        layoutsim.calibrate(runs, fit="no_such_constant")


def test_json_bytes_equal_the_commands():
    # The native module returns the exact text `layoutsim run --json` writes.
    path = str(SCENARIOS / "straggler.yaml")
    out = subprocess.run([BIN, "run", path, "--json", "-"], check=True, capture_output=True, text=True).stdout
    assert layoutsim._core.run("file", "", path, []) == out


def test_trace_equals_the_commands(tmp_path):
    # The same bytes as `layoutsim run --trace FILE`, as a dict or written to a file
    # (gzip when the name ends in .gz); --trace-devices as `devices`.
    path = str(SCENARIOS / "straggler.yaml")
    cli_file = tmp_path / "cli.json"
    subprocess.run([BIN, "run", path, "--trace", str(cli_file), "-q"], check=True, capture_output=True)
    cli = json.loads(cli_file.read_text())
    assert layoutsim.trace(path) == cli
    gz = tmp_path / "py.json.gz"
    assert layoutsim.trace(path=path, file=gz) == str(gz)
    import gzip
    assert json.loads(gzip.decompress(gz.read_bytes())) == cli
    one = layoutsim.trace(path, devices="node0.gpu0")
    assert one["metadata"]["traced_devices"] == 1
    assert one["metadata"]["generator"] == "layoutsim " + layoutsim.__version__
    names = {e["args"]["name"].split()[0] for e in one["traceEvents"] if e.get("name") == "thread_name"}
    assert names == {"node0.gpu0", "critical"}
    with pytest.raises(layoutsim.ScenarioError):
        layoutsim.trace(path, devices=["node99.gpu0"])
