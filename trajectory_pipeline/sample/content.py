"""Content tables for the sample corpus: repositories, recurring tasks, phrasings, test reports, secrets.

Plain data plus small formatters, kept apart from the code that builds and writes sessions
(`sample_corpus_scenarios`, `sample_corpus_formats`). Each repository carries a few real-looking
source files; reads, greps and edits in generated sessions are computed from these files, so
what an agent "sees" stays consistent with what it changes.

The five repositories (`REPOS`) are one user's, and carry that user's habits (the `demo`
profile; other people's repositories are generated in `generic`). Each has its own test command
and layout, and its side of the routines `scenarios` describes (the static check run before the
tests, the test file read after editing each module):

    repository    tests                        layout                      check before tests
    ledger-api    uv run pytest -x tests/unit  tests/unit/test_<module>.py uv run mypy src
    web-console   pnpm vitest run              src/**/<module>.test.ts(x)  pnpm tsc --noEmit
    tilecache     cargo nextest run            tests/<binary>.rs           cargo clippy ... -D warnings
    edge-proxy    go test -race ./...          <package>/<file>_test.go    go vet ./...
    etl-jobs      make test                    tests/test_<job>.py         make lint

What replay scoring can tell apart from a generic model's guess (evaluation/scoring.py): paths (a
test file under tests/unit/, a colocated .test.ts), the order of tools (a read or a static check
where a generic agent runs the tests), and the intent class of shell commands (typecheck and lint
checks, `make test` in a Python repository). Verification commands of the same class match each
other, so `uv run pytest -x tests/unit` scores the same as `pytest -q`: the exact test commands
make the transcripts realistic, the routines and layouts make the habits visible.

Secrets are assembled from fragments at run time (`make_secret`), so this file never looks like
a leak to a secret scanner.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

HOME = "/home/dana"


@dataclass(frozen=True)
class Failure:
    """A failing test as the runner reports it."""

    test_file: str
    test_name: str
    summary: str  # the one-line reason ("AssertionError: assert ...")
    detail: str  # the lines the runner prints under the test's header
    line: int
    # What the repository's static check (`Repo.check_command`) prints while the change is incomplete,
    # when it catches the problem before the tests do (a type error, an undefined name); "" when it
    # passes. A failing check is a failed verification: the user fixes the code before running tests.
    check_output: str = ""


@dataclass(frozen=True)
class Edit:
    """One change to one file; `old == ""` creates the file with `new` as its content."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Probe:
    """One inspection: read a file, grep, glob, list a directory, or run a read-only command."""

    kind: str  # read | grep | glob | list | shell
    arg: str  # path, pattern, directory or command
    path: str = ""  # grep: where to search
    output: str = ""  # shell: what the command prints


@dataclass(frozen=True)
class Task:
    """A kind of request that recurs in one repository across days (a workflow family)."""

    intent: str  # fix_bug | add_feature | refactor | write_tests | bump_dependency | explain | ops
    instructions: tuple[str, ...]  # phrasings of the same request
    probes: tuple[Probe, ...]
    edits: tuple[Edit, ...] = ()
    failure: Failure | None = None  # what the tests show while the change is incomplete
    reproduce_first: bool = False  # bug fixes run the failing test before reading code
    answer: str = ""  # the agent's closing message when it succeeds
    branch: str = "main"
    weight: int = 2


@dataclass(frozen=True)
class Repo:
    name: str
    language: str  # python | typescript | rust | go
    runner: str  # pytest | vitest | cargo | nextest | go | make
    remote: str
    test_command: str
    focused_test: str  # formatted with test_file and test_name
    lint_command: str
    lint_output: str
    suites: tuple[tuple[str, tuple[str, ...]], ...]  # test file or package -> test names
    files: Mapping[str, str]
    tasks: tuple[Task, ...]
    weight: int = 2
    install_command: str = ""
    home: str = HOME  # whose machine: the cwd is home/workspace/name
    workspace: str = "src"
    version: str = "0.1.0"  # the package version runners print
    test_banner: str = ""  # what the test command prints before the runner (npm's script header)
    # The demo user's routines (scenarios.Options.routines): the static check run before every test
    # run that follows an edit, what it prints when it passes, and the test file read after editing
    # each module. Empty for repositories whose sessions don't follow them.
    check_command: str = ""
    check_output: str = ""
    test_of: Mapping[str, str] = field(default_factory=dict)

    @property
    def cwd(self) -> str:
        return f"{self.home}/{self.workspace}/{self.name}"

    @property
    def test_count(self) -> int:
        return sum(len(names) for _, names in self.suites)


# --------------------------------------------------------------------------- ledger-api (Python)

_FEES_PY = '''"""Fee calculation for ledger entries."""

from decimal import ROUND_HALF_UP, Decimal

FEE_RATE = Decimal("0.029")
FIXED_FEE = Decimal("0.30")


def apply_fee(amount: Decimal) -> Decimal:
    """Return the fee charged on `amount`, in the entry's currency."""
    fee = amount * FEE_RATE + FIXED_FEE
    return fee.quantize(Decimal("0.01"))


def net_amount(amount: Decimal) -> Decimal:
    """What the merchant receives after fees."""
    if amount <= 0:
        raise ValueError(f"amount must be positive, got {amount}")
    return amount - apply_fee(amount)
'''

_SERVICE_PY = '''"""Ledger service: posting entries and reading them back."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from ledger.fees import apply_fee
from ledger.store import Store


@dataclass(frozen=True)
class Entry:
    id: str
    account: str
    amount: Decimal
    fee: Decimal
    idempotency_key: str | None = None


class LedgerService:
    def __init__(self, store: Store) -> None:
        self._store = store

    def post(self, account: str, amount: Decimal, idempotency_key: str | None = None) -> Entry:
        # a retried request with the same key returns the first entry instead of posting twice
        if idempotency_key is not None:
            existing = self._store.find_by_key(account, idempotency_key)
            if existing is not None:
                return existing
        entry = Entry(self._store.next_id(), account, amount, apply_fee(amount), idempotency_key)
        self._store.insert(entry)
        return entry

    def list_entries(self, account: str) -> list[Entry]:
        return self._store.entries_for(account)
'''

_API_PY = '''"""HTTP routes for the ledger service."""

from fastapi import APIRouter, Depends, Header

from ledger.schemas import EntryIn, EntryOut
from ledger.service import LedgerService, get_service

router = APIRouter(prefix="/accounts/{account}")


@router.post("/entries", response_model=EntryOut, status_code=201)
def post_entry(
    account: str,
    body: EntryIn,
    idempotency_key: str | None = Header(default=None),
    service: LedgerService = Depends(get_service),
) -> EntryOut:
    return EntryOut.from_entry(service.post(account, body.amount, idempotency_key))


@router.get("/entries", response_model=list[EntryOut])
def list_entries(account: str, service: LedgerService = Depends(get_service)) -> list[EntryOut]:
    return [EntryOut.from_entry(e) for e in service.list_entries(account)]
'''

_TEST_FEES_PY = """from decimal import Decimal

import pytest

from ledger.fees import apply_fee, net_amount


def test_fee_on_ten():
    assert apply_fee(Decimal("10.00")) == Decimal("0.59")


def test_net_amount():
    assert net_amount(Decimal("100.00")) == Decimal("96.80")


def test_fee_rounds_half_up():
    assert apply_fee(Decimal("5.00")) == Decimal("0.45")


def test_net_amount_rejects_negative():
    with pytest.raises(ValueError):
        net_amount(Decimal("-1"))
"""

_TEST_SERVICE_PY = """from decimal import Decimal

import pytest

from ledger.service import LedgerService
from ledger.store import MemoryStore


@pytest.fixture
def service():
    return LedgerService(MemoryStore())


def test_post_creates_entry(service):
    entry = service.post("acc_1", Decimal("10.00"))
    assert (entry.account, entry.amount) == ("acc_1", Decimal("10.00"))


def test_post_same_key_returns_first(service):
    first = service.post("acc_1", Decimal("10.00"), idempotency_key="k1")
    assert service.post("acc_1", Decimal("99.00"), idempotency_key="k1") == first


def test_post_different_keys(service):
    a = service.post("acc_1", Decimal("1.00"), idempotency_key="k1")
    b = service.post("acc_1", Decimal("1.00"), idempotency_key="k2")
    assert a.id != b.id


def test_list_entries_empty(service):
    assert service.list_entries("acc_9") == []


def test_list_entries_orders_by_id(service):
    ids = [service.post("acc_1", Decimal("1.00")).id for _ in range(3)]
    assert [e.id for e in service.list_entries("acc_1")] == sorted(ids)


def test_fee_is_recorded(service):
    assert service.post("acc_1", Decimal("10.00")).fee == Decimal("0.59")
"""

_TEST_API_PY = """import pytest
from fastapi.testclient import TestClient

from ledger.app import create_app
from ledger.service import LedgerService
from ledger.store import MemoryStore


@pytest.fixture
def service():
    return LedgerService(MemoryStore())


@pytest.fixture
def client(service):
    return TestClient(create_app(service))


def test_post_entry(client):
    response = client.post("/accounts/acc_1/entries", json={"amount": "12.00"})
    assert response.status_code == 201 and response.json()["fee"] == "0.65"


def test_post_is_idempotent(client):
    headers = {"Idempotency-Key": "k1"}
    first = client.post("/accounts/acc_1/entries", json={"amount": "5.00"}, headers=headers)
    again = client.post("/accounts/acc_1/entries", json={"amount": "5.00"}, headers=headers)
    assert again.json()["id"] == first.json()["id"]


def test_list_entries(client, service):
    client.post("/accounts/acc_1/entries", json={"amount": "12.00"})
    response = client.get("/accounts/acc_1/entries?limit=10")
    assert response.status_code == 200 and len(response.json()) == 1


def test_unknown_account_404(client):
    assert client.get("/accounts/nope/entries").status_code == 404


def test_rejects_zero_amount(client):
    assert client.post("/accounts/acc_1/entries", json={"amount": "0"}).status_code == 422
"""

