"""aider's markdown chat log splits into sessions, turns and SEARCH/REPLACE edit calls.

Why this exists: `.aider.chat.history.md` is plain markdown appended by every aider
run, so sessions, user input, aider's own output and the model's edits are told
apart only by line prefixes. These tests pin the counts of the real published log
(counted independently with grep) and the edge cases of the markup: edit blocks
with and without file names, failed edits, quotes inside code, bad lines, aider's
multi-line reports with blank lines, every banner form, the whole edit format.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from trajectory_pipeline.ingest.formats import FORMATS, detect_source
from trajectory_pipeline.ingest.parsers import aider
from trajectory_pipeline.ingest.parsers.lines import file_mtime_us, read_head
from trajectory_pipeline.mining.vocabulary import canonicalize
from trajectory_pipeline.schema import INVALID_UTF8, OVERSIZE_LINE, BadLine, Event, parse_ts

REAL = "aider/health-analyzer-poc/.aider.chat.history.md"


def _split(items: list[Event | BadLine]) -> tuple[list[Event], list[BadLine]]:
    return [i for i in items if isinstance(i, Event)], [i for i in items if isinstance(i, BadLine)]


def _write(tmp_path: Path, text: str | bytes, folder: str = "myrepo") -> Path:
    path = tmp_path / folder / ".aider.chat.history.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _parse(path: Path, **kwargs: int) -> list[Event]:
    events, bad = _split(list(aider.parse(path, **kwargs)))
    assert bad == []
    return events


def _args(call: Event) -> dict[str, Any]:
    assert call.tool_input is not None
    return dict(json.loads(call.tool_input))


def _text(e: Event) -> str:
    assert e.text is not None
    return e.text


SESSION = """
# aider chat started at 2025-10-01 09:30:00

> Aider v0.86.0
> Main model: anthropic/claude-sonnet-4 with diff edit format

#### fix the greeting⏎
#### and the farewell⏎

I'll fix both.

src/app.py
```python
<<<<<<< SEARCH
print("helo")
=======
print("hello")
>>>>>>> REPLACE
```

```python
<<<<<<< SEARCH
print("bye")
=======
print("goodbye")
>>>>>>> REPLACE
```

Run it with:
```bash
> python src/app.py
```

> Tokens: 1.2k sent, 80 received.
> Applied edit to src/app.py
> Commit abc1234 fix: greeting
> python src/app.py
python -m pytest
> Run shell commands? (Y)es/(N)o [Yes]: n

