"""Generate a deterministic corpus of realistic coding-agent sessions in four transcript formats.

Used by `make demo`, by tests, and (scaled up) by benchmarks, so the pipeline can run end to end
without anyone's private transcripts:

    python -m trajectory_pipeline.sample.corpus --out /tmp/corpus
    trajectory-pipeline sample-corpus --out /tmp/corpus --days 60 --sessions 2000 --seed 3

The layout under --out mirrors where each tool keeps its files, so a session-source config written
for real homes (~/.claude/projects, ~/.codex/sessions, ...) works unchanged:

    claude/projects/<project-slug>/<session-uuid>.jsonl                        Claude Code
    claude/projects/<project-slug>/<session-uuid>/subagents/agent-<7hex>.jsonl its sub-agents
    codex/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl        Codex CLI
    agent_logs/session_YYYY-MM-DD.jsonl                                       own agent, one file a day
    chat/chat_YYYY-MM-DD.jsonl                                                chat JSONL, a session a line

Two profiles (`CorpusSpec.profile`, `--profile`):
- `demo` (the default, what `make demo` trains and replays on): one user's five repositories
  (Python, TypeScript, Rust, Go) recur with the same kinds of task across days, each with its own
  test command and layout, and the user's routines: `git status -sb` before changing anything, the
  module's test file read after editing it, the repository's static check before every test run
  (`content` and `scenarios` module docstrings).
- `generic`: 24 generated repositories of other people (`generic.py`) with generic habits (read
  the file the task names, edit, run the language's default tests), to train a learned base on. Its
  defaults end on 2026-10-31, before the demo window, with another seed, and its random streams are
  named apart, so session ids, dates, repositories and paths are disjoint from the demo's.

    trajectory-pipeline sample-corpus --out /tmp/generic --profile generic

Sessions show inspect → edit → test loops, tests failing then passing, refused actions followed by
a different action, user interruptions, inspect-only questions, sessions that give up, sub-agents,
and planted secrets (AWS, GitHub, OpenAI, Anthropic, Slack, Stripe, a PEM key, a JWT, a bearer
header, a `password=` line, a postgres URL with a password) for redaction to find.

Decisions worth knowing:
- All times are UTC, including Codex file names (the real CLI uses local time). A session lives in
  the file of the day it started; the last session of every other day per source runs past
  midnight and stays whole there.
- The own agent is one process writing one log a day with more than 5 minutes between sessions,
  so it holds at most `OWN_AGENT_MAX_PER_DAY` sessions a day whatever --sessions says;
  `CorpusSummary.per_source` reports what was written.
- Malformed lines (a truncated JSON line, a line of invalid UTF-8, an unknown record type) go into
  every source on every seventh day, starting with the first; they are extra lines, so no real
  event is lost.
- `planted_secrets` counts distinct secret values; one value may appear more than once (Claude
  Code stores a tool's output twice, Codex echoes commands in exec_command_end).
- Same spec, same bytes: every file draws from its own `random.Random` stream seeded from the spec,
  ids come from those streams, and nothing reads the clock. Each file's mtime is its last event.
- Writing into a directory that holds a previous run (marked by `.sample-corpus.json`, which
  records the spec, profile included) replaces that run; any other non-empty directory is refused,
  so real transcripts are never overwritten.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import os
import random
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from trajectory_pipeline.parallel import map_in_processes
from trajectory_pipeline.sample.content import EXPOSURES, PHRASING, REPOS, Exposure, Phrasing, Repo, RepoIndex
from trajectory_pipeline.sample.formats import (
    SPOIL_KINDS,
    Sink,
    chat_unknown,
    claude_project_slug,
    claude_unknown,
    codex_rollout_name,
    codex_unknown,
    make_private_dirs,
    own_agent_unknown,
    uuid4,
    uuid7,
    write_chat,
    write_claude,
    write_codex,
    write_own_agent,
)
from trajectory_pipeline.sample.generic import GENERIC_EXPOSURES, GENERIC_PHRASING, generic_repos
from trajectory_pipeline.sample.scenarios import Call, Delegate, Options, Scenario, build_scenario

SOURCES = ("claude_code", "codex", "own_agent", "chat_jsonl")
MARKER = ".sample-corpus.json"
# Where each source's files live in a generated corpus: point a session-source root at each.
SOURCE_FOLDERS = {
    "claude_code": "claude/projects",
    "codex": "codex/sessions",
    "own_agent": "agent_logs",
    "chat_jsonl": "chat",
}
OUTPUT_DIRS = ("claude", "codex", "agent_logs", "chat")

OWN_AGENT_MAX_PER_DAY = 90
MALFORMED_EVERY_DAYS = 7
_DAY_START_S = 7 * 3600  # people start sessions between 07:00 and 23:00 UTC
_DAY_END_S = 23 * 3600
_OWN_AGENT_GAP_S = 330  # over the 5 minutes that separate own-agent sessions, with margin
_MIDNIGHT_MIN_S = 200  # a session that must cross midnight is at least this long

_GUARD_STYLES = {
    "claude_code": ("denied_user", "denied_user", "denied_policy"),  # permission prompt or a PreToolUse hook
    "codex": ("denied_user", "denied_policy"),  # approval prompt or the sandbox
    "own_agent": ("denied_policy",),  # its own guard
    "chat_jsonl": ("denied_user",),
}


@dataclass(frozen=True)
class Profile:
    """Whose sessions a corpus holds: the repositories, their habits, and the defaults of the spec."""

    name: str
    end_date: dt.date  # CorpusSpec's default end_date
    seed: int  # CorpusSpec's default seed
    routines: bool  # sessions follow the demo user's routines (scenarios module docstring)
    exposures: tuple[Exposure, ...]
    phrasing: Phrasing

    def repos(self) -> tuple[Repo, ...]:
        return REPOS if self.name == "demo" else generic_repos()


# demo: this user's five repositories and routines, the window the demo trains and replays on.
# generic: other people's repositories with generic habits, ending before the demo window, to
# train the learned base on (sample/generic.py).
PROFILES: dict[str, Profile] = {
    "demo": Profile("demo", dt.date(2026, 11, 22), 7, True, EXPOSURES, PHRASING),
    "generic": Profile("generic", dt.date(2026, 10, 31), 1031, False, GENERIC_EXPOSURES, GENERIC_PHRASING),
}


class _DefaultDate(dt.date):
    """CorpusSpec's default end_date: __post_init__ replaces it with the profile's."""


class _DefaultSeed(int):
    """CorpusSpec's default seed: __post_init__ replaces it with the profile's."""


_DEFAULT_END = _DefaultDate(2026, 11, 22)
_DEFAULT_SEED = _DefaultSeed(7)


@dataclass(frozen=True)
class CorpusSpec:
    """What to generate. The same spec always produces byte-identical files.

    `end_date` and `seed` default to the profile's (`PROFILES`): `CorpusSpec()` ends 2026-11-22
    with seed 7, `CorpusSpec(profile="generic")` ends 2026-10-31 with seed 1031. A value given
    explicitly is kept, whatever the profile (so `dataclasses.replace(spec, profile=...)` keeps
    the dates and seed of `spec`).
    """

    days: int = 14  # number of consecutive days, ending on end_date
    end_date: dt.date = _DEFAULT_END  # the last day (UTC) that sessions start on
    sessions_per_day: int = 6  # per source, per day (own agent: at most OWN_AGENT_MAX_PER_DAY)
    seed: int = _DEFAULT_SEED  # seeds every random stream; another seed, another corpus of the same shape
    malformed_lines: bool = True  # splice truncated, non-UTF-8 and unknown-type lines into some files
    profile: str = "demo"  # whose sessions: "demo" (this user's repositories and routines) or "generic"
    # The own agent's short tasks a day: 0 writes its sessions as above (at most OWN_AGENT_MAX_PER_DAY);
    # N writes a busy user's log instead: N one-instruction tasks back to back (see _own_agent_busy_day).
    own_agent_tasks: int = 0

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {self.profile!r}")
        defaults = PROFILES[self.profile]
        if type(self.end_date) is _DefaultDate:
            object.__setattr__(self, "end_date", defaults.end_date)
        if type(self.seed) is _DefaultSeed:
            object.__setattr__(self, "seed", defaults.seed)
        if self.days < 1:
            raise ValueError(f"days must be at least 1, got {self.days}")
        if self.sessions_per_day < 1:
            raise ValueError(f"sessions_per_day must be at least 1, got {self.sessions_per_day}")
        if self.own_agent_tasks < 0:
            raise ValueError(f"own_agent_tasks must be 0 or more, got {self.own_agent_tasks}")
        if isinstance(self.end_date, dt.datetime) or not isinstance(self.end_date, dt.date):
            raise ValueError(f"end_date must be a datetime.date, got {self.end_date!r}")

    @property
    def dates(self) -> list[dt.date]:
        return [self.end_date - dt.timedelta(days=self.days - 1 - i) for i in range(self.days)]


@dataclass(frozen=True)
class CorpusSummary:
    """What was written: for the command's summary line, and for tests that check what ingestion finds."""

    files: int  # transcript files written (sub-agent files included, the marker not)
    sessions: int
    bytes: int
    per_source: dict[str, int]  # sessions per source
    planted_secrets: int  # distinct secret values planted
    malformed_lines: int
    secret_values: frozenset[str] = frozenset()  # the planted values, so tests can prove none leaks


