"""The committed generated/ tree is what the contracts generate today (`charter generate --check`,
as CI runs it through make test). Any hand edit of a generated file, or a contract or template
changed without regenerating, fails here; this is also why the code-mutation gate need not mutate
the generated checkers in CI (docs/mutation.md)."""

from __future__ import annotations

import shutil

from charter.cli import main
from tests.conftest import ROOT


def test_the_committed_tree_is_current(capsys):
    assert main(["generate", "--check"]) == 0, capsys.readouterr()
    assert "up to date" in capsys.readouterr().out


def test_an_edited_generated_checker_is_out_of_date(tmp_path, capsys):
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    shutil.copytree(ROOT / "generated", tmp_path / "generated")
    checker = tmp_path / "generated" / "python" / "smollm2_135m_instruct_q4_1.py"
    checker.write_text(checker.read_text().replace("value=30,", "value=31,", 1))
    code = main(["generate", str(tmp_path / "specs"), "-o", str(tmp_path / "generated"), "--check"])
    out = capsys.readouterr()
    assert code != 0 and "out of date" in out.out + out.err, out
