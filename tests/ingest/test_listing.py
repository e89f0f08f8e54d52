"""A file listing held as columns gives back exactly the files it was given."""

from __future__ import annotations

import copy
import pickle
import sys

import pytest

from trajectory_pipeline.ingest.listing import CandidateFile, FileListing

FILES = [
    CandidateFile("claude_code", "claude_code", "/logs/a.jsonl", 1_700_000_000_000_000, 120),
    CandidateFile(
        "codex", "claude_code", "/logs/b.jsonl", 1_700_000_100_000_000, 0, None, "looks like codex"
    ),
    CandidateFile("own_agent", "own_agent", "/logs/c.jsonl", -5, 7, "unreadable_file", "Permission denied"),
    CandidateFile("claude_code", "claude_code", "/logs/d.jsonl", 1_700_000_200_000_000, 2**40),
]


def test_a_listing_gives_back_its_files_in_order() -> None:
    listing = FileListing(FILES)
    assert len(listing) == 4
    assert list(listing) == FILES and listing == FILES
    assert [listing[k] for k in range(-4, 4)] == FILES + FILES
    assert listing[1:3] == FILES[1:3] and isinstance(listing[1:3], FileListing)
    assert listing.take([3, 0]) == [FILES[3], FILES[0]]
    assert listing != FILES[:3] and FileListing() == []
    for outside in (-5, 4):
        with pytest.raises(IndexError):
            listing[outside]
    assert [listing.size(k) for k in range(4)] == [file.size for file in FILES]
    assert listing.bytes_modified_since(1_700_000_100_000_000) == 2**40
    assert listing.bytes_modified_since(-5) == sum(file.size for file in FILES)


def test_taking_files_keeps_each_files_format_and_problem_at_its_new_place() -> None:
    listing = FileListing(FILES)
    taken = listing.take([2, -1, 1, 2])
    assert taken == [FILES[2], FILES[3], FILES[1], FILES[2]]
    assert listing.take([]) == [] and listing.take(range(4)) == FILES
    with pytest.raises(IndexError):
        listing.take([0, 4])
    taken.append(FILES[0])  # a taken listing numbers formats as its own, appended files too
    assert taken[-1] == FILES[0] and len(listing) == 4


def test_positions_modified_since_count_a_file_written_at_that_very_time() -> None:
    listing = FileListing(FILES)
    assert list(listing.positions_modified_since(1_700_000_200_000_000)) == [3]
    assert list(listing.positions_modified_since(1_700_000_000_000_000)) == [0, 1, 3]
    assert list(listing.positions_modified_since(1_700_000_000_000_001)) == [1, 3]
    assert listing.bytes_modified_since(1_700_000_000_000_000) == 120 + 2**40


def test_a_copied_listing_grows_alone() -> None:
    listing = FileListing(FILES[:2])
    copied = copy.copy(listing)
    copied.append(FILES[2])
    assert (len(listing), len(copied)) == (2, 3) and copied == FILES[:3]


def test_a_listing_pickles_to_the_same_files() -> None:
    assert pickle.loads(pickle.dumps(FileListing(FILES))) == FILES


def test_a_listing_holds_a_file_in_less_memory_than_its_tuple() -> None:
    """Its point: what it costs per file besides the path, against a CandidateFile's own."""
    many = [
        file._replace(location=f"/logs/{n}.jsonl", mtime_us=10**15 + n, size=10**6 + n)
        for n in range(1000)
        for file in FILES[:1]
    ]
    listing = FileListing(many)
    columns = sum(sys.getsizeof(column) for column in (listing._format_at, listing._mtimes, listing._sizes))
    columns += sys.getsizeof(listing._locations)
    tuples = sum(
        sys.getsizeof(file) + sys.getsizeof(file.mtime_us) + sys.getsizeof(file.size) for file in many
    )
    tuples += sys.getsizeof(many)
    assert columns * 3 < tuples
