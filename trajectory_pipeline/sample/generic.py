"""Other people's repositories, generated: the sample corpus's `generic` profile.

The demo's corpus (`content.REPOS`) is one user's five repositories with that user's habits. A
learned base model must not have seen them: it learns the language of tasks and tool calls in
general from this profile, so that an adapter trained on the demo window has something to learn.
`generic_repos()` builds the repositories procedurally:

    from trajectory_pipeline.sample.generic import generic_repos
    repos = generic_repos()          # 24 repositories, the same every time
    repos[0].name, repos[0].language, [t.intent for t in repos[0].tasks]

Each repository is a domain (library shelves, bike docks, clinic queues... `DOMAINS`) written in
one language (Python, TypeScript, Go or Rust, six each), owned by one of several people (`OWNERS`:
their own home, workspace folder and git host). It holds two components drawn from four
archetypes, each a module with its test file, named after the domain's words:

- capacity: `shelf_has_room` / `freeBooks` (an off-by-one comparison lets a full group in);
- stats: `average_loan_days` (divides by zero, or gives NaN, on no readings);
- codes: `normalize_call_number` (forgets to trim what people type);
- batches: `book_batches` (drops the last partial batch).

Tasks, of the kinds the demo has: fix_bug (one per component, half of them reproduce first),
add_feature (a new function whose first version uses a constant not defined yet: NameError,
ReferenceError, `undefined:` or rustc's E0425, then the fix), write_tests, explain,
bump_dependency (a manifest line) and ops (a dry-run report). Instructions come from several
phrasings per kind and usually name the file, so the generic habit is simple: read the file the
instruction names (sometimes grep or read the test too), edit, run the language's default test
command (`pytest -q`, `npm test`, `go test ./...`, `cargo test`). None of the demo user's routines
(`scenarios` module docstring) appear: no `git status` first, no test file read after an edit, no
static check before the tests.

Disjoint from the demo by construction, and checked by tests/sample/test_profiles.py: no demo
repository name, file path (the language's manifest names aside: pyproject.toml, package.json,
go.mod, Cargo.toml), function name, home folder, org or planted-secret path appears here.
`GENERIC_EXPOSURES` are the demo's secret-showing steps with the demo user's names replaced, and
`GENERIC_PHRASING` what these people type mid-session (follow-ups, interruptions, replies to a
refusal) in words of their own, so no typed prompt is shared either.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass

from trajectory_pipeline.sample.content import (
    EXPOSURES,
    GUARDS,
    Edit,
    Exposure,
    Failure,
    Phrasing,
    Probe,
    Repo,
    Task,
)

LANGUAGES = ("python", "typescript", "go", "rust")
ARCHETYPES = ("capacity", "stats", "codes", "batches")
# Files whose names the language's tooling fixes: the only paths the demo and generic corpora share.
MANIFESTS = frozenset({"pyproject.toml", "package.json", "go.mod", "Cargo.toml"})
_SEED = "generic-repos-v1"


@dataclass(frozen=True)
class Domain:
    """What a repository is about, as snake_case words its identifiers are built from."""

    name: str  # the repository's name stem
    thing: str  # one item
    things: str  # items
    group: str  # what holds items
    measure: str  # a number recorded per item
    code: str  # an identifier people type
    cap: int  # how many things a group holds by default


DOMAINS: tuple[Domain, ...] = (
    Domain("shelfmark", "book", "books", "shelf", "loan_days", "call_number", 40),
    Domain("parkhaus", "car", "cars", "garage", "stay_minutes", "plate", 120),
    Domain("roomly", "guest", "guests", "room", "stay_nights", "booking_ref", 4),
    Domain("harborlog", "container", "containers", "vessel", "gross_tonnes", "bay_code", 2400),
    Domain("greenbench", "tray", "trays", "bench", "soil_moisture", "sensor_tag", 24),
    Domain("coachline", "rider", "riders", "coach", "trip_minutes", "route_code", 52),
    Domain("triage-board", "patient", "patients", "clinic", "wait_minutes", "ward_code", 30),
    Domain("studio-slots", "member", "members", "studio", "heart_rate", "locker_code", 18),
    Domain("podshelf", "episode", "episodes", "feed", "listen_seconds", "show_slug", 500),
    Domain("knightpair", "player", "players", "bracket", "rating", "fide_code", 64),
    Domain("depotwatch", "truck", "trucks", "depot", "fuel_litres", "vin", 35),
    Domain("lecturehall", "student", "students", "hall", "credit_hours", "course_code", 250),
    Domain("dockbike", "bike", "bikes", "dock", "ride_km", "station_code", 20),
    Domain("potluck", "serving", "servings", "pot", "calories", "ingredient_code", 12),
    Domain("seatplan", "seat", "seats", "flight", "bag_kg", "fare_class", 180),
    Domain("kennelbook", "dog", "dogs", "kennel", "weight_kg", "chip_code", 8),
    Domain("cellarlist", "bottle", "bottles", "rack", "vintage_age", "lot_number", 96),
    Domain("stagedoor", "ticket", "tickets", "venue", "queue_minutes", "seat_label", 900),
    Domain("probegrid", "probe", "probes", "cluster", "signal_db", "probe_tag", 16),
    Domain("mailnook", "parcel", "parcels", "locker", "parcel_grams", "tracking_code", 60),
    Domain("tidewatch", "buoy", "buoys", "station", "wave_height", "buoy_code", 10),
    Domain("hivecount", "frame", "frames", "hive", "brood_cells", "queen_tag", 10),
    Domain("ferryrun", "vehicle", "vehicles", "deck", "crossing_minutes", "sailing_code", 75),
    Domain("campfire", "camper", "campers", "site", "night_temp", "permit_code", 6),
)


@dataclass(frozen=True)
class Owner:
    """Someone else: whose machine a repository lives on, and where their code is hosted."""

    user: str
    home: str
    workspace: str
    remote: str  # formatted with name


OWNERS: tuple[Owner, ...] = (
    Owner("priya", "/home/priya", "code", "git@github.com:quietloop/{name}.git"),
    Owner("tomasz", "/home/tomasz", "projects", "git@gitlab.com:tallgrass/{name}.git"),
    Owner("ade", "/home/ade", "work", "https://github.com/fieldnotes-dev/{name}.git"),
    Owner("kenji", "/Users/kenji", "dev", "git@github.com:kenji-o/{name}.git"),
    Owner("lucia", "/Users/lucia", "repos", "git@github.com:brightmoor/{name}.git"),
    Owner("sam", "/home/sam", "git", "git@codeberg.org:opencircuit/{name}.git"),
)

# The demo's secret-showing steps, as someone else would meet them.
_EXPOSURE_NAMES = {
    "northwind": "quietloop",
    '"user": "dana"': '"user": "priya"',
    "deploy/keys/staging-deploy.pem": "infra/keys/staging.pem",
    "scripts/replay_webhooks.py": "scripts/resend_webhooks.py",
    "deploy/README.md": "infra/README.md",
    # other people's own ways of looking: no call of theirs is one of the demo user's
    "env | grep -iE 'token|key' | sort": "printenv | grep -i -e token -e key",
    ".env": "config/.env.local",
}


def _rename(text: str) -> str:
    for old, new in _EXPOSURE_NAMES.items():
        text = text.replace(old, new)
    return text


GENERIC_EXPOSURES: tuple[Exposure, ...] = tuple(
    Exposure(e.kind, _rename(e.arg), _rename(e.output), e.secrets) for e in EXPOSURES
)

# Other people's words mid-session, none of them the demo user's (`content.PHRASING`): same kinds,
# same counts, so the generic corpus draws as it did.
GENERIC_PHRASING = Phrasing(
    follow_ups=(
        ("ok, please commit that", "commit", "Committed as `{sha}` on `{branch}`."),
        ("can you also lint it", "lint", "Lint is clean."),
        ("nice, commit it and give me the diffstat", "commit", "Committed `{sha}`: {stat}."),
    ),
    interruptions=(
        "careful: only change {path}",
        "don't write a new helper, reuse the one we have",
        "skip the full suite, the focused test is enough",
        "fine, continue, but leave the cleanup for later",
        "check {path} before anything else",
    ),
    user_replies=(
        "no force pushing please, I'll handle the PR. what changed?",
        "wait, I have uncommitted work. stash it",
        "please don't run install scripts from the internet, use the tools we have",
        "leave the global cache alone and just reinstall this project's deps",
        "can't use sudo here, just check whether postgres is running",
    ),
)
assert len(GENERIC_PHRASING.user_replies) == len(GUARDS)

# --------------------------------------------------------------------------- names


def _words(snake: str) -> list[str]:
    return snake.split("_")


def _pascal(snake: str) -> str:
    return "".join(w.capitalize() for w in _words(snake))


def _camel(snake: str) -> str:
    pascal = _pascal(snake)
    return pascal[0].lower() + pascal[1:]


def _slots(domain: Domain) -> dict[str, str]:
    """The domain's slots: «thing» snake_case, «Thing» Pascal, «thingC» camel, «THING» upper,
    «thing_w» words and «Thing_w» capitalized words (the same for things, group, measure, code)."""
    slots: dict[str, str] = {"cap": str(domain.cap), "cap90": str(-(-domain.cap * 9 // 10))}
    for key in ("thing", "things", "group", "measure", "code"):
        snake = getattr(domain, key)
        words = " ".join(_words(snake))
        slots[key] = snake
        slots[key.capitalize()] = _pascal(snake)
        slots[key + "C"] = _camel(snake)
        slots[key.upper()] = snake.upper()
        slots[key + "_w"] = words
        slots[key.capitalize() + "_w"] = words.capitalize()
    return slots


_SLOT = re.compile(r"«(\w+)»")


def fill(text: str, slots: Mapping[str, str]) -> str:
    """Put the slots' values into a template's «name»s (a missing slot is a KeyError)."""
    return _SLOT.sub(lambda m: slots[m.group(1)], text)


# --------------------------------------------------------------------------- component templates


@dataclass(frozen=True)
class _Fail:
    """A failing test: `at` finds the reported line in the test file (or, with `in_module`, the module)."""

    test: str
    summary: str
    detail: str  # may use «line» (the found line) and «mline» (the module line of `module_at`)
    at: str = ""  # a line of the test file; "" for a test that is not in the file yet
    module_at: str = ""  # a line of the module after the edits before the failing run


@dataclass(frozen=True)
class _Template:
    """One archetype in one language. Every text is a template over the component's slots."""

    module: str
    test: str  # the test file; "" when the tests live in the module (Rust)
    names: tuple[str, str, str]  # fn1 (holds the bug), fn2, fn3 (the feature adds it)
    tests: tuple[str, ...]  # the suite's test names, the feature's test included
    bug: tuple[str, str]
    bug_fail: _Fail
    feature: tuple[tuple[str, str], tuple[str, str]]  # the new function, then the missing constant
    feature_fail: _Fail
    new_test: tuple[str, str]  # write_tests: (old, new) in the test file


# ----- Python

