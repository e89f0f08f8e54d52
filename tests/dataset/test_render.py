"""Rendering pins the exact bytes mlx-lm trains on, so each format and call convention is compared
to a full expected record of one known decision point; the keys dedupe and the leakage check use,
the length filter's helpers, a real sample-corpus row, and mlx-lm's own dataset classes reading the
records through a tiny in-test tokenizer (no downloaded weights) are checked beside them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, cast

import orjson
import pandas as pd
import pytest
from mlx_lm.tuner.datasets import ChatDataset, CompletionsDataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from trajectory_pipeline.dataset.render import (
    CONVENTIONS,
    FORMATS,
    RenderConfig,
    call_text,
    drop_oldest_turn,
    parse_call_text,
    prompt_and_target,
    record_length,
    render,
    render_row,
    tool_specs,
)
from trajectory_pipeline.decisions.points import extract_decision_points
from trajectory_pipeline.ingest.days import SourceRoot, ingest_day
from trajectory_pipeline.mining.attempts import mine_trajectories
from trajectory_pipeline.mining.vocabulary import CANONICAL_TOOLS
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus
from trajectory_pipeline.schema import canonical_json

SYSTEM = "You are a coding agent."
INSTRUCTION = "Fix the rounding in fees.py"
# Two parallel calls (one of a tool outside the vocabulary) and their results, then the target.
HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": INSTRUCTION},
    {
        "role": "assistant",
        "content": "Reading it.",
        "tool_calls": [
            {"id": "toolu_1", "name": "read_file", "arguments": {"file_path": "fees.py"}},
            {"id": "toolu_2", "name": "TodoWrite", "arguments": {"todos": []}},
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "toolu_1",
        "name": "read_file",
        "content": "def fee(x):\n    return round(x)",
    },
    {"role": "tool", "tool_call_id": "toolu_2", "name": "TodoWrite", "content": "ok"},
]
TARGET = ("edit_file", {"old_string": "round(x)", "new_string": "round(x, 2)", "file_path": "fees.py"})
EDIT_JSON = (
    '{"name": "edit_file", "arguments": {"file_path": "fees.py", "new_string": "round(x, 2)", '
    '"old_string": "round(x)"}}'
)
READ_JSON = '{"name": "read_file", "arguments": {"file_path": "fees.py"}}'
TODO_JSON = '{"name": "TodoWrite", "arguments": {"todos": []}}'

EXPECTED_TOOLS = {
    "messages": [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": INSTRUCTION},
        {
            "role": "assistant",
            "content": "Reading it.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"file_path":"fees.py"}'},
                },
                {
                    "id": "toolu_2",
                    "type": "function",
                    "function": {"name": "TodoWrite", "arguments": '{"todos":[]}'},
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "toolu_1",
            "name": "read_file",
            "content": "def fee(x):\n    return round(x)",
        },
        {"role": "tool", "tool_call_id": "toolu_2", "name": "TodoWrite", "content": "ok"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_418e6afb",
                    "type": "function",
                    "function": {
                        "name": "edit_file",
                        "arguments": '{"file_path":"fees.py","new_string":"round(x, 2)",'
                        '"old_string":"round(x)"}',
                    },
                }
            ],
        },
    ],
    "tools": tool_specs([*CANONICAL_TOOLS, "TodoWrite"]),
}
EXPECTED_CHAT_HERMES = {
    "messages": [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": INSTRUCTION},
        {
            "role": "assistant",
            "content": f"Reading it.\n\n<tool_call>\n{READ_JSON}\n</tool_call>\n"
            f"<tool_call>\n{TODO_JSON}\n</tool_call>",
        },
        {
            "role": "user",
            "content": "<tool_response>\ndef fee(x):\n    return round(x)\n</tool_response>\n\n"
            "<tool_response>\nok\n</tool_response>",
        },
        {"role": "assistant", "content": f"<tool_call>\n{EDIT_JSON}\n</tool_call>"},
    ]
}
# TRL's conversational tool-calling format: arguments as objects, no content beside the target's call.
EXPECTED_TRL = {
    "messages": [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": INSTRUCTION},
        {
            "role": "assistant",
            "content": "Reading it.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": {"file_path": "fees.py"}},
                },
                {
                    "id": "toolu_2",
                    "type": "function",
                    "function": {"name": "TodoWrite", "arguments": {"todos": []}},
                },
            ],
        },
        EXPECTED_TOOLS["messages"][3],
        EXPECTED_TOOLS["messages"][4],
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_418e6afb",
                    "type": "function",
                    "function": {"name": "edit_file", "arguments": TARGET[1]},
                }
            ],
        },
    ],
    "tools": tool_specs([*CANONICAL_TOOLS, "TodoWrite"]),
}
# The other conventions: (history calls as written, tool results, target as written).
PLAIN_RESULTS = "Tool result (read_file):\ndef fee(x):\n    return round(x)\n\nTool result (TodoWrite):\nok"
WRITTEN = {
    "hermes": (
        f"<tool_call>\n{READ_JSON}\n</tool_call>\n<tool_call>\n{TODO_JSON}\n</tool_call>",
        EXPECTED_CHAT_HERMES["messages"][3]["content"],
        f"<tool_call>\n{EDIT_JSON}\n</tool_call>",
    ),
    "fenced_json": (
        f"```json\n{READ_JSON}\n```\n```json\n{TODO_JSON}\n```",
        PLAIN_RESULTS,
        f"```json\n{EDIT_JSON}\n```",
    ),
    "bare_json": (f"{READ_JSON}\n{TODO_JSON}", PLAIN_RESULTS, EDIT_JSON),
}


def expected_record(fmt: str, convention: str) -> dict[str, Any]:
    if fmt == "tools":
        return EXPECTED_TOOLS
    if fmt == "trl":
        return EXPECTED_TRL
    calls, results, target = WRITTEN[convention]
    if fmt == "chat":
        return {
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": INSTRUCTION},
                {"role": "assistant", "content": f"Reading it.\n\n{calls}"},
                {"role": "user", "content": results},
                {"role": "assistant", "content": target},
            ]
        }
    prompt = (
        f"### System\n{SYSTEM}\n\n### User\n{INSTRUCTION}\n\n### Assistant\nReading it.\n\n{calls}\n\n"
        f"### User\n{results}"
    )
    return {"prompt": prompt, "completion": target}


def config(fmt: str, convention: str = "hermes", **fields: Any) -> RenderConfig:
    return RenderConfig(format=fmt, convention=convention, describe_tools=False, **fields)


def test_hermes_chat_is_written_out_in_full() -> None:
    assert render(HISTORY, *TARGET, config("chat")) == EXPECTED_CHAT_HERMES


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_and_convention_renders_the_expected_record(fmt: str, convention: str) -> None:
    record = render(HISTORY, *TARGET, config(fmt, convention))
    assert record == expected_record(fmt, convention)
    again = render(orjson.loads(orjson.dumps(HISTORY)), *TARGET, config(fmt, convention))
    assert canonical_json(again) == canonical_json(record)


def test_the_tools_format_can_write_arguments_as_objects() -> None:
    record = render(HISTORY, *TARGET, config("tools", tool_arguments="object"))
    assert record["messages"][-1]["tool_calls"][0]["function"]["arguments"] == TARGET[1]
    assert record["messages"][2]["tool_calls"][1]["function"]["arguments"] == {"todos": []}
    assert prompt_and_target(record) == prompt_and_target(render(HISTORY, *TARGET, config("tools")))


def test_only_the_used_tools_are_offered_when_asked() -> None:
    record = render(HISTORY, *TARGET, config("tools", offer_all_tools=False))
    assert [spec["function"]["name"] for spec in record["tools"]] == ["TodoWrite", "edit_file", "read_file"]


@pytest.mark.parametrize("fmt", ["chat", "completions"])
def test_text_formats_describe_the_offered_tools_in_the_system_message(fmt: str) -> None:
    record = render(HISTORY, *TARGET, RenderConfig(format=fmt, convention="fenced_json"))
    system = record["messages"][0]["content"] if fmt == "chat" else record["prompt"]
    assert system.startswith(
        f"### System\n{SYSTEM}\n\n# Tools\n\n<tools>\n" if fmt == "completions" else SYSTEM
    )
    for spec in tool_specs([*CANONICAL_TOOLS, "TodoWrite"]):
        assert canonical_json(spec) in system
    assert "write a JSON object in a ```json fenced block" in system


def test_tool_specs_are_precise_for_the_vocabulary_and_permissive_otherwise() -> None:
    specs = tool_specs(["run_shell", "TodoWrite", "read_file", "run_shell"])
    assert [spec["function"]["name"] for spec in specs] == ["TodoWrite", "read_file", "run_shell"]
    assert specs[0] == {
        "type": "function",
        "function": {
            "name": "TodoWrite",
            "description": "The agent's own tool TodoWrite.",
            "parameters": {"type": "object"},
        },
    }
    assert specs[1] == {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file.",
            "parameters": {
                "type": "object",
                "properties": {
                    "file_path": {"type": "string"},
                    "offset": {"type": "integer", "description": "First line to read."},
                    "limit": {"type": "integer", "description": "Number of lines to read."},
                },
                "required": ["file_path"],
            },
        },
    }
    for spec in tool_specs(CANONICAL_TOOLS):
        parameters = spec["function"]["parameters"]
        required = list(CANONICAL_TOOLS[spec["function"]["name"]])
        assert parameters["required"] == required and set(required) <= set(parameters["properties"])
    assert canonical_json(tool_specs(reversed(list(CANONICAL_TOOLS)))) == canonical_json(
        tool_specs(CANONICAL_TOOLS)
    )


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_call_text_reads_back(convention: str) -> None:
    text = call_text(*TARGET, convention)
    assert text == WRITTEN[convention][2]
    assert parse_call_text(text) == TARGET


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_prompt_and_target_match_across_formats_for_one_decision(convention: str) -> None:
    keys = {
        fmt: prompt_and_target(render(HISTORY, *TARGET, RenderConfig(format=fmt, convention=convention)))
        for fmt in FORMATS
    }
    assert keys["chat"] == keys["completions"]
    if convention == "hermes":  # a tools record is read through its hermes chat rendering
        assert keys["tools"] == keys["chat"]
    assert keys["trl"] == keys["tools"]
    target = canonical_json({"name": TARGET[0], "arguments": TARGET[1]})
    assert {key[1] for key in keys.values()} == {target}


@pytest.mark.parametrize("fmt", FORMATS)
def test_prompt_and_target_differ_when_the_target_or_history_differs(fmt: str) -> None:
    cfg = config(fmt)
    prompt, target = prompt_and_target(render(HISTORY, *TARGET, cfg))
    other_prompt, other_target = prompt_and_target(
        render(HISTORY, "run_shell", {"command": "pytest -q"}, cfg)
    )
    assert other_prompt == prompt and other_target != target
    shorter = drop_oldest_turn(HISTORY)
    assert shorter is not None
    assert prompt_and_target(render(shorter, *TARGET, cfg)) == (
        prompt_and_target(render(shorter, *TARGET, cfg))
    )
    assert prompt_and_target(render(shorter, *TARGET, cfg))[0] != prompt


@pytest.mark.parametrize(
    ("fmt", "convention", "length"),
    [
        # message texts + each call's name and arguments JSON + the tools' JSON
        (
            "tools",
            "hermes",
            len(SYSTEM)
            + len(INSTRUCTION)
            + len("Reading it.")
            + len("def fee(x):\n    return round(x)")
            + len("ok")
            + len('read_file{"file_path":"fees.py"}')
            + len('TodoWrite{"todos":[]}')
            + len('edit_file{"file_path":"fees.py","new_string":"round(x, 2)","old_string":"round(x)"}')
            + len(canonical_json(tool_specs([*CANONICAL_TOOLS, "TodoWrite"]))),
        ),
        ("chat", "hermes", sum(len(m["content"]) for m in EXPECTED_CHAT_HERMES["messages"])),
        (
            "completions",
            "bare_json",
            len(expected_record("completions", "bare_json")["prompt"]) + len(EDIT_JSON),
        ),
    ],
)
def test_record_length_counts_characters(fmt: str, convention: str, length: int) -> None:
    assert record_length(render(HISTORY, *TARGET, config(fmt, convention))) == length


def test_drop_oldest_turn_removes_a_call_with_its_results_and_stops_at_the_floor() -> None:
    longer = [
        *HISTORY,
        {"role": "user", "content": "Use two decimals."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c3", "name": "grep_files", "arguments": {}}],
        },
        {"role": "tool", "tool_call_id": "c3", "name": "grep_files", "content": "fees.py:2"},
    ]
    once = drop_oldest_turn(longer)
    assert once == [*HISTORY[:2], *longer[5:]]
    twice = drop_oldest_turn(once or [])
    assert twice == [*HISTORY[:2], *longer[6:]]
    assert drop_oldest_turn(twice or []) == HISTORY[:2]
    assert drop_oldest_turn(HISTORY[:2]) is None


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="format must be one of"):
        RenderConfig(format="sharegpt")
    with pytest.raises(ValueError, match="starts with the system prompt and the instruction, got 1"):
        render(HISTORY[:1], *TARGET)
    with pytest.raises(ValueError, match=r"message 2 must be a dict with a role in .*, got 'function'"):
        render([*HISTORY[:2], {"role": "function", "content": ""}], *TARGET)
    with pytest.raises(ValueError, match=r"needs the columns \['target_arguments'\]"):
        render_row({"messages": "[]", "target_name": "glob"})


# ---- mlx-lm reads the records -----------------------------------------------------------------

# A template that writes the tools, each message and its calls, so masking has a real prefix.
CHAT_TEMPLATE = (
    "{% if tools %}<tools> {% for t in tools %}{{ t.function.name }} {% endfor %}</tools> {% endif %}"
    "{% for m in messages %}<|{{ m.role }}|> {{ m.content }}"
    "{% for c in m.tool_calls or [] %} <call> {{ c.function.name }} {{ c.function.arguments }}{% endfor %}"
    " <|end|> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    words = ["[UNK]", "<|end|>", "<", "|>", "|", ">", "<|", "call", "tools", "system", "user", "assistant"]
    words += [*CANONICAL_TOOLS, "file_path", "fees", "py", "round", "x", "2", "name", "arguments", "{", "}"]
    backend = Tokenizer(
        models.WordLevel({w: i for i, w in enumerate(dict.fromkeys(words))}, unk_token="[UNK]")
    )
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    wrapped = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", eos_token="<|end|>")
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped


def mlx_tokens(record: dict[str, Any], tokenizer: Any) -> tuple[list[int], int]:
    if "prompt" in record:
        dataset: Any = CompletionsDataset([record], tokenizer, "prompt", "completion", mask_prompt=True)
    else:
        dataset = ChatDataset([record], tokenizer, mask_prompt=True)
    tokens, offset = dataset.process(dataset[0])
    return list(tokens), offset


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_mlx_lm_datasets_read_the_records_and_mask_all_but_the_target(
    fmt: str, convention: str, tokenizer: PreTrainedTokenizerFast
) -> None:
    record = render(HISTORY, *TARGET, RenderConfig(format=fmt, convention=convention))
    tokens, offset = mlx_tokens(record, tokenizer)
    assert 0 < offset < len(tokens)
    assert record_length(record, tokenizer) == len(tokens)
    if fmt == "tools":  # the tools reached the template
        assert len(tokens) > len(mlx_tokens({"messages": record["messages"]}, tokenizer)[0])


# ---- a real row of a generated sample-corpus day -------------------------------------------------

DAY = dt.date(2026, 11, 20)


@pytest.fixture(scope="module")
def decision_rows(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    root = tmp_path_factory.mktemp("render_corpus")
    generate_corpus(root / "corpus", CorpusSpec(days=1, end_date=DAY, sessions_per_day=2, seed=7))
    roots = [SourceRoot(source, root / "corpus" / folder) for source, folder in SOURCE_FOLDERS.items()]
    ingest_day(roots, DAY, root / "events.parquet", root / "quarantine.parquet")
    events = pd.read_parquet(root / "events.parquet")
    rows = extract_decision_points(events, mine_trajectories(events))
    assert not rows.empty
    return rows


@pytest.mark.parametrize("fmt", FORMATS)
def test_render_row_on_sample_corpus_rows(
    fmt: str, decision_rows: pd.DataFrame, tokenizer: PreTrainedTokenizerFast, tmp_path: Path
) -> None:
    cfg = RenderConfig(format=fmt)
    keys = set()
    for row in cast(list[dict[str, Any]], decision_rows.to_dict("records")):
        record = render_row(row, cfg)
        assert canonical_json(record) == canonical_json(render_row(row, cfg))
        tokens, offset = mlx_tokens(record, tokenizer)
        assert 0 < offset < len(tokens)
        prompt, target = prompt_and_target(record)
        assert orjson.loads(target) == {
            "name": row["target_name"],
            "arguments": orjson.loads(row["target_arguments"]),
        }
        keys.add((prompt, target))
        if fmt == "tools":
            history = orjson.loads(row["messages"])
            assert record["messages"][:2] == history[:2]
            assert len(record["messages"]) == len(history) + 1
    # Two rows give one key only if they are the same decision.
    assert len(keys) == len(decision_rows.drop_duplicates(["messages", "target_name", "target_arguments"]))


# ---- modes for small models: tool_choice targets, state-summary histories, TRL records -----------


@pytest.mark.parametrize("fmt", FORMATS)
def test_tool_choice_trains_the_tool_name_alone(fmt: str, tokenizer: PreTrainedTokenizerFast) -> None:
    full = render(HISTORY, *TARGET, config(fmt))
    chosen = render(HISTORY, *TARGET, config(fmt, target_mode="tool_choice"))
    prompt, target = prompt_and_target(chosen)
    assert orjson.loads(target) == {"name": "edit_file", "arguments": {}}
    assert prompt_and_target(full)[0] == prompt or fmt != "chat"  # the history is the same
    if fmt in ("tools", "trl"):
        assert chosen["messages"][:-1] == full["messages"][:-1]
        # The offered specs require nothing, so the target is a valid call of its own tools.
        edit = next(s for s in chosen["tools"] if s["function"]["name"] == "edit_file")
        assert edit["function"]["parameters"]["required"] == []
        assert set(edit["function"]["parameters"]["properties"]) >= {"file_path", "old_string"}
    tokens, offset = mlx_tokens(chosen, tokenizer)
    assert 0 < offset < len(tokens) and len(tokens) < len(mlx_tokens(full, tokenizer)[0])


def _turn(call_id: str, name: str, arguments: dict[str, Any], result: str) -> list[dict[str, Any]]:
    """One assistant call and its result, in the neutral history form."""
    call = {"id": call_id, "name": name, "arguments": arguments}
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "name": name, "content": result},
    ]


REFUSAL = "The user doesn't want to proceed with this tool use. The tool use was rejected."
RICH_HISTORY: list[dict[str, Any]] = [
    *HISTORY,
    *_turn("c3", "edit_file", {"file_path": "fees.py", "old_string": "a", "new_string": "b"}, "updated"),
    *_turn(
        "c4",
        "run_shell",
        {"command": "uv run pytest -q tests/test_fees.py"},
        "F.\nFAILED tests/test_fees.py::test_half\n1 failed, 1 passed in 0.05s\n",
    ),
    *_turn("c5", "run_shell", {"command": "git push --force"}, REFUSAL),
    {"role": "user", "content": "Do not push. Round half up instead."},
]
RICH_STATE = "\n".join(
    [
        "Task: Fix the rounding in fees.py",
        "",
        "State so far:",
        "- tool calls made: 5",
        "- last call: run_shell `git push --force`",
        "- files read: fees.py",
        "- files edited: fees.py",
        '- last command: `uv run pytest -q tests/test_fees.py` (failed); its output ends: "1 failed, 1 '
        'passed in 0.05s"',
        f'- guard denials: 1; the last: run_shell `git push --force`: "{REFUSAL}"',
        '- the user added: "Do not push. Round half up instead."',
    ]
)


def test_state_summary_is_the_task_and_a_compact_state() -> None:
    record = render(RICH_HISTORY, *TARGET, config("tools", history="state_summary"))
    system, user, target = record["messages"]
    assert system == {"role": "system", "content": SYSTEM}
    assert user == {"role": "user", "content": RICH_STATE}
    assert target == EXPECTED_TOOLS["messages"][-1]  # the target is unchanged
    assert render(RICH_HISTORY, *TARGET, config("tools", history="state_summary")) == record
    fresh = render(HISTORY[:2], *TARGET, config("tools", history="state_summary"))
    assert fresh["messages"][1]["content"] == f"Task: {INSTRUCTION}\n\nState so far: no tool call made yet."


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_the_state_summary(fmt: str, tokenizer: PreTrainedTokenizerFast) -> None:
    full = render(RICH_HISTORY, *TARGET, config(fmt))
    summary = render(RICH_HISTORY, *TARGET, config(fmt, history="state_summary"))
    prompt, target = prompt_and_target(summary)
    assert target == prompt_and_target(full)[1] and "State so far:" in prompt
    assert READ_JSON in prompt_and_target(full)[0] and READ_JSON not in prompt  # no raw call is left
    assert record_length(summary) < record_length(full)
    tokens, offset = mlx_tokens(summary, tokenizer)
    assert 0 < offset < len(tokens)


def test_trl_records_load_as_trl_documents_them() -> None:
    record = render(RICH_HISTORY, *TARGET, config("trl", target_mode="tool_choice", history="state_summary"))
    assert set(record) == {"messages", "tools"}
    *before, last = record["messages"]
    assert [m["role"] for m in before] == ["system", "user"]
    assert last == {
        "role": "assistant",
        "tool_calls": [
            {"id": "call_b0bd9631", "type": "function", "function": {"name": "edit_file", "arguments": {}}}
        ],
    }
    assert all(isinstance(spec["function"]["parameters"], dict) for spec in record["tools"])
    full = render(RICH_HISTORY, *TARGET, config("trl"))
    calls = [c for m in full["messages"] for c in m.get("tool_calls", [])]
    assert all(isinstance(c["function"]["arguments"], dict) for c in calls)
    assert next(m for m in full["messages"] if m["role"] == "tool") == {
        "role": "tool",
        "tool_call_id": "toolu_1",
        "name": "read_file",
        "content": "def fee(x):\n    return round(x)",
    }


def test_bad_modes_are_named() -> None:
    with pytest.raises(ValueError, match="target_mode must be one of"):
        RenderConfig(target_mode="name_only")
    with pytest.raises(ValueError, match="history must be one of"):
        RenderConfig(history="summary")