@dataclass
class _Tally:
    files: int = 0
    bytes: int = 0
    secrets: int = 0
    malformed: int = 0
    secret_values: set[str] = field(default_factory=set)
    per_source: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SOURCES, 0))

    def closed(self, sink: Sink) -> None:
        self.files += 1
        self.bytes += sink.bytes
        self.malformed += sink.malformed

    def session(self, source: str, scenario: Scenario, opens: bool = True) -> None:
        """A session written (or, with `opens` False, one more task of the session before it)."""
        self.per_source[source] += opens
        self.secrets += len(set(scenario.secrets))
        self.secret_values.update(scenario.secrets)

    def merge(self, other: _Tally) -> None:
        self.files += other.files
        self.bytes += other.bytes
        self.secrets += other.secrets
        self.malformed += other.malformed
        self.secret_values |= other.secret_values
        for source, sessions in other.per_source.items():
            self.per_source[source] += sessions

    def summary(self) -> CorpusSummary:
        return CorpusSummary(
            self.files,
            sum(self.per_source.values()),
            self.bytes,
            dict(self.per_source),
            self.secrets,
            self.malformed,
            frozenset(self.secret_values),
        )


class _Day:
    """One source's sessions on one day: scenario choice, start times and malformed-line placement."""

    def __init__(self, spec: CorpusSpec, source: str, day_index: int, indexes: dict[str, RepoIndex]) -> None:
        self.spec = spec
        self.profile = PROFILES[spec.profile]
        self.repos = tuple(index.repo for index in indexes.values())
        self.source = source
        self.day_index = day_index
        self.day = spec.dates[day_index]
        self.indexes = indexes
        self.midnight_ms = _epoch_ms(self.day + dt.timedelta(days=1))
        # the last session of every other day runs past midnight; sources alternate
        self.crosses = (day_index + SOURCES.index(source)) % 2 == 0
        self.spoiled = spec.malformed_lines and day_index % MALFORMED_EVERY_DAYS == 0

    def rng(self, label: str) -> random.Random:
        # the demo's streams keep their historical names; other profiles' are apart from them
        prefix = "" if self.spec.profile == "demo" else f"{self.spec.profile}:"
        return random.Random(f"{prefix}{self.spec.seed}:{self.source}:{self.day.isoformat()}:{label}")

    def scenario(self, rng: random.Random, i: int, crossing: bool) -> Scenario:
        options = Options(
            delegate=self.source == "claude_code",
            guard_styles=_GUARD_STYLES[self.source],
            plant_secret=i == 0 or rng.random() < 0.2,
            long=crossing,
            routines=self.profile.routines,
            exposures=self.profile.exposures,
            phrasing=self.profile.phrasing,
        )
        for _ in range(20):
            repo = rng.choices(self.repos, weights=[r.weight for r in self.repos])[0]
            task = rng.choices(repo.tasks, weights=[t.weight for t in repo.tasks])[0]
            scenario = build_scenario(rng, self.indexes[repo.name], task, self.day, options)
            if not crossing or scenario.duration >= _MIDNIGHT_MIN_S:
                return scenario
        return scenario

    def starts(self, n: int) -> list[int]:
        rng = self.rng("starts")
        base = _epoch_ms(self.day)
        return sorted(base + int(rng.uniform(_DAY_START_S, _DAY_END_S) * 1000) for _ in range(n))

    def crossing_start(self, rng: random.Random, scenario: Scenario) -> int:
        return self.midnight_ms - int(rng.uniform(0.3, 0.7) * scenario.duration * 1000)

    def file_sessions(self) -> Iterator[tuple[int, random.Random, Scenario, int]]:
        """(index, rng, scenario, start ms) of each session, for sources with one file per session."""
        n = self.spec.sessions_per_day
        for i, start in enumerate(self.starts(n)):
            rng = self.rng(str(i))
            crossing = self.crosses and i == n - 1
            scenario = self.scenario(rng, i, crossing)
            yield i, rng, scenario, self.crossing_start(rng, scenario) if crossing else start

    def spoils_for_file(self, i: int, n: int) -> dict[int, str]:
        """Malformed lines for the i-th of n per-session files: kind k goes to file k mod n."""
        if not self.spoiled:
            return {}
        return {3 + 2 * k: kind for k, kind in enumerate(SPOIL_KINDS) if k % n == i}

    def spoils_for_day_file(self, positions: tuple[int, ...]) -> dict[int, str]:
        return dict(zip(positions, SPOIL_KINDS, strict=True)) if self.spoiled else {}