_PY_CAPACITY = _Template(
    module='''"""How many «things_w» fit in a «group_w»."""

MAX_«THINGS» = «cap»


def «group»_has_room(booked: int, capacity: int = MAX_«THINGS») -> bool:
    """Whether one more «thing_w» fits in a «group_w» that already holds `booked`."""
    return booked <= capacity


def free_«things»(booked: int, capacity: int = MAX_«THINGS») -> int:
    """«Things_w» still free, never negative."""
    return max(capacity - booked, 0)
''',
    test="""from «pkg».«mod» import MAX_«THINGS», free_«things», «group»_has_room


def test_empty_«group»_has_room():
    assert «group»_has_room(0)


def test_full_«group»_has_no_room():
    assert not «group»_has_room(MAX_«THINGS»)


def test_free_«things»():
    assert free_«things»(3, capacity=10) == 7


def test_free_«things»_never_negative():
    assert free_«things»(12, capacity=10) == 0
""",
    names=("«group»_has_room", "free_«things»", "«group»_nearly_full"),
    tests=(
        "test_empty_«group»_has_room",
        "test_full_«group»_has_no_room",
        "test_free_«things»",
        "test_free_«things»_never_negative",
        "test_«group»_nearly_full",
    ),
    bug=("    return booked <= capacity", "    return booked < capacity"),
    bug_fail=_Fail(
        "test_full_«group»_has_no_room",
        "AssertionError: assert not True",
        "    def test_full_«group»_has_no_room():\n"
        ">       assert not «group»_has_room(MAX_«THINGS»)\n"
        "E       assert not True\n"
        "E        +  where True = «group»_has_room(«cap»)",
        at="assert not «group»_has_room(",
    ),
    feature=(
        (
            "def free_«things»(",
            "def «group»_nearly_full(booked: int, capacity: int = MAX_«THINGS») -> bool:\n"
            '    """Whether a «group_w» is at or above the warning level."""\n'
            "    return booked >= capacity * NEARLY_FULL_AT\n\n\n"
            "def free_«things»(",
        ),
        (
            "MAX_«THINGS» = «cap»\n",
            "MAX_«THINGS» = «cap»\n"
            "NEARLY_FULL_AT = 0.9  # the share of capacity that counts as nearly full\n",
        ),
    ),
    feature_fail=_Fail(
        "test_«group»_nearly_full",
        "NameError: name 'NEARLY_FULL_AT' is not defined",
        "    def test_«group»_nearly_full():\n"
        ">       assert «group»_nearly_full(«cap90», capacity=«cap»)\n\n"
        "«modpath»:«mline»: in «group»_nearly_full\n"
        "    return booked >= capacity * NEARLY_FULL_AT\n"
        "E   NameError: name 'NEARLY_FULL_AT' is not defined",
        module_at="* NEARLY_FULL_AT",
    ),
    new_test=(
        "def test_free_«things»_never_negative():\n    assert free_«things»(12, capacity=10) == 0\n",
        "def test_free_«things»_never_negative():\n    assert free_«things»(12, capacity=10) == 0\n\n\n"
        "def test_free_«things»_when_exactly_full():\n    assert free_«things»(10, capacity=10) == 0\n",
    ),
)

_PY_STATS = _Template(
    module='''"""Summary numbers for «measure_w» readings."""

from collections.abc import Sequence


def average_«measure»(values: Sequence[float]) -> float:
    """Mean «measure_w»; 0.0 when there are no readings."""
    return sum(values) / len(values)


def peak_«measure»(values: Sequence[float]) -> float:
    """Largest «measure_w», or 0.0 when there are none."""
    return max(values, default=0.0)
''',
    test="""from «pkg».«mod» import average_«measure», peak_«measure»


def test_average_«measure»():
    assert average_«measure»([2.0, 4.0]) == 3.0


def test_average_«measure»_of_nothing_is_zero():
    assert average_«measure»([]) == 0.0


def test_peak_«measure»():
    assert peak_«measure»([1.0, 7.5, 3.0]) == 7.5
""",
    names=("average_«measure»", "peak_«measure»", "«measure»_outliers"),
    tests=(
        "test_average_«measure»",
        "test_average_«measure»_of_nothing_is_zero",
        "test_peak_«measure»",
        "test_«measure»_outliers",
    ),
    bug=(
        "    return sum(values) / len(values)",
        "    if not values:\n        return 0.0\n    return sum(values) / len(values)",
    ),
    bug_fail=_Fail(
        "test_average_«measure»_of_nothing_is_zero",
        "ZeroDivisionError: division by zero",
        "    def test_average_«measure»_of_nothing_is_zero():\n"
        ">       assert average_«measure»([]) == 0.0\n\n"
        "«modpath»:«mline»: in average_«measure»\n"
        "    return sum(values) / len(values)\n"
        "E   ZeroDivisionError: division by zero",
        at="assert average_«measure»([]) == 0.0",
        module_at="return sum(values) / len(values)",
    ),
    feature=(
        (
            "def peak_«measure»(",
            "def «measure»_outliers(values: Sequence[float]) -> list[float]:\n"
            '    """Readings more than OUTLIER_FACTOR times the average."""\n'
            "    mean = average_«measure»(values)\n"
            "    return [v for v in values if v > mean * OUTLIER_FACTOR]\n\n\n"
            "def peak_«measure»(",
        ),
        (
            "from collections.abc import Sequence\n",
            "from collections.abc import Sequence\n\n"
            "OUTLIER_FACTOR = 3.0  # how far above the average a reading must be to stand out\n",
        ),
    ),
    feature_fail=_Fail(
        "test_«measure»_outliers",
        "NameError: name 'OUTLIER_FACTOR' is not defined",
        "    def test_«measure»_outliers():\n"
        ">       assert «measure»_outliers([1.0, 1.0, 1.0, 9.0]) == [9.0]\n\n"
        "«modpath»:«mline»: in «measure»_outliers\n"
        "    return [v for v in values if v > mean * OUTLIER_FACTOR]\n"
        "E   NameError: name 'OUTLIER_FACTOR' is not defined",
        module_at="mean * OUTLIER_FACTOR",
    ),
    new_test=(
        "def test_peak_«measure»():\n    assert peak_«measure»([1.0, 7.5, 3.0]) == 7.5\n",
        "def test_peak_«measure»():\n    assert peak_«measure»([1.0, 7.5, 3.0]) == 7.5\n\n\n"
        "def test_peak_«measure»_of_nothing_is_zero():\n    assert peak_«measure»([]) == 0.0\n",
    ),
)

_PY_CODES = _Template(
    module='''"""Cleaning up «code_w»s that people type."""


def normalize_«code»(raw: str) -> str:
    """The canonical form of a «code_w»: upper case, no surrounding spaces."""
    return raw.upper()


def same_«code»(a: str, b: str) -> bool:
    return normalize_«code»(a) == normalize_«code»(b)
''',
    test="""from «pkg».«mod» import normalize_«code», same_«code»


def test_normalize_«code»_upper_cases():
    assert normalize_«code»("ab12") == "AB12"


def test_normalize_«code»_strips_spaces():
    assert normalize_«code»("  ab12 ") == "AB12"


def test_same_«code»():
    assert same_«code»("ab12", "AB12")
""",
    names=("normalize_«code»", "same_«code»", "valid_«code»"),
    tests=(
        "test_normalize_«code»_upper_cases",
        "test_normalize_«code»_strips_spaces",
        "test_same_«code»",
        "test_valid_«code»",
    ),
    bug=("    return raw.upper()", "    return raw.strip().upper()"),
    bug_fail=_Fail(
        "test_normalize_«code»_strips_spaces",
        "AssertionError: assert '  AB12 ' == 'AB12'",
        "    def test_normalize_«code»_strips_spaces():\n"
        '>       assert normalize_«code»("  ab12 ") == "AB12"\n'
        "E       AssertionError: assert '  AB12 ' == 'AB12'\n"
        "E         \n"
        "E         - AB12\n"
        "E         +   AB12 ",
        at='assert normalize_«code»("  ab12 ")',
    ),
    feature=(
        (
            "def same_«code»(",
            "def valid_«code»(raw: str) -> bool:\n"
            '    """Whether `raw` can be a «code_w»: letters and digits, at most MAX_«CODE»_LEN."""\n'
            "    code = normalize_«code»(raw)\n"
            "    return code.isalnum() and len(code) <= MAX_«CODE»_LEN\n\n\n"
            "def same_«code»(",
        ),
        (
            '"""Cleaning up «code_w»s that people type."""\n',
            '"""Cleaning up «code_w»s that people type."""\n\nMAX_«CODE»_LEN = 12\n',
        ),
    ),
    feature_fail=_Fail(
        "test_valid_«code»",
        "NameError: name 'MAX_«CODE»_LEN' is not defined",
        "    def test_valid_«code»():\n"
        '>       assert valid_«code»(" ab12 ")\n\n'
        "«modpath»:«mline»: in valid_«code»\n"
        "    return code.isalnum() and len(code) <= MAX_«CODE»_LEN\n"
        "E   NameError: name 'MAX_«CODE»_LEN' is not defined",
        module_at="len(code) <= MAX_",
    ),
    new_test=(
        'def test_same_«code»():\n    assert same_«code»("ab12", "AB12")\n',
        'def test_same_«code»():\n    assert same_«code»("ab12", "AB12")\n\n\n'
        'def test_same_«code»_ignores_spaces():\n    assert same_«code»(" ab12", "AB12 ")\n',
    ),
)

