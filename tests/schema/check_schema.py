#!/usr/bin/env python3
"""Validates JSON files against layoutsim's output schemas (docs/schema/).

Usage: check_schema.py SCHEMA_DIR NAME FILE...   (NAME: run, sweep, search, validate, diff, calibrate)

Every schema in SCHEMA_DIR is loaded into one registry by its $id, so a schema may refer to
another (a sweep entry's summary is a run summary). Prints the file, the JSON path and the
rule that failed for each mismatch; exits 1 when some file does not match.
"""
import json
import pathlib
import sys

import jsonschema

# Every schema's $id starts so; .invalid (RFC 2606) never resolves, so nothing is fetched.
ID_BASE = "https://layoutsim.invalid/schema/"


def load_schemas(directory):
    store = {}
    for path in sorted(pathlib.Path(directory).glob("*.schema.json")):
        schema = json.loads(path.read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        if schema.get("$id") != ID_BASE + path.name:
            raise SystemExit(f"{path}: $id must be {ID_BASE + path.name}")
        store[schema["$id"]] = schema
    return store


def validator(store, name):
    schema = store[ID_BASE + name + ".schema.json"]
    try:  # jsonschema >= 4.18 resolves references through the `referencing` package
        import referencing

        registry = referencing.Registry().with_resources(
            (uri, referencing.Resource.from_contents(s, default_specification=referencing.jsonschema.DRAFT202012)) for uri, s in store.items())
        return jsonschema.Draft202012Validator(schema, registry=registry)
    except ImportError:  # Debian 12's jsonschema 4.10
        resolver = jsonschema.RefResolver(base_uri=schema["$id"], referrer=schema, store=store)
        return jsonschema.Draft202012Validator(schema, resolver=resolver)


def check_files(store, name, files):
    """Number of files that do not match; prints up to ten mismatches of each."""
    check = validator(store, name)
    failed = 0
    for f in files:
        data = json.loads(pathlib.Path(f).read_text())
        errors = sorted(check.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
        for e in errors[:10]:
            path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path) or "(top)"
            print(f"{f}: {path}: {e.message}", file=sys.stderr)
        failed += bool(errors)
    return failed


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    failed = check_files(load_schemas(argv[1]), argv[2], argv[3:])
    if failed:
        print(f"check_schema: {failed} of {len(argv) - 3} files do not match the {argv[2]} schema", file=sys.stderr)
        return 1
    print(f"check_schema: {len(argv) - 3} files match the {argv[2]} schema")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