def _epoch_ms(day: dt.date) -> int:
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()) * 1000


def _claude_day(out: Path, d: _Day, tally: _Tally) -> None:
    n = d.spec.sessions_per_day
    for i, rng, scenario, start in d.file_sessions():
        session_id = uuid4(rng)
        project = out / "claude" / "projects" / claude_project_slug(scenario.repo.cwd)
        make_private_dirs(out, project)
        sink = Sink(project / f"{session_id}.jsonl", d.spoils_for_file(i, n), claude_unknown(session_id))

        def open_subagent(agent_id: str, session_dir: Path = project / session_id) -> Sink:
            make_private_dirs(out, session_dir / "subagents")
            return Sink(session_dir / "subagents" / f"agent-{agent_id}.jsonl")

        _, subagents = write_claude(sink, scenario, start, rng, session_id, open_subagent)
        sink.close()
        for sub in (sink, *subagents):
            tally.closed(sub)
        tally.session(d.source, scenario)


def _codex_day(out: Path, d: _Day, tally: _Tally) -> None:
    n = d.spec.sessions_per_day
    for i, rng, scenario, start in d.file_sessions():
        session_id = uuid7(start, rng)
        day_dir, name = codex_rollout_name(start, session_id)
        directory = out / "codex" / "sessions" / day_dir
        make_private_dirs(out, directory)
        sink = Sink(directory / name, d.spoils_for_file(i, n), codex_unknown)
        write_codex(sink, scenario, start, rng, session_id)
        sink.close()
        tally.closed(sink)
        tally.session(d.source, scenario)