_PY_BATCHES = _Template(
    module='''"""Splitting «things_w» into batches for processing."""

from collections.abc import Iterator, Sequence


def «thing»_batches(items: Sequence[str], size: int) -> Iterator[list[str]]:
    """Consecutive batches of at most `size` «things_w», in order."""
    for start in range(0, len(items) - size + 1, size):
        yield list(items[start : start + size])


def «thing»_batch_count(total: int, size: int) -> int:
    return -(-total // size)
''',
    test="""from «pkg».«mod» import «thing»_batch_count, «thing»_batches


def test_«thing»_batches_even():
    assert list(«thing»_batches(["a", "b", "c", "d"], 2)) == [["a", "b"], ["c", "d"]]


def test_«thing»_batches_keeps_the_last_partial_batch():
    assert list(«thing»_batches(["a", "b", "c"], 2)) == [["a", "b"], ["c"]]


def test_«thing»_batch_count():
    assert «thing»_batch_count(5, 2) == 3
""",
    names=("«thing»_batches", "«thing»_batch_count", "«thing»_batches"),
    tests=(
        "test_«thing»_batches_even",
        "test_«thing»_batches_keeps_the_last_partial_batch",
        "test_«thing»_batch_count",
        "test_«thing»_batches_rejects_a_bad_size",
    ),
    bug=(
        "    for start in range(0, len(items) - size + 1, size):",
        "    for start in range(0, len(items), size):",
    ),
    bug_fail=_Fail(
        "test_«thing»_batches_keeps_the_last_partial_batch",
        "AssertionError: assert [['a', 'b']] == [['a', 'b'], ['c']]",
        "    def test_«thing»_batches_keeps_the_last_partial_batch():\n"
        '>       assert list(«thing»_batches(["a", "b", "c"], 2)) == [["a", "b"], ["c"]]\n'
        "E       AssertionError: assert [['a', 'b']] == [['a', 'b'], ['c']]\n"
        "E         \n"
        "E         Right contains one more item: ['c']",
        at='assert list(«thing»_batches(["a", "b", "c"], 2))',
    ),
    feature=(
        (
            '    """Consecutive batches of at most `size` «things_w», in order."""\n',
            '    """Consecutive batches of at most `size` «things_w», in order."""\n'
            "    if not 0 < size <= MAX_BATCH_SIZE:\n"
            '        raise ValueError(f"batch size must be 1..{MAX_BATCH_SIZE}, got {size}")\n',
        ),
        (
            "from collections.abc import Iterator, Sequence\n",
            "from collections.abc import Iterator, Sequence\n\nMAX_BATCH_SIZE = 500\n",
        ),
    ),
    feature_fail=_Fail(
        "test_«thing»_batches_rejects_a_bad_size",
        "NameError: name 'MAX_BATCH_SIZE' is not defined",
        "    def test_«thing»_batches_rejects_a_bad_size():\n"
        "        with pytest.raises(ValueError):\n"
        '>           list(«thing»_batches(["a"], 0))\n\n'
        "«modpath»:«mline»: in «thing»_batches\n"
        "    if not 0 < size <= MAX_BATCH_SIZE:\n"
        "E   NameError: name 'MAX_BATCH_SIZE' is not defined",
        module_at="if not 0 < size <= MAX_BATCH_SIZE",
    ),
    new_test=(
        "def test_«thing»_batch_count():\n    assert «thing»_batch_count(5, 2) == 3\n",
        "def test_«thing»_batch_count():\n    assert «thing»_batch_count(5, 2) == 3\n\n\n"
        "def test_«thing»_batches_of_nothing():\n    assert list(«thing»_batches([], 3)) == []\n",
    ),
)

# ----- TypeScript (vitest)

_TS_CAPACITY = _Template(
    module="""export const MAX_«THINGS» = «cap»;

/** Whether one more «thing_w» fits in a «group_w» that already holds `booked`. */
export function «groupC»HasRoom(booked: number, capacity = MAX_«THINGS»): boolean {
  return booked <= capacity;
}

/** «Things_w» still free, never negative. */
export function free«Things»(booked: number, capacity = MAX_«THINGS»): number {
  return Math.max(capacity - booked, 0);
}
""",
    test="""import { describe, expect, it } from "vitest";

import { free«Things», MAX_«THINGS», «groupC»HasRoom } from "«import»";

describe("«groupC»HasRoom", () => {
  it("has room when empty", () => {
    expect(«groupC»HasRoom(0)).toBe(true);
  });

  it("has no room when full", () => {
    expect(«groupC»HasRoom(MAX_«THINGS»)).toBe(false);
  });
});

describe("free«Things»", () => {
  it("counts free «things_w»", () => {
    expect(free«Things»(3, 10)).toBe(7);
  });

  it("is never negative", () => {
    expect(free«Things»(12, 10)).toBe(0);
  });
});
""",
    names=("«groupC»HasRoom", "free«Things»", "«groupC»NearlyFull"),
    tests=(
        "has room when empty",
        "has no room when full",
        "counts free «things_w»",
        "is never negative",
        "is nearly full at 90%",
    ),
    bug=("  return booked <= capacity;", "  return booked < capacity;"),
    bug_fail=_Fail(
        "has no room when full",
        "AssertionError: expected true to be false // Object.is equality",
        "AssertionError: expected true to be false // Object.is equality\n\n"
        "- Expected\n+ Received\n\n- false\n+ true\n",
        at="expect(«groupC»HasRoom(MAX_«THINGS»))",
    ),
    feature=(
        (
            "/** «Things_w» still free, never negative. */",
            "/** Whether a «group_w» is at or above the warning level. */\n"
            "export function «groupC»NearlyFull(booked: number, capacity = MAX_«THINGS»): boolean {\n"
            "  return booked >= capacity * NEARLY_FULL_AT;\n"
            "}\n\n"
            "/** «Things_w» still free, never negative. */",
        ),
        (
            "export const MAX_«THINGS» = «cap»;\n",
            "export const MAX_«THINGS» = «cap»;\nexport const NEARLY_FULL_AT = 0.9;\n",
        ),
    ),
    feature_fail=_Fail(
        "is nearly full at 90%",
        "ReferenceError: NEARLY_FULL_AT is not defined",
        "ReferenceError: NEARLY_FULL_AT is not defined\n ❯ «groupC»NearlyFull «modpath»:«mline»:30",
        module_at="* NEARLY_FULL_AT",
    ),
    new_test=(
        '  it("is never negative", () => {\n    expect(free«Things»(12, 10)).toBe(0);\n  });\n',
        '  it("is never negative", () => {\n    expect(free«Things»(12, 10)).toBe(0);\n  });\n\n'
        '  it("is zero when exactly full", () => {\n    expect(free«Things»(10, 10)).toBe(0);\n  });\n',
    ),
)

_TS_STATS = _Template(
    module="""/** Mean «measure_w»; 0 when there are no readings. */
export function average«Measure»(values: number[]): number {
  return values.reduce((sum, v) => sum + v, 0) / values.length;
}

/** Largest «measure_w», or 0 when there are none. */
export function peak«Measure»(values: number[]): number {
  return values.length ? Math.max(...values) : 0;
}
""",
    test="""import { describe, expect, it } from "vitest";

import { average«Measure», peak«Measure» } from "«import»";

describe("average«Measure»", () => {
  it("averages readings", () => {
    expect(average«Measure»([2, 4])).toBe(3);
  });

  it("is 0 for no readings", () => {
    expect(average«Measure»([])).toBe(0);
  });
});

describe("peak«Measure»", () => {
  it("finds the largest reading", () => {
    expect(peak«Measure»([1, 7.5, 3])).toBe(7.5);
  });
});
""",
    names=("average«Measure»", "peak«Measure»", "«measureC»Outliers"),
    tests=("averages readings", "is 0 for no readings", "finds the largest reading", "flags outliers"),
    bug=(
        "  return values.reduce((sum, v) => sum + v, 0) / values.length;",
        "  if (values.length === 0) return 0;\n"
        "  return values.reduce((sum, v) => sum + v, 0) / values.length;",
    ),
    bug_fail=_Fail(
        "is 0 for no readings",
        "AssertionError: expected NaN to be +0 // Object.is equality",
        "AssertionError: expected NaN to be +0 // Object.is equality\n\n"
        "- Expected\n+ Received\n\n- 0\n+ NaN\n",
        at="expect(average«Measure»([]))",
    ),
    feature=(
        (
            "/** Largest «measure_w», or 0 when there are none. */",
            "/** Readings more than OUTLIER_FACTOR times the average. */\n"
            "export function «measureC»Outliers(values: number[]): number[] {\n"
            "  const mean = average«Measure»(values);\n"
            "  return values.filter((v) => v > mean * OUTLIER_FACTOR);\n"
            "}\n\n"
            "/** Largest «measure_w», or 0 when there are none. */",
        ),
        (
            "/** Mean «measure_w»; 0 when there are no readings. */\n",
            "export const OUTLIER_FACTOR = 3;\n\n/** Mean «measure_w»; 0 when there are no readings. */\n",
        ),
    ),
    feature_fail=_Fail(
        "flags outliers",
        "ReferenceError: OUTLIER_FACTOR is not defined",
        "ReferenceError: OUTLIER_FACTOR is not defined\n ❯ «measureC»Outliers «modpath»:«mline»:42",
        module_at="mean * OUTLIER_FACTOR",
    ),
    new_test=(
        '  it("finds the largest reading", () => {\n'
        "    expect(peak«Measure»([1, 7.5, 3])).toBe(7.5);\n  });\n",
        '  it("finds the largest reading", () => {\n'
        "    expect(peak«Measure»([1, 7.5, 3])).toBe(7.5);\n  });\n\n"
        '  it("is 0 without readings", () => {\n    expect(peak«Measure»([])).toBe(0);\n  });\n',
    ),
)

_TS_CODES = _Template(
    module="""/** The canonical form of a «code_w»: upper case, no surrounding spaces. */
export function normalize«Code»(raw: string): string {
  return raw.toUpperCase();
}

export function same«Code»(a: string, b: string): boolean {
  return normalize«Code»(a) === normalize«Code»(b);
}
""",
    test="""import { describe, expect, it } from "vitest";

import { normalize«Code», same«Code» } from "«import»";

describe("normalize«Code»", () => {
  it("upper-cases", () => {
    expect(normalize«Code»("ab12")).toBe("AB12");
  });

  it("strips spaces", () => {
    expect(normalize«Code»("  ab12 ")).toBe("AB12");
  });
});

describe("same«Code»", () => {
  it("ignores case", () => {
    expect(same«Code»("ab12", "AB12")).toBe(true);
  });
});
""",
    names=("normalize«Code»", "same«Code»", "isValid«Code»"),
    tests=("upper-cases", "strips spaces", "ignores case", "rejects long «code_w»s"),
    bug=("  return raw.toUpperCase();", "  return raw.trim().toUpperCase();"),
    bug_fail=_Fail(
        "strips spaces",
        "AssertionError: expected '  AB12 ' to be 'AB12' // Object.is equality",
        "AssertionError: expected '  AB12 ' to be 'AB12' // Object.is equality\n\n"
        "- Expected\n+ Received\n\n- AB12\n+   AB12 \n",
        at='expect(normalize«Code»("  ab12 "))',
    ),
    feature=(
        (
            "export function same«Code»(",
            "/** Whether `raw` can be a «code_w»: letters and digits, at most MAX_«CODE»_LEN. */\n"
            "export function isValid«Code»(raw: string): boolean {\n"
            "  const code = normalize«Code»(raw);\n"
            "  return /^[A-Z0-9]+$/.test(code) && code.length <= MAX_«CODE»_LEN;\n"
            "}\n\n"
            "export function same«Code»(",
        ),
        (
            "/** The canonical form of a «code_w»",
            "export const MAX_«CODE»_LEN = 12;\n\n/** The canonical form of a «code_w»",
        ),
    ),
    feature_fail=_Fail(
        "rejects long «code_w»s",
        "ReferenceError: MAX_«CODE»_LEN is not defined",
        "ReferenceError: MAX_«CODE»_LEN is not defined\n ❯ isValid«Code» «modpath»:«mline»:55",
        module_at="code.length <= MAX_",
    ),
    new_test=(
        '  it("ignores case", () => {\n    expect(same«Code»("ab12", "AB12")).toBe(true);\n  });\n',
        '  it("ignores case", () => {\n    expect(same«Code»("ab12", "AB12")).toBe(true);\n  });\n\n'
        '  it("ignores spaces", () => {\n    expect(same«Code»(" ab12", "AB12 ")).toBe(true);\n  });\n',
    ),
)

