"""Build the kernel bindings as a standalone nanobind module, for tests and benchmarks.

charter._native (scikit-build-core) hosts the kernels in the installed package. This builds the
same sources on their own, the same way the module does, so the kernels are testable from a
checkout whatever state the package build is in: the bindings are rendered from the contracts
into the build directory (never read from generated/, which may be stale), and CMake builds them
with nanobind's own `nanobind_add_module` and native/kernels/kernels.cmake's
`charter_add_kernels`, which also proves that fragment. The module's NB_MODULE calls
`charter_register_kernels(m)`, as charter._native's does.

Builds are cached by the sha256 of everything that goes into them (rendered bindings, native
sources, the CMake fragment, nanobind, Python and compiler versions) and serialized with a file
lock, so parallel test workers build once and wait for each other.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

from charter.codegen.bindings import render_bindings
from charter.contract.contractset import load_set
from charter.toolchain import ToolchainError, compiler, compiler_version

MODULE = "charter_kernels_standalone"

_CMAKELISTS = """\
cmake_minimum_required(VERSION 3.18...3.30)
project(charter_kernels_standalone LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
find_package(Python 3.11 COMPONENTS Interpreter Development.Module REQUIRED)
find_package(nanobind CONFIG REQUIRED)
include("{root}/native/kernels/kernels.cmake")
nanobind_add_module({module} NB_STATIC module.cpp)
charter_add_kernels({module} BINDINGS_DIR "${{CMAKE_CURRENT_SOURCE_DIR}}/bindings")
"""

_MODULE_CPP = """\
#include <nanobind/nanobind.h>

#include "charter_kernels.hpp"

NB_MODULE({module}, m) {{
  m.doc() = "charter's kernel bindings, built standalone (charter.codegen.bindings.standalone)";
  charter_register_kernels(m);
}}
"""


class BuildError(RuntimeError):
    """The standalone build failed; the message holds the failing command's output."""


def _inputs(root: Path) -> dict[str, str]:
    """Every file of the build, by relative name: rendered bindings and project sources."""
    cs = load_set([root / "specs"])
    cs.raise_if_failed()
    files = {rel: text for rel, text in render_bindings(cs)}
    for folder in ("native/src", "native/kernels"):
        for p in sorted((root / folder).iterdir()):
            if p.is_file():
                files[f"@{folder}/{p.name}"] = p.read_text("utf-8")
    return files


def _key(files: dict[str, str]) -> str:
    import nanobind

    h = hashlib.sha256()
    for name, text in sorted(files.items()):
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    try:  # the compiler CMake will find, as charter.engines.library finds it
        cxx = compiler()
        version = compiler_version(cxx)
    except ToolchainError as exc:
        raise BuildError(str(exc)) from exc
    h.update(f"{nanobind.__version__}|{sys.version}|{platform.machine()}|{cxx}|{version}".encode())
    return h.hexdigest()[:20]


def _tool(name: str) -> str:
    """A build tool from the interpreter's environment (the PyPI cmake/ninja wheels), else PATH."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.is_file() else shutil.which(name)
    if found is None:
        raise BuildError(f"{name} is needed to build the kernel bindings (pip install {name}, or a system package)")
    return found


def _run(cmd: list[str], cwd: Path) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise BuildError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}")


def build(root: Path, cache: Path, jobs: int = 2) -> Path:
    """The path of the built extension module (building it unless an identical build is cached)."""
    import nanobind

    root = root.resolve()
    files = _inputs(root)
    key = _key(files)
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = cache / key / f"{MODULE}{suffix}"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():
            return target
        work = cache / f"{key}-src"
        shutil.rmtree(work, ignore_errors=True)
        (work / "bindings").mkdir(parents=True)
        for rel, text in files.items():
            if not rel.startswith("@"):
                (work / rel).write_text(text, "utf-8")
        (work / "CMakeLists.txt").write_text(_CMAKELISTS.format(root=root.as_posix(), module=MODULE))
        (work / "module.cpp").write_text(_MODULE_CPP.format(module=MODULE))
        cmake = _tool("cmake")
        try:
            generator = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={_tool('ninja')}"]
        except BuildError:
            generator = []
        _run([cmake, "-S", ".", "-B", "build", *generator, "-DCMAKE_BUILD_TYPE=Release",
              f"-DPython_EXECUTABLE={sys.executable}", f"-Dnanobind_DIR={nanobind.cmake_dir()}"], work)
        _run([cmake, "--build", "build", "--parallel", str(jobs)], work)
        built = next((work / "build").glob(f"{MODULE}*{suffix}"), None)
        if built is None:
            raise BuildError(f"the build produced no {MODULE}{suffix} under {work / 'build'}")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        shutil.copy2(built, tmp)
        os.replace(tmp, target)
        return target


def load(path: Path) -> ModuleType:
    """Import the built module (once per process)."""
    if MODULE in sys.modules:
        return sys.modules[MODULE]
    loader = importlib.machinery.ExtensionFileLoader(MODULE, str(path))
    spec = importlib.util.spec_from_file_location(MODULE, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[MODULE] = module
    return module


def default_cache(root: Path) -> Path:
    return root / "build" / "kernels-standalone"


def build_and_load(root: Path, cache: Path | None = None) -> ModuleType:
    return load(build(root, cache or default_cache(root)))


def stub(root: Path, out: Path, cache: Path | None = None) -> str:
    """The .pyi stub nanobind's stubgen writes for the built bindings (written to `out`, returned)."""
    path = build(root, cache or default_cache(root))
    env = dict(os.environ, PYTHONPATH=str(path.parent))
    done = subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-m", MODULE, "-o", str(out)],
                          cwd=path.parent, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise BuildError(f"stubgen failed:\n{done.stderr[-4000:]}")
    return out.read_text("utf-8")


def kernels_module(root: Path) -> ModuleType:
    """The module the kernel tests run against: the standalone build, or, with
    CHARTER_KERNELS_MODULE=host, the installed charter._native, or, with CHARTER_KERNELS_MODULE set
    to the path of a built _native extension, that file (imported as charter._native)."""
    choice = os.environ.get("CHARTER_KERNELS_MODULE", "")
    if not choice:
        if importlib.util.find_spec("nanobind") is None:
            host = _host_with_kernels()
            if host is not None:
                return host  # built by pip from the same sources; nanobind is not in this environment
            raise BuildError("nanobind is not importable here, and charter._native does not host the kernels: "
                             "install nanobind (the `test` extra) to build them standalone")
        return build_and_load(root)
    if choice == "host" or "charter._native" in sys.modules:
        return importlib.import_module("charter._native")
    spec = importlib.util.spec_from_file_location("charter._native", choice)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["charter._native"] = module
    return module


def _host_with_kernels() -> ModuleType | None:
    try:
        host = importlib.import_module("charter._native")
    except ImportError:
        return None
    return host if hasattr(host, "charter_register_kernels") or hasattr(host, "rmsnorm") else None