def _own_agent_log(out: Path, d: _Day) -> tuple[Sink, str]:
    """The day's own-agent log file, and the agent's role name in it: the agent was renamed halfway
    through the period, so older logs call it "timmy"."""
    directory = out / "agent_logs"
    make_private_dirs(out, directory)
    sink = Sink(
        directory / f"session_{d.day.isoformat()}.jsonl", d.spoils_for_day_file((4, 9, 14)), own_agent_unknown
    )
    return sink, "timmy" if d.day_index < d.spec.days // 2 else "assistant"


def _own_agent_day(out: Path, d: _Day, tally: _Tally) -> None:
    if d.spec.own_agent_tasks:
        _own_agent_busy_day(out, d, tally)
        return
    n = min(d.spec.sessions_per_day, OWN_AGENT_MAX_PER_DAY)
    rng = d.rng("file")
    sink, role = _own_agent_log(out, d)
    day_ms = _epoch_ms(d.day)
    slot_ms = (_DAY_END_S - _DAY_START_S) * 1000 // n
    earliest = day_ms + _DAY_START_S * 1000
    late = day_ms + (_DAY_END_S - 1800) * 1000
    for i in range(n):
        # one process cannot fit more sessions with 5-minute gaps: a late start ends the day
        last = i == n - 1 or earliest > late
        crossing = d.crosses and last
        scenario = d.scenario(rng, i, crossing)
        start = max(earliest, day_ms + _DAY_START_S * 1000 + i * slot_ms + int(rng.uniform(0, 0.5) * slot_ms))
        if crossing:
            start = max(earliest, d.crossing_start(rng, scenario))
        elif start + scenario.duration * 1000 > d.midnight_ms:
            break
        end = write_own_agent(sink, scenario, start, rng, role, confidence=rng.random() < 0.7)
        earliest = end + _OWN_AGENT_GAP_S * 1000 + int(rng.uniform(0, 600) * 1000)
        tally.session(d.source, scenario)
        if last:
            break
    sink.close()
    tally.closed(sink)


BUSY_TASKS_PER_SESSION = 20  # a busy day's tasks between two breaks of more than five minutes