_TS_BATCHES = _Template(
    module="""/** Consecutive batches of at most `size` «things_w», in order. */
export function «thingC»Batches<T>(items: T[], size: number): T[][] {
  const batches: T[][] = [];
  for (let start = 0; start + size <= items.length; start += size) {
    batches.push(items.slice(start, start + size));
  }
  return batches;
}

export function «thingC»BatchCount(total: number, size: number): number {
  return Math.ceil(total / size);
}
""",
    test="""import { describe, expect, it } from "vitest";

import { «thingC»BatchCount, «thingC»Batches } from "«import»";

describe("«thingC»Batches", () => {
  it("splits evenly", () => {
    expect(«thingC»Batches(["a", "b", "c", "d"], 2)).toEqual([["a", "b"], ["c", "d"]]);
  });

  it("keeps the last partial batch", () => {
    expect(«thingC»Batches(["a", "b", "c"], 2)).toEqual([["a", "b"], ["c"]]);
  });

  it("counts batches", () => {
    expect(«thingC»BatchCount(5, 2)).toBe(3);
  });
});
""",
    names=("«thingC»Batches", "«thingC»BatchCount", "«thingC»Batches"),
    tests=("splits evenly", "keeps the last partial batch", "counts batches", "rejects a bad size"),
    bug=(
        "  for (let start = 0; start + size <= items.length; start += size) {",
        "  for (let start = 0; start < items.length; start += size) {",
    ),
    bug_fail=_Fail(
        "keeps the last partial batch",
        "AssertionError: expected [ [ 'a', 'b' ] ] to deeply equal [ [ 'a', 'b' ], [ 'c' ] ]",
        "AssertionError: expected [ [ 'a', 'b' ] ] to deeply equal [ [ 'a', 'b' ], [ 'c' ] ]\n\n"
        '- Expected\n+ Received\n\n  [\n    [\n      "a",\n      "b",\n    ],\n'
        '-   [\n-     "c",\n-   ],\n  ]\n',
        at='expect(«thingC»Batches(["a", "b", "c"], 2))',
    ),
    feature=(
        (
            "  const batches: T[][] = [];\n",
            "  if (size < 1 || size > MAX_BATCH_SIZE) {\n"
            "    throw new RangeError(`batch size must be 1..${MAX_BATCH_SIZE}, got ${size}`);\n"
            "  }\n"
            "  const batches: T[][] = [];\n",
        ),
        (
            "/** Consecutive batches of at most",
            "export const MAX_BATCH_SIZE = 500;\n\n/** Consecutive batches of at most",
        ),
    ),
    feature_fail=_Fail(
        "rejects a bad size",
        "AssertionError: expected [Function] to throw error including 'batch size' but got "
        "'MAX_BATCH_SIZE is not defined'",
        "AssertionError: expected [Function] to throw error including 'batch size' but got "
        "'MAX_BATCH_SIZE is not defined'\n ❯ «thingC»Batches «modpath»:«mline»:22",
        module_at="size > MAX_BATCH_SIZE",
    ),
    new_test=(
        '  it("counts batches", () => {\n    expect(«thingC»BatchCount(5, 2)).toBe(3);\n  });\n',
        '  it("counts batches", () => {\n    expect(«thingC»BatchCount(5, 2)).toBe(3);\n  });\n\n'
        '  it("gives no batches for nothing", () => {\n'
        "    expect(«thingC»Batches([], 3)).toEqual([]);\n  });\n",
    ),
)

# ----- Go

_GO_CAPACITY = _Template(
    module="""package «gopkg»

// Max«Things» is how many «things_w» a «group_w» holds by default.
const Max«Things» = «cap»

// «Group»HasRoom reports whether one more «thing_w» fits in a «group_w» holding booked.
func «Group»HasRoom(booked, capacity int) bool {
	return booked <= capacity
}

// Free«Things» returns the «things_w» still free, never negative.
func Free«Things»(booked, capacity int) int {
	return max(capacity-booked, 0)
}
""",
    test="""package «gopkg»

import "testing"

func Test«Group»HasRoomWhenEmpty(t *testing.T) {
	if !«Group»HasRoom(0, Max«Things») {
		t.Error("an empty «group_w» has no room")
	}
}

func TestFull«Group»HasNoRoom(t *testing.T) {
	if «Group»HasRoom(Max«Things», Max«Things») {
		t.Errorf("«Group»HasRoom(%d, %d) = true, want false", Max«Things», Max«Things»)
	}
}

func TestFree«Things»(t *testing.T) {
	if got := Free«Things»(12, 10); got != 0 {
		t.Errorf("Free«Things»(12, 10) = %d, want 0", got)
	}
}
""",
    names=("«Group»HasRoom", "Free«Things»", "«Group»NearlyFull"),
    tests=(
        "Test«Group»HasRoomWhenEmpty",
        "TestFull«Group»HasNoRoom",
        "TestFree«Things»",
        "Test«Group»NearlyFull",
    ),
    bug=("\treturn booked <= capacity", "\treturn booked < capacity"),
    bug_fail=_Fail(
        "TestFull«Group»HasNoRoom",
        "«Group»HasRoom(«cap», «cap») = true, want false",
        "«testfile»:«line»: «Group»HasRoom(«cap», «cap») = true, want false",
        at='t.Errorf("«Group»HasRoom(',
    ),
    feature=(
        (
            "// Free«Things» returns",
            "// «Group»NearlyFull reports whether a «group_w» is at or above the warning level.\n"
            "func «Group»NearlyFull(booked, capacity int) bool {\n"
            "\treturn float64(booked) >= float64(capacity)*nearlyFullAt\n"
            "}\n\n"
            "// Free«Things» returns",
        ),
        (
            "const Max«Things» = «cap»\n",
            "const Max«Things» = «cap»\n\n"
            "// nearlyFullAt is the share of capacity that counts as nearly full.\n"
            "const nearlyFullAt = 0.9\n",
        ),
    ),
    feature_fail=_Fail(
        "Test«Group»NearlyFull",
        "build failed: undefined: nearlyFullAt",
        "«modfile»:«mline»:45: undefined: nearlyFullAt",
        module_at="*nearlyFullAt",
    ),
    new_test=(
        "func TestFree«Things»(t *testing.T) {\n",
        "func TestFree«Things»WhenExactlyFull(t *testing.T) {\n"
        "\tif got := Free«Things»(10, 10); got != 0 {\n"
        '\t\tt.Errorf("Free«Things»(10, 10) = %d, want 0", got)\n'
        "\t}\n"
        "}\n\n"
        "func TestFree«Things»(t *testing.T) {\n",
    ),
)

_GO_STATS = _Template(
    module="""package «gopkg»

// Average«Measure» returns the mean «measure_w», or 0 when there are no readings.
func Average«Measure»(values []float64) float64 {
	total := 0.0
	for _, v := range values {
		total += v
	}
	return total / float64(len(values))
}

// Peak«Measure» returns the largest «measure_w», or 0 when there are none.
func Peak«Measure»(values []float64) float64 {
	peak := 0.0
	for _, v := range values {
		peak = max(peak, v)
	}
	return peak
}
""",
    test="""package «gopkg»

import "testing"

func TestAverage«Measure»(t *testing.T) {
	if got := Average«Measure»([]float64{2, 4}); got != 3 {
		t.Errorf("Average«Measure»(2, 4) = %v, want 3", got)
	}
}

func TestAverage«Measure»OfNothing(t *testing.T) {
	if got := Average«Measure»(nil); got != 0 {
		t.Errorf("Average«Measure»(nil) = %v, want 0", got)
	}
}

func TestPeak«Measure»(t *testing.T) {
	if got := Peak«Measure»([]float64{1, 7.5, 3}); got != 7.5 {
		t.Errorf("Peak«Measure» = %v, want 7.5", got)
	}
}
""",
    names=("Average«Measure»", "Peak«Measure»", "«Measure»Outliers"),
    tests=(
        "TestAverage«Measure»",
        "TestAverage«Measure»OfNothing",
        "TestPeak«Measure»",
        "Test«Measure»Outliers",
    ),
    bug=("\ttotal := 0.0\n", "\tif len(values) == 0 {\n\t\treturn 0\n\t}\n\ttotal := 0.0\n"),
    bug_fail=_Fail(
        "TestAverage«Measure»OfNothing",
        "Average«Measure»(nil) = NaN, want 0",
        "«testfile»:«line»: Average«Measure»(nil) = NaN, want 0",
        at='t.Errorf("Average«Measure»(nil)',
    ),
    feature=(
        (
            "// Peak«Measure» returns",
            "// «Measure»Outliers returns the readings more than outlierFactor times the average.\n"
            "func «Measure»Outliers(values []float64) []float64 {\n"
            "\tmean := Average«Measure»(values)\n"
            "\tvar out []float64\n"
            "\tfor _, v := range values {\n"
            "\t\tif v > mean*outlierFactor {\n"
            "\t\t\tout = append(out, v)\n"
            "\t\t}\n"
            "\t}\n"
            "\treturn out\n"
            "}\n\n"
            "// Peak«Measure» returns",
        ),
        (
            "package «gopkg»\n",
            "package «gopkg»\n\n"
            "// outlierFactor is how far above the average a reading must be to stand out.\n"
            "const outlierFactor = 3.0\n",
        ),
    ),
    feature_fail=_Fail(
        "Test«Measure»Outliers",
        "build failed: undefined: outlierFactor",
        "«modfile»:«mline»:15: undefined: outlierFactor",
        module_at="mean*outlierFactor",
    ),
    new_test=(
        "func TestPeak«Measure»(t *testing.T) {\n",
        "func TestPeak«Measure»OfNothing(t *testing.T) {\n"
        "\tif got := Peak«Measure»(nil); got != 0 {\n"
        '\t\tt.Errorf("Peak«Measure»(nil) = %v, want 0", got)\n'
        "\t}\n"
        "}\n\n"
        "func TestPeak«Measure»(t *testing.T) {\n",
    ),
)

