"""Compile many generated C++ checkers into one shared library at run time.

charter._native holds the checkers of the committed contracts. Others exist only at run time: a
contract that is not committed (a frozen one) and, above all, the mutated contracts of a battery
run with `--engine both`. Each is rendered exactly as `charter generate` renders a checker (in a
namespace of its own, so that many share a translation unit), compiled all at once with the
machine's C++ compiler (CXX, else c++; it must be the one that built the module, which checks),
and the library is loaded into charter._native (`load`; Note [Checker libraries] in
native/include/charter/registry.hpp). Each checker is found by its key, a digest of its default
rendering, so the same contract always finds the same checker and a checker can never answer for
a contract it was not rendered from.

Builds are cached by the digest of everything that goes into them (sources, runtime headers,
compiler, flags) and serialized with a file lock; a library appears in the cache only whole
(rename)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from charter import __version__
from charter.codegen.common.cpp import cpp_sv
from charter.codegen.cpp.build import render_checker_text, template_hash
from charter.engines.cpp import EngineUnavailable, load_library
from charter.contract.plan import ArtifactPlan
from charter.toolchain import ToolchainError, compiler, compiler_version

FLAGS = ("-std=c++17", "-O0", "-fPIC", "-fvisibility=hidden")
# One checker compiled for `charter admit` (a contract charter._native does not hold) is optimized
# like the module's: at -O0 its byte loops (UTF-8 of a 64 MiB array, 64 million bools) cost more
# than the Python engine's (docs/security.md, "What a header can cost"). A battery's many checkers
# keep -O0, where compile time dominates.
OPTIMIZED = ("-std=c++17", "-O2", "-fPIC", "-fvisibility=hidden")


class LibraryError(EngineUnavailable):
    """No compiler, no runtime headers, or a compilation failed (the message holds its output)."""


def include_dir() -> Path:
    """The runtime headers: installed with the package (charter/include), or the checkout's."""
    here = Path(__file__).resolve()
    for candidate in (here.parents[1] / "include", here.parents[3] / "native" / "include"):
        if (candidate / "charter" / "registry.hpp").is_file():
            return candidate
    raise LibraryError("the C++ runtime headers (charter/registry.hpp) are neither installed with charter nor in a "
                       "checkout next to it")


def checker_key(plan: ArtifactPlan) -> str:
    """The key a checker library registers the C++ checker of `plan` under."""
    return "sha256:" + hashlib.sha256(_default_text(plan).encode("utf-8")).hexdigest()


def _default_text(plan: ArtifactPlan) -> str:
    return render_checker_text(plan, {plan.spec_path: plan.spec_sha256})


def checker_source(plan: ArtifactPlan, key: str | None = None) -> str:
    """The C++ checker of `plan` in namespace charter::checkers::k_<digest of its key>."""
    key = key or checker_key(plan)
    return render_checker_text(plan, {plan.spec_path: plan.spec_sha256}, namespace=_namespace(key))


def _namespace(key: str) -> str:
    return "k_" + key.removeprefix("sha256:")[:32]


def build_checkers(plans: dict[str, ArtifactPlan], cache: Path, jobs: int = 2, flags: tuple[str, ...] = FLAGS) -> Path:
    """The path of a shared library holding the C++ checkers of `plans` ({checker_key(plan): plan}),
    compiled with `flags`. The keys digest the renderings already, so a cached library is found
    without rendering any checker; they are rendered only to compile one."""
    identity = "\0".join([__version__, *template_hash().values(), *sorted(plans)])
    return _build(sorted(plans), lambda key: checker_source(plans[key], key), identity, cache, jobs, flags)


def _build(keys: list[str], source: Callable[[str], str], identity: str, cache: Path, jobs: int,
           flags: tuple[str, ...] = FLAGS) -> Path:
    try:
        cxx = compiler()
        version = compiler_version(cxx)
    except ToolchainError as exc:
        raise LibraryError(str(exc)) from exc
    include = include_dir()
    digest = _digest(identity, include, cxx, version, flags)
    target = cache / f"checkers-{digest[:24]}.so"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".checkers-{digest[:24]}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():
            return target
        with tempfile.TemporaryDirectory(prefix="checkers-", dir=cache) as tmp:
            work = Path(tmp)
            units = _write_units(work, {key: source(key) for key in keys}, max(1, jobs))
            objects = _compile(cxx, include, work, units, max(1, jobs), flags)
            built = work / "library.so"
            _run([cxx, "-shared", "-o", str(built), *map(str, objects)], work)
            os.replace(built, target)
    return target


