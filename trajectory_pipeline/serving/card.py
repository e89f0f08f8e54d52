"""The fused model's card (`README.md` in its folder): where it came from, how it scored, how to run it.

Written from the registry's record alone (window, losses, the replay eval's summary), so the card
says exactly what promoted the model; the commands are the ones a user types, with the folder's path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trajectory_pipeline.training.registry import AdapterRecord

DEFAULT_PORT = 8080


def model_card(
    record: AdapterRecord, folder: Path, architecture: str, gguf_path: Path | None, gguf_note: str | None
) -> str:
    """The card's Markdown for the fused model of `record` in `folder`."""
    window = record.data_window
    span = f"{window[0]} .. {window[-1]} ({len(window)} days with data)" if window else "(no days)"
    summary = record.eval_summary or {}
    lines = [
        f"# {record.adapter_id}: fused tool-call model",
        "",
        f"The LoRA adapter `{record.adapter_id}` (week {record.partition}) fused into its base model "
        f"`{record.base_model}` ({architecture}) with mlx-lm's fuse, after the replay eval promoted it: "
        f"{summary.get('reason', 'no reason recorded')}.",
        "",
        "## Training",
        "",
        f"- window: {span}",
        f"- dataset hash: `{record.dataset_hash}`",
        f"- best validation loss: {_number(record.best_val_loss)} (iteration {record.best_iteration})",
        f"- adapter: `{record.artifact_path}`",
        "",
        "## Replay eval",
        "",
        *_eval_table(summary),
        "",
        "## Run it",
        "",
        "```",
        f"mlx_lm.generate --model {folder} --prompt 'Run the tests' --max-tokens 128",
        f"mlx_lm.server --model {folder} --host 127.0.0.1 --port {DEFAULT_PORT}",
        f"trajectory-pipeline serve   # the registry's promoted model on 127.0.0.1:{DEFAULT_PORT}",
        "```",
        "",
        "The server speaks OpenAI's chat completions API; pass `tools` and read `tool_calls`:",
        "",
        "```",
        f"curl -s http://127.0.0.1:{DEFAULT_PORT}/v1/chat/completions -H 'Content-Type: application/json' \\",
        """  -d '{"messages": [{"role": "user", "content": "Run the tests"}], "tools": [...]}'""",
        "```",
        "",
        "## GGUF and Ollama",
        "",
    ]
    if gguf_path is not None:
        lines += [
            f"`{gguf_path.name}` (mlx-lm's converter) and an Ollama `Modelfile` sit beside the weights:",
            "",
            "```",
            f"cd {folder} && ollama create {record.adapter_id} -f Modelfile",
            f"ollama run {record.adapter_id}",
            "```",
        ]
    else:
        lines.append(gguf_note or "Not exported (promoted_model's `gguf: true` writes it where mlx-lm can).")
    return "\n".join(lines) + "\n"


def _eval_table(summary: dict[str, Any]) -> list[str]:
    lanes: dict[str, dict[str, dict[str, Any]]] = summary.get("lanes") or {}
    if not lanes:
        return ["No eval summary recorded."]
    scored_on = summary.get("scored_on")
    rows = ["| lane | model | cases | pass rate | decisive pass rate |", "| --- | --- | --- | --- | --- |"]
    for lane, models in lanes.items():
        for model, figures in models.items():
            rows.append(
                f"| {lane} | {model} | {figures.get('cases')} | {_pct(figures.get('pass_rate'))} "
                f"| {_pct(figures.get('decisive_pass_rate'))} |"
            )
    return ([f"Scored on: {scored_on}.", ""] if scored_on else []) + rows


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"
