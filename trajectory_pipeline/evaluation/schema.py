"""The replay eval's vocabulary: models, lanes, and the columns of one scored answer.

Shared by the answer parser (`answers.py`), the scorer (`scoring.py`), the runner
(`replay.py`) and the summary and report (`eval_report.py`), so each reads the same names.
Rows hold no wall-clock values (the same inputs give the same rows); latency and tokens/second
go to the asset's metadata and the report.
"""

from __future__ import annotations

import pyarrow as pa

# The models compared on the same cases in one run.
BASE, CANDIDATE, PROMOTED = "base", "candidate", "promoted"
MODELS = (BASE, CANDIDATE, PROMOTED)

# Lanes: held-out sessions (the headline), training decisions, and test-split instances of
# workflow families the adapter trained on.
HOLDOUT, SEEN_EXACT, SEEN_VARIANT = "holdout", "seen-exact", "seen-variant"
LANES = (HOLDOUT, SEEN_EXACT, SEEN_VARIANT)

# Selectors: the model's own answer (`none`, what promotion is decided on), or that answer put
# through the action memory (`memory`, evaluation/memory.py), scored side by side.
NONE, MEMORY = "none", "memory"
SELECTORS = (NONE, MEMORY)

RAW_TEXT_CHARS = 2_000  # the raw answer kept per case, head and tail

EVAL_RESULT_SCHEMA = pa.schema(
    [
        ("model", pa.string()),  # one of MODELS
        ("adapter_id", pa.string()),  # null for the base model
        ("selector", pa.string()),  # one of SELECTORS: the scored call is the answer's, or memory's
        ("lane", pa.string()),  # one of LANES
        ("decision_id", pa.string()),
        ("session_id", pa.string()),
        ("source", pa.string()),
        ("family_id", pa.string()),
        ("target_name", pa.string()),  # canonical vocabulary
        ("target_arguments", pa.large_string()),  # canonical JSON
        ("action_class", pa.string()),
        ("decisive", pa.bool_()),
        ("sample", pa.int64()),  # 0 .. samples-1
        ("raw_text", pa.large_string()),  # capped to RAW_TEXT_CHARS
        ("starts_with_json", pa.bool_()),
        ("thinking_preamble", pa.bool_()),
        ("parsed", pa.bool_()),  # at least one call was parsed
        ("calls", pa.int64()),  # calls parsed from the answer
        ("predicted_name", pa.string()),  # canonical name of the first call; null when none
        ("predicted_arguments", pa.large_string()),  # canonical JSON; null when none
        ("name_match", pa.bool_()),
        ("required_present", pa.bool_()),
        ("target_match", pa.bool_()),
        ("exact_match", pa.bool_()),
        ("arg_shape", pa.float64()),  # 0..1
        ("param_names_match", pa.bool_()),
        ("param_values_match", pa.bool_()),
        ("passed", pa.bool_()),
        ("failure", pa.string()),  # null when passed; else one reason of scoring.FAILURES
        ("candidates", pa.int64()),  # remembered calls of the repository and tool weighed (0: none)
        ("from_memory", pa.bool_()),  # the scored call is a remembered one, not the answer's
        ("oracle", pa.bool_()),  # the answer's call or a candidate passes: the best a selector could do
        ("prompt_tokens", pa.int64()),
        ("generated_tokens", pa.int64()),
    ]
)
EVAL_COLUMNS = tuple(EVAL_RESULT_SCHEMA.names)