_LEDGER_PYPROJECT = """[project]
name = "ledger-api"
version = "0.9.3"
requires-python = ">=3.12"
dependencies = [
    "fastapi>=0.115",
    "pydantic>=2.9,<3",
    "sqlalchemy>=2.0",
    "uvicorn>=0.32",
]

[dependency-groups]
dev = ["pytest>=8.3", "httpx>=0.27", "ruff>=0.8"]

[tool.pytest.ini_options]
pythonpath = ["src"]
testpaths = ["tests/unit", "tests/integration"]

[tool.mypy]
strict = true
files = ["src"]
"""

_LEDGER = Repo(
    name="ledger-api",
    language="python",
    runner="pytest",
    remote="git@github.com:northwind-labs/ledger-api.git",
    test_command="uv run pytest -x tests/unit",
    focused_test="uv run pytest -x {test_file}::{test_name}",
    lint_command="uv run ruff check .",
    lint_output="All checks passed!\n",
    install_command="uv sync",
    version="0.9.3",
    check_command="uv run mypy src",
    check_output="Success: no issues found in 6 source files\n",
    test_of={
        "src/ledger/fees.py": "tests/unit/test_fees.py",
        "src/ledger/service.py": "tests/unit/test_service.py",
        "src/ledger/api.py": "tests/unit/test_api.py",
    },
    suites=(
        (
            "tests/unit/test_api.py",
            (
                "test_post_entry",
                "test_post_is_idempotent",
                "test_list_entries",
                "test_unknown_account_404",
                "test_rejects_zero_amount",
            ),
        ),
        (
            "tests/unit/test_fees.py",
            (
                "test_fee_on_ten",
                "test_net_amount",
                "test_fee_rounds_half_up",
                "test_net_amount_rejects_negative",
            ),
        ),
        (
            "tests/unit/test_service.py",
            (
                "test_post_creates_entry",
                "test_post_same_key_returns_first",
                "test_post_different_keys",
                "test_list_entries_empty",
                "test_list_entries_orders_by_id",
                "test_fee_is_recorded",
            ),
        ),
    ),
    files={
        "pyproject.toml": _LEDGER_PYPROJECT,
        "src/ledger/fees.py": _FEES_PY,
        "src/ledger/service.py": _SERVICE_PY,
        "src/ledger/api.py": _API_PY,
        "tests/unit/test_fees.py": _TEST_FEES_PY,
        "tests/unit/test_service.py": _TEST_SERVICE_PY,
        "tests/unit/test_api.py": _TEST_API_PY,
    },
    tasks=(
        Task(
            intent="fix_bug",
            instructions=(
                "test_fee_rounds_half_up is failing on main, can you fix it?",
                "fees are off by a cent for some amounts (5.00 should charge 0.45, we charge 0.44). fix it",
                "CI is red on ledger-api: tests/unit/test_fees.py fails. please fix the fee rounding",
            ),
            probes=(Probe("read", "src/ledger/fees.py"), Probe("grep", "quantize", "src")),
            edits=(
                Edit(
                    "src/ledger/fees.py",
                    '    return fee.quantize(Decimal("0.01"))',
                    '    return fee.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)',
                ),
            ),
            failure=Failure(
                "tests/unit/test_fees.py",
                "test_fee_rounds_half_up",
                "AssertionError: assert Decimal('0.44') == Decimal('0.45')",
                "    def test_fee_rounds_half_up():\n"
                '>       assert apply_fee(Decimal("5.00")) == Decimal("0.45")\n'
                "E       AssertionError: assert Decimal('0.44') == Decimal('0.45')\n"
                "E        +  where Decimal('0.44') = apply_fee(Decimal('5.00'))",
                17,
            ),
            reproduce_first=True,
            answer="Fixed: `apply_fee` quantized with the default banker's rounding (ROUND_HALF_EVEN), "
            "so 0.445 became 0.44. It now passes `rounding=ROUND_HALF_UP`, which was already imported "
            "but unused. The full suite passes.",
            branch="fix/fee-rounding",
            weight=4,
        ),
        Task(
            intent="add_feature",
            instructions=(
                "add pagination to GET /accounts/{account}/entries: a `limit` (default 50, max 500) and an "
                "`after` cursor (entry id)",
                "the entries endpoint returns everything, which times out for big merchants. add limit/after "
                "pagination",
            ),
            probes=(
                Probe("read", "src/ledger/api.py"),
                Probe("grep", "def list_entries", "src"),
                Probe("read", "src/ledger/service.py"),
            ),
            edits=(
                Edit(
                    "src/ledger/api.py",
                    "def list_entries(account: str, service: LedgerService = Depends(get_service)) "
                    "-> list[EntryOut]:\n"
                    "    return [EntryOut.from_entry(e) for e in service.list_entries(account)]",
                    "def list_entries(\n"
                    "    account: str,\n"
                    "    limit: int = Query(default=50, ge=1, le=500),\n"
                    "    after: str | None = None,\n"
                    "    service: LedgerService = Depends(get_service),\n"
                    ") -> list[EntryOut]:\n"
                    "    entries = service.list_entries(account, limit=limit, after=after)\n"
                    "    return [EntryOut.from_entry(e) for e in entries]",
                ),
                Edit(
                    "src/ledger/service.py",
                    "    def list_entries(self, account: str) -> list[Entry]:\n"
                    "        return self._store.entries_for(account)",
                    "    def list_entries(self, account: str, limit: int = 50, after: str | None = None) "
                    "-> list[Entry]:\n"
                    "        entries = self._store.entries_for(account)\n"
                    "        if after is not None:\n"
                    "            entries = [e for e in entries if e.id > after]\n"
                    "        return entries[:limit]",
                ),
            ),
            failure=Failure(
                "tests/unit/test_api.py",
                "test_list_entries",
                "TypeError: LedgerService.list_entries() got an unexpected keyword argument 'limit'",
                "    def test_list_entries(client, service):\n"
                '        client.post("/accounts/acc_1/entries", json={"amount": "12.00"})\n'
                '>       response = client.get("/accounts/acc_1/entries?limit=10")\n'
                "E       TypeError: LedgerService.list_entries() got an unexpected keyword argument 'limit'",
                33,
                check_output='src/ledger/api.py:30: error: Unexpected keyword argument "limit" for '
                '"list_entries" of "LedgerService"  [call-arg]\n'
                'src/ledger/api.py:30: error: Unexpected keyword argument "after" for '
                '"list_entries" of "LedgerService"  [call-arg]\n'
                "Found 2 errors in 1 file (checked 6 source files)\n",
            ),
            answer="Added `limit` (1–500, default 50) and an `after` cursor to the entries endpoint; the "
            "service filters by id and slices. Tests pass. Note the store still loads every entry for the "
            "account, so a real cursor query in `Store.entries_for` would be the next step for big "
            "merchants.",
            branch="feat/entries-pagination",
        ),
        Task(
            intent="write_tests",
            instructions=(
                "add a test that net_amount rejects a zero amount",
                "we have no test for net_amount(0). add one next to the negative case",
            ),
            probes=(Probe("read", "tests/unit/test_fees.py"),),
            edits=(
                Edit(
                    "tests/unit/test_fees.py",
                    "def test_net_amount_rejects_negative():\n"
                    "    with pytest.raises(ValueError):\n"
                    '        net_amount(Decimal("-1"))\n',
                    "def test_net_amount_rejects_negative():\n"
                    "    with pytest.raises(ValueError):\n"
                    '        net_amount(Decimal("-1"))\n'
                    "\n\n"
                    "def test_net_amount_rejects_zero():\n"
                    '    with pytest.raises(ValueError, match="must be positive"):\n'
                    '        net_amount(Decimal("0"))\n',
                ),
            ),
            answer="Added `test_net_amount_rejects_zero` beside the negative case; it passes "
            "(`net_amount` already checks `amount <= 0`).",
        ),
        Task(
            intent="explain",
            instructions=(
                "how do idempotency keys work in the ledger service? don't change anything",
                "explain what happens when a client retries POST /entries with the same Idempotency-Key",
            ),
            probes=(
                Probe("grep", "idempotency", "src"),
                Probe("read", "src/ledger/service.py"),
                Probe("read", "src/ledger/api.py"),
            ),
            answer="The route reads the `Idempotency-Key` header and passes it to `LedgerService.post`. "
            "When a key is given, `post` first looks up an entry with the same account and key "
            "(`Store.find_by_key`) and returns it unchanged, so a retry never posts twice. Keys are scoped "
            "per account, and there is no expiry: a key is remembered as long as the entry exists.",
            weight=2,
        ),
        Task(
            intent="bump_dependency",
            instructions=(
                "bump pydantic to 2.10 and make sure the tests still pass",
                "renovate is stuck, please bump pydantic to >=2.10 by hand",
            ),
            probes=(Probe("read", "pyproject.toml"),),
            edits=(Edit("pyproject.toml", '    "pydantic>=2.9,<3",', '    "pydantic>=2.10,<3",'),),
            answer="Bumped pydantic to `>=2.10,<3` in pyproject.toml and re-synced the lock; all tests pass.",
            branch="chore/bump-pydantic",
            weight=1,
        ),
    ),
    weight=3,
)

# --------------------------------------------------------------------------- web-console (TypeScript)

_FORMAT_TS = """export type Currency = "USD" | "EUR" | "GBP";

const SYMBOLS: Record<Currency, string> = { USD: "$", EUR: "€", GBP: "£" };

export function formatMoney(cents: number, currency: Currency = "USD"): string {
  const symbol = SYMBOLS[currency];
  const value = (cents / 100).toFixed(2);
  return `${symbol}${value}`;
}

export function formatDate(iso: string): string {
  return new Date(iso).toLocaleDateString("en-US", { month: "short", day: "numeric", year: "numeric" });
}
"""

_INVOICE_TABLE_TSX = """import { formatDate, formatMoney } from "../lib/format";
import type { Invoice } from "../api/types";

type Props = {
  invoices: Invoice[];
  onSelect: (id: string) => void;
};

export function InvoiceTable({ invoices, onSelect }: Props) {
  return (
    <table className="invoice-table">
      <thead>
        <tr>
          <th>Number</th>
          <th>Customer</th>
          <th>Due</th>
          <th className="num">Amount</th>
        </tr>
      </thead>
      <tbody>
        {invoices.map((inv) => (
          <tr key={inv.id} onClick={() => onSelect(inv.id)}>
            <td>{inv.number}</td>
            <td>{inv.customerName}</td>
            <td>{formatDate(inv.dueDate)}</td>
            <td className="num">{formatMoney(inv.amountCents, inv.currency)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
"""