def _digest(identity: str, include: Path, cxx: str, version: str, flags: tuple[str, ...] = FLAGS) -> str:
    """Everything a build depends on: what identifies its sources, the runtime headers, the compiler
    and its flags."""
    h = hashlib.sha256(f"{cxx}|{version}|{' '.join(flags)}\0".encode())
    for p in sorted((include / "charter").glob("*.hpp")):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(identity.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _write_units(work: Path, sources: dict[str, str], parts: int) -> list[Path]:
    """One header per checker and at most `parts` translation units that each register a share of
    them, the last also exporting the library's one symbol: every unit parses the runtime headers
    (about 1.6 s at -O0), so a library of one checker is one unit."""
    keys = sorted(sources)
    names = {key: f"checker{i}.hpp" for i, key in enumerate(keys)}
    for key in keys:
        (work / names[key]).write_text(sources[key], "utf-8")
    shares = [keys[i::parts] for i in range(max(1, min(parts, len(keys))))]
    units = []
    for n, share in enumerate(shares):
        lines = ['#include "charter/registry.hpp"', *(f'#include "{names[k]}"' for k in share), "",
                 "namespace charter_library {",
                 "using std::string_view_literals::operator\"\"sv;",
                 f"extern const std::size_t kCount{n} = {len(share)};",
                 f"extern const ::charter::rt::CheckerEntry kPart{n}[] = {{"]
        lines += [f"    CHARTER_CHECKER_ENTRY(::charter::checkers::{_namespace(k)}, {cpp_sv(k)})," for k in share]
        lines += ["    {}," if not share else "", "};", "}  // namespace charter_library", ""]
        if n == len(shares) - 1:
            lines.append(_library_function(len(shares)))
        units.append(work / f"part{n}.cpp")
        units[-1].write_text("\n".join(lines), "utf-8")
    return units


def _library_function(parts: int) -> str:
    decls = "\n".join(f"extern const std::size_t kCount{n};\nextern const ::charter::rt::CheckerEntry kPart{n}[];"
                      for n in range(parts))
    appends = "\n".join(f"    all.insert(all.end(), kPart{n}, kPart{n} + kCount{n});" for n in range(parts))
    return f"""// The library's one symbol (Note [Checker libraries], charter/registry.hpp), written by
// charter.engines.library.
#include <vector>

namespace charter_library {{
{decls}
}}  // namespace charter_library

extern "C" __attribute__((visibility("default"))) const ::charter::rt::CheckerEntry* charter_checker_library(
    ::charter::rt::LibraryStamp* stamp, std::size_t* count) {{
  using namespace charter_library;
  static const std::vector<::charter::rt::CheckerEntry> all = [] {{
    std::vector<::charter::rt::CheckerEntry> all;
{appends}
    return all;
  }}();
  *stamp = ::charter::rt::library_stamp();
  *count = all.size();
  return all.data();
}}
"""


def _compile(cxx: str, include: Path, work: Path, units: list[Path], jobs: int,
             flags: tuple[str, ...] = FLAGS) -> list[Path]:
    """Compile the units, `jobs` at a time; the first failure stops the build (and the others)."""
    objects, running = [], []
    try:
        for unit in units:
            objects.append(unit.with_suffix(".o"))
            cmd = [cxx, *flags, f"-I{include}", "-c", str(unit), "-o", str(objects[-1])]
            running.append((cmd, subprocess.Popen(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                  text=True)))
            if len(running) >= jobs:
                _wait(*running.pop(0))
        while running:
            _wait(*running.pop(0))
    finally:
        for _, proc in running:
            proc.kill()
            proc.wait()
    return objects


def _wait(cmd: list[str], proc: subprocess.Popen) -> None:
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise LibraryError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{out[-6000:]}")


def _run(cmd: list[str], cwd: Path) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise LibraryError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-6000:]}{done.stderr[-6000:]}")


def load(plans: dict[str, ArtifactPlan], cache: Path, jobs: int = 2, flags: tuple[str, ...] = FLAGS) -> frozenset[str]:
    """Build (or find in `cache`) the library of `plans` and load it into charter._native: the keys
    it holds."""
    return frozenset(load_library(build_checkers(plans, cache, jobs, flags)))
