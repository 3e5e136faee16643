"""What every command prints (docs/cli.md): paths shown from where the user stands, one JSON shape
per run checked against schemas/output.schema.json, the shared flags, and [tool.charter] settings
(issue 16, items 2-4)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from charter.cli import main
from tests.conftest import ROOT

INVALID = ROOT / "tests" / "invalid" / "expr_attribute.yaml"  # EXPR_SYNTAX at 12:6
TINY = "artifacts/tiny-llama-gguf.yaml"
OUTPUT_SCHEMA = json.loads((ROOT / "schemas" / "output.schema.json").read_text("utf-8"))


@pytest.fixture
def project(tmp_path):
    """A project as a user has one: pyproject.toml, specs/ (the tiny models and one bad contract)
    and a sub-folder to stand in."""
    shutil.copytree(ROOT / "specs" / "models", tmp_path / "specs" / "models",
                    ignore=lambda d, names: [n for n in names if not n.startswith("tiny")])
    (tmp_path / "specs" / "artifacts").mkdir()
    shutil.copy(ROOT / "specs" / TINY, tmp_path / "specs" / TINY)
    (tmp_path / "bad").mkdir()
    shutil.copy(INVALID, tmp_path / "bad" / "m.yaml")
    (tmp_path / "sub").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", "utf-8")
    return tmp_path


@pytest.fixture
def tiny_gguf(project):
    from charter.conforming import build
    from charter.contract.contractset import load_set

    cs = load_set([project / "specs" / TINY], [project / "specs"])
    return build(cs.artifacts["tiny-llama-gguf"], project / "sub" / "tiny.gguf")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def envelope(text: str) -> dict:
    """The one JSON object a run printed, valid against the published schema."""
    data = json.loads(text)
    jsonschema.validate(data, OUTPUT_SCHEMA)
    return data


# --- item 2: paths --------------------------------------------------------------------------


def test_check_shows_paths_from_the_working_directory(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code, out, _ = run(capsys, "check", "bad")
    assert code == 2 and out == "bad/m.yaml:12:6: EXPR_SYNTAX derived.x: attribute access is not allowed in a contract expression\n"
    monkeypatch.chdir(project / "bad")
    assert run(capsys, "check", ".")[1].startswith("m.yaml:12:6: EXPR_SYNTAX")
    monkeypatch.chdir(project / "sub")  # not below the working directory: absolute, as ruff prints it
    assert run(capsys, "check", "../bad")[1].startswith(f"{project / 'bad' / 'm.yaml'}:12:6: EXPR_SYNTAX")


def test_a_spec_inside_a_specs_tree_is_shown_from_where_the_user_stands(project, capsys, monkeypatch):
    """A spec's name is relative to its project (generated code states it); what is printed opens."""
    bad = project / "specs" / "models" / "bad.yaml"
    shutil.copy(INVALID, bad)
    monkeypatch.chdir(project / "specs" / "models")
    code, out, _ = run(capsys, "check", "bad.yaml")
    assert code == 2 and out.startswith("bad.yaml:12:6: EXPR_SYNTAX"), out
    monkeypatch.chdir(project)
    assert run(capsys, "check", "specs")[1].startswith("specs/models/bad.yaml:12:6: EXPR_SYNTAX")
    monkeypatch.chdir(project / "sub")
    assert run(capsys, "check", "../specs")[1].startswith(f"{bad}:12:6: EXPR_SYNTAX")


def test_admit_shows_the_contract_fact_from_where_the_user_stands(project, tiny_gguf, capsys, monkeypatch):
    contract = project / "specs" / TINY
    text = contract.read_text("utf-8")
    contract.write_text(text.replace("general.name: {type: string, value: Tiny Llama}",
                                     "general.name: {type: string, value: Tiny Llamas}"), "utf-8")
    assert "Tiny Llamas" in contract.read_text("utf-8")
    monkeypatch.chdir(project / "specs" / "artifacts")
    code, out, _ = run(capsys, "admit", "../../sub/tiny.gguf", "--contract", "tiny-llama-gguf.yaml")
    assert code == 1 and ": tiny-llama-gguf.yaml:" in out, out
    where = out.split(": ")[1]
    file, line, col = where.rsplit(":", 2)
    assert "Tiny Llamas" in (Path(file).read_text("utf-8").splitlines()[int(line) - 1])
    monkeypatch.chdir(project)
    code, out, _ = run(capsys, "admit", "sub/tiny.gguf", "--contract", f"specs/{TINY}", "--format", "json")
    (d,) = envelope(out)["diagnostics"]
    assert d["location"]["file"] == f"specs/{TINY}" and d["location"]["line"] == int(line)
    assert envelope(out)["result"]["diagnostic"]["location"] == d["location"]