_CLIENT_TS = """import { getSession } from "../auth/session";

const BASE_URL = import.meta.env.VITE_API_URL ?? "/api";

export async function fetchJson<T>(path: string, init: RequestInit = {}): Promise<T> {
  const session = await getSession();
  const response = await fetch(`${BASE_URL}${path}`, {
    ...init,
    headers: {
      "Content-Type": "application/json",
      Authorization: `Bearer ${session.accessToken}`,
      ...init.headers,
    },
  });
  if (!response.ok) {
    throw new Error(`${init.method ?? "GET"} ${path} failed: ${response.status}`);
  }
  return (await response.json()) as T;
}

export const listInvoices = () => fetchJson<Invoice[]>("/invoices");
"""

_PACKAGE_JSON = """{
  "name": "web-console",
  "private": true,
  "version": "1.14.0",
  "type": "module",
  "scripts": {
    "dev": "vite",
    "build": "tsc -b && vite build",
    "test": "vitest",
    "lint": "eslint ."
  },
  "packageManager": "pnpm@9.14.2",
  "dependencies": {
    "react": "^18.3.1",
    "react-dom": "^18.3.1",
    "react-router-dom": "^6.28.0"
  },
  "devDependencies": {
    "@testing-library/react": "^16.1.0",
    "typescript": "~5.6.3",
    "vite": "^5.4.11",
    "vitest": "^2.1.8"
  }
}
"""

_FORMAT_TEST_TS = """import { describe, expect, it } from "vitest";

import { formatDate, formatMoney } from "./format";

describe("formatMoney", () => {
  it("formats dollars", () => {
    expect(formatMoney(1234)).toBe("$12.34");
  });

  it("formats euros", () => {
    expect(formatMoney(500, "EUR")).toBe("€5.00");
  });

  it("puts the minus sign before the symbol", () => {
    expect(formatMoney(-1200)).toBe("-$12.00");
  });

  it("formats dates", () => {
    expect(formatDate("2026-03-01T09:30:00Z")).toBe("Mar 1, 2026");
  });
});
"""

_INVOICE_TABLE_TEST_TSX = """import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";

import { invoiceFixtures } from "../test/fixtures";
import { InvoiceTable } from "./InvoiceTable";

describe("InvoiceTable", () => {
  it("renders a row per invoice", () => {
    render(<InvoiceTable invoices={invoiceFixtures} onSelect={() => {}} />);
    expect(screen.getAllByRole("row")).toHaveLength(invoiceFixtures.length + 1);
  });

  it("calls onSelect", () => {
    const onSelect = vi.fn();
    render(<InvoiceTable invoices={invoiceFixtures} onSelect={onSelect} />);
    fireEvent.click(screen.getByText(invoiceFixtures[0].number));
    expect(onSelect).toHaveBeenCalledWith(invoiceFixtures[0].id);
  });

  it("filters by status", () => {
    render(<InvoiceTable invoices={invoiceFixtures} onSelect={() => {}} status="paid" />);
    const paid = invoiceFixtures.filter((inv) => inv.status === "paid");
    expect(screen.getAllByRole("row").length - 1).toBe(paid.length);
  });
});
"""

_CLIENT_TEST_TS = """import { afterEach, describe, expect, it, vi } from "vitest";

import { fetchJson } from "./client";

vi.mock("../auth/session", () => ({ getSession: async () => ({ accessToken: "t0k" }) }));

afterEach(() => vi.unstubAllGlobals());

describe("fetchJson", () => {
  it("sends the bearer token", async () => {
    const fetch = vi.fn().mockResolvedValue(new Response("{}"));
    vi.stubGlobal("fetch", fetch);
    await fetchJson("/invoices");
    expect(fetch.mock.calls[0][1].headers.Authorization).toBe("Bearer t0k");
  });

  it("throws on 401", async () => {
    vi.stubGlobal("fetch", vi.fn().mockResolvedValue(new Response("", { status: 401 })));
    await expect(fetchJson("/invoices")).rejects.toThrow("GET /invoices failed: 401");
  });

  it("parses json", async () => {
    vi.stubGlobal("fetch", vi.fn().mockResolvedValue(new Response('[{"id":"in_1"}]')));
    expect(await fetchJson("/invoices")).toEqual([{ id: "in_1" }]);
  });
});
"""

_FORMAT_DATE_TEST_TS = """import { describe, expect, it } from "vitest";

import { formatDate } from "./format";

describe("formatDate", () => {
  it("formats an ISO date", () => {
    expect(formatDate("2026-07-04T12:00:00Z")).toBe("Jul 4, 2026");
  });

  it("keeps New Year's Eve in the old year", () => {
    expect(formatDate("2026-12-31T12:00:00Z")).toBe("Dec 31, 2026");
  });
});
"""

_WEB = Repo(
    name="web-console",
    language="typescript",
    runner="vitest",
    remote="git@github.com:northwind-labs/web-console.git",
    test_command="pnpm vitest run",
    focused_test="pnpm vitest run {test_file} -t '{test_name}'",
    lint_command="pnpm lint",
    lint_output="\n> web-console@1.14.0 lint /home/dana/src/web-console\n> eslint .\n\n",
    install_command="pnpm install --frozen-lockfile",
    version="1.14.0",
    check_command="pnpm tsc --noEmit",
    check_output="",  # tsc is silent when the types check
    test_of={
        "src/lib/format.ts": "src/lib/format.test.ts",
        "src/components/InvoiceTable.tsx": "src/components/InvoiceTable.test.tsx",
        "src/api/client.ts": "src/api/client.test.ts",
    },
    suites=(
        (
            "src/lib/format.test.ts",
            ("formats dollars", "formats euros", "puts the minus sign before the symbol", "formats dates"),
        ),
        (
            "src/components/InvoiceTable.test.tsx",
            ("renders a row per invoice", "calls onSelect", "filters by status"),
        ),
        ("src/api/client.test.ts", ("sends the bearer token", "throws on 401", "parses json")),
        ("src/routes/App.test.tsx", ("renders the dashboard", "redirects to login")),
    ),
    files={
        "package.json": _PACKAGE_JSON,
        "src/lib/format.ts": _FORMAT_TS,
        "src/components/InvoiceTable.tsx": _INVOICE_TABLE_TSX,
        "src/api/client.ts": _CLIENT_TS,
        "src/lib/format.test.ts": _FORMAT_TEST_TS,
        "src/components/InvoiceTable.test.tsx": _INVOICE_TABLE_TEST_TSX,
        "src/api/client.test.ts": _CLIENT_TEST_TS,
    },
    tasks=(
        Task(
            intent="fix_bug",
            instructions=(
                "negative amounts render as $-12.00 instead of -$12.00 in the invoice table",
                "credit notes show `$-5.00`. should be `-$5.00`. fix formatMoney",
            ),
            probes=(Probe("read", "src/lib/format.ts"), Probe("grep", "formatMoney(", "src")),
            edits=(
                Edit(
                    "src/lib/format.ts",
                    "  const value = (cents / 100).toFixed(2);\n  return `${symbol}${value}`;",
                    "  const value = (Math.abs(cents) / 100).toFixed(2);\n"
                    "  return cents < 0 ? `-${symbol}${value}` : `${symbol}${value}`;",
                ),
            ),
            failure=Failure(
                "src/lib/format.test.ts",
                "puts the minus sign before the symbol",
                "AssertionError: expected '$-12.00' to be '-$12.00' // Object.is equality",
                "AssertionError: expected '$-12.00' to be '-$12.00' // Object.is equality\n\n"
                "- Expected\n+ Received\n\n- -$12.00\n+ $-12.00\n",
                15,
            ),
            reproduce_first=True,
            answer="`formatMoney` put the symbol in front of the already-signed number. It now formats the "
            "absolute value and prefixes `-` for negative amounts, so credit notes read `-$12.00`. "
            "All vitest suites pass.",
            branch="fix/negative-money",
            weight=3,
        ),
        Task(
            intent="add_feature",
            instructions=(
                "add a status filter to InvoiceTable (all / open / paid / overdue)",
                "InvoiceTable needs a `status` prop to filter rows; default shows everything",
            ),
            probes=(Probe("read", "src/components/InvoiceTable.tsx"), Probe("glob", "src/**/*.test.tsx")),
            edits=(
                Edit(
                    "src/components/InvoiceTable.tsx",
                    "type Props = {\n  invoices: Invoice[];\n  onSelect: (id: string) => void;\n};",
                    "type Props = {\n  invoices: Invoice[];\n  onSelect: (id: string) => void;\n"
                    '  status?: "all" | Invoice["status"];\n};',
                ),
                Edit(
                    "src/components/InvoiceTable.tsx",
                    "export function InvoiceTable({ invoices, onSelect }: Props) {\n  return (",
                    'export function InvoiceTable({ invoices, onSelect, status = "all" }: Props) {\n'
                    '  const rows = status === "all" ? invoices : invoices.filter((inv) => '
                    "inv.status === status);\n"
                    "  return (",
                ),
                Edit(
                    "src/components/InvoiceTable.tsx",
                    "        {invoices.map((inv) => (",
                    "        {rows.map((inv) => (",
                ),
            ),
            failure=Failure(
                "src/components/InvoiceTable.test.tsx",
                "filters by status",
                "AssertionError: expected 3 to be 2 // Object.is equality",
                "AssertionError: expected 3 to be 2 // Object.is equality\n\n- Expected\n+ "
                "Received\n\n- 2\n+ 3\n",
                23,
            ),
            answer='Added an optional `status` prop (`"all"` by default) to `InvoiceTable`; rows are '
            "filtered before rendering. The first attempt still mapped over `invoices`, which the new test "
            "caught; it now renders `rows`. Tests pass.",
            branch="feat/invoice-status-filter",
        ),
        Task(
            intent="write_tests",
            instructions=(
                "formatDate has no tests. add a vitest file for it",
                "write tests for formatDate: a normal ISO date and one at the year boundary",
            ),
            probes=(Probe("read", "src/lib/format.ts"), Probe("glob", "src/lib/*.test.ts")),
            edits=(Edit("src/lib/formatDate.test.ts", "", _FORMAT_DATE_TEST_TS),),
            answer="Added `src/lib/formatDate.test.ts` with a mid-year date and a New Year's Eve date "
            "(checks there is no off-by-one from time zones). Both pass with the rest of the suite.",
            weight=1,
        ),
        Task(
            intent="refactor",
            instructions=(
                "rename fetchJson to requestJson in the api client, it also does POSTs now",
                "fetchJson is a misleading name, call it requestJson everywhere",
            ),
            probes=(Probe("grep", "fetchJson", "src"),),
            edits=(
                Edit(
                    "src/api/client.ts",
                    "export async function fetchJson<T>(path: string, init: RequestInit = {}): Promise<T> {",
                    "export async function requestJson<T>(path: string, init: RequestInit = {}): "
                    "Promise<T> {",
                ),
                Edit(
                    "src/api/client.ts",
                    'export const listInvoices = () => fetchJson<Invoice[]>("/invoices");',
                    'export const listInvoices = () => requestJson<Invoice[]>("/invoices");',
                ),
            ),
            answer="Renamed `fetchJson` to `requestJson` in `src/api/client.ts`; it had no other callers. "
            "Type-check and tests pass.",
            branch="refactor/request-json",
        ),
        Task(
            intent="explain",
            instructions=(
                "where do we set the auth header for API calls?",
                "how does the console authenticate to the API? just explain",
            ),
            probes=(Probe("grep", "Authorization", "src"), Probe("read", "src/api/client.ts")),
            answer="Every request goes through `fetchJson` in `src/api/client.ts`: it awaits `getSession()` "
            "and adds `Authorization: Bearer <accessToken>` (plus JSON content type) before merging the "
            "caller's headers, so a caller can override it. Non-2xx responses throw.",
        ),
    ),
    weight=3,
)

