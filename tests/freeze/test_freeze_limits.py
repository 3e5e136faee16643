"""Freeze writes only contracts `charter check` loads (Note [Contract limits]): at each limit of
the loader (YAML nodes, file bytes, expanded tensors) a header just inside freezes and checks, one
just beyond is refused up front (exit 2, nothing written, the limit named). The limits are lowered
here so the headers stay small; the last test meets the real node limit."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from safetensors.numpy import save_file

from charter.cli import main
from charter.contract import resolve, yamlload
from charter.contract.yamldump import dump, node_count


def write_gguf(path, n: int):
    """`n` tensors whose names never fold (a leading zero is not a layer index)."""
    w = gguf.GGUFWriter(str(path), "llama")
    for i in range(n):
        w.add_tensor(f"extra.0{i}.weight", np.zeros((4, 1 + i % 3), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def freeze(capsys, artifact, out) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["freeze", str(artifact), "--id", "big", "-o", str(out)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err and "internal error" not in captured.err, captured.err
    return code, captured.out + captured.err


def check(capsys, out) -> int:
    capsys.readouterr()
    return main(["check", str(out / "artifacts" / "big.yaml")])


def artifact_nodes(tmp_path, n: int) -> int:
    """The YAML nodes of the artifact contract frozen from `n` tensors (frozen once, unlimited)."""
    path = write_gguf(tmp_path / f"probe{n}.gguf", n)
    assert main(["freeze", str(path), "--id", "probe", "-o", str(tmp_path / f"probe{n}")]) == 0
    text = (tmp_path / f"probe{n}" / "artifacts" / "probe.yaml").read_text("utf-8")
    return _composed(text)


def _composed(text: str) -> int:
    loader = yamlload._PureComposer(text)
    try:
        loader.get_single_node()
        return loader.nodes
    finally:
        loader.dispose()


@pytest.mark.parametrize("data", [{}, {"a": []}, {"a": {"b": [1, {"c": None}], "d": "x"}, "e": [[], {}]}])
def test_node_count_is_what_the_loader_composes(data):
    assert node_count(data) == _composed(dump(data))


def test_at_the_node_limit_freeze_and_check_agree(tmp_path, capsys, monkeypatch):
    limit = artifact_nodes(tmp_path, 40)
    monkeypatch.setattr(yamlload, "MAX_NODES", limit)
    code, text = freeze(capsys, write_gguf(tmp_path / "in.gguf", 40), tmp_path / "in")
    assert code == 0, text
    assert check(capsys, tmp_path / "in") == 0
    code, text = freeze(capsys, write_gguf(tmp_path / "over.gguf", 41), tmp_path / "over")
    assert code == 2, text
    assert f"more than the {limit:,} a contract may" in text and "nothing written" in text, text
    assert not (tmp_path / "over").exists()


def test_at_the_byte_limit_freeze_and_check_agree(tmp_path, capsys, monkeypatch):
    write_gguf(tmp_path / "a.gguf", 40)
    assert main(["freeze", str(tmp_path / "a.gguf"), "--id", "big", "-o", str(tmp_path / "probe")]) == 0
    size = (tmp_path / "probe" / "artifacts" / "big.yaml").stat().st_size
    monkeypatch.setattr(yamlload, "MAX_BYTES", size)
    code, text = freeze(capsys, tmp_path / "a.gguf", tmp_path / "in")
    assert code == 0, text
    assert check(capsys, tmp_path / "in") == 0
    monkeypatch.setattr(yamlload, "MAX_BYTES", size - 1)
    code, text = freeze(capsys, tmp_path / "a.gguf", tmp_path / "over")
    assert code == 2 and f"{size:,} bytes, more than the {size - 1:,} bytes" in text, text
    assert not (tmp_path / "over").exists()


def test_at_the_expanded_tensor_limit_freeze_and_check_agree(tmp_path, capsys, monkeypatch):
    """Folded rows stay small in YAML but expand: `model.layers.{i}.w` over 30 layers is 30."""
    monkeypatch.setattr(resolve, "MAX_EXPANDED_TENSORS", 31)
    for n, name in ((30, "in"), (31, "at"), (32, "over")):
        tensors = {f"model.layers.{i}.w": np.zeros((2, 2), np.float32) for i in range(n - 1)}
        save_file({**tensors, "lm_head.weight": np.zeros((2, 2), np.float32)}, str(tmp_path / f"{name}.safetensors"))
        code, text = freeze(capsys, tmp_path / f"{name}.safetensors", tmp_path / name)
        if n <= 31:
            assert code == 0, text
            assert check(capsys, tmp_path / name) == 0
        else:
            assert code == 2 and "would state 32 tensors, more than the 31" in text, text
            assert not (tmp_path / name).exists()


def test_beyond_the_real_node_limit_freeze_refuses_up_front(tmp_path, capsys):
    """About 11 nodes per listed tensor: 18,200 unfoldable tensors exceed 200,000 nodes. Freeze
    used to render the whole contract (tens of seconds) and fail in its self-check (exit 3)."""
    code, text = freeze(capsys, write_gguf(tmp_path / "big.gguf", 18_200), tmp_path / "out")
    assert code == 2, text
    assert "18,200 tensor rows" in text and f"more than the {yamlload.MAX_NODES:,} a contract may" in text, text
    assert not (tmp_path / "out").exists()