#### /run pytest⏎
""".replace("⏎", "  ")  # aider ends user and output lines with a markdown line break


def test_real_log_facts(real_corpus: Path) -> None:
    events = _parse(real_corpus / REAL)
    sessions = Counter(e.session_id for e in events)
    assert len(sessions) == 2
    starts = sorted({e.session_start or 0 for e in events})
    assert starts == [parse_ts("2025-09-22T12:04:00Z"), parse_ts("2025-09-22T14:55:00Z")]
    kinds = Counter((e.role, e.kind) for e in events)
    assert kinds[("user", "message")] == 11
    assert kinds[("assistant", "tool_call")] == 8
    assert kinds[("tool", "tool_result")] == 8
    calls = [e for e in events if e.kind == "tool_call"]
    results = [e for e in events if e.kind == "tool_result"]
    assert {e.tool_call_id for e in results} == {e.tool_call_id for e in calls}
    assert [e.is_error for e in results] == [False] * 8
    assert Counter(_args(e)["file_path"] for e in calls) == {
        "metrics_check.sh": 7,
        "metrics_check.py": 1,
    }
    meta = [_text(e) for e in events if e.kind == "meta"]
    assert sum(text.startswith("aider chat started at") for text in meta) == 2
    assert sum("Tokens:" in text for text in meta) == 5
    assert sum(e.interrupted for e in events) == 2  # two "^C again to exit"
    assert [e.seq for e in events] == list(range(len(events)))
    assert {e.repo for e in events} == {"health-analyzer-poc"}
    assert all(e.session_id.startswith("aider-") and len(e.session_id) == 18 for e in events)


def test_real_log_tracks_the_model_switch(real_corpus: Path) -> None:
    events = _parse(real_corpus / REAL)
    models = [e.model for e in events if e.kind == "tool_call"]
    assert models == ["openrouter/deepseek/deepseek-chat-v3.1"] * 7 + ["openrouter/qwen/qwen3-coder"]


def test_real_log_keeps_slash_commands_and_multiline_input(real_corpus: Path) -> None:
    users = [_text(e) for e in _parse(real_corpus / REAL) if e.role == "user"]
    assert users[:3] == ["/ask", "/model openrouter/deepseek/deepseek-chat-v3.1", "/multiline-mode"]
    # lines 31-42: twelve input lines, the first one blank
    assert users[3].startswith("    The source code is located") and users[3].count("\n") == 10
    assert users[4].startswith("/code\nPlease write a .sh file")


def test_real_log_cut_off_reply_stays_prose(real_corpus: Path) -> None:
    """The reply at line 303 was interrupted mid-block (`<<<<<<< SE`): no edit call comes of it."""
    events = _parse(real_corpus / REAL)
    [cut] = [e for e in events if e.line_no == 303]
    assert cut.kind == "message" and _text(cut).endswith("<<<<<<< SE")


def test_real_log_sniffs_as_aider_only(real_corpus: Path) -> None:
    path = real_corpus / REAL
    head = read_head(path)
    assert [source for source, spec in FORMATS.items() if spec.sniff(path, head)] == ["aider"]
    assert detect_source(path) == "aider"
    assert aider.earliest_start(path) == parse_ts("2025-09-22T12:04:00Z")


def test_other_sources_real_files_do_not_sniff_as_aider(real_corpus: Path) -> None:
    others = [p for p in real_corpus.rglob("*") if p.is_file() and "aider" not in p.parts]
    assert len(others) > 20
    assert [p for p in others if aider.sniff(p, read_head(p))] == []


def test_session_turns_edits_and_their_results(tmp_path: Path) -> None:
    events = _parse(_write(tmp_path, SESSION))
    assert [(e.role, e.kind) for e in events] == [
        ("system", "meta"),  # header
        ("system", "meta"),  # banner
        ("user", "message"),
        ("assistant", "message"),
        ("assistant", "tool_call"),
        ("assistant", "tool_call"),
        ("assistant", "message"),
        ("system", "meta"),  # tokens
        ("tool", "tool_result"),
        ("tool", "tool_result"),
        ("system", "meta"),  # commit, shell suggestion with its unquoted continuation
        ("user", "message"),
    ]
    header, _, user, _, first, second, prose, _, done, done_too, commit, run = events
    assert header.ts == header.session_start == parse_ts("2025-10-01T09:30:00Z")
    assert user.text == "fix the greeting\nand the farewell"
    assert _args(first) == {
        "file_path": "src/app.py",
        "old_string": 'print("helo")',
        "new_string": 'print("hello")',
    }
    assert _args(second)["file_path"] == "src/app.py"  # no name: the previous block's file
    assert first.model == "anthropic/claude-sonnet-4"
    assert prose.text == "Run it with:\n```bash\n> python src/app.py\n```"  # a quote inside code is prose
    assert (done.tool_call_id, done_too.tool_call_id) == (first.tool_call_id, second.tool_call_id)
    assert done.text == "Applied edit to src/app.py" and done.is_error is False
    assert _text(commit).endswith(
        "python src/app.py\npython -m pytest\nRun shell commands? (Y)es/(N)o [Yes]: n"
    )
    assert run.text == "/run pytest"
    assert {e.cwd for e in events} == {str(tmp_path / "myrepo")}
    assert {e.repo for e in events} == {"myrepo"}


def test_failed_edit_is_an_error_result(tmp_path: Path) -> None:
    """Every line of the report quoted, as hand-written logs have it. aider's own layout, only
    the first line quoted: test_failed_edit_report_in_aiders_layout_is_one_error_result."""
    log = """
# aider chat started at 2025-10-01 09:30:00

#### rename it

a.py
```
<<<<<<< SEARCH
old
=======
new
>>>>>>> REPLACE
```

