"""The battery's own guarantees: verdicts, the trace gate, and that a weakened generator fails it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from charter.cli import main
from charter.diagnostics import Code
from charter.mutation import report
from charter.mutation.mutant import Expect, Mutant, Verdict, judge
from charter.mutation.run import all_mutants, load_battery, run
from charter.contract.contractset import load_set
from tests.conftest import ROOT

SMOLLM2 = "specs/artifacts/smollm2-135m-instruct-q4_1.yaml"


def _mutant(expect):
    return Mutant("artifact", "metadata.x", "op", expect)


@pytest.mark.parametrize("admitted, stage, code, field, verdict", [
    (True, None, None, None, Verdict.SURVIVED),
    (False, "metadata", "METADATA_VALUE", "metadata.x", Verdict.KILLED),
    (False, "metadata", "METADATA_TYPE", "metadata.x", Verdict.REGRESSION),
    (False, "tensors", "METADATA_VALUE", "metadata.x", Verdict.REGRESSION),
    (False, "metadata", "METADATA_VALUE", "metadata.y", Verdict.REGRESSION),
])
def test_judge(admitted, stage, code, field, verdict):
    assert judge(_mutant(Expect.of(Code.METADATA_VALUE, "metadata.x")), admitted, stage, code,
                 field).verdict is verdict


def test_controls_and_any_rejection():
    assert judge(_mutant(None), True, None, None, None).verdict is Verdict.ADMITTED
    assert judge(_mutant(None), False, "layout", "LAYOUT_GAP", "t").verdict is Verdict.REFUSED
    assert judge(_mutant(Expect(None)), False, "container", "CONTAINER_COUNT", "x").verdict is Verdict.KILLED


@pytest.fixture(scope="module")
def smollm2_set():
    cs = load_set([ROOT / SMOLLM2], [ROOT / "specs"])
    assert cs.ok, cs.diagnostics
    return cs


def _leaf(outcomes, target):
    return [o for o in outcomes if o.mutant.target == target]


def test_a_diagnostic_citing_another_line_fails_the_battery(smollm2_set, smollm2_path, monkeypatch):
    """A generator that cites the line below llama.block_count's fact (Note [Location oracle]):
    its mutants are still rejected with the expected code and field, but are regressions."""
    from charter.contract import checks

    original = checks._values

    def misplaced(stage, facts):
        for c in original(stage, facts):
            moved = dataclasses.replace(c.at, line=c.at.line + 1) if c.key == "llama.block_count" else c.at
            yield dataclasses.replace(c, at=moved)

    monkeypatch.setattr(checks, "_values", misplaced)
    battery = load_battery(smollm2_set, "smollm2-135m-instruct-q4_1", smollm2_path)
    leaf = "artifact:metadata.keys.llama.block_count.value"
    outcomes = run(battery, [m for m in all_mutants(battery, "contract") if m.target == leaf])
    assert outcomes and all(o.verdict is Verdict.REGRESSION for o in outcomes)
    assert all(o.code == "METADATA_VALUE" and "cites specs/artifacts/smollm2-135m-instruct-q4_1.yaml:35:24" in o.detail
               for o in outcomes), [o.detail for o in outcomes]


def test_weakened_generator_fails_the_battery_naming_the_key(smollm2_set, smollm2_path, monkeypatch):
    """A generator that drops the value check of one metadata key: its contract mutants survive."""
    from charter.contract import checks

    original = checks._values

    def weakened(stage, facts):
        return original(stage, [m for m in facts if m.key != "llama.block_count"])

    monkeypatch.setattr(checks, "_values", weakened)
    battery = load_battery(smollm2_set, "smollm2-135m-instruct-q4_1", smollm2_path)
    mutants = [m for m in all_mutants(battery, "contract")
               if m.target == "artifact:metadata.keys.llama.block_count.value"]
    outcomes = run(battery, mutants)
    assert outcomes and all(o.verdict is Verdict.SURVIVED for o in outcomes)
    lines, ok = report.trace(outcomes)
    assert not ok
    assert "artifact:metadata.keys.llama.block_count.value" in lines[0]
    assert any("FAIL" in line for line in lines)


def test_unweakened_leaf_is_killed_and_traced(smollm2_set, smollm2_path):
    battery = load_battery(smollm2_set, "smollm2-135m-instruct-q4_1", smollm2_path)
    mutants = [m for m in all_mutants(battery, "contract")
               if m.target in ("artifact:metadata.keys.llama.block_count.value", "model:constants.layers")]
    outcomes = run(battery, mutants)
    assert all(o.verdict is Verdict.KILLED for o in outcomes), [(o.mutant.id, o.verdict, o.detail) for o in outcomes]
    lines, ok = report.trace(outcomes)
    assert ok
    text = "\n".join(lines)
    assert "check_metadata: ctx.value('llama.block_count')" in text


def test_mutate_cli_writes_json_and_prints_the_summary(tmp_path, capsys):
    out = tmp_path / "battery.json"
    code = main(["mutate", "--contract", "specs/artifacts/tiny-llama-safetensors.yaml", "--only", "artifact",
                 "-j", "1", "-q", "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    data = json.loads(out.read_text())
    s = data["config"]["summary"]
    assert f"{s['rejected']}/{s['mutants']} mutations rejected" in printed
    assert s["passed"] and s["mutants"] >= 50 and s["controls_admitted"] >= 2


# --- a broken baseline stops the battery (like Stryker's failing initial test run) ----------------


@pytest.fixture(scope="module")
def broken_baselines(tmp_path_factory, smollm2_path):
    """SmolLM2 header copies the SmolLM2 contract does not admit: one metadata value changed
    (llama.block_count 30 -> 31, the metadata stage), and the header cut short (the container)."""
    from charter.formats.gguf import read_gguf

    h = read_gguf(smollm2_path)
    with open(smollm2_path, "rb") as f:
        head = bytearray(f.read(h.data_offset))
    folder = tmp_path_factory.mktemp("broken")
    at = h.kvs["llama.block_count"].value_offset
    edited = folder / "block-count-31.gguf"
    head[at:at + 4] = (31).to_bytes(4, "little")
    with open(edited, "wb") as f:
        f.write(head)
        f.truncate(h.file_size)
    cut = folder / "cut.gguf"
    cut.write_bytes(bytes(head[:1000]))
    return {"metadata": edited, "container": cut}


def _admit_line(capsys, artifact) -> str:
    assert main(["admit", str(artifact), "--contract", SMOLLM2]) == 1
    return capsys.readouterr().out


@pytest.mark.parametrize("engine", ["python", "both"])
@pytest.mark.parametrize("stage", ["metadata", "container"])
def test_broken_baseline_stops_before_any_mutant(capsys, monkeypatch, broken_baselines, stage, engine):
    from charter.mutation import run as run_module

    artifact = broken_baselines[stage]
    expected = _admit_line(capsys, artifact)
    assert expected.startswith(f"rejected at {stage}: ")

    def no_mutant_runs(*args, **kwargs):
        raise AssertionError("a mutant ran on a broken baseline")

    monkeypatch.setattr(run_module, "run", no_mutant_runs)
    monkeypatch.setattr(run_module, "prepare_cpp", no_mutant_runs)
    code = main(["mutate", "--contract", SMOLLM2, "--artifact", str(artifact), "-j", "1", "--engine", engine])
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    assert out == expected  # the baseline's diagnostic, printed as admit prints it, and nothing else
    assert f"does not admit {artifact}: no mutant was run" in err and "Traceback" not in err


def test_broken_baseline_is_one_collection_error_of_the_plugin(tmp_path, broken_baselines):
    """The pytest plugin: one clean error quoting the baseline's rejection, no item per mutant."""
    import subprocess
    import sys

    artifact = broken_baselines["metadata"]
    spec = tmp_path / "broken.battery.yaml"
    spec.write_text(f"contract: {ROOT / SMOLLM2}\nartifact: {artifact}\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(spec)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 2, out  # pytest: errors during collection
    assert "1 error" in out and "passed" not in out and "failed" not in out, out
    assert out.count("ERROR collecting") == 1, out
    assert "METADATA_VALUE metadata.llama.block_count: expected 30, got 31" in out, out
    assert "Traceback" not in out, out
