# One command each, on a fresh clone: the virtualenv is created and the project installed when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export DAGSTER_HOME := $(CURDIR)/.dagster_home

.PHONY: install demo test ui lint bench clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(DAGSTER_HOME)/dagster.yaml: dagster.yaml
	mkdir -p -m 700 $(DAGSTER_HOME)
	ln -sf $(CURDIR)/dagster.yaml $@

install: $(VENV)/.installed $(DAGSTER_HOME)/dagster.yaml

demo: install  ## generate the sample corpus and materialize the chain on it through the real instance
	$(BIN)/trajectory-pipeline demo

test: install  ## the whole suite, slow end-to-end tests included
	$(BIN)/python -m pytest

ui: install  ## Dagster UI and daemon on http://127.0.0.1:3000
	$(BIN)/dagster dev -h 127.0.0.1 -p 3000 -w workspace.yaml

lint: install  ## ruff (lint and format) and mypy
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: install  ## ingestion, redaction, our trainer against mlx_lm.lora, replay eval strategies
	$(BIN)/python bench/bench_ingest.py
	$(BIN)/python bench/bench_redact.py
	test -d data/artifacts/adapters || $(BIN)/trajectory-pipeline demo  # the model and data of the next two
	$(BIN)/python bench/bench_training.py
	$(BIN)/python bench/bench_eval.py

clean:
	rm -rf data .dagster_home