# --------------------------------------------------------------------------- tilecache (Rust)

_CACHE_RS = """use std::collections::{HashMap, VecDeque};

use crate::TileKey;

/// A fixed-capacity LRU cache of encoded tiles.
pub struct TileCache {
    capacity: usize,
    entries: HashMap<TileKey, Vec<u8>>,
    order: VecDeque<TileKey>,
}

impl TileCache {
    pub fn new(capacity: usize) -> Self {
        Self { capacity, entries: HashMap::new(), order: VecDeque::new() }
    }

    pub fn get(&mut self, key: &TileKey) -> Option<&Vec<u8>> {
        if self.entries.contains_key(key) {
            self.order.retain(|k| k != key);
            self.order.push_back(*key);
        }
        self.entries.get(key)
    }

    pub fn insert(&mut self, key: TileKey, tile: Vec<u8>) {
        if self.entries.len() > self.capacity {
            if let Some(oldest) = self.order.pop_front() {
                self.entries.remove(&oldest);
            }
        }
        self.order.push_back(key);
        self.entries.insert(key, tile);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}
"""

_LIB_RS = """//! Tile cache for the map renderer.

pub mod cache;

pub use cache::TileCache;

/// A web-mercator tile address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TileKey {
    pub z: u8,
    pub x: u32,
    pub y: u32,
}

impl TileKey {
    pub fn new(z: u8, x: u32, y: u32) -> Self {
        Self { z, x, y }
    }

    /// The parent tile one zoom level up.
    pub fn parent(&self) -> Option<TileKey> {
        (self.z > 0).then(|| TileKey::new(self.z - 1, self.x / 2, self.y / 2))
    }
}
"""

_CARGO_TOML = """[package]
name = "tilecache"
version = "0.4.2"
edition = "2021"

[dependencies]
bytes = "1.8"
thiserror = "2.0"

[dev-dependencies]
proptest = "1.5"
"""

_EVICTION_RS = """use tilecache::{TileCache, TileKey};

fn key(x: u32) -> TileKey {
    TileKey::new(12, x, 7)
}

fn tile() -> Vec<u8> {
    vec![0u8; 16]
}

#[test]
fn evicts_least_recently_used() {
    let mut cache = TileCache::new(3);
    for x in 0..4 {
        cache.insert(key(x), tile());
    }
    // the first tile is the least recently used: it must be gone
    assert_eq!(cache.len(), 3);
    assert!(cache.get(&key(0)).is_none());
}

#[test]
fn get_refreshes_recency() {
    let mut cache = TileCache::new(2);
    cache.insert(key(0), tile());
    cache.insert(key(1), tile());
    cache.get(&key(0));
    cache.insert(key(2), tile());
    assert!(cache.get(&key(0)).is_some());
    assert!(cache.get(&key(1)).is_none());
}

#[test]
fn capacity_one() {
    let mut cache = TileCache::new(1);
    cache.insert(key(0), tile());
    cache.insert(key(1), tile());
    assert_eq!(cache.len(), 1);
}
"""

_CLIPPY_OK = (
    "    Checking tilecache v0.4.2 (/home/dana/src/tilecache)\n"
    "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 1.12s\n"
)

_CLIPPY_WARNINGS = """    Checking tilecache v0.4.2 (/home/dana/src/tilecache)
error: struct `TileCache` has a public `len` method, but no `is_empty` method
  --> src/cache.rs:36:5
   |
36 |     pub fn len(&self) -> usize {
   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#len_without_is_empty
   = note: `-D clippy::len-without-is-empty` implied by `-D warnings`
   = help: to override `-D warnings` add `#[allow(clippy::len_without_is_empty)]`

error: could not compile `tilecache` (lib) due to 1 previous error
"""

_TILECACHE = Repo(
    name="tilecache",
    language="rust",
    runner="nextest",
    remote="https://github.com/northwind-labs/tilecache.git",
    test_command="cargo nextest run",
    focused_test="cargo nextest run --test {test_file} {test_name}",
    lint_command="cargo clippy --all-targets -- -D warnings",
    lint_output=_CLIPPY_OK,
    version="0.4.2",
    check_command="cargo clippy --all-targets -- -D warnings",
    check_output=_CLIPPY_OK,
    test_of={"src/cache.rs": "tests/eviction.rs"},
    suites=(
        (
            "src/lib.rs",
            (
                "tests::parent_of_root_is_none",
                "tests::parent_halves_coordinates",
                "cache::tests::get_returns_inserted",
                "cache::tests::get_missing_is_none",
            ),
        ),
        ("tests/eviction.rs", ("evicts_least_recently_used", "get_refreshes_recency", "capacity_one")),
    ),
    files={
        "Cargo.toml": _CARGO_TOML,
        "src/lib.rs": _LIB_RS,
        "src/cache.rs": _CACHE_RS,
        "tests/eviction.rs": _EVICTION_RS,
    },
    tasks=(
        Task(
            intent="fix_bug",
            instructions=(
                "evicts_least_recently_used fails: the cache keeps one tile too many",
                "tilecache grows to capacity+1 before evicting. fix the off-by-one",
            ),
            probes=(Probe("read", "src/cache.rs"), Probe("grep", "capacity", "src")),
            edits=(
                Edit(
                    "src/cache.rs",
                    "        if self.entries.len() > self.capacity {",
                    "        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {",
                ),
            ),
            failure=Failure(
                "eviction",
                "evicts_least_recently_used",
                "assertion `left == right` failed",
                "assertion `left == right` failed\n  left: 4\n right: 3",
                18,
            ),
            reproduce_first=True,
            answer="`insert` evicted only when the map was already *over* capacity, so it held capacity+1 "
            "tiles. It now evicts when inserting a new key into a full cache (re-inserting an existing key "
            "doesn't evict). `cargo test` passes.",
            branch="fix/eviction-off-by-one",
            weight=3,
        ),
        Task(
            intent="refactor",
            instructions=(
                "fix the clippy warnings, CI runs clippy with -D warnings now",
                "clippy fails on tilecache, please make it clean",
            ),
            probes=(Probe("shell", "cargo clippy --all-targets -- -D warnings", output=_CLIPPY_WARNINGS),),
            edits=(
                Edit(
                    "src/cache.rs",
                    "    pub fn len(&self) -> usize {\n        self.entries.len()\n    }",
                    "    pub fn len(&self) -> usize {\n        self.entries.len()\n    }\n\n"
                    "    pub fn is_empty(&self) -> bool {\n        self.entries.is_empty()\n    }",
                ),
            ),
            answer="Clippy wanted an `is_empty` beside the public `len`; added it. "
            "`cargo clippy --all-targets -- -D warnings` and `cargo test` are clean.",
            branch="chore/clippy",
        ),
        Task(
            intent="explain",
            instructions=(
                "how is the tile cache keyed? z/x/y or quadkey?",
                "quick question: what does TileCache use as its key and how is recency tracked?",
            ),
            probes=(
                Probe("grep", "struct TileKey", "src"),
                Probe("read", "src/lib.rs"),
                Probe("read", "src/cache.rs"),
            ),
            answer="By z/x/y: `TileKey { z: u8, x: u32, y: u32 }` derives `Hash`/`Eq` and is the `HashMap` "
            "key. Recency is a `VecDeque<TileKey>`: `get` moves the key to the back, and `insert` evicts "
            "from the front. Note `get` is O(n) because of `retain` on the deque.",
        ),
    ),
    weight=2,
)

# --------------------------------------------------------------------------- edge-proxy (Go)

_LIMITER_GO = """package ratelimit

import (
	"sync"
	"time"
)

// Limiter is a token bucket shared by all requests from one client.
type Limiter struct {
	mu       sync.Mutex
	rate     float64 // tokens per second
	burst    float64
	tokens   float64
	lastFill time.Time
	now      func() time.Time
}

func New(rate float64, burst int) *Limiter {
	return &Limiter{rate: rate, burst: float64(burst), tokens: float64(burst), now: time.Now}
}

// Allow takes one token if there is one.
func (l *Limiter) Allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	elapsed := now.Sub(l.lastFill).Seconds()
	l.tokens = min(l.burst, l.tokens+elapsed)
	l.lastFill = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// Remaining reports the whole tokens left.
func (l *Limiter) Remaining() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.tokens)
}
"""

_HANDLER_GO = """package proxy

import (
	"net/http"
	"net/http/httputil"

	"github.com/northwind-labs/edge-proxy/internal/ratelimit"
)

type Handler struct {
	upstream *httputil.ReverseProxy
	limits   *ratelimit.Registry
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limiter := h.limits.For(clientID(r))
	if !limiter.Allow() {
		http.Error(w, "rate limit exceeded", http.StatusTooManyRequests)
		return
	}
	h.upstream.ServeHTTP(w, r)
}
"""

