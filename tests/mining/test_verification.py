"""Tests for the shell command classifier and the verification outcome rules.

Mining tiers an attempt gold only on a passing verification after its last edit, and replay
scoring compares shell commands by intent class, so these tables pin: which command lines are
which class (including look-alikes that merely mention a tool), how wrappers, pipes and chains
are read, when an exit code can be trusted, what each runner's pass and fail output means, that
every runner output the sample corpus generator writes is recognized, and what the real
transcripts' test runs come out as.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trajectory_pipeline.mining.verification import (
    INTENTS,
    OUTCOMES,
    VERIFICATION_INTENTS,
    _lex,
    _strip_heredocs,
    _tokens,
    command_intent,
    command_outcome,
    exit_status_reliable,
    is_verification,
    runner_outcome,
)
from trajectory_pipeline.sample.content import EXPOSURES, GUARDS, REPOS, Repo, suite_report

INTENT_CASES: list[tuple[str, str | None]] = [
    # pytest and its wrappers
    ("pytest", "pytest"),
    ("pytest -q tests/test_fees.py::test_fee_on_ten", "pytest"),
    ("python -m pytest -x", "pytest"),
    ("python3.12 -m pytest", "pytest"),
    ("py.test tests", "pytest"),
    ("uv run pytest", "pytest"),
    ("uv run --with pytest-cov pytest --cov", "pytest"),
    ("uv run python -m pytest -q", "pytest"),
    ("poetry run pytest -x", "pytest"),
    ("pdm run pytest", "pytest"),
    ("hatch run test", "pytest"),
    ("tox -e py312", "pytest"),
    ("nox -s tests", "pytest"),
    (".venv/bin/pytest tests/", "pytest"),
    ("coverage run -m pytest", "pytest"),
    # the shell around the command
    ("cd api && uv run pytest -q", "pytest"),
    ("FOO=1 BAR=2 pytest", "pytest"),
    ("env PYTHONPATH=src pytest", "pytest"),
    ("timeout 60 pytest", "pytest"),
    ("timeout -s KILL 5m pytest", "pytest"),
    ("sudo -E pytest", "pytest"),
    ("bash -lc 'cd api && pytest -q'", "pytest"),
    ("bash -euo pipefail -c 'pytest | tail'", "pytest"),
    ("pytest -q | tail -20", "pytest"),
    ("pytest -q 2>&1 | tee out.log", "pytest"),
    ("pytest || true", "pytest"),
    ("pytest \\\n  -q tests/", "pytest"),
    ('pytest -q "tests/test_x.py', "pytest"),  # unbalanced quote
    ("cd api # the service\npytest", "pytest"),
    ("set -o pipefail; pytest | tail -5", "pytest"),
    # unittest
    ("python -m unittest discover -s tests", "unittest"),
    ("python manage.py test accounts", "unittest"),
    # JavaScript
    ("npm test", "npm_test"),
    ("npm test -- --run", "npm_test"),
    ("npm run test", "npm_test"),
    ("npm run test:unit", "npm_test"),
    ("npm --prefix web test", "npm_test"),
    ("pnpm test", "npm_test"),
    ("pnpm --filter web test", "npm_test"),
    ("yarn test", "npm_test"),
    ("yarn workspace web test", "npm_test"),
    ("bun test", "npm_test"),
    ("npx vitest run src/a.test.ts -t 'formats money'", "npm_test"),
    ("npx jest --ci", "npm_test"),
    ("./node_modules/.bin/jest", "npm_test"),
    ("pnpm vitest run", "npm_test"),
    ("npx playwright test", "npm_test"),
    ("/bin/zsh -lc 'npm test -- --run src/a.test.ts -t \"Compaction Config\"'", "npm_test"),
    ("node --test", "node_test"),
    ("node --test-reporter=spec --test test/", "node_test"),
    # other test runners
    ("cargo test", "cargo_test"),
    ("cargo +nightly test --test eviction capacity_one", "cargo_test"),
    ("cargo nextest run", "cargo_test"),
    ("go test ./...", "go_test"),
    ("go test ./internal/limiter -run '^TestRefill$' -v", "go_test"),
    ("mix test 2>&1 | tail -5", "mix_test"),
    ("make test", "make_test"),
    ("make check", "make_test"),
    ("make -C backend test", "make_test"),
    ("make lint test", "make_test"),
    ("just test", "make_test"),
    # type checks, linters, format checks
    ("tsc --noEmit", "typecheck"),
    ("npx tsc --noEmit -p .", "typecheck"),
    ("mypy src", "typecheck"),
    ("uv run mypy .", "typecheck"),
    ("pyright", "typecheck"),
    ("cargo check", "typecheck"),
    ("npm run typecheck", "typecheck"),
    ("mix dialyzer --format short", "typecheck"),
    ("ruff check .", "lint"),
    ("uv run ruff check .", "lint"),
    ("ruff check --fix src", "lint"),
    ("flake8 src", "lint"),
    ("eslint .", "lint"),
    ("npm run lint", "lint"),
    ("make lint", "lint"),
    ("golangci-lint run ./...", "lint"),
    ("cargo clippy --all-targets -- -D warnings", "lint"),
    ("go vet ./...", "lint"),
    ("mix credo --strict", "lint"),
    ("pre-commit run --all-files", "lint"),
    ("ruff format --check .", "format_check"),
    ("black --check .", "format_check"),
    ("prettier --check .", "format_check"),
    ("cargo fmt --check", "format_check"),
    ("cargo fmt -- --check", "format_check"),
    ("gofmt -l .", "format_check"),
    ("mix format --check-formatted", "format_check"),
    ("git diff --check", "git_diff_check"),
    ("git diff --cached --check", "git_diff_check"),
    # builds
    ("cargo build --release", "build"),
    ("go build ./...", "build"),
    ("npm run build", "build"),
    ("make", "build"),
    ("tsc -b", "build"),
    ("mix compile 2>&1 | head -20", "build"),
    # chains: the most significant verification wins
    ("ruff check . && pytest", "pytest"),
    ("cargo build && cargo test", "cargo_test"),
    ("npm run build && npm run lint", "lint"),
    ("mix format && mix compile", "build"),
    ("(cd web && npm test)", "npm_test"),
    # look-alikes: they mention a tool but do not run it
    ("cat pytest.ini", "read"),
    ("pytest --collect-only -q", "list"),
    ("npx jest --listTests", "list"),
    ("grep -r pytest .", "search"),
    ('rg -n "npm test" .', "search"),
    ("pip install pytest", "install"),
    ('echo "run npm test"', None),
    ("vim tests/test_x.py", None),
    ("ls tests", "list"),
    ('git commit -m "make test pass"', "git_commit"),
    ("cat > notes.md <<EOF\npytest\nnpm test\nEOF", None),
    ("which pytest", None),
    ("command -v pytest", None),
    ("pytest --version", None),
    ('python -c "import pytest"', None),
    ("node scripts/test.js --test", None),
    ("make -n test", None),
    ("make clean", None),
    ("prettier src/a.ts", None),
    # inspections and side effects
    ("git status --short", "git_status"),
    ("git -C repo status", "git_status"),
    ("git diff --stat", "git_diff"),
    ("git --no-pager diff HEAD~1", "git_diff"),
    ("git log --oneline -5", "git_log"),
    ("git show HEAD", "git_log"),
    ("git status --short && git diff --stat", "git_status"),
    ("ls -la src", "list"),
    ("tree -L 2", "list"),
    ("cat src/app.py", "read"),
    ("head -50 README.md", "read"),
    ("tail -f log.txt", "read"),
    ("sed -n '1,200p' src/app.py", "read"),
    ("nl -ba src/x.ts | sed -n '1,160p'", "read"),
    ("sed -i 's/a/b/' src/app.py", None),
    ("grep -rn TODO src", "search"),
    ("rg --files -g '*.py'", "search"),
    ("find . -name '*.py'", "search"),
    ("git grep -n parse_args", "search"),
    ("env | grep -iE 'token|key' | sort", "search"),
    ("pip install -e .", "install"),
    ("python -m pip install -r requirements.txt", "install"),
    ("uv sync", "install"),
    ("uv pip install httpx", "install"),
    ("poetry install", "install"),
    ("npm ci", "install"),
    ("npm install --save-dev vitest", "install"),
    ("yarn", "install"),
    ("cargo fetch", "install"),
    ("go mod download", "install"),
    ("rm -rf ~/.cache && npm ci", "install"),
    ("ruff format .", "format"),
    ("black src", "format"),
    ("cargo fmt", "format"),
    ("mix format", "format"),
    ("git add -A && git commit -m 'fix: rounding'", "git_commit"),
    (
        "git add -A && git commit -m \"$(cat <<'EOF'\nfix: make test pass\n\nrun pytest\nEOF\n)\"",
        "git_commit",
    ),
    ("git push origin main", "git_push"),
    ("git push --force origin HEAD", "git_push"),
    # nothing we classify
    ("git stash push -m 'wip before agent change'", None),
    ("curl -fsSL https://get.devtools.example/install.sh | sh", None),
    ("pg_isready -h localhost -p 5432", None),
    ("python reproduce.py", None),
    ("uv run python -m jobs.orders_daily --date 2026-01-02 --dry-run", None),
    ("", None),
    ("   ", None),
]


@pytest.mark.parametrize(("command", "intent"), INTENT_CASES, ids=[c for c, _ in INTENT_CASES])
def test_command_intent(command: str, intent: str | None) -> None:
    assert command_intent(command) == intent


def test_intent_table_covers_every_class() -> None:
    assert {intent for _, intent in INTENT_CASES} - {None} == INTENTS


IS_VERIFICATION_CASES = [
    ("uv run pytest -q", True),
    ("npm test", True),
    ("cargo clippy", True),
    ("npm run build", True),  # build counts, as the weakest class
    ("git diff --check", True),
    ("git diff", False),
    ("cat pytest.ini", False),
    ("pytest --co tests/", False),
    ("pip install pytest", False),
    ('git commit -m "make test pass"', False),
    ("ruff format .", False),  # rewrites files, checks nothing
    ("ls tests", False),
]


@pytest.mark.parametrize(
    ("command", "expected"), IS_VERIFICATION_CASES, ids=[c for c, _ in IS_VERIFICATION_CASES]
)
def test_is_verification(command: str, expected: bool) -> None:
    assert is_verification(command) is expected


RELIABLE_CASES = [
    ("pytest", True),
    ("cd api && pytest", True),
    ("pytest && echo ok", True),
    ("echo start; pytest", True),
    ("pytest -q > out.txt", True),  # a redirect is not a pipe
    ("(cd web && npm test)", True),
    ("set -o pipefail; pytest | tail -5", True),
    ("pytest | tail -20", False),
    ("pytest 2>&1 | tail -20", False),
    ("pytest || true", False),
    ("pytest; echo done", False),
    ("pytest &", False),
    ("bash -lc 'pytest | tail'", False),
]


@pytest.mark.parametrize(("command", "expected"), RELIABLE_CASES, ids=[c for c, _ in RELIABLE_CASES])
def test_exit_status_reliable(command: str, expected: bool) -> None:
    assert exit_status_reliable(command) is expected


# --------------------------------------------------------------------------- runner output

VITEST_FAIL_V4 = """
> @codemieai/code@0.0.51 test
> vitest --run src/agents/plugins/__tests__/codemie-code-reasoning.test.ts -t Compaction Config

 RUN  v4.1.5 /Users/Sample_User/repos/codemie-ai/codemie-code

 ❯ src/agents/plugins/__tests__/codemie-code-reasoning.test.ts (16 tests | 1 failed | 15 skipped) 1316ms
       × sets default context compaction threshold to 90% 1312ms

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  src/agents/plugins/__tests__/codemie-code-reasoning.test.ts > Compaction Config > sets default
AssertionError: expected undefined to deeply equal { auto: true, prune: true, …(1) }

 Test Files  1 failed (1)
      Tests  1 failed | 15 skipped (16)
   Start at  11:42:09
   Duration  2.91s (transform 1.18s, setup 0ms, import 794ms, tests 1.32s, environment 0ms)
