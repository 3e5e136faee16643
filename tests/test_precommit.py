"""The pre-commit hooks (.pre-commit-hooks.yaml, Note [Changed files] in charter.precommit).

The hooks run with the real pre-commit (the `test` extra pins it) in a temporary git repository.
The default set runs the shipped hooks' own selection (`types`, `files`, `pass_filenames`) as
`repo: local` hooks with `language: system` over the charter installed here; the slow set lets
pre-commit install charter from this repository (`pre-commit try-repo`, which builds the C++
extension) and run the shipped file as it is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from charter.cli import main
from charter.precommit import looks_like_contract
from tests.conftest import ROOT

HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
WORKFLOW = "name: ci\non: push\njobs: {}\n"  # `on` is ambiguous to charter's strict YAML


def test_the_shipped_hooks():
    by_id = {h["id"]: h for h in HOOKS}
    assert sorted(by_id) == ["charter-check", "charter-generate-check"]
    assert by_id["charter-check"]["entry"] == "charter check-changed"
    assert by_id["charter-check"]["types"] == ["yaml"] and "pass_filenames" not in by_id["charter-check"]
    assert by_id["charter-generate-check"]["entry"] == "charter generate --check"
    assert by_id["charter-generate-check"]["pass_filenames"] is False
    assert all(h["language"] == "python" for h in HOOKS)  # pre-commit installs charter from the repository


@pytest.mark.parametrize("text, contract", [
    ("charter: 1\nkind: model\n", True),
    ("# comment\n\nkind: artifact\nid: x\n", True),  # lost its `charter: 1`: still refused, SPEC_VERSION
    ("kind: 'bundle'  # a folder\n", True),
    ('"charter": 1\n', True),
    ("{charter: 1, kind: model}\n", True),
    ("# yaml-language-server: $schema=../../schemas/text.schema.json\nid: x\n", True),
    ("charter: 1\nkind: model\n  bad: indentation\n", True),  # a syntax error is still a contract
    (WORKFLOW, False),
    ("apiVersion: v1\nkind: Deployment\n", False),
    ("contract: ../specs/artifacts/x.yaml\nonly: artifact\n", False),  # a battery file
    ("repos:\n  - repo: local\n    charter: 1\n", False),  # not a top-level key
    ("", False),
])
def test_what_looks_like_a_contract(tmp_path, text, contract):
    path = tmp_path / "f.yaml"
    path.write_text(text, "utf-8")
    assert looks_like_contract(path) is contract


def tree(root: Path) -> Path:
    """A contract tree of the tiny model and its GGUF profile, and a workflow file beside it."""
    for kind, name in (("models", "tiny-llama.yaml"), ("artifacts", "tiny-llama-gguf.yaml")):
        (root / "specs" / kind).mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "specs" / kind / name, root / "specs" / kind / name)
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yaml").write_text(WORKFLOW, "utf-8")
    return root


def test_check_changed_skips_other_yaml_and_checks_what_refers_to_a_changed_model(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tree(tmp_path))
    model, workflow = "specs/models/tiny-llama.yaml", ".github/workflows/ci.yaml"
    assert main(["check-changed", workflow]) == 0
    assert capsys.readouterr().out == "ok: no contract among 1 file(s)\n"
    assert main(["check-changed", workflow, model]) == 0
    assert capsys.readouterr().out == "ok: 1 changed contract(s) and 1 that refer to them valid; 1 other file(s) skipped\n"
    # Renaming a constant breaks the artifact contract, which the commit does not touch.
    path = Path(model)
    path.write_text(path.read_text("utf-8").replace("  context: 512", "  context_length: 512"), "utf-8")
    assert main(["check-changed", workflow, model]) == 2
    out = capsys.readouterr().out
    assert "specs/artifacts/tiny-llama-gguf.yaml:" in out and "context" in out, out
    # A contract that lost its version line is refused, not skipped.
    broken = Path("specs/models/broken.yaml")
    broken.write_text("kind: model\nid: broken\n", "utf-8")
    assert main(["check-changed", str(broken)]) == 2
    assert capsys.readouterr().out == "specs/models/broken.yaml:1:1: SPEC_VERSION charter: expected charter: 1, got missing\n"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


def pre_commit(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PRE_COMMIT"))}
    env["PRE_COMMIT_HOME"] = str(repo.parent / "pre-commit-home")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # the charter installed here
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=repo, capture_output=True, text=True,
                          timeout=600, env=env)


def local_config(repo: Path) -> None:
    """The shipped hooks as `repo: local` hooks over the charter on PATH (docs/pre-commit.md)."""
    hooks = [{**h, "language": "system"} for h in HOOKS]
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": hooks}]}), "utf-8")


@pytest.fixture
def repo(tmp_path) -> Path:
    repo = tree(tmp_path / "repo")
    generate = subprocess.run([sys.executable, "-m", "charter", "generate"], cwd=repo, capture_output=True, text=True)
    assert generate.returncode == 0, generate.stdout + generate.stderr
    git(repo, "init", "-q", "-b", "main")
    return repo


def test_the_hooks_with_the_real_pre_commit(repo):
    local_config(repo)
    git(repo, "add", "-A")
    run = pre_commit(repo, "run")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "charter check" in run.stdout and "Passed" in run.stdout
    git(repo, "commit", "-q", "-m", "contracts")
    # An edited contract: the check passes, the generated code is stale (the manifest pins its bytes).
    artifact = repo / "specs" / "artifacts" / "tiny-llama-gguf.yaml"
    artifact.write_text(artifact.read_text("utf-8") + "# edited\n", "utf-8")
    git(repo, "add", "-A")
    run = pre_commit(repo, "run")
    assert run.returncode == 1
    assert "stale: generated/" in run.stdout, run.stdout
    # A broken contract fails the check, with its diagnostic; the workflow file is never a finding.
    artifact.write_text(artifact.read_text("utf-8").replace("id: tiny-llama-gguf", "id: tiny-llama-gguf\nbogus: 1"),
                        "utf-8")
    (repo / ".github" / "workflows" / "ci.yaml").write_text(WORKFLOW + "# edited\n", "utf-8")
    git(repo, "add", "-A")
    run = pre_commit(repo, "run", "charter-check")
    assert run.returncode == 1
    assert "specs/artifacts/tiny-llama-gguf.yaml:" in run.stdout and "SPEC_SCHEMA bogus: unknown key" in run.stdout
    assert "ci.yaml" not in run.stdout, run.stdout


@pytest.mark.slow
def test_pre_commit_installs_the_shipped_hooks_from_the_repository(repo):
    """`pre-commit try-repo` builds charter from this repository (its committed HEAD plus the work
    tree's changes) in pre-commit's own environment: minutes, for the C++ extension."""
    git(repo, "add", "-A")
    run = pre_commit(repo, "try-repo", str(ROOT), "charter-check", "--all-files")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "charter check" in run.stdout and "Passed" in run.stdout