_MAIN_GO = """package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/northwind-labs/edge-proxy/internal/config"
	"github.com/northwind-labs/edge-proxy/internal/proxy"
)

func main() {
	configPath := flag.String("config", "/etc/edge-proxy/config.yaml", "path to the config file")
	flag.Parse()
	cfg, err := config.Load(*configPath)
	if err != nil {
		log.Fatalf("load config: %v", err)
	}
	mux := http.NewServeMux()
	for _, route := range cfg.Routes {
		mux.Handle(route.Prefix, proxy.NewHandler(route.Upstream, cfg.RateLimit))
	}
	log.Printf("listening on %s", cfg.Listen)
	log.Fatal(http.ListenAndServe(cfg.Listen, mux))
}
"""

_LIMITER_TEST_GO = """package ratelimit

import (
	"sync"
	"testing"
	"time"
)

func TestAllowBurst(t *testing.T) {
	l := New(1, 3)
	for i := 0; i < 3; i++ {
		if !l.Allow() {
			t.Fatalf("request %d denied within the burst", i)
		}
	}
}

func TestRefill(t *testing.T) {
	now := time.Unix(0, 0)
	l := New(5, 10)
	l.now = func() time.Time { return now }
	l.tokens, l.lastFill = 0, now
	now = now.Add(2 * time.Second)
	l.Allow()
	// 2s at 5 tokens/s refills the whole burst of 10
	if got := l.Remaining() + 1; got != 10 {
		t.Errorf("tokens after 2s at 5/s = %d, want 10", got)
	}
}

func TestRemaining(t *testing.T) {
	l := New(1, 4)
	l.Allow()
	if got := l.Remaining(); got != 3 {
		t.Errorf("Remaining() = %d, want 3", got)
	}
}

func TestConcurrentAllow(t *testing.T) {
	l := New(0, 100)
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); l.Allow() }()
	}
	wg.Wait()
	if got := l.Remaining(); got != 0 {
		t.Errorf("Remaining() after 100 concurrent requests = %d, want 0", got)
	}
}
"""

_HANDLER_TEST_GO = """package proxy

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHandlerForwards(t *testing.T) {
	h, upstream := newTestHandler(t, 10)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/things", nil))
	if rec.Code != http.StatusOK || upstream.Hits() != 1 {
		t.Fatalf("code %d, upstream hits %d; want 200 and 1", rec.Code, upstream.Hits())
	}
}

func TestHandlerRejectsOverLimit(t *testing.T) {
	h, _ := newTestHandler(t, 1)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("second request: code %d, want 429", rec.Code)
	}
}

func TestHandlerSetsRemainingHeader(t *testing.T) {
	h, _ := newTestHandler(t, 5)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if got := rec.Header().Get("X-RateLimit-Remaining"); got != "4" {
		t.Fatalf("X-RateLimit-Remaining = %q, want 4", got)
	}
}
"""

_GO_MOD = """module github.com/northwind-labs/edge-proxy

go 1.23

require (
	golang.org/x/net v0.30.0
	gopkg.in/yaml.v3 v3.0.1
)
"""

_EDGE = Repo(
    name="edge-proxy",
    language="go",
    runner="go",
    remote="git@github.com:northwind-labs/edge-proxy.git",
    test_command="go test -race ./...",
    focused_test="go test -race ./{test_file} -run '^{test_name}$' -v",
    lint_command="golangci-lint run ./...",
    lint_output="0 issues.\n",
    install_command="go mod download",
    check_command="go vet ./...",
    check_output="",  # go vet is silent when it finds nothing
    test_of={
        "internal/ratelimit/limiter.go": "internal/ratelimit/limiter_test.go",
        "internal/proxy/handler.go": "internal/proxy/handler_test.go",
    },
    suites=(
        ("cmd/proxy", ()),
        ("internal/config", ("TestLoad", "TestLoadMissingFile", "TestDefaults")),
        (
            "internal/proxy",
            ("TestHandlerForwards", "TestHandlerRejectsOverLimit", "TestHandlerSetsRemainingHeader"),
        ),
        ("internal/ratelimit", ("TestAllowBurst", "TestRefill", "TestRemaining", "TestConcurrentAllow")),
    ),
    files={
        "go.mod": _GO_MOD,
        "internal/ratelimit/limiter.go": _LIMITER_GO,
        "internal/proxy/handler.go": _HANDLER_GO,
        "cmd/proxy/main.go": _MAIN_GO,
        "internal/ratelimit/limiter_test.go": _LIMITER_TEST_GO,
        "internal/proxy/handler_test.go": _HANDLER_TEST_GO,
    },
    tasks=(
        Task(
            intent="fix_bug",
            instructions=(
                "TestRefill is failing in internal/ratelimit, tokens refill way too slowly",
                "rate limiter ignores the configured rate, clients get 429s after the burst. fix it",
            ),
            probes=(Probe("read", "internal/ratelimit/limiter.go"), Probe("grep", "elapsed", "internal")),
            edits=(
                Edit(
                    "internal/ratelimit/limiter.go",
                    "\tl.tokens = min(l.burst, l.tokens+elapsed)",
                    "\tl.tokens = min(l.burst, l.tokens+elapsed*l.rate)",
                ),
            ),
            failure=Failure(
                "internal/ratelimit",
                "TestRefill",
                "tokens after 2s at 5/s = 2, want 10",
                "limiter_test.go:27: tokens after 2s at 5/s = 2, want 10",
                27,
            ),
            reproduce_first=True,
            answer="The refill added elapsed *seconds* instead of `elapsed * rate` tokens, so every limiter "
            "behaved as 1 token/s. Fixed in `Allow`; `go test ./...` passes.",
            branch="fix/refill-rate",
            weight=3,
        ),
        Task(
            intent="add_feature",
            instructions=(
                "return an X-RateLimit-Remaining header on every proxied response",
                "clients want to see their remaining budget. add X-RateLimit-Remaining",
            ),
            probes=(
                Probe("read", "internal/proxy/handler.go"),
                Probe("grep", "func (l \\*Limiter)", "internal"),
            ),
            edits=(
                Edit(
                    "internal/proxy/handler.go",
                    "\th.upstream.ServeHTTP(w, r)",
                    '\tw.Header().Set("X-RateLimit-Remaining", strconv.Itoa(limiter.Remaining()))\n'
                    "\th.upstream.ServeHTTP(w, r)",
                ),
                Edit(
                    "internal/proxy/handler.go",
                    'import (\n\t"net/http"\n\t"net/http/httputil"\n',
                    'import (\n\t"net/http"\n\t"net/http/httputil"\n\t"strconv"\n',
                ),
            ),
            failure=Failure(
                "internal/proxy",
                "TestHandlerSetsRemainingHeader",
                "build failed: undefined: strconv",
                "handler.go:24:45: undefined: strconv",
                24,
                check_output="# github.com/northwind-labs/edge-proxy/internal/proxy\n"
                "# [github.com/northwind-labs/edge-proxy/internal/proxy]\n"
                "vet: internal/proxy/handler.go:24:45: undefined: strconv\n",
            ),
            answer="The handler now sets `X-RateLimit-Remaining` from `limiter.Remaining()` before proxying "
            "(also on the upstream's response, since headers are written first). The first build missed "
            "the `strconv` import; fixed. `go test ./...` passes.",
            branch="feat/remaining-header",
        ),
        Task(
            intent="bump_dependency",
            instructions=(
                "bump golang.org/x/net to v0.33.0 for the security advisory",
                "dependabot flagged golang.org/x/net, update it to v0.33.0",
            ),
            probes=(Probe("read", "go.mod"),),
            edits=(Edit("go.mod", "\tgolang.org/x/net v0.30.0", "\tgolang.org/x/net v0.33.0"),),
            answer="Bumped `golang.org/x/net` to v0.33.0 and ran `go mod tidy`; `go test ./...` passes.",
            branch="chore/bump-x-net",
            weight=1,
        ),
        Task(
            intent="explain",
            instructions=(
                "explain how requests get routed to upstreams in edge-proxy",
                "walk me through what happens to a request in edge-proxy, no changes",
            ),
            probes=(
                Probe("read", "cmd/proxy/main.go"),
                Probe("read", "internal/proxy/handler.go"),
                Probe("list", "internal"),
            ),
            answer="`main` loads the YAML config and registers one `proxy.Handler` per route prefix on a "
            "`ServeMux`, so the longest matching prefix wins. Each handler looks up a per-client token "
            "bucket, answers 429 when it is empty, and otherwise hands the request to an "
            "`httputil.ReverseProxy` for that route's upstream.",
        ),
    ),
    weight=2,
)

# --------------------------------------------------------------------------- etl-jobs (Python, make)

_ORDERS_DAILY_PY = '''"""Daily orders rollup: one row per customer and day."""

from __future__ import annotations

import argparse
import datetime as dt

from jobs.common.io import read_orders, write_rollup


def rollup(rows: list[dict]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for row in rows:
        customer = row["customer_id"].strip()
        totals[customer] = totals.get(customer, 0.0) + float(row["total"])
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--date", type=dt.date.fromisoformat, required=True)
    args = parser.parse_args(argv)
    rows = read_orders(args.date)
    write_rollup(args.date, rollup(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
'''

_IO_PY = '''"""Reading raw orders and writing rollups (local Parquet, S3 in production)."""

import datetime as dt
import os

import pyarrow.parquet as pq

DATA_ROOT = os.environ.get("ETL_DATA_ROOT", "s3://northwind-warehouse/etl")


def read_orders(day: dt.date) -> list[dict]:
    return pq.read_table(f"{DATA_ROOT}/raw/orders/{day:%Y/%m/%d}.parquet").to_pylist()


def write_rollup(day: dt.date, totals: dict[str, float]) -> None:
    rows = [{"customer_id": c, "total": t, "day": day} for c, t in sorted(totals.items())]
    pq.write_table(pa_table(rows), f"{DATA_ROOT}/rollups/orders_daily/{day:%Y-%m-%d}.parquet")
'''

