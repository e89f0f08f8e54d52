"""Constrained decoding's cost: the grammar libraries compared, and replay answers constrained vs free.

    python bench/bench_constrained.py                  # llguidance (a dependency) against free decoding
    pip install xgrammar outlines-core && python bench/bench_constrained.py --survey   # all three

Builds the tiny model (`trajectory_pipeline/sample/tiny_model.py`: 2 layers, random weights, a
byte-level BPE tokenizer of 2,048 tokens trained on generated records and the project's sources),
then:

1. `--survey`: for each of llguidance, xgrammar and outlines-core that is installed, the cost of
   the grammar "one call of one of these 9 tools" (the 8 canonical tools of render.tool_specs and
   one free-form tool) in the Hermes convention: compiling it for the tool set, a fresh matcher
   per answer, the token mask per token (median over reference calls of every tool), applying
   the mask to mlx logits, and the whole per answer (matcher, then mask, apply and advance per
   token of a reference call); and the install size of the package with its dependencies.
2. Replay: `generate_answers` on `--cases` prompts, free and constrained (alternating, `--repeat`
   times, medians): milliseconds per answer and per generated token, tokens per answer, and how
   many answers parse into one call of an offered tool.

Prints Markdown; nothing is written.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import json
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from trajectory_pipeline.dataset.render import RenderConfig, render, tool_specs
from trajectory_pipeline.evaluation.answers import parse_answer
from trajectory_pipeline.evaluation.constrained import HERMES, call_grammar, tool_call_processor
from trajectory_pipeline.evaluation.replay import ReplayConfig, generate_answers
from trajectory_pipeline.mining.vocabulary import CANONICAL_TOOLS
from trajectory_pipeline.sample.tiny_model import TinyModelSpec, build_tiny_model, corpus_texts

ROOT = Path(__file__).resolve().parents[1]
WORDS = [
    *("fix", "test", "failing", "module", "parser", "config", "utils"),
    *("main", "server", "client", "handler", "index", "cache", "view"),
]
TOOLS = tool_specs([*CANONICAL_TOOLS, "mcp_search"])
REFERENCE_CALLS = {
    "read_file": {"file_path": "src/cache/index.py", "limit": 40},
    "list_directory": {"directory": "src/server"},
    "glob": {"pattern": "**/*_test.py"},
    "grep_files": {"pattern": "def handler", "path": "src"},
    "edit_file": {"file_path": "src/main.py", "old_string": "x = 1", "new_string": "x = 2"},
    "write_file": {"file_path": "notes.md", "content": "Fix the parser."},
    "apply_patch": {"patch_text": "*** Begin Patch\n*** End Patch"},
    "run_shell": {"command": "pytest -q tests/test_parser.py"},
    "mcp_search": {"query": "parser config", "limit": 5},
}


def records(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """Sessions of reads ending in a shell call, as the tools format renders them."""
    rng = random.Random(seed)
    out = []
    for session in range(count):
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": f"Fix the failing test in {rng.choice(WORDS)}_{session}.py."},
        ]
        for step in range(rng.randint(1, 4)):
            path = f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}_{step}.py"
            call = {"id": f"c{session}-{step}", "name": "read_file", "arguments": {"file_path": path}}
            messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
            content = f"def {rng.choice(WORDS)}(x):\n    return x + {step}\n"
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "name": "read_file", "content": content}
            )
        target = {"command": f"pytest -q tests/test_{rng.choice(WORDS)}.py"}
        record = render(messages, "run_shell", target, RenderConfig())
        record["tools"] = TOOLS
        out.append(record)
    return out


def build_model(folder: Path) -> Path:
    data = folder / "train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records(300)))
    sources = [p.read_text() for p in sorted((ROOT / "trajectory_pipeline").rglob("*.py"))]
    return build_tiny_model(folder / "tiny", [*corpus_texts([data]), *sources], TinyModelSpec())


def sorted_parameters(tool: dict[str, Any]) -> str:
    """A tool's parameters schema with its properties in name order, as constrained.py writes them."""
    schema = dict(tool["function"].get("parameters") or {"type": "object"})
    if "properties" in schema:
        schema["properties"] = dict(sorted(schema["properties"].items()))
    return json.dumps(schema)


