# wincni developer entry points. `make demo` and `make test` create .venv on first use.
SHELL := /bin/bash
VENV  := .venv
VPY   := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

# The first Python >= 3.10 on PATH (override with `make PYTHON=/path/to/python3 ...`).
PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3.10 python3 python; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null \
	&& { echo $$p; break; }; done)

.PHONY: release duplicates demo test test-quick test-realhns lint soak bench bench-windows dist dist-windows test-windows test-windows-netpol node node-stop image clean venv

# One executable of the frozen bundle (`make dist`) and what goes into it.
DIST_EXE    := dist/wincni/wincni
DIST_INPUTS := setup.cfg $(shell find basics libhns plugins tools specs -type f -not -path '*/__pycache__/*' 2>/dev/null)

$(STAMP): setup.cfg pyproject.toml
	@test -n "$(PYTHON)" || { echo "error: no Python >= 3.10 found on PATH (set PYTHON=...)" >&2; exit 1; }
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e '.[test]'
	@touch $@

venv: $(STAMP)

# One line a step (`make demo VERBOSE=1`: every result in full), each section with its start time. The
# venv and the package folder are built first, on one timed line (their log in build/demo-setup.log,
# shown only when that fails).
demo:
	@mkdir -p build
	@printf 'venv and dist/ (make dist when stale; log: build/demo-setup.log) ...'; began=$$(date +%s); \
		$(MAKE) --no-print-directory $(DIST_EXE) > build/demo-setup.log 2>&1 || { echo ' failed'; cat build/demo-setup.log >&2; exit 1; }; \
		echo " $$(( $$(date +%s) - began )) s"
	@PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) demo/walkthrough.py $(if $(VERBOSE),--verbose)

# Everything: tests/unit, tests/e2e, and the frozen tests (marked frozen), which run the bundle in
# dist/: built first when it is missing or older than what it bundles, so they never skip.
test: $(STAMP) $(DIST_EXE)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m pytest

# The parity suite (tests/parity) on this node's real HNS: Windows, as administrator. It refuses to
# start anywhere else, off Windows and on the Wine lane's fake DLLs alike, before any HNS call.
# ADAPTER=<name> is the host adapter the scenarios that bind a network may use (ALLOW_CONNECTED=1:
# even the one carrying this machine's connection); the report and transcripts go to build/parity.
test-realhns: $(STAMP)
	LIBHNS_BACKEND=hcn WINCNI_PARITY_OUT=build/parity WINCNI_PARITY_ADAPTER="$(ADAPTER)" \
	WINCNI_PARITY_ALLOW_CONNECTED_ADAPTER="$(ALLOW_CONNECTED)" $(VPY) -m pytest tests/parity -q -p no:cacheprovider

# The edit loop: tests/unit without the tests marked slow (big hypothesis runs, real waits);
# `make test` runs those too.
test-quick: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m pytest tests/unit -m "not slow" -q

# ruff (pyproject.toml): lint with import order, and the formatter's check (`ruff format .` fixes that).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Code repeated across the tree: pylint's duplicate-code check (settings and threshold in pyproject.toml).
DUPLICATES_PATHS := basics libhns plugins tools winbuild specs tests bench demo
duplicates: $(STAMP)
	$(VENV)/bin/pylint --score=n $(DUPLICATES_PATHS)

# The "day in the life of a node" state machine (tests/e2e/test_node_day.py) for SOAK_MINUTES
# minutes; prints steps run, faults injected and invariant checks passed. Then install racing a
# user who swaps its folders for links (tests/e2e/test_install_race.py), 1000 runs.
SOAK_MINUTES ?= 10
soak: $(STAMP)
	SOAK_MINUTES=$(SOAK_MINUTES) PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m pytest tests/e2e/test_node_day.py -k soak -s -q -p no:cacheprovider
	RACE_RUNS=200 PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m pytest tests/e2e/test_install_race.py -s -q -p no:cacheprovider

bench: $(DIST_EXE)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) bench/budgets.py
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) bench/run.py --reps 9

# The build's ID is worked out once (winbuild/buildid.py) and handed to the spec; one line a step,
# PyInstaller's actionable warnings only, its full log in build/pyinstaller.log (winbuild/native.py).
dist: $(STAMP)
	$(VPY) -m pip install -q -e '.[build]'
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m winbuild.native
	@touch $(DIST_EXE)

# The bundle as `make test`, `make demo` and `make bench` need it: `make dist` always builds; this
# only when an input is newer.
$(DIST_EXE): $(STAMP) $(DIST_INPUTS)
	$(MAKE) dist

# The Windows package zip, built on Linux: PyInstaller under a Windows CPython in Wine (winbuild/).
# Installs Wine and mingw with apt when missing (as root), the rest into ~/.cache/wincni-windows.
dist-windows: $(STAMP)
	$(VPY) -m winbuild.dist

# The HostProcess image (deploy/Dockerfile) as an OCI image archive in dist-image/, built on Linux
# with crane, which winbuild/gobuild.py builds from the Go module proxy (as flanneld.exe); BASE=<image>
# appends to the HostProcess base image where its registry is reachable (winbuild/image.py).
image: dist-windows
	$(VPY) -m winbuild.image

# A release in dist-release/: the package zip and the image archive (built as above), the zip's
# CycloneDX SBOM, the release notes (CHANGELOG.md's section) and SHA256SUMS (winbuild/release.py).
release: image
	$(VPY) -m pip install -q -e '.[release]'
	$(VPY) -m winbuild.release

# The Windows lane's benchmark alone, with more rounds: that zip against the Go reference plugins
# (built for Windows from their modules into the same cache) and the Windows CPython floor, under Wine.
bench-windows: dist-windows
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" PYTHONPATH="$(CURDIR)" $(VPY) bench/windows.py --reps 15

# That zip run as Windows processes under Wine against the simulator (tests/windows; not in `make test`).
test-windows: $(STAMP)
	$(VPY) -m pip install -q -e '.[windows]'
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m pytest tests/windows

# The NetworkPolicy agent's lane file alone, with all 112 of cyclonus's cases (`make test-windows`
# runs 26 of them; tests/windows/test_windows_netpol_agent.py says which and why).
test-windows-netpol: $(STAMP)
	$(VPY) -m pip install -q -e '.[windows]'
	WINCNI_NETPOL_CASES=all PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m pytest tests/windows/test_windows_netpol_agent.py

# The flanneld lane's node left running for a person (tests/windows/devnode.py): etcd, flanneld.exe
# under Wine in the node's network namespace, the fake HNS, wincni installed; it prints commands to
# try through build/node/sh (which enters the namespace). BACKEND=host-gw for the L2Bridge node.
# It runs the newest zip `make dist-windows` built (not built again here: that takes minutes).
BACKEND ?= vxlan
node: $(STAMP)
	$(VPY) tests/windows/devnode.py start --root build/node --backend $(BACKEND)

# Stops everything `make node` started (build/node/state.json names it).
node-stop:
	$(VPY) tests/windows/devnode.py stop --root build/node

clean:
	rm -rf $(VENV) build dist dist-windows dist-image dist-release .pytest_cache .hypothesis *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
