"""The files a run lists under its roots, held as columns.

A range run lists every file under its roots once and keeps the listing for the whole run: a
year of transcripts is hundreds of thousands of files. As a tuple per file (two ints, the format
names, the path) with the set that weeded out second links, 182,000 files took 89 MiB, of which
15 stayed fragmented after the listing went; as columns (the paths, two int64 arrays, a format
number, the rare problems by position) they take about half.

    listing = FileListing(files)          # any CandidateFiles, in order
    listing[i], len(listing), list(listing)
    listing.take([3, 7])                  # those files, in that order (a slice takes too)
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple, overload


class CandidateFile(NamedTuple):
    source: str  # the format the file is read as (sniffed), or its root's when unrecognized
    placed_under: str  # the source whose root the file was found under
    # The file's path as a string: a Path object with its parsed parts takes three times the memory.
    location: str
    mtime_us: int
    size: int
    problem: str | None = None  # a reason to quarantine the whole file instead of reading it
    note: str = ""

    @property
    def path(self) -> Path:
        return Path(self.location)


_NO_PROBLEM: tuple[str | None, str] = (None, "")


class FileListing(Sequence[CandidateFile]):
    """CandidateFiles in listing order, a file built each time one is asked for."""

    __slots__ = ("_format_at", "_formats", "_locations", "_mtimes", "_problems", "_sizes")

    def __init__(self, files: Iterable[CandidateFile] = ()) -> None:
        self._formats: list[tuple[str, str]] = []  # distinct (source, placed_under)
        self._format_at = array("H")  # each file's, by number in _formats
        self._locations: list[str] = []
        self._mtimes = array("q")
        self._sizes = array("q")
        self._problems: dict[int, tuple[str | None, str]] = {}  # (problem, note) where either is set
        for file in files:
            self.append(file)

    def append(self, file: CandidateFile) -> None:
        source = (file.source, file.placed_under)
        try:
            number = self._formats.index(source)
        except ValueError:
            number = len(self._formats)
            self._formats.append(source)
        if file.problem is not None or file.note:
            self._problems[len(self._locations)] = (file.problem, file.note)
        self._format_at.append(number)
        self._locations.append(file.location)
        self._mtimes.append(file.mtime_us)
        self._sizes.append(file.size)

    def __len__(self) -> int:
        return len(self._locations)

    @overload
    def __getitem__(self, index: int) -> CandidateFile: ...

    @overload
    def __getitem__(self, index: slice) -> FileListing: ...

    def __getitem__(self, index: int | slice) -> CandidateFile | FileListing:
        if isinstance(index, slice):
            return self.take(range(len(self))[index])
        index = range(len(self))[index]  # a negative index counts from the end; out of range raises
        source, placed_under = self._formats[self._format_at[index]]
        problem, note = self._problems.get(index, _NO_PROBLEM)
        location = self._locations[index]
        return CandidateFile(
            source, placed_under, location, self._mtimes[index], self._sizes[index], problem, note
        )

    def __iter__(self) -> Iterator[CandidateFile]:
        formats, problems = self._formats, self._problems
        columns = zip(self._format_at, self._locations, self._mtimes, self._sizes, strict=True)
        for index, (number, location, mtime_us, size) in enumerate(columns):
            problem, note = problems.get(index, _NO_PROBLEM)
            yield CandidateFile(*formats[number], location, mtime_us, size, problem, note)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __repr__(self) -> str:
        return f"FileListing({list(self)!r})"

    def __copy__(self) -> FileListing:
        return self.take(range(len(self)))  # its own columns, as a list's copy has its own slots

    def take(self, indexes: Iterable[int]) -> FileListing:
        """The files at these positions, in this order: column by column, never a file built, five
        times faster than appending each file (a range's planning takes its recent files in parts,
        `days._LookParts`, once for the pool's check of its tasks and once to send them)."""
        within = range(len(self))  # a negative index counts from the end; one out of range raises
        positions = [within[index] for index in indexes]
        taken = FileListing()
        taken._formats = self._formats.copy()  # the same numbers, some perhaps unused
        taken._format_at = array("H", [self._format_at[k] for k in positions])
        taken._locations = [self._locations[k] for k in positions]
        taken._mtimes = array("q", [self._mtimes[k] for k in positions])
        taken._sizes = array("q", [self._sizes[k] for k in positions])
        problems = self._problems
        taken._problems = {at: problems[k] for at, k in enumerate(positions) if k in problems}
        return taken

    def bytes_modified_since(self, mtime_us: int) -> int:
        """The bytes of the files written to at or after this time."""
        return sum(self._sizes[k] for k in self.positions_modified_since(mtime_us))

    def positions_modified_since(self, mtime_us: int) -> array[int]:
        """The positions of the files written to at or after this time, in order."""
        return array("q", (k for k, mtime in enumerate(self._mtimes) if mtime >= mtime_us))

    def size(self, index: int) -> int:
        """The file's size, without building the file."""
        return self._sizes[index]