def median_us(run: Callable[[], Any], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def install_mb(package: str) -> float:
    """The files of a distribution and of everything it requires (extras and markers aside), in MB."""
    seen: set[str] = set()
    todo = [package]
    total = 0
    while todo:
        name = re.split(r"[ ;<>=!\[~(]", todo.pop(), maxsplit=1)[0].lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        total += sum(f.size or 0 for f in dist.files or [])
        todo += [r for r in dist.requires or [] if "extra ==" not in r]
    return total / 1e6


def apply_mask(logits: Any, bitmask: np.ndarray) -> Any:
    import mlx.core as mx

    allowed = np.unpackbits(bitmask.view(np.uint8), bitorder="little")[: logits.shape[-1]].astype(bool)
    out = mx.where(mx.array(allowed), logits, -float("inf"))
    mx.eval(out)
    return out


def hermes_text(name: str, arguments: dict[str, Any]) -> str:
    body = json.dumps({k: arguments[k] for k in sorted(arguments)}, separators=(",", ":"))
    return f'<tool_call>\n{{"name": "{name}", "arguments": {body}}}\n</tool_call>'


class Library:
    """One grammar library behind a common face: compile the tool set, copy a matcher, mask, advance."""

    name = ""

    def compile(self) -> Any: ...
    def matcher(self, compiled: Any) -> Any: ...
    def mask(self, matcher: Any, bitmask: np.ndarray) -> None: ...
    def advance(self, matcher: Any, token: int) -> None: ...


class LLGuidance(Library):
    name = "llguidance"

    def __init__(self, tokenizer: Any) -> None:
        import llguidance
        import llguidance.hf

        self.ll = llguidance
        hf = tokenizer._tokenizer
        self.tokenizer = llguidance.hf.from_tokenizer(hf, n_vocab=len(hf), eos_token=tokenizer.eos_token_id)

    def compile(self) -> Any:
        def tag(text: str) -> str:
            return f"<[{self.tokenizer.tokenize_str(text, parse_special=True)[0]}]>"

        grammar = self.ll.LLMatcher.grammar_from_lark(call_grammar(TOOLS, HERMES, tag))
        return self.ll.LLMatcher(self.tokenizer, grammar, log_level=0)

    def matcher(self, compiled: Any) -> Any:
        return compiled.deep_copy()

    def mask(self, matcher: Any, bitmask: np.ndarray) -> None:
        matcher.unsafe_compute_mask_ptr(bitmask.ctypes.data, bitmask.nbytes)

    def advance(self, matcher: Any, token: int) -> None:
        assert matcher.consume_token(token), matcher.get_error()


class XGrammar(Library):
    name = "xgrammar"

    def __init__(self, tokenizer: Any) -> None:
        started = time.perf_counter()
        import torch
        import xgrammar

        self.import_seconds = time.perf_counter() - started
        self.xgr, self.torch = xgrammar, torch
        hf = tokenizer._tokenizer
        info = xgrammar.TokenizerInfo.from_huggingface(
            hf, vocab_size=len(hf), stop_token_ids=[tokenizer.eos_token_id]
        )
        self.compiler = xgrammar.GrammarCompiler(info, max_threads=1, cache_enabled=False)
        self.words = (len(hf) + 31) // 32

    def compile(self) -> Any:
        xgr, calls = self.xgr, []
        for tool in TOOLS:
            function = tool["function"]
            schema = sorted_parameters(tool)
            head = json.dumps(f'<tool_call>\n{{"name": "{function["name"]}", "arguments": ')
            calls.append(
                xgr.Grammar.concat(
                    xgr.Grammar.from_ebnf(f"root ::= {head}"),
                    xgr.Grammar.from_json_schema(schema, any_whitespace=False, separators=(",", ":")),
                    xgr.Grammar.from_ebnf('root ::= "}\\n</tool_call>"'),
                )
            )
        return self.compiler.compile_grammar(xgr.Grammar.union(*calls))

    def matcher(self, compiled: Any) -> Any:
        return self.xgr.GrammarMatcher(compiled)

    def mask(self, matcher: Any, bitmask: np.ndarray) -> None:
        tensor = self.torch.from_numpy(bitmask).view(1, -1)
        matcher.fill_next_token_bitmask(tensor)

    def advance(self, matcher: Any, token: int) -> None:
        assert matcher.accept_token(token)


class OutlinesCore(Library):
    name = "outlines-core"

    def __init__(self, tokenizer: Any) -> None:
        import outlines_core
        from outlines_core.json_schema import build_regex_from_schema

        self.oc, self.to_regex = outlines_core, build_regex_from_schema
        hf = tokenizer._tokenizer
        byte_of = {ch: b for b, ch in enumerate(_bytes_to_unicode())}
        added = hf.get_added_vocab()
        vocab: dict[bytes, list[int]] = {}
        for token, index in hf.get_vocab().items():
            if index == tokenizer.eos_token_id:
                continue
            data = token.encode() if token in added else bytes(byte_of[c] for c in token)
            vocab.setdefault(data, []).append(index)
        self.vocabulary = outlines_core.Vocabulary(tokenizer.eos_token_id, vocab)

    def compile(self) -> Any:
        alternatives = []
        for tool in TOOLS:
            function = tool["function"]
            arguments = self.to_regex(sorted_parameters(tool), "")
            head = re.escape(f'{{"name": "{function["name"]}", "arguments": ')
            alternatives.append(f"{head}({arguments})\\}}")
        regex = re.escape("<tool_call>\n") + "(" + "|".join(alternatives) + ")" + re.escape("\n</tool_call>")
        return self.oc.Index(regex, self.vocabulary)

    def matcher(self, compiled: Any) -> Any:
        return self.oc.Guide(compiled)

    def mask(self, matcher: Any, bitmask: np.ndarray) -> None:
        matcher.write_mask_into(bitmask.ctypes.data, bitmask.size, 4)

    def advance(self, matcher: Any, token: int) -> None:
        matcher.advance(token)


def _bytes_to_unicode() -> list[str]:
    """GPT-2's byte-to-character table (byte-level BPE token strings), characters in byte order."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[byte] = chr(byte)
        else:
            chars[byte] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def survey(tokenizer: Any) -> list[str]:
    import mlx.core as mx

    texts = [hermes_text(name, arguments) for name, arguments in REFERENCE_CALLS.items()]
    calls = [tokenizer.encode(text, add_special_tokens=False) for text in texts]
    logits = mx.random.normal((1, len(tokenizer._tokenizer)))
    rows = []
    for kind, package in (
        (LLGuidance, "llguidance"),
        (XGrammar, "xgrammar"),
        (OutlinesCore, "outlines-core"),
    ):
        try:
            library = kind(tokenizer)
        except ImportError:
            rows.append(f"| {package} | not installed | | | | | |")
            continue
        compiled = library.compile()
        compile_ms = median_us(library.compile, 3) / 1e3
        matcher_us = median_us(lambda: library.matcher(compiled), 50)  # noqa: B023
        bitmask = np.zeros((len(tokenizer._tokenizer) + 31) // 32, dtype=np.int32)
        masks, applies, answers = [], [], []
        for tokens in calls:
            started = time.perf_counter()
            matcher = library.matcher(compiled)
            for token in tokens:
                t0 = time.perf_counter()
                library.mask(matcher, bitmask)
                t1 = time.perf_counter()
                apply_mask(logits, bitmask)
                t2 = time.perf_counter()
                if not (bitmask.view(np.uint32)[token // 32] >> (token % 32)) & 1:
                    done = tokenizer.decode(tokens[: tokens.index(token)])
                    raise AssertionError(f"{library.name} masks {token} after {done!r}")
                library.advance(matcher, token)
                masks.append(t1 - t0)
                applies.append(t2 - t1)
            answers.append(time.perf_counter() - started)
        version = metadata.version(package)
        size = f"{install_mb(package):,.0f}"
        rows.append(
            f"| {package} {version} | {compile_ms:.1f} | {matcher_us:.0f} | "
            f"{statistics.median(masks) * 1e6:.1f} | {statistics.median(applies) * 1e6:.0f} | "
            f"{statistics.median(answers) * 1e3:.2f} | {size} |"
        )
    tokens = statistics.median(len(c) for c in calls)
    return [
        f"Grammar survey: 9 tools (Hermes), tokenizer of {len(tokenizer._tokenizer)} tokens, "
        f"reference calls of {tokens:.0f} tokens (median).",
        "",
        "| library | compile (ms) | new matcher (µs) | mask per token (µs) | apply to mlx (µs) "
        "| per answer, no model (ms) | install with dependencies (MB) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]


def synthetic_prompts(tokenizer: Any, cases: int) -> tuple[list[list[int]], list[Any]]:
    chosen = records(cases, seed=1)
    prompts = [
        list(tokenizer.apply_chat_template(r["messages"][:-1], tools=r["tools"], add_generation_prompt=True))
        for r in chosen
    ]
    return prompts, [r["tools"] for r in chosen]


def demo_prompts(tokenizer: Any, warehouse: Path, cases: int) -> tuple[list[list[int]], list[Any]]:
    """The demo window's holdout cases, as replay_eval picks them."""
    from demo_window import window_rows  # bench/demo_window.py, beside this script

    from trajectory_pipeline.evaluation.replay import prompt_tokens, select_cases

    rows = window_rows(warehouse)
    if rows is None:
        raise SystemExit(f"no rendered_splits under {warehouse}: run `make demo` first")
    config = ReplayConfig(holdout_cases=cases, seen_exact_cases=0, seen_variant_cases=0)
    chosen = select_cases(rows, config)
    return [prompt_tokens(tokenizer, case) for case in chosen], [case.tools for case in chosen]


def valid_call(text: str, tools: list[dict[str, Any]] | None) -> bool:
    """One call of an offered tool with its required arguments."""
    calls = parse_answer(text).calls
    offered = {t["function"]["name"]: t["function"].get("parameters") or {} for t in tools or TOOLS}
    if len(calls) != 1 or calls[0].name not in offered:
        return False
    return set(offered[calls[0].name].get("required", [])) <= set(calls[0].arguments)


def replay(
    model: Any, tokenizer: Any, prompts: list[list[int]], tools: list[Any], repeat: int, max_tokens: int
) -> list[str]:
    lines = [
        f"Replay on {len(prompts)} prompts ({statistics.median(len(p) for p in prompts):.0f} tokens, "
        f"median), max_tokens {max_tokens}, medians of {repeat} alternating runs:",
        "",
        "| strategy | decoding | ms per answer | ms per generated token | tokens per answer "
        "| valid calls | grammar ms per answer | answers closed by the budget |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for strategy in ("prompt_cache", "one_at_a_time"):
        runs: dict[str, list[Any]] = {"free": [], "constrained": []}
        for _ in range(repeat):
            for decoding in runs:
                config = ReplayConfig(max_tokens=max_tokens, strategy=strategy, decoding=decoding)
                runs[decoding].append(generate_answers(model, tokenizer, prompts, config, tools=tools))
        for decoding, results in runs.items():
            answers = results[0][0]
            per_answer = statistics.median(t.seconds / t.cases for _, t in results) * 1e3
            per_token = statistics.median(t.seconds / max(t.generated_tokens, 1) for _, t in results) * 1e3
            tokens = statistics.mean(a.generated_tokens for a in answers)
            valid = sum(1 for a, t in zip(answers, tools, strict=True) if valid_call(a.text, t))
            grammar = statistics.median(t.extra.get("constraint_seconds", 0.0) / t.cases for _, t in results)
            closed = int(results[0][1].extra.get("closed_by_budget", 0))
            grammar_cell = f"{grammar * 1e3:.1f}" if decoding == "constrained" else "—"
            closed_cell = str(closed) if decoding == "constrained" else "—"
            lines.append(
                f"| {strategy} | {decoding} | {per_answer:.0f} | {per_token:.2f} | {tokens:.0f} "
                f"| {valid}/{len(answers)} | {grammar_cell} | {closed_cell} |"
            )
    return [*lines, ""]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--survey", action="store_true", help="compare llguidance, xgrammar, outlines-core")
    parser.add_argument("--cases", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=ReplayConfig().max_tokens)
    parser.add_argument(
        "--demo",
        type=Path,
        help="a `trajectory-pipeline demo` folder (e.g. data): replay its holdout cases with its "
        "learned tiny model and adapter instead of random weights and generated prompts",
    )
    args = parser.parse_args()
    import mlx_lm

    print(
        f"# Constrained decoding on the tiny model ({platform.machine()}, {platform.system()}, "
        f"Python {platform.python_version()}, mlx-lm {metadata.version('mlx-lm')})\n"
    )
    if args.demo is not None:
        adapters = sorted((args.demo / "artifacts" / "adapters").glob("*/adapter/adapters.safetensors"))
        adapter = str(adapters[-1].parent) if adapters else None
        model, tokenizer = mlx_lm.load(str(args.demo / "tiny-model"), adapter_path=adapter)[:2]
        prompts, tools = demo_prompts(tokenizer, args.demo / "warehouse", args.cases)
        print(f"The demo's learned tiny model with adapter {adapter}.\n")
    else:
        with tempfile.TemporaryDirectory() as folder:
            model, tokenizer = mlx_lm.load(str(build_model(Path(folder))))[:2]
        prompts, tools = synthetic_prompts(tokenizer, args.cases)
        print("The tiny model with random weights, on generated prompts.\n")
    if args.survey:
        print("\n".join(survey(tokenizer)))
    for offered in {
        json.dumps(t, sort_keys=True) for t in tools
    }:  # compile as a replay run's first case does
        tool_call_processor(tokenizer, json.loads(offered))
    print("\n".join(replay(model, tokenizer, prompts, tools, args.repeat, args.max_tokens)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