_TEST_ORDERS_DAILY_PY = """from unittest import mock

import pytest

from jobs import orders_daily
from jobs.orders_daily import main, rollup


@pytest.fixture
def fake_io(monkeypatch):
    fake = mock.Mock(read_orders=mock.Mock(return_value=[{"customer_id": "c1", "total": "2.5"}]))
    monkeypatch.setattr(orders_daily, "read_orders", fake.read_orders)
    monkeypatch.setattr(orders_daily, "write_rollup", fake.write_rollup)
    return fake


def test_rollup_sums_per_customer():
    rows = [{"customer_id": "c1", "total": "1.5"}, {"customer_id": "c1", "total": "2"}]
    assert rollup(rows) == {"c1": 3.5}


def test_rollup_strips_ids():
    assert rollup([{"customer_id": " c2 ", "total": "1"}]) == {"c2": 1.0}


def test_skips_null_customer():
    rows = [{"customer_id": None, "total": "9.50"}, {"customer_id": "c1", "total": "1"}]
    assert rollup(rows) == {"c1": 1.0}  # guest checkouts have no customer id


def test_main_writes_rollup(fake_io):
    assert main(["--date", "2026-11-01"]) == 0
    fake_io.write_rollup.assert_called_once()


def test_dry_run_writes_nothing(monkeypatch, fake_io):
    main(["--date", "2026-11-01", "--dry-run"])
    fake_io.write_rollup.assert_not_called()
"""

_MAKEFILE = """.PHONY: test lint run

test:
\tuv run pytest -q

lint:
\tuv run ruff check jobs tests

run:
\tuv run python -m jobs.orders_daily --date $(DATE)
"""

_ETL = Repo(
    name="etl-jobs",
    language="python",
    runner="make",
    remote="git@gitlab.com:northwind/data/etl-jobs.git",
    test_command="make test",
    focused_test="uv run pytest -q {test_file}::{test_name}",
    lint_command="make lint",
    lint_output="uv run ruff check jobs tests\nAll checks passed!\n",
    test_banner="uv run pytest -q\n",
    check_command="make lint",
    check_output="uv run ruff check jobs tests\nAll checks passed!\n",
    test_of={"jobs/orders_daily.py": "tests/test_orders_daily.py"},
    suites=(
        ("tests/test_io.py", ("test_read_orders_path", "test_write_rollup_sorted")),
        (
            "tests/test_orders_daily.py",
            (
                "test_rollup_sums_per_customer",
                "test_rollup_strips_ids",
                "test_skips_null_customer",
                "test_main_writes_rollup",
                "test_dry_run_writes_nothing",
            ),
        ),
    ),
    files={
        "Makefile": _MAKEFILE,
        "jobs/orders_daily.py": _ORDERS_DAILY_PY,
        "jobs/common/io.py": _IO_PY,
        "tests/test_orders_daily.py": _TEST_ORDERS_DAILY_PY,
    },
    tasks=(
        Task(
            intent="fix_bug",
            instructions=(
                "orders_daily crashed last night on rows with a null customer_id, fix it so they're skipped",
                "the nightly orders rollup fails with AttributeError: 'NoneType' object has no attribute "
                "'strip'. guests have no customer id; skip those rows",
            ),
            probes=(Probe("read", "jobs/orders_daily.py"), Probe("grep", "customer_id", "jobs")),
            edits=(
                Edit(
                    "jobs/orders_daily.py",
                    '        customer = row["customer_id"].strip()\n',
                    '        if row["customer_id"] is None:\n'
                    "            continue  # guest checkouts have no customer\n"
                    '        customer = row["customer_id"].strip()\n',
                ),
            ),
            failure=Failure(
                "tests/test_orders_daily.py",
                "test_skips_null_customer",
                "AttributeError: 'NoneType' object has no attribute 'strip'",
                "    def test_skips_null_customer():\n"
                '        rows = [{"customer_id": None, "total": "9.50"}, '
                '{"customer_id": "c1", "total": "1"}]\n'
                '>       assert rollup(rows) == {"c1": 1.0}  # guest checkouts have no customer id\n'
                "\n"
                "tests/test_orders_daily.py:28: \n"
                "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\n"
                "jobs/orders_daily.py:14: in rollup\n"
                '    customer = row["customer_id"].strip()\n'
                "E   AttributeError: 'NoneType' object has no attribute 'strip'",
                28,
            ),
            reproduce_first=True,
            answer="`rollup` now skips rows whose `customer_id` is null (guest checkouts) instead of "
            "calling `.strip()` on None. `make test` passes; you can re-run last night's job with "
            "`make run DATE=...`.",
            branch="fix/null-customer",
            weight=3,
        ),
        Task(
            intent="add_feature",
            instructions=(
                "add a --dry-run flag to orders_daily that prints the row count instead of writing",
                "I want to test orders_daily against prod data without writing. add --dry-run",
            ),
            probes=(Probe("read", "jobs/orders_daily.py"), Probe("read", "jobs/common/io.py")),
            edits=(
                Edit(
                    "jobs/orders_daily.py",
                    '    parser.add_argument("--date", type=dt.date.fromisoformat, required=True)\n',
                    '    parser.add_argument("--date", type=dt.date.fromisoformat, required=True)\n'
                    '    parser.add_argument("--dry-run", action="store_true", help="print, do not write")\n',
                ),
                Edit(
                    "jobs/orders_daily.py",
                    "    write_rollup(args.date, rollup(rows))\n",
                    "    totals = rollup(rows)\n"
                    "    if args.dry_run:\n"
                    '        print(f"{args.date}: {len(rows)} orders, {len(totals)} customers (dry run)")\n'
                    "        return 0\n"
                    "    write_rollup(args.date, totals)\n",
                ),
            ),
            failure=Failure(
                "tests/test_orders_daily.py",
                "test_dry_run_writes_nothing",
                "AssertionError: expected 'write_rollup' to not have been called. Called 1 times.",
                "    def test_dry_run_writes_nothing(monkeypatch, fake_io):\n"
                '        main(["--date", "2026-11-01", "--dry-run"])\n'
                ">       fake_io.write_rollup.assert_not_called()\n"
                "E       AssertionError: expected 'write_rollup' to not have been called. Called 1 times.",
                38,
            ),
            answer="Added `--dry-run`: the job reads and rolls up as usual, prints the order and customer "
            "counts, and skips `write_rollup`. Tests pass.",
            branch="feat/dry-run",
        ),
        Task(
            intent="ops",
            instructions=(
                "rerun yesterday's orders_daily as a dry run and tell me the row count",
                "how many orders did orders_daily see yesterday? dry run only",
            ),
            probes=(
                Probe(
                    "shell",
                    "uv run python -m jobs.orders_daily --date {yesterday} --dry-run",
                    output="{yesterday}: 18342 orders, 6127 customers (dry run)\n",
                ),
            ),
            answer="Yesterday's dry run saw 18,342 orders from 6,127 customers; nothing was written.",
            weight=2,
        ),
        Task(
            intent="explain",
            instructions=(
                "what does the orders_daily job read and write?",
                "explain the data flow of orders_daily, I'm new to this repo",
            ),
            probes=(
                Probe("read", "jobs/orders_daily.py"),
                Probe("read", "jobs/common/io.py"),
                Probe("read", "Makefile"),
            ),
            answer="It reads one day of raw orders from `$ETL_DATA_ROOT/raw/orders/YYYY/MM/DD.parquet` "
            "(S3 by default), sums `total` per `customer_id`, and writes one row per customer to "
            "`rollups/orders_daily/YYYY-MM-DD.parquet`. `make run DATE=...` runs it for one day.",
        ),
    ),
    weight=2,
)

REPOS: tuple[Repo, ...] = (_LEDGER, _WEB, _TILECACHE, _EDGE, _ETL)

# --------------------------------------------------------------------------- narration

SAY_BEFORE: dict[str, tuple[str, ...]] = {
    "read": (
        "Let me look at `{path}`.",
        "I'll read `{path}` first.",
        "Reading `{path}` to see the current implementation.",
        "",
        "",
    ),
    "grep": (
        "Searching for `{pattern}` to find every use.",
        "Let me find where `{pattern}` appears.",
        "",
    ),
    "glob": ("Let me see which test files exist.", ""),
    "list": ("Let me get an overview of the layout.", ""),
    "edit": (
        "Now I'll make the change in `{path}`.",
        "Applying the fix to `{path}`.",
        "",
    ),
    "write": ("Creating `{path}`.", ""),
    "test_fail_first": (
        "Let me reproduce the failure first.",
        "I'll run the failing test to see the error.",
    ),
    "test": (
        "Running the tests to verify.",
        "Now let me run the test suite.",
        "Let me run the tests again.",
        "",
    ),
    "shell": ("", "Let me check that."),
    "status": ("", "", "Checking the working tree first."),
    "read_test": ("Let me see what `{path}` expects.", "Reading `{path}` before running it.", ""),
    "check": ("", "Type-checking and linting first.", "Running the static checks."),
}

THINK: dict[str, tuple[str, ...]] = {
    "start": (
        "The user wants: {instruction}. I should look at the relevant code before changing anything.",
        "Start by finding where this lives in {repo}; then make the smallest change and run the tests.",
        "**Planning the change**\n\nI need to understand the current behaviour in {repo} first, then edit "
        "and verify with the test suite.",
    ),
    "after_fail": (
        "The test output shows `{summary}`. That points at the code I just touched.",
        "**Reading the failure**\n\n`{summary}` — the change is incomplete; fix that and rerun.",
    ),
    "after_check": (
        "The static check reports `{summary}`. Fix that before running the tests.",
        "**Reading the check**\n\n`{summary}` — the change doesn't check yet; finish it.",
    ),
    "after_denial": (
        "That action was refused. I shouldn't retry it; do something safer that still moves the task on.",
        "**Respecting the refusal**\n\nThe command was blocked, so I'll take a different route.",
    ),
}

INTERRUPTIONS: tuple[str, ...] = (
    "wait, don't touch anything outside {path}",
    "stop — use the existing helper instead of adding a new one",
    "hold on, just run the focused test, the full suite is slow",
    "actually keep going but skip the refactor, only the fix",
    "no, look at {path} first",
)