def _own_agent_busy_day(out: Path, d: _Day, tally: _Tally) -> None:
    """A busy user's own-agent log (`CorpusSpec.own_agent_tasks`): that many short tasks a day, each
    the first turn of a scenario, its times squeezed into a slot of the day so they all fit. Tasks
    follow each other within seconds, so BUSY_TASKS_PER_SESSION of them share a session; a break
    of more than five minutes then starts the next. Logs like these (~1,800 tasks a day, tool
    results up to 2 KB) are what the backfill benchmark measures a user's run on."""
    n = d.spec.own_agent_tasks
    rng = d.rng("busy")
    sink, role = _own_agent_log(out, d)
    day_ms = _epoch_ms(d.day)
    breaks = (n - 1) // BUSY_TASKS_PER_SESSION
    # 00:10 to 23:50, less the breaks, shared evenly; a task takes at most 0.8 of its slot
    slot_s = max(1.0, (86_400 - 1_200 - breaks * _OWN_AGENT_GAP_S) / n)
    start = day_ms + 600 * 1000
    for i in range(n):
        scenario = d.scenario(rng, i, crossing=False)
        short = dataclasses.replace(scenario, turns=scenario.turns[:1])
        scenario = _squeezed(short, 0.8 * slot_s / max(short.duration, 1e-3))
        end = write_own_agent(sink, scenario, start, rng, role, confidence=rng.random() < 0.7)
        pause_s = (
            _OWN_AGENT_GAP_S
            if (i + 1) % BUSY_TASKS_PER_SESSION == 0
            else rng.uniform(1, min(60.0, 0.2 * slot_s))
        )
        start = end + int(pause_s * 1000) + 1000
        tally.session(d.source, scenario, opens=i % BUSY_TASKS_PER_SESSION == 0)
    sink.close()
    tally.closed(sink)


def _squeezed(scenario: Scenario, factor: float) -> Scenario:
    """`scenario` with every delay and latency times `factor` (when below 1): the same events, faster."""
    if factor >= 1:
        return scenario

    def step(s: Call | Delegate) -> Call | Delegate:
        if isinstance(s, Delegate):
            calls = tuple(
                dataclasses.replace(c, latency=c.latency * factor, duration=c.duration * factor)
                for c in s.calls
            )
            return dataclasses.replace(s, calls=calls, latency=s.latency * factor)
        return dataclasses.replace(s, latency=s.latency * factor, duration=s.duration * factor)

    turns = tuple(
        dataclasses.replace(
            t,
            delay=t.delay * factor,
            closing_latency=t.closing_latency * factor,
            steps=tuple(step(s) for s in t.steps),
        )
        for t in scenario.turns
    )
    return dataclasses.replace(scenario, turns=turns)


def _chat_day(out: Path, d: _Day, tally: _Tally) -> None:
    rng = d.rng("file")
    directory = out / "chat"
    make_private_dirs(out, directory)
    sink = Sink(directory / f"chat_{d.day.isoformat()}.jsonl", d.spoils_for_day_file((1, 2, 3)), chat_unknown)
    for i, start in enumerate(d.starts(d.spec.sessions_per_day)):
        scenario = d.scenario(rng, i, crossing=False)
        write_chat(sink, scenario, start, rng)
        tally.session(d.source, scenario)
    sink.close()
    tally.closed(sink)


_DAY_WRITERS: dict[str, Callable[[Path, _Day, _Tally], None]] = {
    "claude_code": _claude_day,
    "codex": _codex_day,
    "own_agent": _own_agent_day,
    "chat_jsonl": _chat_day,
}