# --- item 2: JSON shapes --------------------------------------------------------------------


def test_check_prints_one_shape_for_success_and_failure(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code, out, _ = run(capsys, "check", "specs", "--format", "json")
    ok = envelope(out)
    assert (code, ok["exit"], ok["command"], ok["diagnostics"]) == (0, 0, "check", [])
    assert ok["result"] == {"valid": True, "contracts": ["tiny-llama", "tiny-llama-gguf"]}
    code, out, _ = run(capsys, "--format", "json", "check", "bad")
    bad = envelope(out)
    assert (code, bad["exit"], bad["result"]["valid"]) == (2, 2, False)
    assert bad["diagnostics"][0]["location"] == {"file": "bad/m.yaml", "line": 12, "column": 6}


def test_admit_generate_and_schema_print_their_documented_shapes(project, tiny_gguf, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code, out, _ = run(capsys, "admit", "sub/tiny.gguf", "--contract", f"specs/{TINY}", "--json")
    data = envelope(out)  # --json is the old spelling of --format json
    assert code == 0 and data["result"]["admitted"] is True and data["diagnostics"] == []
    code, out, _ = run(capsys, "generate", "specs", "-o", "gen", "--check", "--format", "json")
    data = envelope(out)
    assert code == 1 and data["result"]["current"] is False and data["result"]["stale"]
    code, out, _ = run(capsys, "schema", "-o", "out", "--format", "json")
    assert code == 0 and "out/output.schema.json" in envelope(out)["result"]["written"]
    assert (project / "out" / "output.schema.json").read_text("utf-8") == json.dumps(OUTPUT_SCHEMA, indent=2,
                                                                                     sort_keys=True, ensure_ascii=False) + "\n"


def test_a_contract_error_under_json_is_the_same_object_with_no_result(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code, out, _ = run(capsys, "admit", "x.gguf", "--contract", "bad/m.yaml", "--format", "json")
    data = envelope(out)
    assert code == 2 and data["exit"] == 2 and data["result"] is None
    assert data["diagnostics"][0]["code"] == "EXPR_SYNTAX"


# --- item 3: flags --------------------------------------------------------------------------


def test_github_format_prints_workflow_annotations(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code, out, _ = run(capsys, "check", "bad", "--format", "github")
    assert code == 2
    assert out == ("::error file=bad/m.yaml,line=12,col=6::EXPR_SYNTAX derived.x: attribute access is not "
                   "allowed in a contract expression\n")


def test_github_annotations_escape_what_would_end_them():
    from charter.console import Output
    from charter.diagnostics import Code, Diagnostic, Location

    d = Diagnostic(Code.SPEC_INVALID, "k", "50% of\nit", location=Location("a,b:c.yaml", 3, 4))
    assert Output(fmt="github").github(d) == "::error file=a%2Cb%3Ac.yaml,line=3,col=4::SPEC_INVALID k: 50%25 of\\nit"


@pytest.mark.parametrize("argv", [["-q", "check", "bad"], ["check", "-q", "bad"], ["check", "bad", "--quiet"]])
def test_quiet_and_verbose_are_global_before_or_after_the_command(argv, project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code, out, err = run(capsys, *argv)
    assert code == 2 and out.startswith("bad/m.yaml:12:6") and err == ""  # no "1 error in contracts"


def test_verbose_before_the_command_reaches_admit(project, tiny_gguf, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code, _, err = run(capsys, "-v", "admit", "sub/tiny.gguf", "--contract", f"specs/{TINY}")
    assert code == 0 and err.startswith("checker: ")


@pytest.mark.parametrize("argv, message", [
    (["check", "--format", "xml"], "invalid choice: 'xml'"),
    (["admit", "--contract", "x.yaml", "--engine", "rust"], "invalid choice: 'rust'"),
    (["mutate", "--contract", "x.yaml", "-j", "0"], "expected at least 1 worker process"),
    (["mutate", "--contract", "x.yaml", "--report", "-", "--html", "-"], "only one output can be standard output"),
    (["mutate", "--contract", "x.yaml", "--report", "-", "--format", "json"], "only one output can be standard output"),
    (["generate", "-o", "-"], "names no folder"),
    (["check", "--colour", "always"], "unrecognized arguments"),
])
def test_bad_flags_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_colour_on_a_terminal_off_under_no_color_or_a_pipe(monkeypatch):
    from charter.console import wants_colour

    class Tty:
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert wants_colour("auto", Tty()) and not wants_colour("auto", open(os.devnull, "w"))
    monkeypatch.setenv("NO_COLOR", "1")
    assert not wants_colour("auto", Tty()) and wants_colour("always", open(os.devnull, "w"))
    assert not wants_colour("never", Tty())


def test_colour_paints_the_location_and_the_code(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    out = run(capsys, "check", "bad", "--color", "always")[1]
    assert out.startswith("\x1b[1mbad/m.yaml:12:6\x1b[0m: \x1b[1;31mEXPR_SYNTAX\x1b[0m derived.x")
    assert "\x1b" not in run(capsys, "check", "bad", "--color", "always", "--format", "json")[1]


def test_dash_writes_a_report_to_standard_output(capsys):
    from charter.console import Output, print_or_write, start

    start(Output("mutate", stdout=sys.stdout))
    print_or_write("-", '{"x": 1}\n')
    assert capsys.readouterr().out == '{"x": 1}\n' and not Path("-").exists()


# --- item 4: [tool.charter] -----------------------------------------------------------------


def test_tool_charter_names_the_specs_and_generated_folders(project, capsys, monkeypatch):
    (project / "specs").rename(project / "contracts")
    (project / "pyproject.toml").write_text('[tool.charter]\nspecs = "contracts"\ngenerated = "gen"\n', "utf-8")
    shutil.copy(INVALID, project / "contracts" / "models" / "bad.yaml")
    monkeypatch.chdir(project / "sub")
    code, out, _ = run(capsys, "check")  # no path: the configured folder, wherever the user stands
    assert code == 2 and out.startswith(f"{project / 'contracts' / 'models' / 'bad.yaml'}:12:6: EXPR_SYNTAX"), out
    (project / "contracts" / "models" / "bad.yaml").unlink()
    monkeypatch.chdir(project)
    assert run(capsys, "generate")[0] == 0 and (project / "gen" / "manifest.json").is_file()
    assert run(capsys, "generate", "--check")[0] == 0
    spec = (project / "gen" / "python" / "tiny_llama_gguf.py").read_text("utf-8")
    assert "contracts/artifacts/tiny-llama-gguf.yaml" in spec.splitlines()[0]  # named from the project root
    monkeypatch.chdir(project / "sub")
    assert run(capsys, "generate", "--check")[0] == 0  # the same names from a sub-folder
    assert run(capsys, "generate", "--check", "-o", "../elsewhere")[0] == 1  # the command line wins


@pytest.mark.parametrize("table, message", [
    ('specs = 3', "specs must be a non-empty string"),
    ('engine = "rust"', "engine must be one of python, cpp"),
    ('speks = "x"', "unknown key 'speks'"),
    ('[tool.charter.limits]\nyaml-depth = 0', "limits.yaml-depth must be a positive integer"),
    ('jobs = true', "jobs must be a positive integer"),
])
def test_a_bad_setting_is_a_usage_error(table, message, project, capsys, monkeypatch):
    (project / "pyproject.toml").write_text(f"[tool.charter]\n{table}\n", "utf-8")
    monkeypatch.chdir(project / "sub")
    with pytest.raises(SystemExit) as exc:
        main(["check"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err and str(project / "pyproject.toml") in err


def test_the_first_pyproject_toml_ends_the_search(project, tmp_path):
    from charter.config import discover

    (project / "pyproject.toml").write_text('[tool.charter]\nengine = "cpp"\n', "utf-8")
    inner = project / "sub" / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[project]\nname = 'inner'\n", "utf-8")
    assert discover(inner).engine == "python" and discover(project / "sub").engine == "cpp"
    assert discover(project / "sub").root == project


def test_the_configured_engine_and_limits_apply_and_the_command_line_wins(project, capsys, monkeypatch):
    (project / "pyproject.toml").write_text('[tool.charter]\nengine = "cpp"\n[tool.charter.limits]\n'
                                            'contract-bytes = 100\n', "utf-8")
    from charter.contract import yamlload

    for name in ("MAX_BYTES", "MAX_NODES", "MAX_DEPTH", "MAX_ALIASES"):  # restored after the test
        monkeypatch.setattr(yamlload, name, getattr(yamlload, name))
    monkeypatch.chdir(project)
    code, out, _ = run(capsys, "check", "specs")
    assert code == 2 and "YAML_TOO_LARGE" in out and "the limit is 100" in out
    from charter.cli import build_parser, configure
    from charter.config import discover

    args = build_parser("admit").parse_args(["admit", "--contract", "c.yaml"])
    configure(args, discover())
    assert args.engine == "cpp"
    args = build_parser("admit").parse_args(["admit", "--contract", "c.yaml", "--engine", "python"])
    configure(args, discover())
    assert args.engine == "python"


def test_finding_the_settings_costs_no_toml_parse_on_the_cold_path(project):
    """A pyproject.toml without a charter table is not parsed (Note [Finding the configuration]),
    even in a project named charter."""
    (project / "pyproject.toml").write_text("[project]\nname = 'charter'\n[tool.other]\nx = 1\n", "utf-8")
    probe = ("import sys; from charter.config import discover; c = discover(); "
             "print('tomllib' in sys.modules, c.file is not None)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=project / "sub", capture_output=True, text=True,
                         env=env, timeout=60).stdout.split()
    assert out == ["False", "True"]
    (project / "pyproject.toml").write_text('[tool.charter]\nengine = "python"\n', "utf-8")
    out = subprocess.run([sys.executable, "-c", probe], cwd=project / "sub", capture_output=True, text=True,
                         env=env, timeout=60).stdout.split()
    assert out == ["True", "True"]


# --- item 9: help texts ---------------------------------------------------------------------


def test_help_names_installed_docs_not_repository_paths(capsys, monkeypatch):
    """The docs path is printed whole on a narrow terminal: argparse once wrapped it at a hyphen
    of the path (a fresh clone under /tmp/charter-fresh-...)."""
    from charter.docs import docs_folder

    monkeypatch.setenv("COLUMNS", "30")
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert f"\n  {docs_folder()}\n" in out
    assert "installed with charter:" in " ".join(out.split())
    assert (docs_folder() / "cli.md").is_file()


def test_freeze_and_fixtures_print_their_documented_shapes(project, tiny_gguf, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code, out, _ = run(capsys, "freeze", "sub/tiny.gguf", "--id", "frozen", "-o", "out", "--format", "json")
    assert code == 0 and "out/artifacts/frozen.yaml" in envelope(out)["result"]["written"]
    code, out, _ = run(capsys, "fixtures", "verify", str(ROOT / "specs" / "provenance" / "rmsnorm-seeded.yaml"),
                       "--format", "json")
    data = envelope(out)
    assert (code, data["command"], data["result"]["verified"]) == (0, "fixtures verify", True)


def test_generate_check_annotates_stale_files_under_github(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code, out, _ = run(capsys, "generate", "specs", "-o", "gen", "--check", "--format", "github")
    assert code == 1 and out.startswith("::error file=gen/"), out


def test_check_changed_prints_the_check_shape(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code, out, _ = run(capsys, "check-changed", "bad/m.yaml", "--format", "github")
    assert code == 2 and out.startswith("::error file=bad/m.yaml,line=12,col=6::EXPR_SYNTAX"), out
    code, out, _ = run(capsys, "check-changed", "bad/m.yaml", "--format", "json")
    data = envelope(out)
    assert (data["command"], data["exit"], data["result"]["valid"]) == ("check-changed", 2, False)