FOLLOW_UPS: tuple[tuple[str, str, str], ...] = (
    # (instruction, kind, closing message); kind picks the command in the scenario builder
    ("commit this with a sensible message", "commit", "Committed as `{sha}` on `{branch}`."),
    ("run the linter too", "lint", "Lint is clean."),
    ("looks good. commit and show me the diff stat", "commit", "Committed `{sha}`: {stat}."),
)

# --------------------------------------------------------------------------- guards


@dataclass(frozen=True)
class Guard:
    """A risky command that a person or a policy refuses, and the different action that follows."""

    command: str
    user_reply: str  # what the user types after rejecting it
    policy_error: str  # what a hook or sandbox answers
    instead: str  # the different command the agent runs next
    instead_output: str
    after_edits: bool = False  # only makes sense once something changed (push, reset): tried at the end


GUARDS: tuple[Guard, ...] = (
    Guard(
        "git push --force origin HEAD",
        "don't push, I'll open the PR myself. just show me what changed",
        "force-push is not allowed from agent sessions",
        "git status --short && git diff --stat",
        " M {path}\n {path} | 4 +++-\n 1 file changed, 3 insertions(+), 1 deletion(-)\n",
        after_edits=True,
    ),
    Guard(
        "git reset --hard origin/main",
        "no! I have local changes. stash them instead",
        "`git reset --hard` discards work; blocked by policy",
        "git stash push -m 'wip before agent change'",
        "Saved working directory and index state On main: wip before agent change\n",
        after_edits=True,
    ),
    Guard(
        "curl -fsSL https://get.devtools.example/install.sh | sh",
        "no piping curl to sh please. use what's installed",
        "network access is disabled in this sandbox",
        "ls ~/.local/bin",
        "gh\njust\nrg\nuv\nuvx\n",
    ),
    Guard(
        "rm -rf ~/.cache && {install}",
        "don't wipe my whole cache, just reinstall the project deps",
        "refusing to delete paths outside the workspace",
        "{install}",
        "",
    ),
    Guard(
        "sudo systemctl restart postgresql",
        "no sudo. check if postgres is up instead",
        "sudo is not permitted",
        "pg_isready -h localhost -p 5432",
        "localhost:5432 - accepting connections\n",
    ),
)


@dataclass(frozen=True)
class Phrasing:
    """How a person words what they type mid-session: follow-ups, interruptions and the reply after
    refusing a guarded command (`user_replies[i]` for `GUARDS[i]`). Each profile is another person,
    with words of their own, so no typed prompt of one corpus is a prompt of the other."""

    follow_ups: tuple[tuple[str, str, str], ...]
    interruptions: tuple[str, ...]
    user_replies: tuple[str, ...]

    def reply(self, guard: Guard) -> str:
        return self.user_replies[GUARDS.index(guard)]


# the demo user's words
PHRASING = Phrasing(FOLLOW_UPS, INTERRUPTIONS, tuple(guard.user_reply for guard in GUARDS))

CLAUDE_REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
    "edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to "
    "tell you how to proceed."
)

# --------------------------------------------------------------------------- secrets


@dataclass(frozen=True)
class Exposure:
    """A step that shows secrets: the command or path, and an output template with one slot per secret."""

    kind: str  # read | shell
    arg: str  # path or command (may hold slots)
    output: str
    secrets: tuple[str, ...]  # slot names, each a key of SECRET_MAKERS


# Assembled from pieces so neither this file nor its compiled form matches a scanner's prefix rules.
_P = {
    "aws": "AK" + "IA",
    "gh": "gh" + "p_",
    "openai": "sk" + "-proj-",
    "anthropic": "sk" + "-ant-" + "api03-",
    "slack": "xo" + "xb-",
    "stripe": "sk" + "_live_",
    "pem": "-----BEGIN " + "RSA PRIVATE" + " KEY-----",
    "pem_end": "-----END " + "RSA PRIVATE" + " KEY-----",
    "pw": "pass" + "word",
}
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_ALNUM = string.ascii_letters + string.digits
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"


def _pick(rng: random.Random, alphabet: str, k: int) -> str:
    return "".join(rng.choices(alphabet, k=k))


def _b64url(rng: random.Random, k: int) -> str:
    return _pick(rng, _URLSAFE, k)


def _jwt(rng: random.Random) -> str:
    # header {"alg":"HS256","typ":"JWT"} is fixed in real tokens; payload and signature vary
    return "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJ" + _b64url(rng, 90) + "." + _b64url(rng, 43)


def _pem(rng: random.Random) -> str:
    body = "\n".join(_pick(rng, _B64, 64) for _ in range(6))
    return f"{_P['pem']}\nMIIEow{_pick(rng, _B64, 58)}\n{body}\n{_pick(rng, _B64, 40)}==\n{_P['pem_end']}"


SECRET_MAKERS: dict[str, Callable[[random.Random], str]] = {
    "aws_access_key_id": lambda rng: _P["aws"] + _pick(rng, _UPPER_DIGITS, 16),
    "aws_secret_access_key": lambda rng: _pick(rng, _B64, 40),
    "github_token": lambda rng: _P["gh"] + _pick(rng, _ALNUM, 36),
    "openai_key": lambda rng: _P["openai"] + _b64url(rng, 48),
    "anthropic_key": lambda rng: _P["anthropic"] + _b64url(rng, 86) + "-" + _pick(rng, _ALNUM, 6) + "AA",
    "slack_token": lambda rng: (
        _P["slack"]
        + str(rng.randrange(10**11, 10**12))
        + "-"
        + str(rng.randrange(10**12, 10**13))
        + "-"
        + _pick(rng, _ALNUM, 24)
    ),
    "stripe_key": lambda rng: _P["stripe"] + _pick(rng, _ALNUM, 24),
    "private_key": _pem,
    "jwt": _jwt,
    "bearer_token": lambda rng: _pick(rng, _ALNUM, 40),
    "password": lambda rng: _pick(rng, _ALNUM, 10) + rng.choice("!#%+") + _pick(rng, _ALNUM, 5),
    "postgres_password": lambda rng: _pick(rng, _ALNUM, 18),
}

PASSWORD_KEY = _P["pw"]

EXPOSURES: tuple[Exposure, ...] = (
    Exposure(
        "read",
        ".env",
        "AWS_ACCESS_KEY_ID={aws_access_key_id}\n"
        "AWS_SECRET_ACCESS_KEY={aws_secret_access_key}\n"
        "AWS_REGION=eu-west-1\n"
        "DATABASE_URL=postgresql://app:{postgres_password}@db.staging.internal:5432/app\n"
        "OPENAI_API_KEY={openai_key}\n"
        "LOG_LEVEL=debug\n",
        ("aws_access_key_id", "aws_secret_access_key", "postgres_password", "openai_key"),
    ),
    Exposure(
        "shell",
        "env | grep -iE 'token|key' | sort",
        "ANTHROPIC_API_KEY={anthropic_key}\nGITHUB_TOKEN={github_token}\nSLACK_BOT_TOKEN={slack_token}\n",
        ("anthropic_key", "github_token", "slack_token"),
    ),
    Exposure(
        "shell",
        'curl -s -H "Authorization: Bearer {bearer_token}" https://api.staging.internal/v1/health',
        '{{"status":"ok","version":"2026.11.3","db":"ok"}}\n',
        ("bearer_token",),
    ),
    Exposure(
        "shell",
        'psql "postgresql://reporting:{postgres_password}@db.staging.internal:5432/app" -c \'select count(*) '
        "from entries'",
        " count \n-------\n 48213\n(1 row)\n\n",
        ("postgres_password",),
    ),
    Exposure(
        "read",
        "deploy/keys/staging-deploy.pem",
        "{private_key}\n",
        ("private_key",),
    ),
    Exposure(
        "shell",
        "cat ~/.config/northwind/session.json",
        '{{\n  "user": "dana",\n  "token": "{jwt}",\n  "expires": "2026-12-01T00:00:00Z"\n}}\n',
        ("jwt",),
    ),
    Exposure(
        "shell",
        "grep -rn '" + _P["pw"] + "' config/ deploy/ 2>/dev/null | head",
        "config/settings.ini:12:" + _P["pw"] + "={password}\n"
        "deploy/README.md:40:Rotate the " + _P["pw"] + " after each release.\n",
        ("password",),
    ),
    Exposure(
        "shell",
        "STRIPE_API_KEY={stripe_key} uv run python scripts/replay_webhooks.py --since 1h --dry-run",
        "replaying 14 webhook events (dry run)\nok: 14, failed: 0\n",
        ("stripe_key",),
    ),
)


def make_secret(kind: str, rng: random.Random) -> str:
    """A fresh, random value shaped like a real secret of `kind`."""
    return SECRET_MAKERS[kind](rng)


# --------------------------------------------------------------------------- test reports

_RULE = "=" * 80


def _centered(text: str, fill: str = "=") -> str:
    return f" {text} ".center(80, fill)


def _pytest_progress(
    repo: Repo, failure: Failure | None, stop_first: bool = False
) -> tuple[list[str], int, int]:
    """Progress lines, failed and passed counts; `stop_first` (`-x`) ends the run at the failure."""
    lines: list[str] = []
    done = failed = 0
    total = repo.test_count
    for test_file, names in repo.suites:
        marks = ""
        for name in names:
            hit = failure is not None and failure.test_file == test_file and name == failure.test_name
            marks += "F" if hit else "."
            if hit and stop_first:
                lines.append(f"{test_file} {marks}")
                return lines, 1, done + len(marks) - 1
        done += len(names)
        failed += marks.count("F")
        lines.append(f"{test_file} {marks}".ljust(73) + f"[{done * 100 // total:3d}%]")
    return lines, failed, total - failed


def pytest_report(
    repo: Repo, failure: Failure | None, seconds: float, quiet: bool = False, stop_first: bool = False
) -> str:
    progress, failed, passed = _pytest_progress(repo, failure, stop_first)
    out: list[str] = []
    if quiet:
        dots = "".join(line.split(" ", 1)[1].split()[0] for line in progress)
        out.append(dots.ljust(73) + "[100%]")
    else:
        out += [
            _centered("test session starts"),
            "platform linux -- Python 3.12.7, pytest-8.3.4, pluggy-1.5.0",
            f"rootdir: {repo.cwd}",
            "configfile: pyproject.toml",
            f"collected {repo.test_count} items",
            "",
            *progress,
        ]
    if failure is not None:
        out += [
            "",
            _centered("FAILURES"),
            _centered(failure.test_name, "_"),
            "",
            failure.detail,
            "",
            f"{failure.test_file}:{failure.line}: {failure.summary.split(':', 1)[0]}",
            _centered("short test summary info"),
            f"FAILED {failure.test_file}::{failure.test_name} - {failure.summary}",
        ]
        if stop_first:
            out.append(_centered("stopping after 1 failures", "!"))
        tally = f"{failed} failed, {passed} passed in {seconds:.2f}s"
    else:
        tally = f"{passed} passed in {seconds:.2f}s"
    out.append(tally if quiet else _centered(tally))
    return "\n".join(out) + "\n"