"""

RUNNER_OUTPUTS: list[tuple[str, str, str | None]] = [
    # pytest
    ("pytest pass", "tests/test_fees.py ....    [100%]\n\n======= 12 passed in 0.08s =======\n", "passed"),
    ("pytest pass quiet warnings", "....\n12 passed, 2 warnings in 0.42s\n", "passed"),
    (
        "pytest pass errors in names",
        "tests/test_errors.py::test_error_message PASSED\n=== 3 passed in 0.1s ===",
        "passed",
    ),
    (
        "pytest fail",
        "F...\nFAILED tests/test_a.py::test_x - AssertionError\n1 failed, 11 passed in 0.21s\n",
        "failed",
    ),
    (
        "pytest error",
        "ERROR tests/test_a.py - ImportError\n=============== 1 error in 0.12s ===============\n",
        "failed",
    ),
    (
        "pytest collection",
        "!!!!!!!! Interrupted: 1 error during collection !!!!!!!!\n======== 1 error in 0.15s ========\n",
        "failed",
    ),
    (
        "pytest no tests",
        "============================ no tests ran in 0.01s =============================\n",
        "failed",
    ),
    ("pytest long run", "=== 210 passed, 3 skipped in 75.31s (0:01:15) ===\n", "passed"),
    (
        "pytest -v, 30 KB",
        "tests/test_a.py::test_x PASSED   [ 1%]\n" * 800 + "=== 800 passed in 9.1s ===\n",
        "passed",
    ),
    (
        "pytest -v, 30 KB, failing",
        "E   assert 1 == 2\n" * 2000 + "=== 1 failed, 799 passed in 9.1s ===\n",
        "failed",
    ),
    # unittest
    (
        "unittest pass",
        "....\n" + "-" * 70 + "\nRan 4 tests in 0.002s\n\nOK\n",
        "passed",
    ),
    ("unittest skipped", "Ran 4 tests in 0.002s\n\nOK (skipped=1)\n", "passed"),
    ("unittest fail", "..F.\nRan 4 tests in 0.002s\n\nFAILED (failures=1)\n", "failed"),
    # jest and vitest
    (
        "jest pass",
        "PASS src/sum.test.js\n  ✓ adds (2 ms)\n\n"
        "Test Suites: 1 passed, 1 total\nTests:       1 passed, 1 total\n",
        "passed",
    ),
    (
        "jest fail",
        "FAIL src/sum.test.js\n  ✕ adds (3 ms)\n\n"
        "Test Suites: 1 failed, 1 total\nTests:       1 failed, 1 total\n",
        "failed",
    ),
    (
        "vitest pass",
        " ✓ src/a.test.ts (3 tests) 5ms\n\n Test Files  1 passed (1)\n      Tests  3 passed (3)\n",
        "passed",
    ),
    ("vitest fail (real codex run)", VITEST_FAIL_V4, "failed"),
    (
        "vitest pass with colors",
        " \x1b[2mTest Files \x1b[22m \x1b[1m\x1b[32m1 passed\x1b[39m\x1b[22m\x1b[90m (1)\x1b[39m\n",
        "passed",
    ),
    # mocha, playwright, bun, node --test
    ("mocha pass", "  adds\n    ✔ works\n\n  3 passing (12ms)\n", "passed"),
    ("mocha fail", "  2 passing (12ms)\n  1 failing\n\n  1) adds\n", "failed"),
    ("playwright fail", "  1 failed\n    [chromium] › a.spec.ts:3:1 › works\n  2 passed (4.1s)\n", "failed"),
    (
        "bun pass",
        "✓ adds [0.12ms]\n\n 1 pass\n 0 fail\n 1 expect() calls\nRan 1 tests across 1 files. [12.00ms]\n",
        "passed",
    ),
    ("bun fail", "✗ adds [0.30ms]\n\n 0 pass\n 1 fail\nRan 1 tests across 1 files. [12.00ms]\n", "failed"),
    (
        "node tap pass",
        "TAP version 13\nok 1 - adds\n1..1\n# tests 1\n# suites 0\n# pass 1\n# fail 0\n",
        "passed",
    ),
    ("node tap fail", "TAP version 13\nnot ok 1 - adds\n1..1\n# tests 1\n# pass 0\n# fail 1\n", "failed"),
    ("node spec pass", "✔ adds (0.5ms)\nℹ tests 1\nℹ suites 0\nℹ pass 1\nℹ fail 0\n", "passed"),
    ("node spec fail", "✖ adds (1.2ms)\nℹ tests 1\nℹ pass 0\nℹ fail 1\n", "failed"),
    ("deno pass", "ok | 5 passed | 0 failed (20ms)\n", "passed"),
    ("deno fail", "FAILED | 4 passed | 1 failed (25ms)\n", "failed"),
    # cargo
    (
        "cargo pass",
        "running 3 tests\ntest a ... ok\n\ntest result: ok. 3 passed; 0 failed; 0 ignored\n",
        "passed",
    ),
    ("cargo fail", "test a ... FAILED\n\ntest result: FAILED. 2 passed; 1 failed; 0 ignored\n", "failed"),
    (
        "cargo compile error",
        "error[E0425]: cannot find value `x` in this scope\n --> src/lib.rs:3:5\n"
        "error: could not compile `tilecache` (lib) due to 1 previous error\n",
        "failed",
    ),
    (
        "cargo build pass",
        "   Compiling a v0.1.0 (/src/a)\n"
        "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 1.12s\n",
        "passed",
    ),
    ("nextest pass", "     Summary [   0.010s] 5 tests run: 5 passed, 0 skipped\n", "passed"),
    ("nextest fail", "     Summary [   0.012s] 5 tests run: 4 passed, 1 failed, 0 skipped\n", "failed"),
    ("cargo fmt check", "Diff in /src/lib.rs at line 3:\n-fn a(){}\n+fn a() {}\n", "failed"),
    # go
    ("go pass", "ok  \texample.com/x\t0.012s\n?   \texample.com/y\t[no test files]\n", "passed"),
    ("go cached", "ok  \texample.com/x\t(cached)\n", "passed"),
    (
        "go fail",
        "--- FAIL: TestX (0.00s)\n    x_test.go:9: got 1\nFAIL\nFAIL\texample.com/x\t0.01s\nFAIL\n",
        "failed",
    ),
    ("go panic", "panic: runtime error: index out of range [3] with length 3\n", "failed"),
    # Elixir
    (
        "mix test pass",
        "Finished in 5.5 seconds (1.4s async, 4.1s sync)\n14 doctests, 410 tests, 0 failures\n",
        "passed",
    ),
    ("mix test fail", "  1) test adds (MathTest)\nFinished in 0.05 seconds\n3 tests, 1 failure\n", "failed"),
    ("credo pass", "Analysis took 0.4 seconds\n876 mods/funs, found no issues.\n", "passed"),
    ("credo fail", "Analysis took 0.4 seconds\n895 mods/funs, found 1 code readability issue.\n", "failed"),
    (
        "dialyzer pass",
        "Total errors: 0, Skipped: 0, Unnecessary Skips: 0\ndone (passed successfully)\n",
        "passed",
    ),
    ("dialyzer fail", "done (warnings were emitted)\nHalting VM with exit status 2\n", "failed"),
    # Python checkers
    ("mypy pass", "Success: no issues found in 12 source files\n", "passed"),
    (
        "mypy fail",
        'src/a.py:3: error: Incompatible return value type (got "int", expected "str")  [return-value]\n'
        "Found 1 error in 1 file (checked 12 source files)\n",
        "failed",
    ),
    ("ruff pass", "All checks passed!\n", "passed"),
    (
        "ruff fail",
        "a.py:1:8: F401 [*] `os` imported but unused\n"
        "Found 1 error.\n[*] 1 fixable with the `--fix` option.\n",
        "failed",
    ),
    ("ruff fixed everything", "Found 2 errors (2 fixed, 0 remaining).\n", "passed"),
    ("ruff fixed some", "Found 3 errors (2 fixed, 1 remaining).\n", "failed"),
    ("pyright pass", "0 errors, 0 warnings, 0 informations \n", "passed"),
    (
        "pyright fail",
        "/src/a.py:3:12 - error: Cannot access member\n1 error, 0 warnings, 0 informations \n",
        "failed",
    ),
    ("black pass", "All done! ✨ 🍰 ✨\n4 files would be left unchanged.\n", "passed"),
    (
        "black fail",
        "would reformat src/a.py\n\nOh no! 💥 💔 💥\n"
        "1 file would be reformatted, 3 files would be left unchanged.\n",
        "failed",
    ),
    ("ruff format pass", "12 files already formatted\n", "passed"),
    (
        "ruff format fail",
        "Would reformat: src/a.py\n1 file would be reformatted, 11 files already formatted\n",
        "failed",
    ),
    (
        "tox pass",
        "  py312: OK (3.21=setup[0.10]+cmd[3.11] seconds)\n  congratulations :) (3.30 seconds)\n",
        "passed",
    ),
    ("tox fail", "  py312: FAIL code 1 (2.10 seconds)\n  evaluation failed :( (2.20 seconds)\n", "failed"),
    # TypeScript and JavaScript checkers
    (
        "tsc fail",
        "src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\n",
        "failed",
    ),
    (
        "tsc pretty fail",
        "src/a.ts:3:7 - error TS2322: Type 'string'...\n\nFound 1 error in src/a.ts:3\n",
        "failed",
    ),
    (
        "eslint fail",
        "/src/a.js\n  1:7  error  'x' is unused  no-unused-vars\n\n✖ 1 problem (1 error, 0 warnings)\n",
        "failed",
    ),
    ("eslint warnings only", "✖ 2 problems (0 errors, 2 warnings)\n", "passed"),
    ("prettier pass", "Checking formatting...\nAll matched files use Prettier code style!\n", "passed"),
    (
        "prettier fail",
        "Checking formatting...\n[warn] src/a.ts\n"
        "[warn] Code style issues found in the above file. Run Prettier with --write to fix.\n",
        "failed",
    ),
    ("golangci-lint pass", "0 issues.\n", "passed"),
    (
        "golangci-lint fail",
        "main.go:10:2: Error return value is not checked (errcheck)\n1 issues:\n* errcheck: 1\n",
        "failed",
    ),
    # the tool around the runner says it failed
    ("make fail", "uv run pytest -q\n....\nmake: *** [Makefile:4: test] Error 1\n", "failed"),
    ("npm fail", "npm ERR! Test failed.  See above for more details.\n", "failed"),
    ("pnpm fail", " ELIFECYCLE  Test failed. See above for more details.\n", "failed"),
    # nothing recognizable
    ("empty", "", None),
    ("codex background process", "Chunk ID: ac6588\nProcess running with session ID 83395\nOutput:\n", None),
    ("pytest progress only", "tests/test_a.py ....                                  [ 50%]\n", None),
    ("eslint silent success", "\n> web-console@1.14.0 lint\n> eslint .\n\n", None),
]


@pytest.mark.parametrize(
    ("output", "expected"), [c[1:] for c in RUNNER_OUTPUTS], ids=[c[0] for c in RUNNER_OUTPUTS]
)
def test_runner_outcome(output: str, expected: str | None) -> None:
    assert runner_outcome(output) == expected


PYTEST_FAIL = "F...\n1 failed, 3 passed in 0.40s\n"
PYTEST_PASS = "....\n4 passed in 0.40s\n"
# (intent, exit_code, is_error, output, command, expected)
OUTCOME_CASES: list[tuple[str, str | None, int | None, bool | None, str | None, str | None, str]] = [
    ("exit 0", "pytest", 0, None, "", "pytest", "passed"),
    ("exit 1", "pytest", 1, True, PYTEST_FAIL, "pytest", "failed"),
    ("exit code wins over output", "pytest", 0, None, PYTEST_FAIL, "pytest", "passed"),
    ("exit code wins without a command", "pytest", 0, None, PYTEST_FAIL, None, "passed"),
    ("timeout", "pytest", 124, True, "", "timeout 60 pytest", "failed"),
    ("pipe: output says failed", "pytest", 0, False, PYTEST_FAIL, "pytest -q | tail -5", "failed"),
    ("pipe: output says passed", "pytest", 0, False, PYTEST_PASS, "pytest -q | tail -5", "passed"),
    ("pipe: output says nothing", "pytest", 0, False, "", "pytest -q | tail -5", "unknown"),
    ("pipe: a failure status stands", "pytest", 1, True, "", "pytest -q | tail -5", "failed"),
    ("|| true hides the status", "pytest", 0, None, PYTEST_FAIL, "pytest || true", "failed"),
    ("pipefail keeps the status", "pytest", 0, None, PYTEST_FAIL, "set -o pipefail; pytest | tail", "passed"),
    ("is_error true", "npm_test", None, True, "", "npm test", "failed"),
    (
        "is_error true beats output",
        "npm_test",
        None,
        True,
        " Test Files  1 passed (1)\n",
        "npm test",
        "failed",
    ),
    ("output without a status", "npm_test", None, None, VITEST_FAIL_V4, "npm test", "failed"),
    ("is_error false and silent", "lint", None, False, "", "npx eslint .", "passed"),
    ("is_error false but piped", "lint", None, False, "", "npx eslint . | tail", "unknown"),
    ("is_error false, output failed", "pytest", None, False, PYTEST_FAIL, "pytest", "failed"),
    ("nothing recorded", "lint", None, None, "", "eslint .", "unknown"),
    ("no output at all", "pytest", None, None, None, None, "unknown"),
    (
        "claude mix test piped",
        "mix_test",
        None,
        False,
        "10 tests, 0 failures\n",
        "mix test 2>&1 | tail -5",
        "passed",
    ),
    (
        "codex background",
        "npm_test",
        None,
        None,
        "Process running with session ID 83395\n",
        "npm test",
        "unknown",
    ),
    (
        "claude background",
        "mix_test",
        None,
        False,
        "Command running in background with ID: b7636e2. Output is being written to: /tmp/b7636e2.output",
        "mix test 2>&1",
        "unknown",
    ),
    # other intents: did the command itself succeed
    ("list exit 0", "list", 0, None, "", "ls", "passed"),
    ("read exit 1", "read", 1, True, "cat: x: No such file", "cat x", "failed"),
    ("unclassified error", None, None, True, "", "vim x", "failed"),
    ("unclassified ok", None, None, False, "", "vim x", "passed"),
    ("search, nothing recorded", "search", None, None, "1 failed", "grep -r failed .", "unknown"),
]


@pytest.mark.parametrize(
    ("intent", "exit_code", "is_error", "output", "command", "expected"),
    [c[1:] for c in OUTCOME_CASES],
    ids=[c[0] for c in OUTCOME_CASES],
)
def test_command_outcome(
    intent: str | None,
    exit_code: int | None,
    is_error: bool | None,
    output: str | None,
    command: str | None,
    expected: str,
) -> None:
    assert command_outcome(intent, exit_code, is_error, output, command=command) == expected


# --------------------------------------------------------------------------- the sample corpus generator


@pytest.mark.parametrize("repo", REPOS, ids=[r.name for r in REPOS])
def test_every_generated_test_report_is_recognized(repo: Repo) -> None:
    """Each repository's full and focused test runs, passing and failing, read from the output alone."""
    assert command_intent(repo.test_command) in VERIFICATION_INTENTS
    failures = [task.failure for task in repo.tasks if task.failure is not None]
    assert failures
    for failure in [None, *failures]:
        output, code = suite_report(repo, failure, 1.5)
        expected = "passed" if code == 0 else "failed"
        assert runner_outcome(output) == expected, output
        assert command_outcome(command_intent(repo.test_command), None, None, output) == expected
        if failure is None:
            continue
        focused_command = repo.focused_test.format(test_file=failure.test_file, test_name=failure.test_name)
        assert command_intent(focused_command) in VERIFICATION_INTENTS
        focused = dataclasses.replace(
            repo,
            suites=((failure.test_file, (failure.test_name,)),),
            runner="pytest" if repo.runner == "make" else repo.runner,
        )
        for fails in (failure, None):
            output, code = suite_report(focused, fails, 0.5)
            assert runner_outcome(output) == ("passed" if code == 0 else "failed"), output


