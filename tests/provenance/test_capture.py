"""`charter fixtures capture`: byte-identical reproduction, refusals, in-place digest updates."""

from __future__ import annotations

import re

import pytest

from .conftest import PROVENANCE, SHIPPED, edit, run


def _opt_in(stem: str):
    """A fixture whose upstream producer is in the opt-in `capture` extra (llama-cpp-python) is
    reproduced by the capture set (`make test-capture`, which installs the extra)."""
    if "llama-cpp-python" not in (PROVENANCE / f"{stem}.yaml").read_text():
        return stem
    return pytest.param(stem, marks=[pytest.mark.capture])


@pytest.mark.parametrize("stem", [_opt_in(s) for s in SHIPPED])
def test_capture_reproduces_the_shipped_file_byte_for_byte(capsys, tmp_path, stem):
    out_file = tmp_path / f"{stem}.npz"
    code, out, err = run(capsys, "fixtures", "capture", str(PROVENANCE / f"{stem}.yaml"), "-o", str(out_file))
    assert code == 0, out + err
    assert out_file.read_bytes() == (PROVENANCE / f"{stem}.npz").read_bytes()
    code, out, _ = run(capsys, "fixtures", "capture", str(PROVENANCE / f"{stem}.yaml"), "-o", str(out_file))
    assert code == 0 and out.startswith("unchanged ")


def test_capture_writes_a_missing_fixture_next_to_the_spec(capsys, tamper):
    spec = tamper("rmsnorm-seeded")
    original = spec.with_suffix(".npz").read_bytes()
    spec.with_suffix(".npz").unlink()
    code, out, err = run(capsys, "fixtures", "capture", str(spec))
    assert code == 0, out + err
    assert spec.with_suffix(".npz").read_bytes() == original
    assert "ok: 1 fixture captured" in out


def test_capture_refuses_a_version_mismatch_before_running_anything(capsys, tamper):
    spec = tamper("dequant-smollm2")
    spec.with_suffix(".npz").unlink()
    edit(spec, "version: 0.19.0", "version: 0.18.0")
    code, out, err = run(capsys, "fixtures", "capture", str(spec))
    assert code == 1
    assert re.findall(r"(FIXTURE_[A-Z]+) ", out) == ["FIXTURE_VERSION"]
    assert "pinned gguf==0.18.0, installed 0.19.0" in out and "nothing written" in err
    assert not spec.with_suffix(".npz").exists()


def test_capture_refuses_changed_digests_unless_asked(capsys, tamper):
    spec = tamper("router-topk-ties")
    original_spec = spec.read_text()
    original_npz = spec.with_suffix(".npz").read_bytes()
    digest = re.search(r"sha256: ([0-9a-f]{64})", original_spec).group(1)
    stale = "f" * 64
    # Two stale digests, one of them quoted: both are rewritten, quotes and comments kept.
    edit(spec, f"sha256: {digest}", f"sha256: {stale}  # keep this comment")
    last = re.findall(r"sha256: ([0-9a-f]{64})", original_spec)[-1]
    edit(spec, f"sha256: {last}", f'sha256: "{stale}"')
    spec.with_suffix(".npz").write_bytes(b"old")
    code, out, _ = run(capsys, "fixtures", "capture", str(spec))
    assert code == 1 and re.findall(r"(FIXTURE_[A-Z]+) ", out) == ["FIXTURE_DIGEST", "FIXTURE_DIGEST"]
    assert spec.with_suffix(".npz").read_bytes() == b"old"  # nothing written
    code, out, _ = run(capsys, "fixtures", "capture", str(spec), "--update-digests")
    assert code == 0 and "updated digests of logits, topk_weights" in out
    expected = original_spec.replace(f"sha256: {digest}", f"sha256: {digest}  # keep this comment", 1)
    expected = expected.replace(f"sha256: {last}", f'sha256: "{last}"')
    assert spec.read_text() == expected
    assert spec.with_suffix(".npz").read_bytes() == original_npz
    code, _, _ = run(capsys, "fixtures", "verify", str(spec))
    assert code == 0


def test_capture_refuses_outputs_that_do_not_fit_their_label(capsys, tamper):
    spec = tamper("dequant-smollm2")
    edit(spec, "    dtype: float32\n    shape: [2304]", "    dtype: float64\n    shape: [2304]")
    code, out, _ = run(capsys, "fixtures", "capture", str(spec))
    assert code == 1 and re.findall(r"(FIXTURE_[A-Z]+) ", out) == ["FIXTURE_DTYPE"]
    assert "q8_0_oracle.dtype: expected float64, got float32" in out


def test_capture_reports_a_failing_producer(capsys, tamper):
    spec = tamper("router-topk-ties")
    edit(spec, "    shape: [4, 512]", "    shape: [4, 256]")
    code, out, _ = run(capsys, "fixtures", "capture", str(spec))
    assert code == 1 and re.findall(r"(FIXTURE_[A-Z]+) ", out) == ["FIXTURE_CAPTURE"]
    assert "router_tie_logits makes shape (4, 512)" in out


def test_capture_checks_the_pinned_file_it_derives_from(capsys, tamper, monkeypatch, tmp_path):
    import charter.admission.locate

    spec = tamper("dequant-smollm2")
    impostor = tmp_path / "impostor.gguf"
    impostor.write_bytes(b"GGUF" + bytes(64))
    monkeypatch.setattr(charter.admission.locate, "locate", lambda source, spec_dir: impostor)
    code, out, _ = run(capsys, "fixtures", "capture", str(spec))
    assert code == 1 and re.findall(r"(FIXTURE_[A-Z]+) ", out) == ["FIXTURE_SOURCE"]
    assert "the pinned file is sha256:b179c952" in out


def test_output_needs_exactly_one_spec(capsys, tmp_path):
    code, _, err = run(capsys, "fixtures", "capture", str(PROVENANCE), "-o", str(tmp_path / "x.npz"))
    assert code == 2 and "exactly one" in err


def test_yaml_edits_are_exact_or_refused():
    from charter.diagnostics import Location
    from charter.provenance.yamledit import Edit, EditError, apply

    text = "a: 1\nsha256: abc  # note\nq: 'abc'\n"
    assert apply(text, [Edit(Location("f", 2, 9), "abc", "def")]) == "a: 1\nsha256: def  # note\nq: 'abc'\n"
    assert apply(text, [Edit(Location("f", 3, 4), "abc", "def")]) == "a: 1\nsha256: abc  # note\nq: 'def'\n"
    assert apply(text, [Edit(Location("f", 2, 9), "abc", "123")]) == 'a: 1\nsha256: "123"  # note\nq: \'abc\'\n'
    with pytest.raises(EditError):
        apply(text, [Edit(Location("f", 2, 8), "abc", "def")])
    with pytest.raises(EditError):
        apply(text, [Edit(Location("f", 9, 1), "abc", "def")])
    with pytest.raises(EditError):
        apply("sha256: abcd\n", [Edit(Location("f", 1, 9), "abc", "def")])  # a prefix is not the value
