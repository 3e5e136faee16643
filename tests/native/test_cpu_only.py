"""CPU-only: a translation unit that includes the runtime and a generated checker compiles with
-Wall -Wextra -Werror -fno-exceptions, and its object references no Python, CUDA, HIP, Metal,
OpenCL or Vulkan symbol -- so an inference runtime can include it and reject before GPU work."""

from __future__ import annotations

import re
import subprocess

import pytest

from charter.toolchain import compiler
from charter.codegen.cpp import render_cpp_checkers

from .conftest import ROOT


FORBIDDEN = re.compile(r"\bPy|_Py|cuda|cublas|\bcu[A-Z]|hip[A-Z]|\bMTL|metal|Metal|\bcl[A-Z][a-z]|vk[A-Z]|nanobind",
                       re.IGNORECASE * 0)


@pytest.fixture(scope="module")
def object_file(contract_set, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cpu")
    (tmp / "cpp").mkdir()
    for path, text, _ in render_cpp_checkers(contract_set):
        (tmp / path).write_text(text)
    src = tmp / "runtime_uses_checker.cpp"
    src.write_text(
        '#include "cpp/smollm2-135m-instruct-q4_1.hpp"\n'
        '#include "cpp/tiny-llama-safetensors.hpp"\n'
        "// What an inference runtime does before any GPU work: admit the header, or refuse.\n"
        "bool charter_admit_gguf(const unsigned char* h, unsigned long n, unsigned long size) {\n"
        "  return charter::checkers::smollm2_135m_instruct_q4_1::admit(h, n, size).admitted;\n"
        "}\n"
        "bool charter_admit_st(const unsigned char* h, unsigned long n, unsigned long size) {\n"
        "  return charter::checkers::tiny_llama_safetensors::admit(h, n, size).admitted;\n"
        "}\n")
    obj = tmp / "runtime_uses_checker.o"
    done = subprocess.run([compiler(), "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-fno-exceptions", "-fno-rtti",
                           "-I", str(ROOT / "native" / "include"), "-I", str(tmp), "-c", str(src), "-o", str(obj)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return obj


@pytest.mark.slow  # an -O2 build of two checkers and the runtime
def test_compiles_without_exceptions_or_warnings(object_file):
    assert object_file.stat().st_size > 0


@pytest.mark.slow  # an -O2 build of two checkers and the runtime
def test_no_gpu_or_python_symbols(object_file):
    symbols = subprocess.run(["nm", "-C", str(object_file)], check=True, capture_output=True, text=True).stdout
    referenced = [line.split()[-1] for line in symbols.splitlines() if line.split()[:1] == ["U"]]
    assert referenced, "the object references nothing at all: did it compile the checker?"
    bad = [s for s in referenced if FORBIDDEN.search(s)]
    assert not bad, bad
    defined = symbols
    assert "charter_admit_gguf" in defined and "charter::rt::" in defined


def test_no_raw_new_or_delete_in_the_runtime():
    for header in (ROOT / "native" / "include" / "charter").glob("*.hpp"):
        code = re.sub(r"//.*", "", header.read_text())
        code = code.replace("= delete;", ";")  # deleted special members are not raw delete
        assert not re.search(r"\bnew\s+[A-Za-z_]|\bdelete\b|\bthrow\b|\btry\s*\{", code), header.name