def _prepare(out_dir: Path, spec: CorpusSpec) -> None:
    """Make `out_dir` ready: create it, or clear a previous run; refuse anything else."""
    if out_dir.exists():
        if not out_dir.is_dir():
            raise FileExistsError(f"--out must be a directory, but {out_dir} is a file")
        if any(out_dir.iterdir()) and not (out_dir / MARKER).is_file():
            raise FileExistsError(
                f"{out_dir} is not empty and holds no {MARKER} from an earlier run; expected an empty or new "
                "directory (refusing to mix generated sessions with other files)"
            )
        for name in OUTPUT_DIRS:
            shutil.rmtree(out_dir / name, ignore_errors=True)
    else:
        out_dir.mkdir(parents=True, mode=0o700)
        os.chmod(out_dir, 0o700)
    spec_json = {k: str(v) if isinstance(v, dt.date) else v for k, v in dataclasses.asdict(spec).items()}
    marker = orjson.dumps(
        {"generator": "trajectory_pipeline.sample.corpus", "spec": spec_json},
        option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS,
    )
    fd = os.open(out_dir / MARKER, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(marker + b"\n")


def generate_corpus(out_dir: Path, spec: CorpusSpec = CorpusSpec(), workers: int = 1) -> CorpusSummary:
    """Write the corpus described by `spec` under `out_dir` and say what was written.

    Each source's files come from random streams of their own, in folders of their own, so
    `workers` processes can write the sources side by side (benchmarks generate gigabytes)
    and the files are byte for byte the same.
    """
    out_dir = Path(out_dir)
    _prepare(out_dir, spec)
    tally = _Tally()
    for part in map_in_processes(_write_source, [(out_dir, spec, source) for source in SOURCES], workers):
        tally.merge(part)
    return tally.summary()


def _write_source(task: tuple[Path, CorpusSpec, str]) -> _Tally:
    """Every day of one source, in day order (a day may add to a file an earlier day began)."""
    out_dir, spec, source = task
    indexes = {repo.name: RepoIndex.of(repo) for repo in PROFILES[spec.profile].repos()}
    tally = _Tally()
    for day_index in range(spec.days):
        _DAY_WRITERS[source](out_dir, _Day(spec, source, day_index, indexes), tally)
    return tally


# --------------------------------------------------------------------------- command line


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date as YYYY-MM-DD, got {text!r}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `trajectory-pipeline sample-corpus` and of `python -m ...sample_corpus`."""
    default = CorpusSpec()
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help=f"directory to write into; must be new, empty, or a previous run (has {MARKER})",
    )
    parser.add_argument(
        "--days",
        type=int,
        default=default.days,
        help=f"number of days, ending on --end-date (default {default.days})",
    )
    parser.add_argument(
        "--end-date",
        type=_date,
        default=None,
        help=f"last day, YYYY-MM-DD, UTC (default {default.end_date}; generic profile "
        f"{PROFILES['generic'].end_date})",
    )
    parser.add_argument(
        "--sessions",
        type=int,
        default=default.sessions_per_day,
        help=f"sessions per source per day (default {default.sessions_per_day}; "
        f"own agent capped at {OWN_AGENT_MAX_PER_DAY})",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help=f"random seed; same seed, same bytes (default {default.seed}; generic profile "
        f"{PROFILES['generic'].seed})",
    )
    parser.add_argument(
        "--profile",
        choices=tuple(PROFILES),
        default=default.profile,
        help="whose sessions: demo (this user's repositories and routines, the demo's window) or "
        "generic (other people's repositories with generic habits, to train a learned base on; "
        f"default {default.profile})",
    )
    parser.add_argument(
        "--no-malformed", action="store_true", help="leave out the malformed lines that exercise quarantine"
    )


def run(args: argparse.Namespace) -> int:
    """Generate the corpus the parsed arguments describe and print a one-paragraph summary."""
    started = time.perf_counter()
    try:
        given = {"end_date": args.end_date, "seed": args.seed}
        spec = CorpusSpec(
            days=args.days,
            sessions_per_day=args.sessions,
            malformed_lines=not args.no_malformed,
            profile=getattr(args, "profile", "demo"),
            **{key: value for key, value in given.items() if value is not None},
        )
        summary = generate_corpus(args.out, spec)
    except (ValueError, OSError) as error:  # OSError: --out under a file, or not writable
        print(f"sample-corpus: error: {error}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - started
    per_source = ", ".join(f"{name} {count}" for name, count in summary.per_source.items())
    megabytes = summary.bytes / 1e6
    days = f"{spec.days} day{'s' if spec.days != 1 else ''} ending {spec.end_date}"
    print(
        f"Wrote {summary.sessions} sessions ({per_source}) in {summary.files} files, {megabytes:.1f} MB, "
        f"to {args.out}: {spec.profile} profile, {days}, seed {spec.seed}. "
        f"Planted {summary.planted_secrets} secrets and "
        f"{summary.malformed_lines} malformed lines for redaction and quarantine to find. "
        f"Took {seconds:.1f} s ({megabytes / max(seconds, 1e-9):.0f} MB/s)."
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trajectory_pipeline.sample.corpus", description=(__doc__ or "").split("\n\n", 1)[0]
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
