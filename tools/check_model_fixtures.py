"""Checks the real-model fixtures in tests/fixtures/models and records their sha256 hashes.

The checks are of the files themselves, not of jaxonnx (which tests/test_real_models.py
tests): each ``.onnx`` has the op histogram and opset its manifest entry names, its
``.npz`` holds exactly the listed arrays with their dtypes and shapes, the arrays name the
graph's inputs, outputs and initializers, and onnxruntime (or onnx.reference, for a file
the manifest says onnxruntime cannot run) reproduces torch's outputs from the file, at
both shapes of a dynamic export, within the tests' tolerance.

When every file passes, ``sha256.json`` gets the hash of each ``.onnx``, ``.npz`` and of
``manifest.json``; ``tests/test_real_models.py::test_fixtures_are_the_checked_files``
checks that the files are still those. Run it after ``tools/export_fixtures.py``:

    python tools/check_model_fixtures.py            # check, then write sha256.json
    python tools/check_model_fixtures.py --no-write # check only

It needs onnxruntime (the ``test`` extra), not torch.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.reference
import onnxruntime

FOLDER = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "models"
HASHES = "sha256.json"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def hashed_files(folder: Path = FOLDER) -> list[Path]:
    """The files whose hashes ``sha256.json`` records: every model, its arrays, the manifest."""
    return sorted([*folder.glob("*.onnx"), *folder.glob("*.npz"), folder / "manifest.json"])


def op_histogram(model: onnx.ModelProto) -> dict[str, int]:
    """Node count per op type over the graph, its subgraphs and local functions (as the
    export script counts them); ops outside the default domain are written ``domain:Op``."""
    counts = collections.Counter()

    def visit(nodes):
        for node in nodes:
            counts[node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"] += 1
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    visit(attribute.g.node)
                for graph in attribute.graphs:
                    visit(graph.node)

    visit(model.graph.node)
    for function in model.functions:
        visit(function.node)
    return dict(sorted(counts.items()))


def close(actual, expected: np.ndarray, rtol: float, atol_scale: float) -> str | None:
    """None if ``actual`` is within the tests' tolerance of ``expected``, else why not."""
    actual = np.asarray(actual)
    if actual.shape != expected.shape:
        return f"shape {actual.shape}, torch's is {expected.shape}"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype}, torch's is {expected.dtype}"
    scale = max(float(np.max(np.abs(expected), initial=0.0)), np.finfo(np.float32).tiny)
    if not np.allclose(actual, expected, rtol=rtol, atol=atol_scale * scale, equal_nan=False):
        return f"largest difference {float(np.max(np.abs(actual - expected))):.3g} (scale {scale:.3g})"
    return None


def check(name: str, entry: dict, tolerance: dict, folder: Path = FOLDER) -> list[str]:
    """What is wrong with fixture ``name`` (nothing: an empty list)."""
    problems = []
    model = onnx.load(folder / f"{name}.onnx")
    with np.load(folder / f"{name}.npz") as data:
        arrays = {key: data[key] for key in data.files}

    def role(role_name):
        return {item["name"]: arrays[item["key"]] for item in entry["arrays"].get(role_name, [])}

    if op_histogram(model) != entry["op_histogram"]:
        problems.append(f"op histogram {op_histogram(model)} is not the manifest's")
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if opset != entry["opset"]:
        problems.append(f"opset {opset}, the manifest says {entry['opset']}")
    listed = [item for items in entry["arrays"].values() for item in items]
    if sorted(item["key"] for item in listed) != sorted(arrays):
        problems.append(f"the .npz holds {sorted(arrays)}, the manifest lists {sorted(i['key'] for i in listed)}")
        return problems
    for item in listed:
        value = arrays[item["key"]]
        if (str(value.dtype), list(value.shape)) != (item["dtype"], item["shape"]):
            problems.append(
                f"{item['key']}: {value.dtype}{list(value.shape)}, the manifest says {item['dtype']}{item['shape']}"
            )
    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = [i.name for i in model.graph.input if i.name not in initializers]
    if list(role("inputs")) != graph_inputs:
        problems.append(f"inputs {list(role('inputs'))}, the graph's are {graph_inputs}")
    if list(role("outputs")) != [o.name for o in model.graph.output]:
        problems.append(f"outputs {list(role('outputs'))}, the graph's are {[o.name for o in model.graph.output]}")
    if not set(role("param_gradients")) <= initializers:
        problems.append(f"param gradients of non-initializers {sorted(set(role('param_gradients')) - initializers)}")
    if not (entry["arrays"].get("input_gradients") or entry["arrays"].get("param_gradients")):
        problems.append("no gradient to check")
    if ("second_inputs" in entry["arrays"]) != entry["dynamic"]:
        problems.append("second inputs where the export is static, or none where it is dynamic")
    if problems:
        return problems

    if entry.get("checked_with") == "reference":
        # onnxruntime cannot run it (the manifest says why): onnx.reference checks the file.
        session = onnx.reference.ReferenceEvaluator(model)
    else:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    roles = [("inputs", "outputs")] + ([("second_inputs", "second_outputs")] if entry["dynamic"] else [])
    for inputs, outputs in roles:
        for got, (output, want) in zip(session.run(None, role(inputs)), role(outputs).items()):
            why = close(got, want, tolerance["rtol"], tolerance["atol_scale"])
            if why:
                problems.append(f"{session.__class__.__name__}, {outputs} {output!r}: {why}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="check only; leave sha256.json as it is")
    args = parser.parse_args(argv)
    manifest = json.loads((FOLDER / "manifest.json").read_text())
    exported = sorted(path.stem for path in FOLDER.glob("*.onnx"))
    failed = 0
    for name in exported:
        if name not in manifest["fixtures"]:
            print(f"{name}: not in manifest.json; re-run tools/export_fixtures.py", file=sys.stderr)
            failed += 1
            continue
        problems = check(name, manifest["fixtures"][name], manifest["tolerance"])
        print(f"{name}: {'ok' if not problems else 'FAILED'}")
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        failed += bool(problems)
    if failed:
        print(f"{failed} of {len(exported)} fixtures failed; sha256.json left as it is.", file=sys.stderr)
        return 1
    if not args.no_write:
        hashes = {path.name: sha256(path) for path in hashed_files()}
        (FOLDER / HASHES).write_text(json.dumps(hashes, indent=1) + "\n")
        print(f"{len(exported)} fixtures checked; wrote {FOLDER / HASHES} ({len(hashes)} files).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
