"""What happens in one generated session, independent of any transcript format.

A `Scenario` is a list of turns; each turn is a user instruction followed by tool calls in a
neutral vocabulary (read, grep, glob, list, edit, write, shell) with their results and timings,
and a closing message. `sample_corpus_formats` renders the same scenario as Claude Code, Codex,
own-agent or chat lines, so every format carries the same behaviours: inspect → edit → test
loops, tests failing then passing, refused actions followed by a different action, user
interruptions, sessions that give up, and steps that expose secrets.

Generic sessions (anyone's) read what the task points at, edit, and run the repository's tests.
With `Options.routines` a session follows the demo user's routines instead (the demo profile;
`content` describes them and the repositories' side of them: `Repo.check_command`, `Repo.test_of`):

1. Look first: a session that will change code starts with `git status -sb`, before reading
   or reproducing anything.
2. Read the test before running it: after editing a module, the next verification is preceded
   by a read of that module's test file (`Repo.test_of`), once per session.
3. Check, then test: every test run that follows an edit is preceded by the repository's static
   check (`uv run mypy src`, `pnpm tsc --noEmit`, clippy, `go vet ./...`, `make lint`); when the
   check fails (`Failure.check_output`) the user fixes the code before running any test.

So every edit is followed, in this order, by [read its test] → check → tests, and the last
verification always follows the last edit.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import fnmatch
import random
from dataclasses import dataclass

from trajectory_pipeline.sample.content import (
    EXPOSURES,
    GUARDS,
    PHRASING,
    SAY_BEFORE,
    THINK,
    Edit,
    Exposure,
    Failure,
    Guard,
    Phrasing,
    Probe,
    Repo,
    RepoIndex,
    Task,
    make_secret,
    suite_report,
)

# Test runs take longer in compiled languages; seconds (low, high).
_TEST_SECONDS = {
    "pytest": (0.8, 5.0),
    "vitest": (2.0, 9.0),
    "cargo": (4.0, 40.0),
    "nextest": (3.0, 30.0),
    "go": (1.5, 12.0),
    "make": (1.0, 6.0),
}


@dataclass(frozen=True, slots=True)
class Action:
    """One tool call in the neutral vocabulary. Paths are relative to the repository root."""

    kind: str  # read | list | glob | grep | edit | write | shell
    path: str = ""
    pattern: str = ""
    command: str = ""
    old: str = ""
    new: str = ""
    before: str = ""  # edit/write: the file's content before the change ("" for a new file)
    purpose: str = ""  # shell: test | check | lint | commit | guard | secret | probe


@dataclass(frozen=True, slots=True)
class Result:
    output: str
    status: str = "ok"  # ok | failed | missing | denied_user | denied_policy
    exit_code: int | None = None  # shell only
    names: tuple[str, ...] = ()  # glob/list: the matched names; grep: the files with hits


@dataclass(frozen=True, slots=True)
class Call:
    action: Action
    result: Result
    say: str  # what the agent says before the call ("" for nothing)
    think: str  # private reasoning before the call ("" for none)
    latency: float  # model seconds before the call
    duration: float  # tool seconds


@dataclass(frozen=True, slots=True)
class Delegate:
    """Work handed to a sub-agent (Claude Code's Task tool); other formats inline the calls."""

    description: str
    prompt: str
    calls: tuple[Call, ...]
    summary: str
    latency: float

    @property
    def duration(self) -> float:
        return sum(c.latency + c.duration for c in self.calls) + 3.0


Step = Call | Delegate


@dataclass(frozen=True, slots=True)
class Turn:
    instruction: str
    delay: float  # seconds the user took before sending it (0 for the first turn)
    steps: tuple[Step, ...]
    final: str  # the agent's closing message
    end: str  # done | failed | interrupted | rejected
    closing_latency: float


@dataclass(frozen=True, slots=True)
class Scenario:
    repo: Repo
    task: Task
    branch: str
    turns: tuple[Turn, ...]
    secrets: tuple[str, ...]  # every secret value planted in this session
    outcome: str  # success | failure | inspect

    @property
    def duration(self) -> float:
        """Seconds from the first instruction to the last closing message."""
        total = 0.0
        for turn in self.turns:
            total += turn.delay + turn.closing_latency
            total += sum(step.latency + step.duration for step in turn.steps)
        return total


@dataclass(frozen=True)
class Options:
    """Which behaviours a source can show; set per format by the caller."""

    delegate: bool = False  # Claude Code sub-agents
    guard_styles: tuple[str, ...] = ("denied_user",)  # how refusals happen in this tool
    plant_secret: bool = False
    long: bool = False  # force a follow-up turn (sessions that must run past midnight)
    routines: bool = False  # the demo user's routines (see the module docstring)
    exposures: tuple[Exposure, ...] = EXPOSURES  # the secret-showing steps this profile's sessions take
    phrasing: Phrasing = PHRASING  # what this profile's person types mid-session


def _pick_say(rng: random.Random, key: str, **slots: str) -> str:
    return rng.choice(SAY_BEFORE[key]).format(**slots)


class _Builder:
    """Accumulates calls while tracking the working copy, so reads see earlier edits."""

    def __init__(
        self, rng: random.Random, index: RepoIndex, task: Task, day: dt.date, options: Options = Options()
    ) -> None:
        self.rng = rng
        self.index = index
        self.repo = index.repo
        self.task = task
        self.options = options
        self.files = dict(self.repo.files)
        self.read_paths: set[str] = set()
        self.edited: list[str] = []  # paths edited since the last verification
        self.secrets: list[str] = []
        self.slots = {"yesterday": (day - dt.timedelta(days=1)).isoformat()}

    def _call(
        self,
        action: Action,
        result: Result,
        say: str = "",
        think: str = "",
        duration: tuple[float, float] = (0.03, 0.4),
    ) -> Call:
        rng = self.rng
        latency = rng.uniform(1.5, 9.0) + (rng.uniform(2.0, 8.0) if think else 0.0)
        return Call(action, result, say, think, round(latency, 3), round(rng.uniform(*duration), 3))

    def read(self, path: str, say: bool = True, key: str = "read") -> Call:
        self.read_paths.add(path)
        text = self.files.get(path)
        if text is None:
            return self._call(Action("read", path=path), Result("File does not exist.", status="missing"))
        narration = _pick_say(self.rng, key, path=path) if say else ""
        return self._call(Action("read", path=path), Result(text), narration)

    def opener(self, branch: str) -> Call:
        """Routine 1: `git status -sb` before anything else."""
        head = "## main...origin/main" if branch == "main" else f"## {branch}"
        return self.shell("git status -sb", head + "\n", say=self.rng.choice(SAY_BEFORE["status"]))

    def verify(self, failure: Failure | None, say_key: str = "test", think: str = "") -> list[Call]:
        """The test run, preceded by routines 2 and 3 when something was edited since the last one.

        Ends with the check instead when the check catches `failure` (the user fixes that first).
        """
        calls: list[Call] = []
        if self.options.routines and self.edited:
            for path in dict.fromkeys(self.edited):
                test = self.repo.test_of.get(path)
                if test and test not in self.read_paths:
                    calls.append(self.read(test, key="read_test"))
            if self.repo.check_command:
                caught = failure.check_output if failure is not None else ""
                calls.append(
                    self.shell(
                        self.repo.check_command,
                        caught or self.repo.check_output,
                        exit_code=1 if caught else 0,
                        purpose="check",
                        say=self.rng.choice(SAY_BEFORE["check"]),
                        seconds=(1.0, 8.0),
                    )
                )
                if caught:
                    self.edited.clear()
                    return calls
        self.edited.clear()
        calls.append(self.tests(failure, say_key, think))
        return calls

    def probe(self, probe: Probe) -> Call:
        rng = self.rng
        if probe.kind == "read":
            return self.read(probe.arg)
        if probe.kind == "grep":
            hits = self.index.grep(probe.arg, probe.path)
            output = "".join(f"{path}:{number}:{line}\n" for path, number, line in hits)
            names = tuple(dict.fromkeys(path for path, _, _ in hits))
            return self._call(
                Action("grep", path=probe.path, pattern=probe.arg),
                Result(output, names=names),
                _pick_say(rng, "grep", pattern=probe.arg.replace("\\", "")),
                duration=(0.1, 0.9),
            )
        if probe.kind == "glob":
            candidates = sorted(set(self.repo.files) | {f for f, _ in self.repo.suites if "." in f})
            loose = probe.arg.replace("**/", "")
            names = tuple(p for p in candidates if fnmatch.fnmatch(p, probe.arg) or fnmatch.fnmatch(p, loose))
            return self._call(
                Action("glob", pattern=probe.arg),
                Result("\n".join(names), names=names),
                _pick_say(rng, "glob"),
                duration=(0.05, 0.5),
            )
        if probe.kind == "list":
            names = tuple(self.index.listing(probe.arg))
            return self._call(
                Action("list", path=probe.arg), Result("\n".join(names), names=names), _pick_say(rng, "list")
            )
        return self.shell(self.fill(probe.arg), self.fill(probe.output), purpose="probe")

    def fill(self, text: str) -> str:
        """Put the day's values into a table entry's `{slot}`s; other braces (code, JSON) stay as they are."""
        for name, value in self.slots.items():
            text = text.replace("{" + name + "}", value)
        return text

    def shell(
        self,
        command: str,
        output: str,
        exit_code: int = 0,
        purpose: str = "probe",
        say: str = "",
        think: str = "",
        seconds: tuple[float, float] = (0.2, 3.0),
    ) -> Call:
        status = "ok" if exit_code == 0 else "failed"
        return self._call(
            Action("shell", command=command, purpose=purpose),
            Result(output, status, exit_code),
            say,
            think,
            seconds,
        )

    def tests(self, failure: Failure | None, say_key: str = "test", think: str = "") -> Call:
        rng = self.rng
        repo = self.repo
        low, high = _TEST_SECONDS[repo.runner]
        seconds = round(rng.uniform(low, high), 2)
        focused = failure is not None and rng.random() < 0.4
        if focused and failure is not None:
            command = repo.focused_test.format(test_file=failure.test_file, test_name=failure.test_name)
        else:
            command = repo.test_command
        if focused and failure is not None:
            # a focused run reports only the one test; `make test` wraps plain pytest
            repo = dataclasses.replace(
                repo,
                suites=((failure.test_file, (failure.test_name,)),),
                runner="pytest" if repo.runner == "make" else repo.runner,
                test_banner="",
            )
        output, code = suite_report(repo, failure, seconds * 0.9)
        return self._call(
            Action("shell", command=command, purpose="test"),
            Result(output, "ok" if code == 0 else "failed", code),
            rng.choice(SAY_BEFORE[say_key]),
            think,
            (seconds, seconds + 0.4),
        )

    def edit(self, edit: Edit, think: str = "") -> list[Call]:
        calls = []
        if edit.path not in self.read_paths and edit.old:
            calls.append(self.read(edit.path, say=False))
        before = self.files.get(edit.path, "")
        if edit.old:
            after = before.replace(edit.old, edit.new, 1)
            action = Action("edit", path=edit.path, old=edit.old, new=edit.new, before=before)
        else:
            after = edit.new
            action = Action("write", path=edit.path, new=edit.new, before=before)
        self.files[edit.path] = after
        self.edited.append(edit.path)
        say = _pick_say(self.rng, "edit" if edit.old else "write", path=edit.path)
        calls.append(self._call(action, Result("ok"), say, think, (0.05, 0.3)))
        return calls

    def exposure(self) -> Call:
        rng = self.rng
        exposure = rng.choice(self.options.exposures)
        values = {name: make_secret(name, rng) for name in exposure.secrets}
        self.secrets.extend(values.values())
        output = exposure.output.format(**values)
        if exposure.kind == "read":
            self.files[exposure.arg] = output
            return self.read(exposure.arg)
        return self.shell(exposure.arg.format(**values), output, purpose="secret")

    def guard(self, guard: Guard, style: str) -> tuple[Call, Call]:
        slots = {"install": self.repo.install_command, "path": self.touched_path()}
        refused = self.shell(guard.command.format(**slots), guard.policy_error, exit_code=1, purpose="guard")
        refused = Call(
            refused.action,
            Result(guard.policy_error, style, 1),
            refused.say,
            "",
            refused.latency,
            0.05 if style == "denied_policy" else refused.duration,
        )
        instead = self.shell(
            guard.instead.format(**slots),
            guard.instead_output.format(**slots),
            think=self.rng.choice(THINK["after_denial"]),
        )
        return refused, instead

    def touched_path(self) -> str:
        for edit in self.task.edits:
            return edit.path
        return next(iter(self.repo.files))


def _follow_up(b: _Builder, branch: str) -> tuple[str, Call, str]:
    rng = b.rng
    instruction, kind, closing = rng.choice(b.options.phrasing.follow_ups)
    if kind == "lint":
        call = b.shell(b.repo.lint_command, b.repo.lint_output, purpose="lint", seconds=(0.5, 6.0))
        return instruction, call, closing
    sha = f"{rng.getrandbits(28):07x}"
    changed = sorted({e.path for e in b.task.edits})
    prefix, _, topic = branch.partition("/")
    message = f"{prefix}: {topic.replace('-', ' ')}" if topic else f"chore: {b.task.intent.replace('_', ' ')}"
    plus, minus = rng.randint(2, 30), rng.randint(0, 12)
    files = f"{len(changed)} file{'s' if len(changed) != 1 else ''}"
    stat = f"{files} changed, {plus} insertions(+), {minus} deletions(-)"
    output = f"[{branch} {sha}] {message}\n {stat}\n"
    command = f'git add {" ".join(changed)} && git commit -m "{message}"'
    return (
        instruction,
        b.shell(command, output, purpose="commit"),
        closing.format(sha=sha, branch=branch, stat=stat),
    )


def _give_up_message(task: Task) -> str:
    name = task.failure.test_name if task.failure is not None else "the tests"
    if task.reproduce_first:
        return (
            f"I couldn't find why `{name}` fails. The code I read looks right, so the cause is probably "
            "in a fixture or shared state. I haven't changed anything; want me to keep digging?"
        )
    return (
        f"I wasn't able to get `{name}` passing. The failure persists after my change, so the cause is "
        "probably elsewhere (a fixture or shared state). I've left the partial change in place; "
        "want me to keep digging or revert it?"
    )


def build_scenario(
    rng: random.Random, index: RepoIndex, task: Task, day: dt.date, options: Options
) -> Scenario:
    """Plan one session: the task's calls, then optional refusals, interruptions and a follow-up."""
    b = _Builder(rng, index, task, day, options)
    repo = index.repo
    branch = task.branch if rng.random() < 0.6 else "main"
    instruction = b.fill(rng.choice(task.instructions))
    think_start = rng.choice(THINK["start"]).format(instruction=instruction.rstrip("."), repo=repo.name)
    gives_up = bool(task.edits) and task.failure is not None and rng.random() < 0.15
    outcome = "inspect" if not task.edits else ("failure" if gives_up else "success")

    steps: list[Step] = []
    if options.routines and task.edits:
        steps.append(b.opener(branch))
    if task.reproduce_first and task.failure is not None:
        steps.append(b.tests(task.failure, "test_fail_first", think_start))
    if rng.random() < 0.08 and task.probes and task.probes[0].kind == "read":
        wrong = task.probes[0].arg.split("/")[-1]  # a guess at the path, before looking
        steps.append(b.read(wrong))
    probe_calls = [b.probe(p) for p in task.probes]
    if options.delegate and len(probe_calls) >= 2 and rng.random() < 0.35:
        paths = ", ".join(f"`{c.action.path or c.action.pattern}`" for c in probe_calls)
        summary = f"Relevant code for this task in {repo.name}: {paths}. " + (
            task.answer.split(". ")[0] + "." if task.answer else ""
        )
        steps.append(
            Delegate(
                f"Explore {repo.name} for the task",
                f"In {repo.cwd}, find the code involved in: {instruction}\n"
                "Report the file paths and the functions that matter. Do not edit files.",
                tuple(probe_calls),
                summary,
                round(rng.uniform(2.0, 6.0), 3),
            )
        )
        b.read_paths.clear()  # the sub-agent's reads don't count: the main agent reads before editing
    else:
        steps.extend(probe_calls)
    if not steps:
        steps.append(b.read(next(iter(repo.files))))
    elif not task.reproduce_first and isinstance(steps[0], Call):
        steps[0] = Call(
            steps[0].action,
            steps[0].result,
            steps[0].say,
            think_start,
            steps[0].latency + 4.0,
            steps[0].duration,
        )
    if options.plant_secret:
        steps.insert(rng.randint(1, len(steps)), b.exposure())

    edits = list(task.edits)
    failure = task.failure
    if gives_up:
        if not task.reproduce_first:
            for edit in edits[:-1]:
                steps.extend(b.edit(edit))
            steps.extend(b.verify(failure))
        steps.append(b.read(edits[-1].path, say=False))
        steps.extend(b.verify(failure))
    elif edits and failure is not None and not task.reproduce_first:
        for edit in edits[:-1]:
            steps.extend(b.edit(edit))
        checked = b.verify(failure)
        steps.extend(checked)
        if checked[-1].action.purpose == "check":
            last_line = checked[-1].result.output.strip().splitlines()[-1]
            think = rng.choice(THINK["after_check"]).format(summary=last_line)
        else:
            think = rng.choice(THINK["after_fail"]).format(summary=failure.summary)
        steps.extend(b.edit(edits[-1], think))
        steps.extend(b.verify(None))
    elif edits:
        for edit in edits:
            steps.extend(b.edit(edit))
        steps.extend(b.verify(None))

    final = _give_up_message(task) if gives_up else task.answer
    turns = _split(rng, b, instruction, steps, final, "failed" if gives_up else "done", options)
    if outcome == "success" and (options.long or rng.random() < 0.3):
        follow, call, closing = _follow_up(b, branch)
        turns.append(
            Turn(
                follow,
                round(rng.uniform(20.0, 200.0), 3),
                (call,),
                closing,
                "done",
                round(rng.uniform(2.0, 6.0), 3),
            )
        )
    return Scenario(repo, task, branch, tuple(turns), tuple(b.secrets), outcome)


def _split(
    rng: random.Random,
    b: _Builder,
    instruction: str,
    steps: list[Step],
    final: str,
    end: str,
    options: Options,
) -> list[Turn]:
    """Cut the planned steps into turns where a person refused an action or interrupted."""

    def closing() -> float:
        return round(rng.uniform(2.0, 8.0), 3)

    def pause() -> float:
        return round(rng.uniform(15.0, 180.0), 3)

    roll = rng.random()
    cut = rng.randint(1, len(steps)) if len(steps) >= 2 else 0
    if cut and roll < 0.16:
        style = rng.choice(options.guard_styles)
        guards = [
            g
            for g in GUARDS
            if (b.repo.install_command or "{install}" not in g.command)
            and ((end == "done" and bool(b.task.edits)) or not g.after_edits)
        ]
        guard = rng.choice(guards)
        if guard.after_edits:
            cut = len(steps)
        refused, instead = b.guard(guard, style)
        if style == "denied_user":
            first = Turn(
                instruction,
                0.0,
                (*steps[:cut], refused),
                "Understood, I won't run that.",
                "rejected",
                closing(),
            )
            return [
                first,
                Turn(
                    b.options.phrasing.reply(guard), pause(), (instead, *steps[cut:]), final, end, closing()
                ),
            ]
        steps = [*steps[:cut], refused, instead, *steps[cut:]]
    elif cut and cut < len(steps) and roll < 0.28:
        path = b.touched_path()
        correction = rng.choice(b.options.phrasing.interruptions).format(path=path)
        return [
            Turn(instruction, 0.0, tuple(steps[:cut]), "", "interrupted", closing()),
            Turn(correction, pause(), tuple(steps[cut:]), final, end, closing()),
        ]
    return [Turn(instruction, 0.0, tuple(steps), final, end, closing())]