_GO_CODES = _Template(
    module="""package «gopkg»

import "strings"

// Normalize«Code» returns the canonical form of a «code_w»: upper case, no surrounding spaces.
func Normalize«Code»(raw string) string {
	return strings.ToUpper(raw)
}

// Same«Code» reports whether two «code_w»s are the same once normalized.
func Same«Code»(a, b string) bool {
	return Normalize«Code»(a) == Normalize«Code»(b)
}
""",
    test="""package «gopkg»

import "testing"

func TestNormalize«Code»UpperCases(t *testing.T) {
	if got := Normalize«Code»("ab12"); got != "AB12" {
		t.Errorf("Normalize«Code»(%q) = %q, want %q", "ab12", got, "AB12")
	}
}

func TestNormalize«Code»StripsSpaces(t *testing.T) {
	if got := Normalize«Code»("  ab12 "); got != "AB12" {
		t.Errorf("Normalize«Code»(%q) = %q, want %q", "  ab12 ", got, "AB12")
	}
}

func TestSame«Code»(t *testing.T) {
	if !Same«Code»("ab12", "AB12") {
		t.Error("Same«Code» is case sensitive")
	}
}
""",
    names=("Normalize«Code»", "Same«Code»", "Valid«Code»"),
    tests=(
        "TestNormalize«Code»UpperCases",
        "TestNormalize«Code»StripsSpaces",
        "TestSame«Code»",
        "TestValid«Code»",
    ),
    bug=("\treturn strings.ToUpper(raw)", "\treturn strings.ToUpper(strings.TrimSpace(raw))"),
    bug_fail=_Fail(
        "TestNormalize«Code»StripsSpaces",
        'Normalize«Code»("  ab12 ") = "  AB12 ", want "AB12"',
        '«testfile»:«line»: Normalize«Code»("  ab12 ") = "  AB12 ", want "AB12"',
        at='Normalize«Code»(%q) = %q, want %q", "  ab12 "',
    ),
    feature=(
        (
            "// Same«Code» reports",
            "// Valid«Code» reports whether raw can be a «code_w»: letters and digits, at most maxLen.\n"
            "func Valid«Code»(raw string) bool {\n"
            "\tcode := Normalize«Code»(raw)\n"
            '\treturn code != "" && len(code) <= max«Code»Len && strings.Trim(code, alnum) == ""\n'
            "}\n\n"
            "// Same«Code» reports",
        ),
        (
            'import "strings"\n',
            'import "strings"\n\nconst (\n\tmax«Code»Len = 12\n'
            '\talnum      = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"\n)\n',
        ),
    ),
    feature_fail=_Fail(
        "TestValid«Code»",
        "build failed: undefined: max«Code»Len",
        "«modfile»:«mline»:38: undefined: max«Code»Len",
        module_at="len(code) <= max",
    ),
    new_test=(
        "func TestSame«Code»(t *testing.T) {\n",
        "func TestSame«Code»IgnoresSpaces(t *testing.T) {\n"
        '\tif !Same«Code»(" ab12", "AB12 ") {\n'
        '\t\tt.Error("Same«Code» compares the spaces around a «code_w»")\n'
        "\t}\n"
        "}\n\n"
        "func TestSame«Code»(t *testing.T) {\n",
    ),
)

_GO_BATCHES = _Template(
    module="""package «gopkg»

// «Thing»Batches splits items into consecutive batches of at most size, in order.
func «Thing»Batches(items []string, size int) [][]string {
	var batches [][]string
	for start := 0; start+size <= len(items); start += size {
		batches = append(batches, items[start:start+size])
	}
	return batches
}

// «Thing»BatchCount returns how many batches total items make.
func «Thing»BatchCount(total, size int) int {
	return (total + size - 1) / size
}
""",
    test="""package «gopkg»

import (
	"reflect"
	"testing"
)

func Test«Thing»BatchesEven(t *testing.T) {
	got := «Thing»Batches([]string{"a", "b", "c", "d"}, 2)
	if want := [][]string{{"a", "b"}, {"c", "d"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("«Thing»Batches(a b c d, 2) = %v, want %v", got, want)
	}
}

func Test«Thing»BatchesKeepsLastPartial(t *testing.T) {
	got := «Thing»Batches([]string{"a", "b", "c"}, 2)
	if want := [][]string{{"a", "b"}, {"c"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("«Thing»Batches(a b c, 2) = %v, want %v", got, want)
	}
}

func Test«Thing»BatchCount(t *testing.T) {
	if got := «Thing»BatchCount(5, 2); got != 3 {
		t.Errorf("«Thing»BatchCount(5, 2) = %d, want 3", got)
	}
}
""",
    names=("«Thing»Batches", "«Thing»BatchCount", "«Thing»Batches"),
    tests=(
        "Test«Thing»BatchesEven",
        "Test«Thing»BatchesKeepsLastPartial",
        "Test«Thing»BatchCount",
        "Test«Thing»BatchesRejectsBadSize",
    ),
    bug=(
        "\tfor start := 0; start+size <= len(items); start += size {\n"
        "\t\tbatches = append(batches, items[start:start+size])",
        "\tfor start := 0; start < len(items); start += size {\n"
        "\t\tbatches = append(batches, items[start:min(start+size, len(items))])",
    ),
    bug_fail=_Fail(
        "Test«Thing»BatchesKeepsLastPartial",
        "«Thing»Batches(a b c, 2) = [[a b]], want [[a b] [c]]",
        "«testfile»:«line»: «Thing»Batches(a b c, 2) = [[a b]], want [[a b] [c]]",
        at='t.Errorf("«Thing»Batches(a b c, 2)',
    ),
    feature=(
        (
            "\tvar batches [][]string\n",
            "\tif size < 1 || size > maxBatchSize {\n\t\treturn nil\n\t}\n\tvar batches [][]string\n",
        ),
        (
            "package «gopkg»\n",
            "package «gopkg»\n\n// maxBatchSize bounds what one batch may hold.\nconst maxBatchSize = 500\n",
        ),
    ),
    feature_fail=_Fail(
        "Test«Thing»BatchesRejectsBadSize",
        "build failed: undefined: maxBatchSize",
        "«modfile»:«mline»:26: undefined: maxBatchSize",
        module_at="size > maxBatchSize",
    ),
    new_test=(
        "func Test«Thing»BatchCount(t *testing.T) {\n",
        "func Test«Thing»BatchesOfNothing(t *testing.T) {\n"
        "\tif got := «Thing»Batches(nil, 3); len(got) != 0 {\n"
        '\t\tt.Errorf("«Thing»Batches(nil, 3) = %v, want no batches", got)\n'
        "\t}\n"
        "}\n\n"
        "func Test«Thing»BatchCount(t *testing.T) {\n",
    ),
)

# ----- Rust (unit tests live in the module)

_RS_CAPACITY = _Template(
    module="""//! How many «things_w» fit in a «group_w».

pub const MAX_«THINGS»: u32 = «cap»;

/// Whether one more «thing_w» fits in a «group_w» that already holds `booked`.
pub fn «group»_has_room(booked: u32, capacity: u32) -> bool {
    booked <= capacity
}

/// «Things_w» still free, never negative.
pub fn free_«things»(booked: u32, capacity: u32) -> u32 {
    capacity.saturating_sub(booked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_«group»_has_room() {
        assert!(«group»_has_room(0, MAX_«THINGS»));
    }

    #[test]
    fn full_«group»_has_no_room() {
        assert!(!«group»_has_room(MAX_«THINGS», MAX_«THINGS»));
    }

    #[test]
    fn free_«things»_never_negative() {
        assert_eq!(free_«things»(12, 10), 0);
    }
}
""",
    test="",
    names=("«group»_has_room", "free_«things»", "«group»_nearly_full"),
    tests=(
        "«mod»::tests::empty_«group»_has_room",
        "«mod»::tests::full_«group»_has_no_room",
        "«mod»::tests::free_«things»_never_negative",
        "«mod»::tests::«group»_nearly_full_at_ninety_percent",
    ),
    bug=("    booked <= capacity\n", "    booked < capacity\n"),
    bug_fail=_Fail(
        "«mod»::tests::full_«group»_has_no_room",
        "assertion failed: !«group»_has_room(MAX_«THINGS», MAX_«THINGS»)",
        "assertion failed: !«group»_has_room(MAX_«THINGS», MAX_«THINGS»)",
        at="assert!(!«group»_has_room(",
    ),
    feature=(
        (
            "/// «Things_w» still free, never negative.\n",
            "/// Whether a «group_w» is at or above the warning level.\n"
            "pub fn «group»_nearly_full(booked: u32, capacity: u32) -> bool {\n"
            "    f64::from(booked) >= f64::from(capacity) * NEARLY_FULL_AT\n"
            "}\n\n"
            "/// «Things_w» still free, never negative.\n",
        ),
        (
            "pub const MAX_«THINGS»: u32 = «cap»;\n",
            "pub const MAX_«THINGS»: u32 = «cap»;\n"
            "/// The share of capacity that counts as nearly full.\n"
            "pub const NEARLY_FULL_AT: f64 = 0.9;\n",
        ),
    ),
    feature_fail=_Fail(
        "«mod»::tests::«group»_nearly_full_at_ninety_percent",
        "build failed: cannot find value `NEARLY_FULL_AT` in this scope",
        "error[E0425]: cannot find value `NEARLY_FULL_AT` in this scope\n"
        "  --> «modpath»:«mline»:48\n"
        "   |\n"
        "«mline» |     f64::from(booked) >= f64::from(capacity) * NEARLY_FULL_AT\n"
        "   |                                                ^^^^^^^^^^^^^^ not found in this scope\n\n"
        "For more information about this error, try `rustc --explain E0425`.",
        module_at="* NEARLY_FULL_AT",
    ),
    new_test=(
        "    fn free_«things»_never_negative() {\n        assert_eq!(free_«things»(12, 10), 0);\n    }\n",
        "    fn free_«things»_never_negative() {\n        assert_eq!(free_«things»(12, 10), 0);\n    }\n\n"
        "    #[test]\n"
        "    fn free_«things»_when_exactly_full() {\n        assert_eq!(free_«things»(10, 10), 0);\n    }\n",
    ),
)

