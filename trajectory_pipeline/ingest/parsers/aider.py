"""aider chat logs: `.aider.chat.history.md` in the folder aider ran in.

aider appends every session to the same markdown file:
- `# aider chat started at YYYY-MM-DD HH:MM:SS` opens a session. The time is local
  time without a zone; it is read as UTC, so partitions may be off by the user's
  UTC offset;
- `#### ` lines are the user's input (one message per run of lines), slash
  commands (`/ask`, `/code`, `/model`, `/run`...) included, as typed;
- `> ` lines are aider's own output (banner, token counts, commits, confirmations).
  aider quotes only the first line of a multi-line message, so unquoted lines right
  after a quote belong to it, as in markdown. It also ends every message with a
  markdown line break (two spaces), and a report that has blank lines in it (a failed
  edit's "# 1 SEARCH/REPLACE block failed to match!", a malformed reply echoed back)
  runs on, blank lines and all, to the line that carries that break;
- the banner's `Main model:` (`Model:` when the weak model is the main one, `Models:`
  in older versions) line names the model of the replies that follow and their
  edit format;
- everything else is the model's reply. Its SEARCH/REPLACE edit blocks become
  `search_replace` tool calls (file_path, old_string, new_string), the prose
  between them assistant messages, and aider's "Applied edit to X" (or its
  "failed to match" error) their results. The file name is found as aider's
  `find_filename` finds it: up to 3 lines above the block, through fence lines,
  with a markdown-escaped `\\_` read as `_`.
  In the `whole` edit format a reply has no blocks but file listings (a file name
  line, then the file in a fence): each is a `search_replace` with an empty
  old_string, which the vocabulary reads as a file write (not for the reply to a
  one-shot `/ask`, `/help`, `/context` or `/architect`). Replies in the `udiff` and
  `patch` formats, and an architect's editor in `editor-whole`, stay prose.

The log has no per-message times: `ts` is None except on the session-start event.
A model heading written as `#### ` is read as user input: the log cannot tell them apart.

    from trajectory_pipeline.ingest.parsers import aider
    events = list(aider.parse(Path("repo/.aider.chat.history.md")))
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from trajectory_pipeline.ingest.parsers.common import Fields
from trajectory_pipeline.ingest.parsers.lines import MAX_LINE_BYTES, file_mtime_us, read_head, read_lines
from trajectory_pipeline.schema import (
    BINARY_JUNK,
    INVALID_UTF8,
    OVERSIZE_LINE,
    BadLine,
    Event,
    canonical_json,
    event,
    excerpt,
    parse_ts,
    repo_name,
)

SOURCE = "aider"
GLOBS: tuple[str, ...] = ("**/.aider.chat.history.md",)
TITLE = "aider"
DEFAULT_ROOT = ""  # off unless configured: no standard folder
HOLDS = "repositories holding .aider.chat.history.md files"
VOCABULARY = "aider"  # its table in mining/vocabulary.py
PATH_DATED = False  # whether file paths carry the session's date

HISTORY_NAME = ".aider.chat.history.md"
TOOL_NAME = "search_replace"

_HEADER = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})\s*$")
_HEADER_IN_HEAD = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})\s*$", re.M)
_SEARCH = re.compile(r"^<{5,9} SEARCH>?\s*$")
_DIVIDER = re.compile(r"^={5,9}\s*$")
_REPLACE = re.compile(r"^>{5,9} REPLACE\s*$")
_APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
# "Main model: m with diff edit format"; "Model:" when the weak model is the main model (usual
# with local models), and in older versions "Models: m with diff edit format, weak model w" or
# "Model: m using diff edit format".
_MODEL = re.compile(r"^(?:Main model|Models?): (\S+)(?: (?:with|using) (\S+) edit format)?")
_EDIT_FAILED = ("failed to match", "did not conform to the edit format")
_INTERRUPTED = "^C again to exit"
_LINE_BREAK = "  "  # the markdown line break aider ends each of its messages with
# One-shot commands whose reply is answered without edits (`/ask why?` in a whole-format
# session announces nothing, so the session's format would read its code blocks as listings).
_NO_EDIT_COMMANDS = frozenset({"/ask", "/help", "/context", "/architect"})

Line = tuple[int, str]


class Block(NamedTuple):
    """A run of lines of one kind: header, user, tool (aider's `>` output) or assistant."""

    kind: str
    lines: list[Line]


def sniff(path: Path, head: bytes) -> bool:
    """A session header line, or the history file's own name on something that is not JSON."""
    text = head.decode("utf-8", "replace")
    if _HEADER_IN_HEAD.search(text):
        return True
    return path.name == HISTORY_NAME and text.lstrip()[:1] not in ("{", "[") and "\x00" not in text


def earliest_start(path: Path) -> int | None:
    """The first session header in the head, when nothing comes before it; else unknown."""
    head = read_head(path).decode("utf-8", "replace")
    match = _HEADER_IN_HEAD.search(head)
    if match is None:
        return None
    start = parse_ts(match.group(1))
    if start is None or not head[: match.start()].strip():
        return start
    # Lines before the first header form a session dated by the file's mtime.
    return min(start, file_mtime_us(path))


def parse(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Event | BadLine]:
    """Stream the file's sessions as events; unreadable lines become BadLines."""
    state = _State(path)
    for item in _blocks(_lines(path, max_line_bytes)):
        if isinstance(item, BadLine):
            yield item._replace(session_id=state.session_id, session_start=state.session_start)
        else:
            yield from state.events(item)


def _lines(path: Path, max_line_bytes: int) -> Iterator[Line | BadLine]:
    for line_no, raw, byte_len, oversize in read_lines(path, max_line_bytes):
        reason = OVERSIZE_LINE if oversize else None
        if reason is None and b"\x00" in raw:
            reason = BINARY_JUNK
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            reason = reason or INVALID_UTF8
        if reason is not None:
            yield BadLine(SOURCE, str(path), line_no, reason, excerpt(raw), byte_len)
        else:
            yield line_no, text.rstrip("\r\n")


def _is_user(text: str) -> bool:
    return text == "####" or text.startswith("#### ")


def _is_quote(text: str) -> bool:
    return text == ">" or text.startswith("> ")


def _is_fence(text: str) -> bool:
    return text.lstrip().startswith("```")


def _blocks(lines: Iterator[Line | BadLine]) -> Iterator[Block | BadLine]:
    """Group lines into blocks (see `_Grouper`)."""
    grouper = _Grouper()
    for item in lines:
        yield from grouper.feed(item)
    yield from grouper.close()


class _Grouper:
    """Groups lines into blocks. User input and headers always win; inside a reply, a `>` line
    starts aider's output only after a blank line and outside a code fence; a blank line ends
    aider's output, except inside one of its multi-line messages.

    aider quotes only the first line of a multi-line message and ends its last line with a
    markdown line break, so once the log is seen to use those breaks, a quoted line without
    one opens a message that may run on past blank lines. Its lines are held until an
    unquoted line with the break closes it; when a quoted line, user input, a header or the
    end of the file comes first, the quote was a one-line message (or a quote in the model's
    reply) after all, and the held lines are grouped as if none had been held.
    """

    def __init__(self) -> None:
        self.kind = ""
        self.buffer: list[Line] = []
        self.after_blank, self.in_fence = True, False
        self.uses_breaks = False
        self.held: list[Line | BadLine] | None = None  # lines of a message not yet closed

    def feed(self, item: Line | BadLine) -> Iterator[Block | BadLine]:
        if self.held is not None:
            if isinstance(item, BadLine) or not _breaks_message(item[1]):
                self.held.append(item)
                if not isinstance(item, BadLine) and _closes_message(item[1]):
                    yield from self._take_held()
                return
            yield from self._give_back_held()
        if isinstance(item, BadLine):
            yield item
            return
        _, text = item
        blank = not text.strip()
        if _HEADER.match(text):
            yield from self._flush()
            yield Block("header", [item])
            self.after_blank = False
            return
        if _is_user(text):
            if self.kind != "user":
                yield from self._start("user")
        elif _is_quote(text) and (self.kind != "assistant" or (self.after_blank and not self.in_fence)):
            # Only a quote that goes on aider's output (a failed edit's report follows its
            # "Tokens:" line) may open a multi-line message: a quote opening a block after the
            # model's reply may be the model's own, and holding it could swallow the reply's edits.
            continues = self.kind == "tool"
            if not continues:
                yield from self._start("tool")
            self.uses_breaks = self.uses_breaks or text.endswith(_LINE_BREAK)
            if continues and self.uses_breaks and not text.endswith(_LINE_BREAK):
                self.held = []
        elif blank:
            if self.kind in ("tool", "user"):
                yield from self._flush()
                self.after_blank = True
                return
        elif self.kind not in ("assistant", "tool"):
            yield from self._start("assistant")
            self.in_fence = False
        if self.kind == "assistant" and _is_fence(text):
            self.in_fence = not self.in_fence
        if self.kind:
            self.buffer.append(item)
        self.after_blank = blank

    def close(self) -> Iterator[Block | BadLine]:
        if self.held is not None:
            yield from self._give_back_held()
        yield from self._flush()

    def _start(self, kind: str) -> Iterator[Block]:
        yield from self._flush()
        self.kind = kind

    def _flush(self) -> Iterator[Block]:
        yield from _flush(self.kind, self.buffer)
        self.kind, self.buffer = "", []

    def _take_held(self) -> Iterator[BadLine]:
        """The held lines were one message: they join aider's output."""
        held, self.held = self.held or [], None
        for item in held:
            if isinstance(item, BadLine):
                yield item
            else:
                self.buffer.append(item)
        self.after_blank = False

    def _give_back_held(self) -> Iterator[Block | BadLine]:
        """No message was open: group the held lines as usual (none of them can hold again)."""
        held, self.held = self.held or [], None
        for item in held:
            yield from self.feed(item)


def _breaks_message(text: str) -> bool:
    """A line that cannot be inside one of aider's messages: a header, user input, a quote."""
    return bool(_HEADER.match(text)) or _is_user(text) or _is_quote(text)


def _closes_message(text: str) -> bool:
    return bool(text.strip()) and text.endswith(_LINE_BREAK)


def _flush(kind: str, buffer: list[Line]) -> Iterator[Block]:
    while buffer and not buffer[-1][1].strip():
        buffer.pop()
    if kind and buffer:
        yield Block(kind, buffer)


@dataclass
class _State:
    """The session being read, the model and edit format in use and the edit calls awaiting
    aider's verdict."""

    path: Path
    session_id: str = ""
    session_start: int = 0
    model: str | None = None
    edit_format: str | None = None
    no_edits: bool = False  # the turn is a one-shot command that makes no edits
    seq: int = 0
    pending: list[tuple[str, str | None]] = field(default_factory=list)
    headers_seen: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        # Lines before the first header (a trimmed file) form a session dated by the mtime.
        self.session_id = self._session_id("")
        self.session_start = file_mtime_us(self.path)

    def events(self, block: Block) -> Iterator[Event]:
        handler = {
            "header": self._header,
            "user": self._user,
            "tool": self._tool,
            "assistant": self._assistant,
        }[block.kind]
        for fields in handler(block.lines):
            yield event(
                source=SOURCE,
                session_id=self.session_id,
                session_start=self.session_start,
                source_path=str(self.path),
                seq=self.seq,
                cwd=str(self.path.parent),
                repo=repo_name(str(self.path.parent)),
                **{"ts": None, **fields},
            )
            self.seq += 1

    def _session_id(self, started: str) -> str:
        """Stable across re-reads and appends: folder, file name, header text and its repeat count."""
        self.headers_seen[started] += 1
        key = f"{self.path.parent.name}/{self.path.name}|{started}|{self.headers_seen[started]}"
        return "aider-" + hashlib.sha256(key.encode()).hexdigest()[:12]

    def _header(self, lines: list[Line]) -> Iterator[Fields]:
        line_no, text = lines[0]
        started = _HEADER.match(text)
        stamp = started.group(1) if started else ""
        self.session_id = self._session_id(stamp)
        start = parse_ts(stamp)
        self.session_start = start if start is not None else file_mtime_us(self.path)
        self.model, self.edit_format, self.no_edits, self.pending = None, None, False, []
        yield {
            "line_no": line_no,
            "ts": self.session_start,
            "role": "system",
            "kind": "meta",
            "text": text[2:],
        }

    def _user(self, lines: list[Line]) -> Iterator[Fields]:
        self.pending = []
        text = "\n".join(line[5:].rstrip() if line.startswith("#### ") else "" for _, line in lines)
        text = text.strip("\n")
        self.no_edits = text.split(maxsplit=1)[0] in _NO_EDIT_COMMANDS if text.strip() else False
        yield {"line_no": lines[0][0], "role": "user", "kind": "message", "text": text}

    def _tool(self, lines: list[Line]) -> Iterator[Fields]:
        """aider's output: runs of plain lines become meta events; edit verdicts become results."""
        run: list[Line] = []
        for index, (line_no, raw) in enumerate(lines):
            text = raw[2:].rstrip() if _is_quote(raw) else raw.rstrip()
            model = _MODEL.match(text)
            if model:
                self.model, self.edit_format = model.group(1), model.group(2)
            applied = _APPLIED.match(text)
            if applied and any(_same_path(path, applied.group(1)) for _, path in self.pending):
                yield from _meta(run)
                run = []
                yield from self._results(line_no, text, applied.group(1), is_error=False)
            elif self.pending and any(marker in text for marker in _EDIT_FAILED):
                yield from _meta(run)
                rest = [(line[2:] if _is_quote(line) else line).rstrip() for _, line in lines[index:]]
                yield from self._results(line_no, "\n".join(rest).strip(), None, is_error=True)
                return
            else:
                run.append((line_no, text))
        yield from _meta(run)

    def _results(self, line_no: int, text: str, path: str | None, is_error: bool) -> Iterator[Fields]:
        """Results for the waiting edit calls on `path` (all of them when None)."""
        answered = [call for call in self.pending if path is None or _same_path(call[1], path)]
        self.pending = [call for call in self.pending if call not in answered]
        for call_id, _ in answered:
            yield {
                "line_no": line_no,
                "role": "tool",
                "kind": "tool_result",
                "text": text,
                "tool_name": TOOL_NAME,
                "tool_call_id": call_id,
                "is_error": is_error,
            }

    def _assistant(self, lines: list[Line]) -> Iterator[Fields]:
        base = {"role": "assistant", "model": self.model}
        pieces = list(split_reply(lines))
        # A model in the whole format may send SEARCH/REPLACE blocks anyway. aider then writes the
        # fenced text, markers and all; the blocks are kept as the edits the model meant.
        if self.edit_format == "whole" and not self.no_edits and not any(isinstance(p, Edit) for p in pieces):
            pieces = list(split_whole(lines))
        for piece in pieces:
            if isinstance(piece, Edit):
                call_id = f"{self.session_id}:{piece.line_no}"
                self.pending.append((call_id, piece.file_path))
                yield {
                    **base,
                    "line_no": piece.line_no,
                    "kind": "tool_call",
                    "tool_name": TOOL_NAME,
                    "tool_call_id": call_id,
                    "tool_input": canonical_json(
                        {"file_path": piece.file_path, "old_string": piece.old, "new_string": piece.new}
                    ),
                }
            else:
                yield {**base, "line_no": piece[0], "kind": "message", "text": piece[1]}


def _same_path(ours: str | None, aiders: str) -> bool:
    return ours is not None and _plain_path(ours) == _plain_path(aiders)


def _plain_path(path: str) -> str:
    # aider's "Applied edit to" line may name the file with `\_` where we unescaped it.
    return path.removeprefix("./").replace("\\_", "_")


def _meta(run: list[Line]) -> Iterator[Fields]:
    text = "\n".join(line for _, line in run).strip()
    if text:
        yield {
            "line_no": run[0][0],
            "role": "system",
            "kind": "meta",
            "text": text,
            "interrupted": _INTERRUPTED in text,
        }


class Edit(NamedTuple):
    """One SEARCH/REPLACE block of a reply."""

    line_no: int  # the SEARCH marker's line; a whole-file listing's opening fence
    file_path: str | None
    old: str
    new: str


def split_reply(lines: list[Line]) -> Iterator[Edit | Line]:
    """A reply as prose pieces (first line number, text) and the edit blocks between them.

    The file name line and the code fence around a block belong to the block. A block
    without a file name edits the previous block's file, as aider reads it; an
    unfinished block (a reply cut off mid-block) stays prose.
    """
    start, index, last_path = 0, 0, None
    while index < len(lines):
        block = _edit_at(lines, index, start)
        if block is None:
            index += 1
            continue
        first, end, path, old, new = block
        yield from _prose(lines[start:first])
        last_path = path or last_path
        yield Edit(lines[index][0], last_path, old, new)
        start = index = end
    yield from _prose(lines[start:])


def _edit_at(lines: list[Line], index: int, floor: int) -> tuple[int, int, str | None, str, str] | None:
    """The block whose SEARCH marker is at `index`: (first line, end, path, old, new), or None."""
    if not _SEARCH.match(lines[index][1]):
        return None
    divider = _find(lines, _DIVIDER, index + 1)
    replace = _find(lines, _REPLACE, divider + 1) if divider is not None else None
    if divider is None or replace is None:
        return None
    # As aider's find_filename: the name is on one of the 3 lines above the marker, with only
    # fence lines between (some models fence the name itself: "```python", "name.py", "```",
    # "```python", SEARCH).
    first, path = index, None
    for back in range(index - 1, max(floor, index - 3) - 1, -1):
        text = lines[back][1].strip()
        if not _is_fence(text):
            path = _file_name(text)
            if path is not None:
                first = back
                if back < index - 1 and back > floor and _is_fence(lines[back - 1][1]):
                    first = back - 1  # the fence opened around the name belongs to the block too
            break
    if path is None and index > floor and _is_fence(lines[index - 1][1]):
        first = index - 1  # the fence that opens an unnamed block belongs to it
    end = replace + 1
    if end < len(lines) and lines[end][1].strip() == "```":
        end += 1
    old = "\n".join(text for _, text in lines[index + 1 : divider])
    new = "\n".join(text for _, text in lines[divider + 1 : replace])
    return first, end, path, old, new


def split_whole(lines: list[Line]) -> Iterator[Edit | Line]:
    """A reply in aider's `whole` edit format as prose pieces and file listings.

    As aider's WholeFileCoder reads it, every fenced block is a listing: the whole new text of
    the file named on the line above its opening fence. A listing becomes an Edit with an empty
    SEARCH part, a file write. A listing under a blank line or a sentence stays prose (aider
    would write the chat's only file, which the log does not name), and so does an unclosed one
    (a reply cut off). Like aider, a fence counts only at the start of a line.
    """
    start, index = 0, 0
    while index < len(lines):
        if not lines[index][1].startswith("```"):
            index += 1
            continue
        close = next((i for i in range(index + 1, len(lines)) if lines[i][1].startswith("```")), None)
        if close is None:
            break
        name = _file_name(lines[index - 1][1].strip()) if index > start else None
        if name is not None:
            yield from _prose(lines[start : index - 1])
            content = "\n".join(text for _, text in lines[index + 1 : close])
            yield Edit(lines[index][0], name, "", content)
            start = close + 1
        index = close + 1
    yield from _prose(lines[start:])


def _find(lines: list[Line], pattern: re.Pattern[str], start: int) -> int | None:
    for index in range(start, len(lines)):
        if pattern.match(lines[index][1]):
            return index
    return None


def _file_name(text: str) -> str | None:
    """The file name aider would read from the line before a block, if the line can be one."""
    name = text.rstrip(":").lstrip("#").strip().strip("`*").strip()
    if not name or name == "..." or any(char.isspace() for char in name):
        return None
    # Markdown escapes `_` as `\_`. aider unescaped it until a Windows path lost its separator
    # (`dir\_x.py`, aider #914); since then it matches the name to the chat's files, which lands
    # on the same file. A name with other backslashes is such a Windows path: kept as written.
    if "\\" not in name.replace("\\_", ""):
        name = name.replace("\\_", "_")
    return name


def _prose(lines: list[Line]) -> Iterator[Line]:
    while lines and not lines[0][1].strip():
        lines = lines[1:]
    text = "\n".join(text for _, text in lines).strip()
    if text:
        yield lines[0][0], text