> # 1 SEARCH/REPLACE block failed to match!
>⏎
> ## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in a.py
""".replace("⏎", "  ")
    events = _parse(_write(tmp_path, log))
    call, result = events[-2:]
    assert (result.kind, result.tool_call_id, result.is_error) == ("tool_result", call.tool_call_id, True)
    assert _text(result).startswith("# 1 SEARCH/REPLACE block failed to match!")
    assert _text(result).endswith("failed to exactly match lines in a.py")


def test_session_ids_are_stable_and_distinct(tmp_path: Path) -> None:
    twice = "\n# aider chat started at 2025-10-01 09:30:00\n\n#### a\n" * 2
    path = _write(tmp_path, twice)
    ids = [e.session_id for e in _parse(path) if e.role == "user"]
    assert len(set(ids)) == 2  # same start second, still two sessions
    assert ids == [e.session_id for e in _parse(path) if e.role == "user"]
    elsewhere = _write(tmp_path, twice, folder="other")
    assert set(ids).isdisjoint(e.session_id for e in _parse(elsewhere))


def test_bad_lines_are_quarantined_and_neighbours_load(tmp_path: Path) -> None:
    log = (
        b"\n# aider chat started at 2025-10-01 09:30:00\n\n#### hi\n\nline \xff bad\nfine reply\n"
        + b"x" * 300
    )
    events, bad = _split(list(aider.parse(_write(tmp_path, log), max_line_bytes=200)))
    assert [(b.line_no, b.reason) for b in bad] == [(6, INVALID_UTF8), (8, OVERSIZE_LINE)]
    assert bad[0].session_id == events[0].session_id
    assert [(e.kind, e.text) for e in events if e.role != "system"] == [
        ("message", "hi"),
        ("message", "fine reply"),
    ]


def test_lines_before_the_first_header_are_a_session_dated_by_mtime(tmp_path: Path) -> None:
    path = _write(tmp_path, "#### earlier\n\n# aider chat started at 2020-01-01 00:00:00\n\n#### later\n")
    events = _parse(path)
    assert [(e.text, e.session_start) for e in events if e.role == "user"] == [
        ("earlier", file_mtime_us(path)),
        ("later", parse_ts("2020-01-01T00:00:00Z")),
    ]
    assert aider.earliest_start(path) == parse_ts("2020-01-01T00:00:00Z")


@pytest.mark.parametrize(
    ("name", "head", "expected"),
    [
        (".aider.chat.history.md", b"\n# aider chat started at 2025-10-01 09:30:00\n", True),
        ("notes.md", b"intro\n# aider chat started at 2025-10-01 09:30:00\n", True),
        (".aider.chat.history.md", b"#### trimmed file, no header\n", True),
        ("notes.md", b"# My project\n\n#### a heading\n", False),
        (".aider.chat.history.md", b'{"type": "user"}\n', False),
        ("a.jsonl", b'{"text": "\\n# aider chat started at 2025-10-01 09:30:00"}\n', False),
    ],
)
def test_sniff(name: str, head: bytes, expected: bool) -> None:
    assert aider.sniff(Path(name), head) is expected


# aider's own layout of a multi-line message (io.py `tool_output`): only the first line is quoted
# and only the last line ends with the markdown line break, blank lines in between.
FAILED_EDIT = """
# aider chat started at 2025-10-01 09:30:00

> Aider v0.86.1⏎
> Main model: gpt-4o with diff edit format⏎

#### fix the greeting⏎

app.py
```python
<<<<<<< SEARCH
    print("helo")
=======
    print("hello")
>>>>>>> REPLACE
```

> Tokens: 1.2k sent, 80 received.⏎
> The LLM did not conform to the edit format.⏎
> https://aider.chat/docs/troubleshooting/edit-errors.html⏎
> # 1 SEARCH/REPLACE block failed to match!

## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in app.py
<<<<<<< SEARCH
    print("helo")
=======
    print("hello")
>>>>>>> REPLACE

Did you mean to match some of these actual lines from app.py?

```
    print("hell0")
```

The SEARCH section must exactly match an existing block of lines including all white space⏎

Sorry, the file has another typo.

app.py
```python
<<<<<<< SEARCH
    print("hell0")
=======
    print("hello")
>>>>>>> REPLACE
```