_RS_STATS = _Template(
    module="""//! Summary numbers for «measure_w» readings.

/// Mean «measure_w»; 0.0 when there are no readings.
pub fn average_«measure»(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Largest «measure_w», or 0.0 when there are none.
pub fn peak_«measure»(values: &[f64]) -> f64 {
    values.iter().copied().fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn averages_readings() {
        assert_eq!(average_«measure»(&[2.0, 4.0]), 3.0);
    }

    #[test]
    fn average_of_nothing_is_zero() {
        assert_eq!(average_«measure»(&[]), 0.0);
    }

    #[test]
    fn finds_the_peak() {
        assert_eq!(peak_«measure»(&[1.0, 7.5, 3.0]), 7.5);
    }
}
""",
    test="",
    names=("average_«measure»", "peak_«measure»", "«measure»_outliers"),
    tests=(
        "«mod»::tests::averages_readings",
        "«mod»::tests::average_of_nothing_is_zero",
        "«mod»::tests::finds_the_peak",
        "«mod»::tests::flags_outliers",
    ),
    bug=(
        "    values.iter().sum::<f64>() / values.len() as f64\n",
        "    if values.is_empty() {\n        return 0.0;\n    }\n"
        "    values.iter().sum::<f64>() / values.len() as f64\n",
    ),
    bug_fail=_Fail(
        "«mod»::tests::average_of_nothing_is_zero",
        "assertion `left == right` failed",
        "assertion `left == right` failed\n  left: NaN\n right: 0.0",
        at="assert_eq!(average_«measure»(&[]), 0.0);",
    ),
    feature=(
        (
            "/// Largest «measure_w», or 0.0 when there are none.\n",
            "/// Readings more than OUTLIER_FACTOR times the average.\n"
            "pub fn «measure»_outliers(values: &[f64]) -> Vec<f64> {\n"
            "    let mean = average_«measure»(values);\n"
            "    values.iter().copied().filter(|v| *v > mean * OUTLIER_FACTOR).collect()\n"
            "}\n\n"
            "/// Largest «measure_w», or 0.0 when there are none.\n",
        ),
        (
            "//! Summary numbers for «measure_w» readings.\n",
            "//! Summary numbers for «measure_w» readings.\n\n"
            "/// How far above the average a reading must be to stand out.\n"
            "pub const OUTLIER_FACTOR: f64 = 3.0;\n",
        ),
    ),
    feature_fail=_Fail(
        "«mod»::tests::flags_outliers",
        "build failed: cannot find value `OUTLIER_FACTOR` in this scope",
        "error[E0425]: cannot find value `OUTLIER_FACTOR` in this scope\n"
        "  --> «modpath»:«mline»:56\n"
        "   |\n"
        "«mline» |     values.iter().copied().filter(|v| *v > mean * OUTLIER_FACTOR).collect()\n"
        "   |" + " " * 53 + "^^^^^^^^^^^^^^ not found in this scope\n\n"
        "For more information about this error, try `rustc --explain E0425`.",
        module_at="mean * OUTLIER_FACTOR",
    ),
    new_test=(
        "    fn finds_the_peak() {\n        assert_eq!(peak_«measure»(&[1.0, 7.5, 3.0]), 7.5);\n    }\n",
        "    fn finds_the_peak() {\n        assert_eq!(peak_«measure»(&[1.0, 7.5, 3.0]), 7.5);\n    }\n\n"
        "    #[test]\n"
        "    fn peak_of_nothing_is_zero() {\n        assert_eq!(peak_«measure»(&[]), 0.0);\n    }\n",
    ),
)

_RS_CODES = _Template(
    module="""//! Cleaning up «code_w»s that people type.

/// The canonical form of a «code_w»: upper case, no surrounding spaces.
pub fn normalize_«code»(raw: &str) -> String {
    raw.to_uppercase()
}

pub fn same_«code»(a: &str, b: &str) -> bool {
    normalize_«code»(a) == normalize_«code»(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upper_cases() {
        assert_eq!(normalize_«code»("ab12"), "AB12");
    }

    #[test]
    fn strips_spaces() {
        assert_eq!(normalize_«code»("  ab12 "), "AB12");
    }

    #[test]
    fn same_ignores_case() {
        assert!(same_«code»("ab12", "AB12"));
    }
}
""",
    test="",
    names=("normalize_«code»", "same_«code»", "is_valid_«code»"),
    tests=(
        "«mod»::tests::upper_cases",
        "«mod»::tests::strips_spaces",
        "«mod»::tests::same_ignores_case",
        "«mod»::tests::rejects_long_«code»s",
    ),
    bug=("    raw.to_uppercase()\n", "    raw.trim().to_uppercase()\n"),
    bug_fail=_Fail(
        "«mod»::tests::strips_spaces",
        "assertion `left == right` failed",
        'assertion `left == right` failed\n  left: "  AB12 "\n right: "AB12"',
        at='assert_eq!(normalize_«code»("  ab12 ")',
    ),
    feature=(
        (
            "pub fn same_«code»(",
            "/// Whether `raw` can be a «code_w»: letters and digits, at most MAX_«CODE»_LEN.\n"
            "pub fn is_valid_«code»(raw: &str) -> bool {\n"
            "    let code = normalize_«code»(raw);\n"
            "    !code.is_empty()\n"
            "        && code.len() <= MAX_«CODE»_LEN\n"
            "        && code.chars().all(|c| c.is_ascii_alphanumeric())\n"
            "}\n\n"
            "pub fn same_«code»(",
        ),
        (
            "//! Cleaning up «code_w»s that people type.\n",
            "//! Cleaning up «code_w»s that people type.\n\npub const MAX_«CODE»_LEN: usize = 12;\n",
        ),
    ),
    feature_fail=_Fail(
        "«mod»::tests::rejects_long_«code»s",
        "build failed: cannot find value `MAX_«CODE»_LEN` in this scope",
        "error[E0425]: cannot find value `MAX_«CODE»_LEN` in this scope\n"
        "  --> «modpath»:«mline»:27\n"
        "   |\n"
        "«mline» |         && code.len() <= MAX_«CODE»_LEN\n"
        "   |                          ^^^^^^^^^^^^ not found in this scope\n\n"
        "For more information about this error, try `rustc --explain E0425`.",
        module_at="code.len() <= MAX_",
    ),
    new_test=(
        '    fn same_ignores_case() {\n        assert!(same_«code»("ab12", "AB12"));\n    }\n',
        '    fn same_ignores_case() {\n        assert!(same_«code»("ab12", "AB12"));\n    }\n\n'
        "    #[test]\n"
        '    fn same_ignores_spaces() {\n        assert!(same_«code»(" ab12", "AB12 "));\n    }\n',
    ),
)

_RS_BATCHES = _Template(
    module="""//! Splitting «things_w» into batches for processing.

/// Consecutive batches of at most `size` «things_w», in order.
pub fn «thing»_batches<T: Clone>(items: &[T], size: usize) -> Vec<Vec<T>> {
    items.chunks_exact(size).map(<[T]>::to_vec).collect()
}

pub fn «thing»_batch_count(total: usize, size: usize) -> usize {
    total.div_ceil(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_evenly() {
        assert_eq!(«thing»_batches(&["a", "b", "c", "d"], 2), vec![vec!["a", "b"], vec!["c", "d"]]);
    }

    #[test]
    fn keeps_the_last_partial_batch() {
        assert_eq!(«thing»_batches(&["a", "b", "c"], 2), vec![vec!["a", "b"], vec!["c"]]);
    }

    #[test]
    fn counts_batches() {
        assert_eq!(«thing»_batch_count(5, 2), 3);
    }
}
""",
    test="",
    names=("«thing»_batches", "«thing»_batch_count", "«thing»_batches"),
    tests=(
        "«mod»::tests::splits_evenly",
        "«mod»::tests::keeps_the_last_partial_batch",
        "«mod»::tests::counts_batches",
        "«mod»::tests::rejects_a_bad_size",
    ),
    bug=(
        "    items.chunks_exact(size).map(<[T]>::to_vec).collect()\n",
        "    items.chunks(size).map(<[T]>::to_vec).collect()\n",
    ),
    bug_fail=_Fail(
        "«mod»::tests::keeps_the_last_partial_batch",
        "assertion `left == right` failed",
        'assertion `left == right` failed\n  left: [["a", "b"]]\n right: [["a", "b"], ["c"]]',
        at='assert_eq!(«thing»_batches(&["a", "b", "c"], 2)',
    ),
    feature=(
        (
            "pub fn «thing»_batches<T: Clone>(items: &[T], size: usize) -> Vec<Vec<T>> {\n",
            "pub fn «thing»_batches<T: Clone>(items: &[T], size: usize) -> Vec<Vec<T>> {\n"
            '    assert!((1..=MAX_BATCH_SIZE).contains(&size), "batch size must be 1..={MAX_BATCH_SIZE}");\n',
        ),
        (
            "//! Splitting «things_w» into batches for processing.\n",
            "//! Splitting «things_w» into batches for processing.\n\n"
            "pub const MAX_BATCH_SIZE: usize = 500;\n",
        ),
    ),
    feature_fail=_Fail(
        "«mod»::tests::rejects_a_bad_size",
        "build failed: cannot find value `MAX_BATCH_SIZE` in this scope",
        "error[E0425]: cannot find value `MAX_BATCH_SIZE` in this scope\n"
        "  --> «modpath»:«mline»:17\n"
        "   |\n"
        "«mline» |     assert!((1..=MAX_BATCH_SIZE).contains(&size), "
        '"batch size must be 1..={MAX_BATCH_SIZE}");\n'
        "   |                 ^^^^^^^^^^^^^^ not found in this scope\n\n"
        "For more information about this error, try `rustc --explain E0425`.",
        module_at="(1..=MAX_BATCH_SIZE)",
    ),
    new_test=(
        "    fn counts_batches() {\n        assert_eq!(«thing»_batch_count(5, 2), 3);\n    }\n",
        "    fn counts_batches() {\n        assert_eq!(«thing»_batch_count(5, 2), 3);\n    }\n\n"
        "    #[test]\n"
        "    fn no_batches_for_nothing() {\n"
        "        assert!(«thing»_batches::<u8>(&[], 3).is_empty());\n"
        "    }\n",
    ),
)

_TEMPLATES: dict[tuple[str, str], _Template] = {
    ("python", "capacity"): _PY_CAPACITY,
    ("python", "stats"): _PY_STATS,
    ("python", "codes"): _PY_CODES,
    ("python", "batches"): _PY_BATCHES,
    ("typescript", "capacity"): _TS_CAPACITY,
    ("typescript", "stats"): _TS_STATS,
    ("typescript", "codes"): _TS_CODES,
    ("typescript", "batches"): _TS_BATCHES,
    ("go", "capacity"): _GO_CAPACITY,
    ("go", "stats"): _GO_STATS,
    ("go", "codes"): _GO_CODES,
    ("go", "batches"): _GO_BATCHES,
    ("rust", "capacity"): _RS_CAPACITY,
    ("rust", "stats"): _RS_STATS,
    ("rust", "codes"): _RS_CODES,
    ("rust", "batches"): _RS_BATCHES,
}

# Module names per archetype (snake_case; each language spells them its own way).
_MODULE_NAMES = {
    "capacity": ("capacity", "occupancy", "«group»_space"),
    "stats": ("stats", "metrics", "«measure»_stats"),
    "codes": ("codes", "normalize", "«code»s"),
    "batches": ("batching", "chunks", "«thing»_batches"),
}

# --------------------------------------------------------------------------- prose

