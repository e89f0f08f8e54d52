"""A hyperscan prefilter for the redaction passes: one scan tells which passes may match.

`Redactor.redact` (trajectory_pipeline/ingest/redact.py) runs twenty-seven regex passes over
every event text, and almost every pass finds nothing: each costs one C-level scan of the
text anyway. One hyperscan scan of the text's UTF-8 bytes against a few expressions per
pass says which passes can possibly match; only those run their exact Python regex.

    from trajectory_pipeline.ingest.redact_prefilter import load
    prefilter = load((("sk-[A-Za-z0-9_-]{4}",), ("ghp_",)))  # None without hyperscan
    prefilter.scan("export KEY=sk-proj-abcd")  # [0]: only pass 0 may match

The prefilter only ever skips a pass whose `search` would find nothing, so the output
is the same as without it, provided every pass's expressions match a superset of what
its regex can match: wherever the regex matches, one of them matches the bytes. How
the expressions (written beside the passes, `redact._prefilter_expressions`) are
derived from the regexes so that they stay supersets:

- A pass regex starts on a literal anchor; its expression starts on the same literal
  and keeps only a prefix of what must follow. Dropping a tail, a lookahead or an
  upper bound (`{4,}` for `{20,300}`) only widens.
- A lookbehind is kept as plain text consumed before the anchor (`npm_` for
  `_(?<=npm_)`), or dropped; both only widen, since the scan is of the whole text.
- Text is matched as UTF-8 bytes (lone surrogates encoded with "surrogatepass"), so a
  non-ASCII character is two to four bytes, each 0x80 or above. Expressions use only
  explicit ASCII classes. A positive class (`[A-Za-z0-9]`) is kept only where the
  Python class is the same ASCII class; Python's unicode `\\w`, `\\d` and `\\s` also
  match non-ASCII characters, so an expression stops before them. A negated class
  (`[^\\s:@/]`) excludes only ASCII characters that Python's class excludes too, so it
  lets through every byte of any character Python's lets through.
- A case-insensitive Python literal (`(?i:token=)`) matches, besides both ASCII
  cases, the non-ASCII letters that fold to an ASCII one: `caseless` writes each
  letter as its two cases or those characters' UTF-8 bytes (`CASE_FOLDS`, checked
  against every code point by tests/ingest/test_redact_prefilter.py).

hyperscan is optional (its wheels are for x86_64 Linux): `load` returns None where it
cannot be imported, and the caller runs every pass as before.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import ModuleType

# The non-ASCII characters that Python's case-insensitive `re` matches to an ASCII
# letter: dotted and dotless I, the long s, the Kelvin sign.
CASE_FOLDS: dict[str, str] = {"i": "\u0130\u0131", "s": "\u017f", "k": "\u212a"}


def caseless(literal: str) -> str:
    """A hyperscan expression for the ASCII `literal` as Python's `(?i:...)` matches it."""
    parts = []
    for c in literal:
        if not (c.isascii() and c.isalpha()):
            parts.append(_escape(c))
            continue
        options = [f"[{c.lower()}{c.upper()}]"]
        options += ["".join(f"\\x{b:02x}" for b in f.encode()) for f in CASE_FOLDS.get(c.lower(), "")]
        parts.append(options[0] if len(options) == 1 else f"(?:{'|'.join(options)})")
    return "".join(parts)


def _escape(c: str) -> str:
    return c if c.isascii() and c.isalnum() else f"\\x{ord(c):02x}"


class Prefilter:
    """One hyperscan database for all passes, with a scratch space per thread.

    Built in the process that uses it (`load`), never pickled: a hyperscan database is a
    pointer into this process's memory.
    """

    def __init__(self, hyperscan: ModuleType, expressions: Sequence[Sequence[str]]) -> None:
        patterns = [(p.encode("ascii"), i) for i, group in enumerate(expressions) for p in group]
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        # One report per pass id at most, however many of its expressions match.
        self._db.compile(
            expressions=[p for p, _ in patterns],
            ids=[i for _, i in patterns],
            elements=len(patterns),
            flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(patterns),
        )
        self._scan = self._db.scan
        self._hyperscan = hyperscan
        self._local = threading.local()

    def scan(self, text: str) -> list[int]:
        """The ids of the passes that may match `text`, in no particular order."""
        try:
            scratch = self._local.scratch
        except AttributeError:  # a scan runs without the GIL: each thread needs its own
            scratch = self._local.scratch = self._hyperscan.Scratch(self._db)
        found: list[int] = []
        # Positional: parsing keyword arguments costs as much as the scan of a short text.
        self._scan(text.encode("utf-8", "surrogatepass"), _found, 0, found, scratch)
        return found


def _found(pass_id: int, start: int, end: int, flags: int, found: list[int]) -> None:
    found.append(pass_id)


def load(expressions: tuple[tuple[str, ...], ...]) -> Prefilter | None:
    """The prefilter for `expressions` (a group per pass id), or None without hyperscan."""
    try:
        import hyperscan
    except ImportError:
        return None
    return Prefilter(hyperscan, expressions)