> Tokens: 1.5k sent, 90 received.⏎
> Applied edit to app.py⏎
""".replace("⏎", "  ")


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_failed_edit_report_in_aiders_layout_is_one_error_result(tmp_path: Path, newline: str) -> None:
    """Its blank lines do not end it: the echoed block is no edit call, the retry is the reply."""
    events = _parse(_write(tmp_path, FAILED_EDIT.replace("\n", newline)))
    assert [(e.role, e.kind) for e in events][3:] == [
        ("assistant", "tool_call"),
        ("system", "meta"),  # tokens
        ("tool", "tool_result"),
        ("assistant", "message"),
        ("assistant", "tool_call"),
        ("system", "meta"),  # tokens
        ("tool", "tool_result"),
    ]
    first, _, failed, retry_text, retry, _, applied = events[3:]
    assert [_args(e)["file_path"] for e in (first, retry)] == ["app.py", "app.py"]
    assert (failed.tool_call_id, failed.is_error) == (first.tool_call_id, True)
    assert _text(failed).startswith("The LLM did not conform to the edit format.")
    assert "Did you mean to match some of these actual lines from app.py?" in _text(failed)
    assert _text(failed).endswith("an existing block of lines including all white space")
    assert retry_text.text == "Sorry, the file has another typo."
    assert (applied.tool_call_id, applied.is_error) == (retry.tool_call_id, False)


def test_malformed_reply_echoed_by_aider_stays_aiders_output(tmp_path: Path) -> None:
    """aider echoes a malformed reply up to the error: no edit call or reply comes of the echo."""
    log = """
# aider chat started at 2025-10-01 09:30:00

> Main model: gpt-4o with diff edit format⏎

#### make a.py say new⏎

Fix:

a.py
```python
<<<<<<< SEARCH
old

new
```

> Tokens: 1k sent, 10 received.⏎
> The LLM did not conform to the edit format.⏎
> https://aider.chat/docs/troubleshooting/edit-errors.html⏎
> Fix:

a.py
```python
<<<<<<< SEARCH
old

new
```
^^^ Expected `=======`⏎

Fixed:

a.py
```python
<<<<<<< SEARCH
old
=======
new
>>>>>>> REPLACE
```

> Applied edit to a.py⏎
""".replace("⏎", "  ")
    events = _parse(_write(tmp_path, log))
    [call] = [e for e in events if e.kind == "tool_call"]
    assert _args(call) == {"file_path": "a.py", "old_string": "old", "new_string": "new"}
    [result] = [e for e in events if e.kind == "tool_result"]
    assert (result.tool_call_id, result.is_error) == (call.tool_call_id, False)
    replies = [e.text for e in events if e.role == "assistant" and e.kind == "message"]
    assert replies == ["Fix:\n\na.py\n```python\n<<<<<<< SEARCH\nold\n\nnew\n```", "Fixed:"]
    [report] = [_text(e) for e in events if e.kind == "meta" and "^^^" in _text(e)]
    assert report.endswith("new\n```\n^^^ Expected `=======`")


def test_a_quote_in_the_reply_does_not_hold_the_rest_of_it(tmp_path: Path) -> None:
    """A quoted line without aider's line break that no unquoted line closes was no multi-line
    message: what follows it is grouped as before, the reply's edit included."""
    log = """
# aider chat started at 2025-10-01 09:30:00

> Main model: gpt-4o with diff edit format⏎

#### keep the API⏎

You asked:

> keep the API stable

so only the body changes.

a.py
```
<<<<<<< SEARCH
old
=======
new
>>>>>>> REPLACE
```

> Applied edit to a.py⏎
""".replace("⏎", "  ")
    events = _parse(_write(tmp_path, log))
    assert [(e.role, e.kind, e.text) for e in events][3:6] == [
        ("assistant", "message", "You asked:"),
        ("system", "meta", "keep the API stable"),
        ("assistant", "message", "so only the body changes."),
    ]
    call, result = events[-2:]
    assert _args(call)["file_path"] == "a.py"
    assert (result.tool_call_id, result.is_error) == (call.tool_call_id, False)


def test_a_quote_in_the_reply_ends_at_its_blank_line_whatever_breaks_come_later(tmp_path: Path) -> None:
    """Only aider's own output (a quote after its other lines) runs on past blank lines: a quote of
    the model's own, followed later by one of the model's markdown line breaks, must not hold the
    reply's edit as aider's message."""
    log = """
# aider chat started at 2025-01-02 10:00:00

> Main model: gpt-4o with diff edit format⏎

#### fix the bug⏎

I'll change the constant. The docs say:

> x must be 2
That is why.

foo.py
```python
<<<<<<< SEARCH
x = 1
=======
x = 2
>>>>>>> REPLACE
```

Done. Run the tests:⏎
pytest -q

> Applied edit to foo.py⏎
""".replace("⏎", "  ")
    events = _parse(_write(tmp_path, log))
    assert ("system", "meta", "x must be 2\nThat is why.") in [(e.role, e.kind, e.text) for e in events]
    (call,) = [e for e in events if e.kind == "tool_call"]
    assert _args(call)["file_path"] == "foo.py"
    (result,) = [e for e in events if e.kind == "tool_result"]
    assert (result.tool_call_id, result.is_error) == (call.tool_call_id, False)