@pytest.mark.parametrize("repo", REPOS, ids=[r.name for r in REPOS])
def test_generated_lint_runs(repo: Repo) -> None:
    intent = command_intent(repo.lint_command)
    assert intent == "lint"
    if repo.lint_output.strip().endswith("eslint ."):
        # eslint prints nothing on success: only the recorded status can tell
        assert command_outcome(intent, None, None, repo.lint_output) == "unknown"
        assert command_outcome(intent, None, False, repo.lint_output, command=repo.lint_command) == "passed"
    else:
        assert runner_outcome(repo.lint_output) == "passed"
    for task in repo.tasks:
        for probe in task.probes:
            if probe.kind == "shell" and is_verification(probe.arg):
                # the clippy probe shows warnings denied by -D warnings
                assert runner_outcome(probe.output) == "failed"


def test_generated_guards_and_exposures_are_not_verifications() -> None:
    commands = [g.command for g in GUARDS] + [g.instead for g in GUARDS]
    commands += [e.arg for e in EXPOSURES if e.kind == "shell"]
    installs = {r.install_command for r in REPOS if r.install_command}
    for command in commands:
        for install in installs or {""}:
            line = command.replace("{install}", install).replace("{path}", "src/app.py")
            assert not is_verification(line), line
    assert [command_intent(g.command) for g in GUARDS][:2] == ["git_push", None]
    assert command_intent(GUARDS[0].instead) == "git_status"