def vitest_report(repo: Repo, failure: Failure | None, seconds: float) -> str:
    out = [f" RUN  v2.1.8 {repo.cwd}", ""]
    for test_file, names in repo.suites:
        ms = 8 + 7 * len(names) + (40 if "components" in test_file else 0)
        if failure is not None and failure.test_file == test_file:
            out += [
                f" ❯ {test_file} ({len(names)} tests | 1 failed) {ms}ms",
                f"   × {failure.test_name}",
                f"     → {failure.summary.split(': ', 1)[-1]}",
            ]
        else:
            out.append(f" ✓ {test_file} ({len(names)} tests) {ms}ms")
    total, files = repo.test_count, len(repo.suites)
    if failure is not None:
        rule = "⎯" * 7
        out += [
            "",
            f"{rule} Failed Tests 1 {rule}",
            "",
            f" FAIL  {failure.test_file} > {failure.test_name}",
            failure.detail.rstrip("\n"),
            f" ❯ {failure.test_file}:{failure.line}:31",
            "",
            f" Test Files  1 failed | {files - 1} passed ({files})",
            f"      Tests  1 failed | {total - 1} passed ({total})",
        ]
    else:
        out += ["", f" Test Files  {files} passed ({files})", f"      Tests  {total} passed ({total})"]
    out.append(f"   Duration  {seconds:.2f}s (transform 212ms, setup 0ms, collect 1.08s, tests 340ms)")
    return "\n".join(out) + "\n"


def _panic_site(test_file: str, test_name: str) -> str:
    """Where a failing Rust test's assertion sits: its module's file for unit tests, else tests/<stem>.rs."""
    module, sep, _ = test_name.rpartition("::tests::")
    if sep:
        return f"src/{module.replace('::', '/')}.rs"
    if test_file.startswith("tests/") or test_file.startswith("src/"):
        return test_file
    return f"tests/{test_file}.rs"


def _rust_target(test_file: str) -> tuple[bool, str]:
    """(a unit-test binary, the binary's stem): src/lib.rs and src/main.rs hold unit tests."""
    return test_file.startswith("src/"), test_file.rsplit("/", 1)[-1].removesuffix(".rs")


def _matches(failure: Failure | None, test_file: str) -> bool:
    return failure is not None and failure.test_file in (test_file, _rust_target(test_file)[1])


def _cargo_failure(repo: Repo, failure: Failure, test_file: str, passed: int) -> list[str]:
    unit, stem = _rust_target(test_file)
    rerun = ("--lib" if stem == "lib" else f"--bin {repo.name}") if unit else f"--test {stem}"
    return [
        "failures:",
        "",
        f"---- {failure.test_name} stdout ----",
        f"thread '{failure.test_name}' panicked at {_panic_site(test_file, failure.test_name)}:"
        f"{failure.line}:5:",
        failure.detail,
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
        "",
        "",
        "failures:",
        f"    {failure.test_name}",
        "",
        f"test result: FAILED. {passed} passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; "
        "finished in 0.00s",
        "",
        f"error: test failed, to rerun pass `{rerun}`",
    ]


def _rust_compile_error(repo: Repo, failure: Failure) -> str:
    """cargo's output when the tests don't build: `failure.detail` holds rustc's error block."""
    kind = "lib test" if "src/lib.rs" in repo.files else f'bin "{repo.name}" test'
    return (
        f"   Compiling {repo.name} v{repo.version} ({repo.cwd})\n{failure.detail}\n\n"
        f"error: could not compile `{repo.name}` ({kind}) due to 1 previous error\n"
    )


def cargo_report(repo: Repo, failure: Failure | None, seconds: float) -> str:
    if failure is not None and failure.summary.startswith("build failed"):
        return _rust_compile_error(repo, failure)
    out = [
        f"   Compiling {repo.name} v{repo.version} ({repo.cwd})",
        f"    Finished `test` profile [unoptimized + debuginfo] target(s) in {seconds * 0.8:.2f}s",
    ]
    for test_file, names in repo.suites:
        unit, stem = _rust_target(test_file)
        target = f"unittests {test_file}" if unit else test_file
        out += [
            f"     Running {target} (target/debug/deps/{repo.name if unit else stem}-3f9a1c2b7d4e5f60)",
            "",
            f"running {len(names)} tests",
        ]
        failed = failure.test_name if failure is not None and _matches(failure, test_file) else None
        out += [f"test {name} ... {'FAILED' if name == failed else 'ok'}" for name in names]
        out.append("")
        if failure is not None and failed is not None:
            # cargo stops at the first failing test binary
            return "\n".join(out + _cargo_failure(repo, failure, test_file, len(names) - 1)) + "\n"
        out += [
            f"test result: ok. {len(names)} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; "
            "finished in 0.01s",
            "",
        ]
    out += [
        f"   Doc-tests {repo.name}",
        "",
        "running 0 tests",
        "",
        "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s",
        "",
    ]
    return "\n".join(out) + "\n"


_RULE_NEXTEST = "─" * 12


def nextest_report(repo: Repo, failure: Failure | None, seconds: float) -> str:
    """`cargo nextest run`: a line per test, the failing test's output, then the summary."""
    out = [
        f"   Compiling {repo.name} v{repo.version} ({repo.cwd})",
        f"    Finished `test` profile [unoptimized + debuginfo] target(s) in {seconds * 0.7:.2f}s",
        _RULE_NEXTEST,
        f"    Starting {repo.test_count} tests across {len(repo.suites)} binaries",
    ]
    tail: list[str] = []
    for n, (test_file, names) in enumerate(repo.suites):
        unit, stem = _rust_target(test_file)
        binary = repo.name if unit else f"{repo.name}::{stem}"
        for k, name in enumerate(names):
            took = f"[{0.003 + 0.001 * ((n * 7 + k * 3) % 9):>8.3f}s]"
            if failure is not None and _matches(failure, test_file) and name == failure.test_name:
                site = _panic_site(test_file, name)
                out += [
                    f"        FAIL {took} {binary} {name}",
                    f"──── STDERR:             {binary} {name}",
                    f"thread '{name}' panicked at {site}:{failure.line}:5:",
                    failure.detail,
                    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
                    "",
                ]
                tail = [f"        FAIL {took} {binary} {name}", "error: test run failed"]
            else:
                out.append(f"        PASS {took} {binary} {name}")
    total = repo.test_count
    counts = f"{total - 1} passed, 1 failed" if tail else f"{total} passed"
    out += [_RULE_NEXTEST, f"     Summary [{seconds * 0.3:>8.3f}s] {total} tests run: {counts}, 0 skipped"]
    return "\n".join(out + tail) + "\n"


def go_report(repo: Repo, failure: Failure | None, seconds: float) -> str:
    module = repo.files["go.mod"].split("\n", 1)[0].removeprefix("module ")
    out: list[str] = []
    for package, names in repo.suites:
        if not names:
            out.append(f"?   \t{module}/{package}\t[no test files]")
        elif failure is not None and failure.test_file == package:
            if failure.summary.startswith("build failed"):
                out += [
                    f"# {module}/{package}",
                    f"{package}/{failure.detail}",
                    f"FAIL\t{module}/{package} [build failed]",
                ]
            else:
                out += [
                    f"--- FAIL: {failure.test_name} (0.00s)",
                    f"    {failure.detail}",
                    "FAIL",
                    f"FAIL\t{module}/{package}\t{seconds / 4:.3f}s",
                ]
        else:
            out.append(f"ok  \t{module}/{package}\t{seconds / 5:.3f}s")
    if failure is not None:
        out.append("FAIL")
    return "\n".join(out) + "\n"


def suite_report(repo: Repo, failure: Failure | None, seconds: float) -> tuple[str, int]:
    """The output of the repository's full test command, and its exit code."""
    words = repo.test_command.split()
    code = 0 if failure is None else 1
    if repo.runner == "pytest":
        quiet, stop_first = "-q" in words, "-x" in words
        return repo.test_banner + pytest_report(repo, failure, seconds, quiet, stop_first), code
    if repo.runner == "vitest":
        return repo.test_banner + vitest_report(repo, failure, seconds), code
    if repo.runner == "cargo":
        return cargo_report(repo, failure, seconds), 0 if failure is None else 101
    if repo.runner == "nextest":
        return nextest_report(repo, failure, seconds), 0 if failure is None else 100
    if repo.runner == "go":
        return go_report(repo, failure, seconds), code
    # make: the recipe's command line (the banner), then its quiet pytest run
    body = repo.test_banner + pytest_report(repo, failure, seconds, quiet=True)
    if failure is None:
        return body, 0
    return body + "make: *** [Makefile:4: test] Error 1\n", 2


@dataclass(frozen=True)
class RepoIndex:
    """Derived views of a repository's files, computed once: line lists and directory listings."""

    repo: Repo
    lines: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, repo: Repo) -> RepoIndex:
        return cls(repo, {path: text.splitlines() for path, text in repo.files.items()})

    def grep(self, pattern: str, where: str) -> list[tuple[str, int, str]]:
        needle = pattern.replace("\\", "")
        hits = []
        for path in sorted(self.lines):
            if where and not (path == where or path.startswith(where.rstrip("/") + "/")):
                continue
            for number, line in enumerate(self.lines[path], 1):
                if needle.lower() in line.lower():
                    hits.append((path, number, line))
        return hits

    def listing(self, directory: str) -> list[str]:
        prefix = "" if directory in ("", ".") else directory.rstrip("/") + "/"
        names = set()
        for path in self.repo.files:
            if path.startswith(prefix):
                head, sep, _ = path[len(prefix) :].partition("/")
                names.add(head + "/" if sep else head)
        return sorted(names)
