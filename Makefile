# Two entry points: `make demo` and `make test`. Both create .venv, install pinned packages and compile numba's
# kernels into its on-disk cache (pipeline/warmup.py), so that the first run does not pay for compilation.
# `make demo` installs the base package only (all that `grade demo` needs); `make test` (and `make setup`) installs
# it with the `dev` extra: the test and docs tools and every optional extra that has wheels for this Python
# (pyproject.toml's environment markers leave out the others, e.g. bpy outside Python 3.11).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# One stamp per kind of install, named by the checksum of pyproject.toml and constraints.txt: editing either
# reinstalls. Each install removes every older stamp, so a stale one never passes for the current state.
HASH := $(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)
BASE_STAMP := $(VENV)/.installed-base-$(HASH)
DEV_STAMP := $(VENV)/.installed-dev-$(HASH)
# The dev install contains the base one: `make demo` after `make test` uses it as it is (it reinstalls and
# uninstalls nothing), while `make test` after `make demo` adds the dev extra to the base install.
DEMO_STAMP := $(if $(wildcard $(DEV_STAMP)),$(DEV_STAMP),$(BASE_STAMP))

# $(call install,REQUIREMENT): the venv (made once), then the editable package, pinned by constraints.txt.
define install
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e "$(1)" --config-settings editable_mode=compat
	$(BIN)/python -m pipeline.warmup
	rm -f $(VENV)/.installed-* && touch $@
endef

.PHONY: setup setup-base demo test clean

$(BASE_STAMP): pyproject.toml constraints.txt
	$(call install,.)

$(DEV_STAMP): pyproject.toml constraints.txt
	$(call install,.[dev])

setup: $(DEV_STAMP)

setup-base: $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/grade demo

test: $(DEV_STAMP)
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) runs .pytest_cache