@pytest.mark.parametrize(
    ("banner", "model"),
    [
        (
            "Main model: anthropic/claude-sonnet-4 with diff edit format, prompt cache",
            "anthropic/claude-sonnet-4",
        ),
        ("Model: ollama_chat/devstral:24b with diff edit format", "ollama_chat/devstral:24b"),  # weak = main
        ("Models: gpt-4o with diff edit format, weak model gpt-4o-mini", "gpt-4o"),  # older aider
        ("Model: gpt-4 using diff edit format", "gpt-4"),  # oldest aider
    ],
)
def test_every_banner_form_names_the_model(tmp_path: Path, banner: str, model: str) -> None:
    log = SESSION.replace("Main model: anthropic/claude-sonnet-4 with diff edit format", banner)
    calls = [e for e in _parse(_write(tmp_path, log)) if e.kind == "tool_call"]
    assert [e.model for e in calls] == [model, model]


def test_whole_format_listings_are_file_writes(tmp_path: Path) -> None:
    log = """
# aider chat started at 2025-10-01 09:30:00

> Model: ollama_chat/devstral:24b with whole edit format⏎

#### make hello.py print hi⏎

Here is the updated file:

hello.py
```python
print("hi")
```

Run it with:

```bash
python hello.py
```

> Tokens: 1k sent, 10 received.⏎
> Applied edit to hello.py⏎

#### /ask what does main.py print?⏎

It prints a greeting:

main.py
```python
print("hello")
```
""".replace("⏎", "  ")
    events = _parse(_write(tmp_path, log))
    [call] = [e for e in events if e.kind == "tool_call"]
    assert _args(call) == {
        "file_path": "hello.py",
        "old_string": "",
        "new_string": 'print("hi")',
    }
    assert call.model == "ollama_chat/devstral:24b"
    written = canonicalize("aider", call.tool_name or "", call.tool_input)
    assert (written.name, written.arguments) == (
        "write_file",
        {"file_path": "hello.py", "content": 'print("hi")'},
    )
    [result] = [e for e in events if e.kind == "tool_result"]
    assert (result.tool_call_id, result.is_error) == (call.tool_call_id, False)
    # A fence under a blank line is prose; the reply to a one-shot /ask makes no edits.
    assert [e.text for e in events if e.role == "assistant" and e.kind == "message"] == [
        "Here is the updated file:",
        "Run it with:\n\n```bash\npython hello.py\n```",
        'It prints a greeting:\n\nmain.py\n```python\nprint("hello")\n```',
    ]


@pytest.mark.parametrize(
    ("above", "path", "applied"),
    [
        # Deepseek's layout, read by aider's find_filename through the fences under the name.
        ("```python\nword_count.py\n```\n```python", "word_count.py", "word_count.py"),
        ("my\\_module.py\n```python", "my_module.py", "my_module.py"),  # markdown-escaped `_`
        ("my\\_module.py\n```python", "my_module.py", "my\\_module.py"),  # aider kept the escape
        (
            "src\\styles\\_slider.scss\n```",
            "src\\styles\\_slider.scss",
            "src\\styles\\_slider.scss",
        ),  # Windows
    ],
)
def test_file_name_is_found_as_aider_finds_it(tmp_path: Path, above: str, path: str, applied: str) -> None:
    log = f"""
# aider chat started at 2025-10-01 09:30:00

> Main model: gpt-4o with diff edit format⏎

#### change it⏎

Change:

{above}
<<<<<<< SEARCH
old
=======
new
>>>>>>> REPLACE
```

> Applied edit to {applied}⏎
""".replace("⏎", "  ")
    events = _parse(_write(tmp_path, log))
    prose, call, result = events[-3:]
    assert prose.text == "Change:"  # the name and its fences belong to the block
    assert _args(call)["file_path"] == path
    assert (result.kind, result.tool_call_id) == ("tool_result", call.tool_call_id)
