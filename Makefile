# One command each, on a fresh clone: the virtualenv is created and the project installed when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CHROMIUM := /usr/bin/chromium
export DAGSTER_HOME := $(CURDIR)/.dagster_home

.PHONY: install install-dev instance blas demo test ui serve lint bench clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The package and its runtime dependencies: all that demo, ui and serve need.
$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# The dev extras (test servers' clients, browser driver, linters, the other executors): test, lint
# and bench. Kept apart from demo's install: on a fresh two-core machine they take 2.5 minutes
# beyond the runtime's one, more than demo's 10-minute budget can spare.
$(VENV)/.installed-dev: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(DAGSTER_HOME)/dagster.yaml: dagster.yaml
	mkdir -p -m 700 $(DAGSTER_HOME)
	ln -sf $(CURDIR)/dagster.yaml $@

# The instance holds transcript previews and run logs, and Dagster writes its files 0644 in 0755
# folders: the folder itself is 0700, repaired at every make that installs (ui, demo, test).
instance: $(DAGSTER_HOME)/dagster.yaml
	chmod 700 $(DAGSTER_HOME)

install: $(VENV)/.installed instance blas

install-dev: install $(VENV)/.installed-dev

# An optimized BLAS for mlx on a Linux CPU: mlx's Linux wheel bundles the reference BLAS, about 10x
# slower at matmuls (trajectory_pipeline/blas.py). Debian's OpenBLAS is installed when none is found,
# where root and apt-get are at hand; the trajectory-pipeline command and `make ui` preload it. Never
# fails: elsewhere mlx runs on its reference BLAS, and says so.
blas: $(VENV)/.installed
	@if [ "$$(uname -s)" != Linux ] || TRAJECTORY_BLAS=auto $(BIN)/python -m trajectory_pipeline.blas find >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing Debian's libopenblas0-pthread: an optimized BLAS for mlx on the CPU"; \
		export TMPDIR=/var/tmp DEBIAN_FRONTEND=noninteractive; \
		{ apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends libopenblas0-pthread >/dev/null \
		  && TRAJECTORY_BLAS=auto $(BIN)/python -m trajectory_pipeline.blas find >/dev/null; } \
		|| echo "Could not install libopenblas0-pthread: mlx will use its bundled reference BLAS (slow)"; \
	else echo "No optimized BLAS (installing libopenblas0-pthread needs root and apt-get): mlx will use its bundled reference BLAS (slow)"; fi

# LD_PRELOAD with that optimized BLAS added (unchanged where there is none, on macOS, or with
# TRAJECTORY_BLAS=reference), for processes that run mlx and are not the trajectory-pipeline command,
# which preloads it by itself.
WITH_BLAS = LD_PRELOAD="$$($(BIN)/python -m trajectory_pipeline.blas ld-preload)"

demo: install  ## generate the sample corpus and materialize the chain on it through the real instance
	$(BIN)/trajectory-pipeline demo

test: install-dev $(CHROMIUM)  ## the whole suite, slow end-to-end tests included
	$(BIN)/python -m tests.postgres_server install  # Debian's postgresql when missing (as root), for test_postgres
	$(BIN)/python -m tests.redis_server install  # Debian's redis-server when missing (as root), for test_distributed
	$(WITH_BLAS) $(BIN)/python -m pytest

# Debian's Chromium for the browser tests (tests/test_ui_browser.py, test_ui_backfill.py), installed when
# missing where root and apt-get are at hand; elsewhere those tests skip. apt's key check runs as the _apt user: its
# temporary files go to /var/tmp, open to it even where /tmp is not.
$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "Installing Debian's chromium for the browser test"; \
		export TMPDIR=/var/tmp DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	else echo "No $@ (installing it needs root and apt-get): tests/test_ui_browser.py will skip"; fi

ui: install  ## Dagster UI and daemon on http://127.0.0.1:3000; code server, runs and daemon on the optimized BLAS
	$(WITH_BLAS) $(BIN)/dagster dev -h 127.0.0.1 -p 3000 -w workspace.yaml

# The registry's promoted model (fused by promoted_model) in mlx-lm's OpenAI-compatible server on
# 127.0.0.1:$TRAJECTORY_SERVE_PORT (8080); the command preloads the optimized BLAS by itself.
serve: install  ## serve the promoted model: OpenAI-compatible API on http://127.0.0.1:8080/v1
	$(BIN)/trajectory-pipeline serve

lint: install-dev  ## ruff (lint and format) and mypy
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Sized to finish within 20 minutes on 2 cores on a fresh clone, install and demo included (18 there).
bench: install-dev  ## ingestion, redaction, backfills, our trainer against mlx_lm.lora, replay eval strategies, the learning curve
	$(BIN)/python bench/bench_ingest.py --days 40 --scale 4 --repeat 3
	$(BIN)/python bench/bench_redact.py
	$(BIN)/python bench/bench_backfill.py --process-days 2 --repeat 2
	$(BIN)/python bench/bench_backfill_cli.py --mixed-days 6 --scale 1 --repeat 1 --clis dagster  # a user's CLI range run, ~1 GB of own-agent logs (about 10 min: timed runs, then one memory run of each)
	$(BIN)/python bench/bench_event_log.py --days 150 --repeat 3  # a stored Dagster event: Dagster's SQLite event log against the instance's
	$(BIN)/python bench/bench_incremental.py
	test -d data/artifacts/adapters || $(BIN)/trajectory-pipeline demo  # the model and data of the next four
	$(WITH_BLAS) $(BIN)/python bench/bench_training.py --iters 8 --repeat 3
	$(WITH_BLAS) $(BIN)/python bench/bench_target_logits.py --iters 6 --repeat 1  # logits at the targets only, on and off
	$(WITH_BLAS) $(BIN)/python bench/bench_mlx_exp.py --iters 40 --repeat 3  # mlx's exp, without SIMD here, and what a faster one gives a step
	$(WITH_BLAS) $(BIN)/python bench/bench_eval.py --cases 48 --repeat 3
	$(WITH_BLAS) $(BIN)/python bench/bench_lift.py  # the learning curve, on the demo's learned base and window
	$(WITH_BLAS) $(BIN)/python bench/bench_batch.py  # records per step: why the demo trains one record at a time (about 12 min)
	$(WITH_BLAS) $(BIN)/python bench/bench_base.py --steps 250 500 1000 1500  # the tiny model's ceiling: how many CPU minutes before it reads its prompt (about 40)
	$(BIN)/python bench/bench_blas.py

clean:
	rm -rf data .dagster_home