# --------------------------------------------------------------------------- the real transcripts


def test_real_codex_npm_test_runs(real_corpus: Path) -> None:
    """The 2026-05-11 rollout runs a focused vitest that fails, passes after the fix, then the file."""
    (path,) = (real_corpus / "codex" / "codemie-code").glob("rollout-2026-05-11*.jsonl")
    runs = []
    for line in path.read_text().splitlines():
        payload = json.loads(line).get("payload") or {}
        if payload.get("type") != "exec_command_end":
            continue
        command = shlex.join(payload["command"])  # ["/bin/zsh", "-lc", SCRIPT]
        intent = command_intent(command)
        if intent in VERIFICATION_INTENTS:
            output = payload["aggregated_output"]
            runs.append(
                (
                    intent,
                    payload["exit_code"],
                    runner_outcome(output),
                    command_outcome(intent, None, None, output, command=command),
                )
            )
    assert runs == [
        ("npm_test", 1, "failed", "failed"),
        ("npm_test", 0, "passed", "passed"),
        ("npm_test", 0, "passed", "passed"),
        ("build", 0, None, "unknown"),  # `npm run build` (tsc) succeeds silently
    ]


def test_real_claude_code_mix_runs(real_corpus: Path) -> None:
    """The spotter session pipes every check through tail/grep, so its output decides the outcome."""
    path = real_corpus / "claude-code" / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    commands: dict[str, str] = {}
    outcomes: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        content = (json.loads(line).get("message") or {}).get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use" and block.get("name") == "Bash":
                commands[block["id"]] = block["input"]["command"]
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in commands:
                command = commands[block["tool_use_id"]]
                intent = command_intent(command)
                if intent in VERIFICATION_INTENTS:
                    outcome = command_outcome(
                        intent, None, block.get("is_error"), block["content"], command=command
                    )
                    outcomes.setdefault(intent, []).append(outcome)
    # one run went to the background: its result only says it started
    assert sorted(outcomes["mix_test"]) == ["passed"] * 9 + ["unknown"]
    assert outcomes["lint"].count("failed") == 4  # `mix credo --strict` keeps finding suggestions
    assert set(outcomes) == {"mix_test", "lint", "build", "typecheck"}


# --------------------------------------------------------------------------- properties


@given(st.text(max_size=200))
def test_any_text_classifies_without_error(text: str) -> None:
    assert command_intent(text) in INTENTS | {None}
    assert command_outcome(command_intent(text), None, None, text, command=text) in OUTCOMES


@given(st.text(alphabet=st.sampled_from(list("ab-=./ \t\n();<>|&#$")), max_size=60))
def test_quote_free_fast_path_matches_shlex(text: str) -> None:
    # both paths see the text after heredoc bodies are dropped (`<<b\n` ends a heredoc body)
    prepared = _strip_heredocs(text) if "<<" in text else text
    assert _tokens(text) == _lex(prepared)