# Per archetype: what is wrong (bug), what to add (feature), what to test, what to explain.
# Slots: the domain's, «fn1» «fn2» «fn3» (fn1 holds the bug), «path», «test_path», «test», «repo».
_SYMPTOMS = {
    "capacity": (
        "a full «group_w» still says it has room",
        "we let one «thing_w» too many into a «group_w»",
        "«fn1» returns true for a «group_w» that is exactly full",
        "«group_w»s get overbooked by exactly one «thing_w»",
    ),
    "stats": (
        "«fn1» blows up when there are no readings",
        "the «measure_w» average of an empty list should be 0, it isn't",
        "a new «thing_w» with no «measure_w» readings breaks «fn1»",
    ),
    "codes": (
        "«code_w»s typed with spaces around them don't match",
        "«fn1» keeps leading and trailing spaces",
        "people paste «code_w»s with a trailing space and the lookup fails",
    ),
    "batches": (
        "the last few «things_w» never get processed when the count isn't a multiple of the batch size",
        "«fn1» drops the last partial batch",
        "we lose «things_w» at the end of every run: the final short batch is skipped",
    ),
}
_FIX_ANSWERS = {
    "capacity": "`«fn1»` compared with `<=`, so a «group_w» holding exactly its capacity still reported "
    "room for one more. It now uses `<`; the tests pass.",
    "stats": "`«fn1»` divided by the number of readings without checking for none. It now returns 0 "
    "for an empty list; the tests pass.",
    "codes": "`«fn1»` only upper-cased its input, so surrounding spaces survived. It now trims first; "
    "the tests pass.",
    "batches": "`«fn1»` stopped before the last, shorter batch. It now walks the whole list and the "
    "final batch may be shorter than the size; the tests pass.",
}
_FEATURE_ASKS = {
    "capacity": (
        "add «fn3» to «path»: true once a «group_w» is 90% full",
        "we need a warning when a «group_w» is almost full. add a «fn3» helper next to «fn1» in «path»",
        "add a nearly-full check (90% of capacity) for «group_w»s in «path»",
    ),
    "stats": (
        "add «fn3» to «path»: the readings more than 3x the average",
        "I want to flag outlier «measure_w» readings. add «fn3» in «path»",
    ),
    "codes": (
        "add «fn3» to «path»: letters and digits only, at most 12 characters",
        "we need to validate «code_w»s before saving them. add «fn3» next to «fn1» in «path»",
    ),
    "batches": (
        "«fn1» in «path» should reject a batch size below 1 or above 500",
        "guard «fn1» against silly batch sizes (0, or more than 500). see «path»",
    ),
}
_FEATURE_ANSWERS = {
    "capacity": "Added `«fn3»` to `«path»`: true at or above 90% of capacity. The first test run failed "
    "because its threshold constant wasn't defined yet; it is now, and the tests pass.",
    "stats": "Added `«fn3»` to `«path»`: readings above three times the average. The first run failed on "
    "the missing factor constant; with it defined the tests pass.",
    "codes": "Added `«fn3»` to `«path»`: it normalizes, then accepts up to 12 letters and digits. The first "
    "run failed because the length limit wasn't defined yet; the tests pass now.",
    "batches": "`«fn1»` now rejects sizes outside 1..500. The first run failed because the limit constant "
    "wasn't defined yet; it is now and the tests pass.",
}
_TEST_ASKS = {
    "capacity": (
        "add a test that «fn2» is 0 when a «group_w» is exactly full",
        "«test_path» has no test for an exactly full «group_w». add one for «fn2»",
    ),
    "stats": (
        "add a test for «fn2» with no readings to «test_path»",
        "we don't test «fn2» on an empty list. add that test",
    ),
    "codes": (
        "add a test that «fn2» ignores surrounding spaces (in «test_path»)",
        "write a test for «fn2» with spaces around the «code_w»",
    ),
    "batches": (
        "add a test that «fn1» of nothing gives no batches, in «test_path»",
        "cover the empty input of «fn1» with a test",
    ),
}
_TEST_ANSWER = "Added the test to `«test_path»`; it passes with the rest of the suite."
_EXPLAIN_ASKS = {
    "capacity": (
        "how does «path» decide whether a «group_w» has room? don't change anything",
        "explain «fn1» and «fn2» to me, no changes",
    ),
    "stats": (
        "what does «path» compute? just explain",
        "how is the «measure_w» average computed in «repo»? no edits please",
    ),
    "codes": (
        "how are «code_w»s compared in «repo»? explain, don't change anything",
        "walk me through «path»",
    ),
    "batches": (
        "how does «fn1» split the work? just explain",
        "explain «path» to me, I'm new here",
    ),
}
_EXPLAIN_ANSWERS = {
    "capacity": "`«fn1»(booked, capacity)` compares the «things_w» already booked with the capacity («cap» "
    "by default), and `«fn2»` returns what is left, never below zero. Note that `«fn1»` uses `<=`, so "
    "a «group_w» that is exactly full still reports room.",
    "stats": "`«fn1»` sums the readings and divides by their count; `«fn2»` returns the largest reading or "
    "0 when there are none. `«fn1»` has no guard for an empty list.",
    "codes": "Both sides go through `«fn1»`, which upper-cases the «code_w»; `«fn2»` compares the results. "
    "Surrounding spaces are not trimmed, so ` ab12` and `AB12` differ.",
    "batches": "`«fn1»` walks the list in steps of `size` and emits each full slice; `«fn2»` is the "
    "ceiling of total / size. As written, a final batch shorter than `size` is not emitted.",
}
_FIX_PHRASINGS = (
    "{symptom}. the code is in «path», can you fix it?",
    "bug in «path»: {symptom}",
    "«test» fails: {symptom}. fix «fn1» in «path»",
    "please fix «fn1» in «path» — {symptom}",
    "{symptom}. please fix it and make sure the tests pass (see «path»)",
    "CI is red on «repo»: «test» is failing. the bug is in «path»",
    "{symptom}",
)
_BUMP_PHRASINGS = (
    "bump {dep} to {new}",
    "please update {dep} to {new} and check the tests still pass",
    "dependabot wants {dep} {new}. do it by hand in «manifest»",
)
_OPS_PHRASINGS = (
    "how many «things_w» do we have? run the report as a dry run",
    "run the «repo» report in dry-run mode and tell me the totals",
    "dry run the report and tell me how many «group_w»s there are",
)

# --------------------------------------------------------------------------- languages


@dataclass(frozen=True)
class _Language:
    runner: str
    test_command: str
    focused_test: str
    lint_command: str
    install_command: str
    deps: tuple[tuple[str, str, str], ...]  # (name, from, to)


_LANGUAGES = {
    "python": _Language(
        "pytest",
        "pytest -q",
        "pytest -q {test_file}::{test_name}",
        "ruff check .",
        "pip install -e '.[dev]'",
        (("httpx", "0.27.0", "0.28.1"), ("click", "8.1.7", "8.1.8"), ("rich", "13.7.0", "13.9.4")),
    ),
    "typescript": _Language(
        "vitest",
        "npm test",
        "npx vitest run {test_file} -t '{test_name}'",
        "npm run lint",
        "npm ci",
        (
            ("zod", "^3.22.4", "^3.23.8"),
            ("date-fns", "^3.3.1", "^3.6.0"),
            ("commander", "^12.0.0", "^12.1.0"),
        ),
    ),
    "go": _Language(
        "go",
        "go test ./...",
        "go test ./{test_file} -run '^{test_name}$'",
        "golangci-lint run",
        "go mod download",
        (
            ("github.com/spf13/cobra", "v1.8.0", "v1.8.1"),
            ("github.com/google/uuid", "v1.5.0", "v1.6.0"),
            ("go.uber.org/zap", "v1.26.0", "v1.27.0"),
        ),
    ),
    "rust": _Language(
        "cargo",
        "cargo test",
        "cargo test {test_name}",
        "cargo clippy -- -D warnings",
        "cargo fetch",
        (("serde", "1.0.197", "1.0.210"), ("clap", "4.4.18", "4.5.20"), ("anyhow", "1.0.79", "1.0.89")),
    ),
}


def _manifest(language: str, name: str, pkg: str, dep: tuple[str, str, str], version: str) -> tuple[str, str]:
    """(path, text) of the language's manifest, holding `dep` at its old version."""
    dep_name, old, _ = dep
    if language == "python":
        return "pyproject.toml", (
            f'[project]\nname = "{name}"\nversion = "{version}"\nrequires-python = ">=3.11"\n'
            f'dependencies = [\n    "{dep_name}>={old}",\n]\n\n'
            '[project.optional-dependencies]\ndev = ["pytest>=8", "ruff>=0.6"]\n'
        )
    if language == "typescript":
        return "package.json", (
            f'{{\n  "name": "{name}",\n  "version": "{version}",\n  "type": "module",\n'
            '  "scripts": {\n    "test": "vitest run",\n    "lint": "eslint .",\n'
            '    "report": "tsx scripts/report.ts"\n  },\n'
            f'  "dependencies": {{\n    "{dep_name}": "{old}"\n  }},\n'
            '  "devDependencies": {\n    "typescript": "^5.5.4",\n    "vitest": "^2.1.4"\n  }\n}\n'
        )
    if language == "go":
        return "go.mod", f"module {pkg}\n\ngo 1.22\n\nrequire {dep_name} {old}\n"
    return "Cargo.toml", (
        f'[package]\nname = "{name}"\nversion = "{version}"\nedition = "2021"\n\n'
        f'[dependencies]\n{dep_name} = "{old}"\n'
    )


def _bump_edit(language: str, dep: tuple[str, str, str]) -> tuple[str, str]:
    name, old, new = dep
    if language == "python":
        return f'"{name}>={old}",', f'"{name}>={new}",'
    if language == "typescript":
        return f'"{name}": "{old}"', f'"{name}": "{new}"'
    if language == "go":
        return f"require {name} {old}", f"require {name} {new}"
    return f'{name} = "{old}"', f'{name} = "{new}"'


