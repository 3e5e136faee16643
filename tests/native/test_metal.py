"""The Metal kernels under the C++ shim: they compile with g++ (syntax and, with the generated
headers, struct layout), and their bodies, called once per grid position on the CPU, agree with the
numpy oracles. No Metal compiler runs here; docs/native.md says what this does not prove."""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import importlib.util
import subprocess
from pathlib import Path

import numpy as np
import pytest

from charter.toolchain import compiler
from charter.codegen.metal import header_path, render_metal
from charter.codegen.metal.build import build_model, metal_kernels, metal_models
from charter.oracles import dequant, logits, rmsnorm
from charter.provenance import controls
from charter.contract.contractset import load_set

ROOT = Path(__file__).resolve().parents[2]
METAL = ROOT / "native" / "metal"
CS = load_set([ROOT / "specs"])
FLAGS = ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-Wno-attributes"]
C_TYPES = {"float32": "float", "int32": "int", "uint8": "uchar", "uint32": "uint"}


def model_flags(model_id: str) -> list[str]:
    ns = build_model(CS, model_id).namespace
    return [f"-DCHARTER_MODEL={ns}", f'-DCHARTER_MODEL_HEADER="{Path(header_path(model_id)).name}"']


@pytest.fixture(scope="session")
def headers(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("metal-headers")
    for rel, text in render_metal(CS):
        (out / Path(rel).name).write_text(text)
    return out


def compile_cpp(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([compiler(), *args], cwd=cwd, capture_output=True, text=True)


# --- generated headers --------------------------------------------------------------------------


def test_headers_compile_as_host_cpp_alone_and_together(headers, tmp_path):
    names = [Path(header_path(m)).name for m in metal_models(CS)]
    for group in [[n] for n in names] + [names]:
        src = tmp_path / "host.cpp"
        src.write_text("".join(f'#include "{n}"\n' for n in group) + "int main() { return 0; }\n")
        done = compile_cpp([*FLAGS, "-fsyntax-only", "-I", str(headers), str(src)], tmp_path)
        assert done.returncode == 0, done.stderr


def test_a_layout_that_disagrees_fails_to_compile(headers, tmp_path):
    """The static_asserts are live: claim 12 bytes for an 8-byte struct and the host build stops."""
    text = (headers / "qwen4exp.h").read_text()
    tampered = text.replace("sizeof(charter_metal::qwen4exp::rmsnorm::Args) == 8", "sizeof(charter_metal::qwen4exp::rmsnorm::Args) == 12")
    assert tampered != text
    (tmp_path / "qwen4exp.h").write_text(tampered)
    (tmp_path / "host.cpp").write_text('#include "qwen4exp.h"\n')
    done = compile_cpp([*FLAGS, "-fsyntax-only", "host.cpp"], tmp_path)
    assert done.returncode != 0 and "static assertion failed: rmsnorm::Args is 8 bytes in MSL" in done.stderr


def test_header_constants_are_the_model_contract(headers):
    text = (headers / "qwen4exp.h").read_text()
    q = CS.models["qwen4exp"]
    assert f"uint32_t logits_rows = {q.logits_rows}u;" in text
    assert f"uint32_t tokenizer_ids = {q.tokenizer_ids}u;" in text
    assert f"uint32_t valid_ids = {q.tokenizer_ids}u;  // attribute valid_ids = tokenizer_ids" in text
    assert "float rms_eps = 1e-05f;  // specs/models/smollm2-135m-instruct.yaml" in (headers / "smollm2-135m-instruct.h").read_text()


# --- MSL sources under the shim ------------------------------------------------------------------


SOURCES = sorted({(lc.contract.backends.metal.source, m) for lc in metal_kernels(CS) for m in lc.contract.models})


@pytest.mark.parametrize(("source", "model"), SOURCES, ids=[f"{Path(s).stem}-{m}" for s, m in SOURCES])
def test_metal_source_compiles_under_the_shim(headers, tmp_path, source, model):
    done = compile_cpp([*FLAGS, "-fsyntax-only", "-x", "c++", "-I", str(METAL), "-I", str(headers),
                        *model_flags(model), str(ROOT / source)], tmp_path)
    assert done.returncode == 0, done.stderr


def test_every_metal_backend_names_a_kernel_function_in_its_source():
    for lc in metal_kernels(CS):
        metal = lc.contract.backends.metal
        assert f"kernel void {metal.function}(" in (ROOT / metal.source).read_text(), lc.id


# --- kernel bodies on the CPU ----------------------------------------------------------------------


class Shim:
    """One model's Metal kernels, compiled with the shim into a shared library, run over a grid."""

    def __init__(self, model_id: str, library: Path) -> None:
        self.view = build_model(CS, model_id)
        self.lib = ctypes.CDLL(str(library))
        self.kernels = {lc.contract.backends.metal.function: lc.contract for lc in metal_kernels(CS)
                        if model_id in lc.contract.models}

    def args_type(self, function: str):
        k = self.kernels[function]
        view = next(v for v in self.view.kernels if v.functions == function)
        return type(f"{function}_args", (ctypes.Structure,),
                    {"_fields_": [(f.name, getattr(ctypes, f.ctypes)) for f in view.fields]}), view, k

    def layout(self, function: str) -> list[int]:
        _, view, _ = self.args_type(function)
        fn = getattr(self.lib, f"charter_layout_{function}")
        fn.restype, fn.argtypes = ctypes.c_ulong, [ctypes.c_int]
        return [fn(i) for i in range(-1, len(view.fields))]

    def run(self, function: str, arrays: list[np.ndarray], grid: int, **fields) -> None:
        args_type, _, _ = self.args_type(function)
        args = args_type(**fields)
        buffers = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        fn = getattr(self.lib, f"charter_run_{function}")
        fn.restype, fn.argtypes = None, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]
        fn(buffers, ctypes.byref(args), grid)


def harness_source(model_id: str) -> str:
    ns = build_model(CS, model_id).namespace
    kernels = [lc.contract for lc in metal_kernels(CS) if model_id in lc.contract.models]
    lines = ['#include "charter_metal.h"', "#include CHARTER_MODEL_HEADER"]
    lines += [f'#include "{Path(s).name}"' for s in sorted({k.backends.metal.source for k in kernels})]
    lines.append('extern "C" {')
    for k in kernels:
        fn = k.backends.metal.function
        args = next(f"charter_metal::{ns}::{v.namespace}::Args" for v in build_model(CS, model_id).kernels
                    if v.functions == fn)
        params = [f"static_cast<const {C_TYPES[a.dtype]}*>(b[{i}])" for i, a in enumerate(k.inputs)]
        params += [f"static_cast<{C_TYPES[a.dtype]}*>(b[{len(k.inputs) + i}])" for i, a in enumerate(k.outputs)]
        fields = next(v for v in build_model(CS, model_id).kernels if v.functions == fn).fields
        lines.append(f"void charter_run_{fn}(void** b, const void* a, unsigned grid) {{")
        lines.append(f"  {args} args = *static_cast<const {args}*>(a);")
        lines.append(f"  for (unsigned g = 0; g < grid; ++g) {fn}({', '.join(params)}, args, g);")
        lines.append("}")
        lines.append(f"unsigned long charter_layout_{fn}(int i) {{")
        lines.append(f"  if (i < 0) return sizeof({args});")
        for n, f in enumerate(fields):
            lines.append(f"  if (i == {n}) return offsetof({args}, {f.name});")
        lines.append("  return ~0ul;")
        lines.append("}")
    lines.append("}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def shims(headers) -> dict[str, Shim]:
    cache = ROOT / "build" / "metal-shim"
    cache.mkdir(parents=True, exist_ok=True)
    out = {}
    for model_id in metal_models(CS):
        src = harness_source(model_id)
        inputs = src + "".join(p.read_text() for p in sorted(headers.iterdir()))
        inputs += "".join(p.read_text() for p in sorted(METAL.iterdir()))
        key = hashlib.sha256(inputs.encode()).hexdigest()[:16]
        lib = cache / f"{model_id}-{key}.so"
        with open(cache / f".{model_id}-{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # parallel workers build once
            if not lib.exists():
                work = cache / f"{model_id}-{key}-src"
                work.mkdir(exist_ok=True)
                (work / "harness.cpp").write_text(src)
                tmp = work / "lib.so"
                done = compile_cpp([*FLAGS, "-O2", "-ffp-contract=off", "-shared", "-fPIC", "-I", str(METAL),
                                    "-I", str(headers), *model_flags(model_id), "harness.cpp", "-o", str(tmp)], work)
                assert done.returncode == 0, done.stderr
                tmp.replace(lib)
        out[model_id] = Shim(model_id, lib)
    return out


def bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def labels(stem: str):
    path = ROOT / "generated" / "python" / "labels" / f"{stem}.py"
    spec = importlib.util.spec_from_file_location(f"metal_test_labels_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_struct_layout_matches_the_plan_and_ctypes(shims):
    for model_id, shim in shims.items():
        for view in shim.view.kernels:
            args_type, _, _ = shim.args_type(view.functions)
            got = shim.layout(view.functions)
            assert got == [view.size] + [f.offset for f in view.fields], (model_id, view.namespace)
            assert ctypes.sizeof(args_type) == view.size
            assert [getattr(args_type, f.name).offset for f in view.fields] == [f.offset for f in view.fields]


def grid_for(n: int, threadgroup: int = 32) -> int:
    """A dispatch rounds the grid up to whole threadgroups; the kernels must ignore the excess."""
    return max(threadgroup, -(-n // threadgroup) * threadgroup)


@pytest.mark.parametrize("model_id", ["smollm2-135m-instruct", "qwen4exp"])
@pytest.mark.parametrize("zero_centred", [False, True])
def test_rmsnorm_body_equals_oracle_over_the_grid(shims, model_id, zero_centred):
    hidden = CS.models[model_id].constants["hidden"]
    rows = 5
    x, w = controls.uniform(11, (rows, hidden)), controls.uniform(12, (hidden,))
    y = np.full((rows + 1, hidden), -7.25, dtype=np.float32)  # one row past the end stays untouched
    fn = "rmsnorm_zero_centred" if zero_centred else "rmsnorm"
    shims[model_id].run(fn, [x, w, y], grid_for(rows), rows=rows, eps=1e-5)
    want = (rmsnorm.rmsnorm_zero_centred if zero_centred else rmsnorm.rmsnorm)(x, w, 1e-5)
    assert bits_equal(y[:rows], want)
    assert (y[rows] == np.float32(-7.25)).all()


def test_rmsnorm_body_equals_seeded_crosschecks(shims):
    lab = labels("rmsnorm_seeded")
    for model_id, tag in (("smollm2-135m-instruct", "smollm2"), ("qwen4exp", "qwen4exp")):
        x, w = lab.load(f"x_{tag}").array, lab.load(f"w_{tag}").array
        eps = float(lab.load(f"eps_{tag}").array)
        y = np.empty_like(x)
        shims[model_id].run("rmsnorm", [x, w, y], grid_for(x.shape[0]), rows=x.shape[0], eps=eps)
        assert bits_equal(y, lab.require_class(f"y_{tag}", lab.INDEPENDENT_CROSSCHECK).array)


def test_masked_argmax_body_ignores_dominant_padding(shims):
    lab = labels("masked_argmax_padded")
    expected = lab.require_class("expected_ids", lab.CONTRACT_CONTROL).array
    q = CS.models["qwen4exp"]
    x = controls.padded_logits(248076, q.tokenizer_ids, q.logits_rows, expected.shape[0])
    ids = np.full(expected.shape[0] + 1, -1, dtype=np.int32)
    shims["qwen4exp"].run("masked_argmax", [x, ids], grid_for(x.shape[0]), tokens=x.shape[0])
    assert bits_equal(ids[:-1], expected) and ids[-1] == -1
    assert bits_equal(ids[:-1], logits.masked_argmax(x, q.tokenizer_ids))


def test_masked_argmax_body_equals_oracle_on_random_rows(shims):
    q = CS.models["qwen4exp"]
    x = controls.uniform(99, (7, q.logits_rows))
    x[:, q.tokenizer_ids:] = np.inf
    x[3, 10] = x[3, 20] = 5.0  # a tie: the lower id wins
    ids = np.empty(7, dtype=np.int32)
    shims["qwen4exp"].run("masked_argmax", [x, ids], grid_for(7), tokens=7)
    assert bits_equal(ids, logits.masked_argmax(x, q.tokenizer_ids)) and ids[3] == 10


@pytest.mark.parametrize("codec", ["q8_0", "q4_1"])
def test_dequant_body_equals_upstream_capture_and_oracle(shims, codec):
    lab = labels("dequant_smollm2")
    blocks = lab.load(f"{codec}_blocks").array
    y = np.empty((blocks.shape[0], 32), dtype=np.float32)
    shims["smollm2-135m-instruct"].run(f"dequantize_{codec}", [np.ascontiguousarray(blocks), y],
                                       grid_for(blocks.shape[0]), nblocks=blocks.shape[0])
    assert bits_equal(y, lab.require_class(f"{codec}_expected", lab.UPSTREAM_CAPTURE).array)
    width = 34 if codec == "q8_0" else 20
    raw = (controls.splitmix64(7, 300 * width) >> np.uint64(56)).astype(np.uint8).reshape(300, width)
    y = np.empty((300, 32), dtype=np.float32)
    shims["smollm2-135m-instruct"].run(f"dequantize_{codec}", [raw, y], grid_for(300), nblocks=300)
    assert bits_equal(y.reshape(-1), getattr(dequant, f"dequantize_{codec}")(raw))
