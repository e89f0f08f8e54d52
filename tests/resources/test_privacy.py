"""The redactor over what the project writes into the Dagster instance (resources/privacy.py)."""

import logging

import dagster as dg

from resources.privacy import private, private_failure, private_log, private_metadata

TOKEN = "ghp_" + "Zq8Lm2Nx4Vb6Kc0Jd3Hf5Gs7Ta9Wr1Ye2Ui4"


def test_every_kind_of_text_metadata_is_redacted_and_numbers_pass() -> None:
    metadata = private_metadata(
        {
            "path": dg.MetadataValue.path("/home/alice/data/warehouse/raw_sessions/2026-11-20.parquet"),
            "preview": dg.MetadataValue.md(f"| text |\n|---|\n| export GITHUB_TOKEN={TOKEN} |"),
            "misassigned_files": dg.MetadataValue.json(
                ["/Users/bob/.claude/projects/-Users-bob-app/x.jsonl"]
            ),
            "note": dg.MetadataValue.text("mail alice@example.org"),
            "plain": "/home/alice/x",
            "rows": 12,
            "share": 0.5,
        }
    )
    assert metadata["path"].value == "/home/<user>/data/warehouse/raw_sessions/2026-11-20.parquet"
    assert TOKEN not in metadata["preview"].value and "[REDACTED:github_token]" in metadata["preview"].value
    assert metadata["misassigned_files"].value == ["/Users/<user>/.claude/projects/-Users-<user>-app/x.jsonl"]
    assert metadata["note"].value == "mail [REDACTED:email]"
    assert metadata["plain"] == "/home/<user>/x"
    assert (metadata["rows"], metadata["share"]) == (12, 0.5)


def test_log_lines_and_failures_are_redacted() -> None:
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    log = logging.getLogger("privacy-test")
    log.setLevel(logging.INFO)
    log.addHandler(handler := Keep())
    try:
        private_log(log).info("claude_code: /home/alice/.claude/projects does not exist")
    finally:
        log.removeHandler(handler)
    assert seen == ["claude_code: /home/<user>/.claude/projects does not exist"]
    failure = private_failure(f"root /home/alice/{TOKEN} cannot be read", metadata={"root": "/home/alice"})
    assert failure.description == "root /home/<user>/[REDACTED:github_token] cannot be read"
    assert failure.metadata["root"].value == "/home/<user>"
    assert private("") == ""