def _ops(language: str, name: str, pkg: str, slots: Mapping[str, str], rng: random.Random) -> tuple[str, str]:
    """A read-only command of the repository (a dry-run report) and what it prints."""
    things = rng.randrange(200, 20000)
    groups = max(2, things // max(int(slots["cap"]), 1))
    line = f"{things} {slots['things_w']} in {groups} {slots['group_w']}s (dry run, nothing written)\n"
    if language == "python":
        return f"python -m {pkg}.report --dry-run", line
    if language == "typescript":
        return (
            "npm run report -- --dry-run",
            f"\n> {name}@0.1.0 report\n> tsx scripts/report.ts --dry-run\n\n{line}",
        )
    if language == "go":
        return f"go run ./cmd/{name} -dry-run", line
    return "cargo run -q -- --dry-run", line


# --------------------------------------------------------------------------- one repository


def _line_of(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    raise ValueError(f"{needle!r} is not in the text")


def _apply(text: str, edits: list[tuple[str, str]]) -> str:
    for old, new in edits:
        if old not in text:
            raise ValueError(f"edit does not apply: {old!r}")
        text = text.replace(old, new, 1)
    return text


@dataclass(frozen=True)
class _Component:
    archetype: str
    module_path: str
    test_path: str  # == module_path for Rust
    suite: str  # the suite key: test file, Go package or Rust's src/main.rs
    slots: Mapping[str, str]
    template: _Template

    def f(self, text: str) -> str:
        return fill(text, self.slots)

    @property
    def module(self) -> str:
        return self.f(self.template.module)

    @property
    def test(self) -> str:
        return self.f(self.template.test) if self.template.test else ""

    def failure(self, fail: _Fail, module_text: str, language: str) -> Failure:
        test_text = self.test or self.module
        line = _line_of(test_text, self.f(fail.at)) if fail.at else len(test_text.splitlines()) + 4
        slots = dict(self.slots)
        slots["line"] = str(line)
        if fail.module_at:
            slots["mline"] = str(_line_of(module_text, fill(fail.module_at, slots)))
        detail = fill(fail.detail, slots)
        summary = fill(fail.summary, slots)
        test = fill(fail.test, slots)
        return Failure(self.suite, test, summary, detail, line)


def _go_module(remote: str) -> str:
    """The module path a Go repository at `remote` declares: host/owner/name."""
    path = remote.removesuffix(".git").removeprefix("https://")
    return path.split("@", 1)[-1].replace(":", "/")


def _component(
    language: str, archetype: str, domain: Domain, pkg: str, layout: int, rng: random.Random
) -> _Component:
    slots = _slots(domain)
    snake = fill(rng.choice(_MODULE_NAMES[archetype]), slots)
    slots["pkg"] = pkg
    if language == "python":
        mod = snake
        module_path = f"src/{pkg}/{mod}.py" if layout == 0 else f"{pkg}/{mod}.py"
        test_path = f"tests/test_{mod}.py"
        suite = test_path
    elif language == "typescript":
        mod = snake.replace("_", "-")
        module_path = f"src/{mod}.ts"
        test_path = f"src/{mod}.test.ts" if layout == 0 else f"test/{mod}.test.ts"
        slots["import"] = f"./{mod}" if layout == 0 else f"../src/{mod}"
        suite = test_path
    elif language == "go":
        mod = snake.replace("_", "")
        folder = "internal" if layout == 0 else "pkg"
        module_path = f"{folder}/{mod}/{mod}.go"
        test_path = f"{folder}/{mod}/{mod}_test.go"
        slots["gopkg"] = mod
        slots["modfile"] = f"{mod}.go"
        slots["testfile"] = f"{mod}_test.go"
        suite = f"{folder}/{mod}"
    else:
        mod = snake
        module_path = f"src/{mod}.rs"
        test_path = module_path
        suite = "src/main.rs"
    slots["mod"] = mod
    slots["modpath"] = module_path
    template = _TEMPLATES[(language, archetype)]
    for key, name in zip(("fn1", "fn2", "fn3"), template.names, strict=True):
        slots[key] = fill(name, slots)
    slots["path"] = module_path
    slots["test_path"] = test_path
    return _Component(archetype, module_path, test_path, suite, slots, template)


def _fix_task(c: _Component, language: str, repo: str, rng: random.Random, weight: int) -> Task:
    t = c.template
    failure = c.failure(t.bug_fail, c.module, language)
    slots = {**c.slots, "test": failure.test_name, "repo": repo}
    symptoms = [fill(s, slots) for s in _SYMPTOMS[c.archetype]]
    phrasings = rng.sample(_FIX_PHRASINGS, 4)
    instructions = tuple(
        dict.fromkeys(fill(p.format(symptom=rng.choice(symptoms)), slots) for p in phrasings)
    )
    probes = [Probe("read", c.module_path)]
    extra = rng.random()
    if extra < 0.4:
        probes.append(Probe("grep", slots["fn1"], c.module_path.split("/", 1)[0]))
    elif extra < 0.6 and c.test_path != c.module_path:
        probes.append(Probe("read", c.test_path))
    return Task(
        intent="fix_bug",
        instructions=instructions,
        probes=tuple(probes),
        edits=(Edit(c.module_path, c.f(t.bug[0]), c.f(t.bug[1])),),
        failure=failure,
        reproduce_first=rng.random() < 0.5,
        answer=fill(_FIX_ANSWERS[c.archetype], slots),
        branch=f"fix/{c.archetype}-{rng.choice(('bug', 'edge-case', 'off-by-one', 'empty-input'))}",
        weight=weight,
    )


def _feature_task(c: _Component, language: str, repo: str, rng: random.Random) -> Task:
    t = c.template
    edits = [(c.f(old), c.f(new)) for old, new in t.feature]
    failure = c.failure(t.feature_fail, _apply(c.module, edits[:1]), language)
    slots = {**c.slots, "repo": repo}
    probes = [Probe("read", c.module_path)]
    if rng.random() < 0.5:
        probes.append(Probe("grep", slots["fn1"], c.module_path.split("/", 1)[0]))
    return Task(
        intent="add_feature",
        instructions=tuple(fill(a, slots) for a in _FEATURE_ASKS[c.archetype]),
        probes=tuple(probes),
        edits=tuple(Edit(c.module_path, old, new) for old, new in edits),
        failure=failure,
        answer=fill(_FEATURE_ANSWERS[c.archetype], slots),
        branch=f"feat/{slots['fn3'].replace('_', '-').lower()}",
        weight=2,
    )


def _tests_task(c: _Component, repo: str, rng: random.Random) -> Task:
    old, new = (c.f(text) for text in c.template.new_test)
    slots = {**c.slots, "repo": repo}
    probes = [Probe("read", c.test_path)]
    if c.test_path != c.module_path and rng.random() < 0.5:
        probes.append(Probe("read", c.module_path))
    return Task(
        intent="write_tests",
        instructions=tuple(fill(a, slots) for a in _TEST_ASKS[c.archetype]),
        probes=tuple(probes),
        edits=(Edit(c.test_path, old, new),),
        answer=fill(_TEST_ANSWER, slots),
        weight=1,
    )


def _explain_task(c: _Component, repo: str, rng: random.Random) -> Task:
    slots = {**c.slots, "repo": repo}
    probes = [Probe("read", c.module_path)]
    if rng.random() < 0.5:
        probes.append(Probe("grep", slots["fn2"], c.module_path.split("/", 1)[0]))
    return Task(
        intent="explain",
        instructions=tuple(fill(a, slots) for a in _EXPLAIN_ASKS[c.archetype]),
        probes=tuple(probes),
        answer=fill(_EXPLAIN_ANSWERS[c.archetype], slots),
        weight=2,
    )


def _suite_names(c: _Component) -> tuple[str, ...]:
    return tuple(c.f(name) for name in c.template.tests)


def _go_main(name: str, pkg: str) -> str:
    return (
        'package main\n\nimport (\n\t"flag"\n\t"fmt"\n)\n\n'
        "func main() {\n"
        '\tdryRun := flag.Bool("dry-run", false, "print the report without writing it")\n'
        "\tflag.Parse()\n"
        f'\tfmt.Println("{name}: report for {pkg}", *dryRun)\n'
        "}\n"
    )


def _rust_main(name: str, mods: list[str]) -> str:
    decls = "".join(f"mod {mod};\n" for mod in mods)
    return (
        f"//! {name}: the command-line report.\n\n{decls}\n"
        "fn main() {\n"
        '    let dry_run = std::env::args().any(|a| a == "--dry-run");\n'
        '    println!("report (dry run: {dry_run})");\n'
        "}\n"
    )


def _lint_output(language: str, name: str, cwd: str, version: str) -> str:
    if language == "python":
        return "All checks passed!\n"
    if language == "typescript":
        return f"\n> {name}@{version} lint\n> eslint .\n\n"
    if language == "go":
        return "0 issues.\n"
    return (
        f"    Checking {name} v{version} ({cwd})\n"
        "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 0.84s\n"
    )


def build_repo(domain: Domain, language: str, owner: Owner, layout: int, rng: random.Random) -> Repo:
    """One generated repository: two components of `domain` in `language`, on `owner`'s machine.

    `layout` 0 or 1 picks where modules and tests go: Python `src/<pkg>/` or `<pkg>/`, TypeScript
    tests beside the module or under `test/`, Go packages under `internal/` or `pkg/`.
    """
    suffix = rng.choice(("", "", "-api", "-core", "-svc", "-tools", "-cli"))
    name = domain.name + suffix
    lang = _LANGUAGES[language]
    version = f"{rng.randint(0, 2)}.{rng.randint(1, 19)}.{rng.randint(0, 9)}"
    pkg = name.replace("-", "_")
    if language == "go":
        pkg = _go_module(owner.remote.format(name=name))
    first, second = rng.sample(ARCHETYPES, 2)
    components = [_component(language, a, domain, pkg, layout, rng) for a in (first, second)]
    dep = rng.choice(lang.deps)
    manifest, manifest_text = _manifest(language, name, pkg, dep, version)
    files: dict[str, str] = {manifest: manifest_text}
    suites: dict[str, tuple[str, ...]] = {}
    for c in components:
        files[c.module_path] = c.module
        if c.test:
            files[c.test_path] = c.test
        suites[c.suite] = suites.get(c.suite, ()) + _suite_names(c)
    if language == "go":
        files[f"cmd/{name}/main.go"] = _go_main(name, pkg)
        suites = {f"cmd/{name}": (), **dict(sorted(suites.items()))}
    if language == "rust":
        files["src/main.rs"] = _rust_main(name, [c.slots["mod"] for c in components])
    cwd = f"{owner.home}/{owner.workspace}/{name}"
    old, new = _bump_edit(language, dep)
    ops_command, ops_output = _ops(language, name, pkg, components[0].slots, rng)
    slots = {**components[0].slots, "repo": name, "manifest": manifest}
    feature_of = rng.choice(components)
    tasks = [
        _fix_task(components[0], language, name, rng, weight=3),
        _fix_task(components[1], language, name, rng, weight=2),
        _feature_task(feature_of, language, name, rng),
        _tests_task(components[1], name, rng),
        _explain_task(components[0], name, rng),
        Task(
            intent="bump_dependency",
            instructions=tuple(fill(p.format(dep=dep[0], new=dep[2]), slots) for p in _BUMP_PHRASINGS),
            probes=(Probe("read", manifest),),
            edits=(Edit(manifest, old, new),),
            answer=f"Bumped `{dep[0]}` to {dep[2]} in `{manifest}`; the tests pass.",
            branch=f"chore/bump-{dep[0].rsplit('/', 1)[-1]}",
            weight=1,
        ),
        Task(
            intent="ops",
            instructions=tuple(fill(p, slots) for p in _OPS_PHRASINGS),
            probes=(Probe("shell", ops_command, output=ops_output),),
            answer=f"The dry run reports: {ops_output.strip().splitlines()[-1]}",
            weight=1,
        ),
    ]
    return Repo(
        name=name,
        language=language,
        runner=lang.runner,
        remote=owner.remote.format(name=name),
        test_command=lang.test_command,
        focused_test=lang.focused_test,
        lint_command=lang.lint_command,
        lint_output=_lint_output(language, name, cwd, version),
        suites=tuple(suites.items()),
        files=files,
        tasks=tuple(tasks),
        weight=rng.randint(1, 3),
        install_command=lang.install_command,
        home=owner.home,
        workspace=owner.workspace,
        version=version,
        test_banner=f"\n> {name}@{version} test\n> vitest run\n\n" if language == "typescript" else "",
    )


@functools.cache
def generic_repos() -> tuple[Repo, ...]:
    """The generic profile's repositories: one per domain, languages in turn, the same every time."""
    rng = random.Random(_SEED)
    return tuple(
        build_repo(
            domain, LANGUAGES[i % len(LANGUAGES)], OWNERS[i % len(OWNERS)], i // len(LANGUAGES) % 2, rng
        )
        for i, domain in enumerate(DOMAINS)
    )
