"""Secret canaries: unique planted secrets of every kind the redactor supports must not survive
ingestion into any Parquet column, the mlx-lm data files or the replay eval report.

A small sample corpus is generated in all four formats, then rewritten line by line: canaries go
into user text, tool inputs (a command line, a written file), tool results (command output, a file
shown by a read) and assistant text. The corpus goes through raw_sessions ... rendered_splits,
lora_adapter and replay_eval on the tiny model, and every output is scanned for each exact canary,
its identifying parts and patterns written here, independent of `trajectory_pipeline.ingest.redact`.

    .venv/bin/pytest tests/reliability/test_secret_canaries.py -m slow
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import string
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.assets.sample_window import ingest_sample_window, train_and_evaluate

pytestmark = pytest.mark.slow  # about 30 s: ingestion, two training steps and a replay eval

PER_VARIANT = 50
SEED = 8
UPPER_DIGITS = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


@dataclass(frozen=True)
class Canary:
    kind: str  # the redactor's kind that should catch it
    variant: str  # the shape: ghp_, gho_, github_pat_, ...
    text: str  # the line planted into a transcript, secret in context
    secret: str  # the secret value itself
    parts: tuple[str, ...]  # identifying substrings: any of them in an output is a leak


def _pick(rng: random.Random, chars: str, n: int) -> str:
    """n characters of `chars`, with a digit and a capital where `chars` has them, so that no
    value could pass for an identifier or a word."""
    wants = [group for group in (string.digits, string.ascii_uppercase) if set(group) & set(chars)]
    while True:
        value = "".join(rng.choice(chars) for _ in range(n))
        if all(set(group) & set(value) for group in wants):
            return value


def _b64url(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def _pem(rng: random.Random, label: str) -> tuple[str, tuple[str, ...]]:
    lines = [base64.b64encode(rng.randbytes(48)).decode() for _ in range(5)]
    block = f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"
    return block, tuple(lines)


def _variants() -> dict[str, tuple[str, Callable[[random.Random], tuple[str, str, tuple[str, ...]]]]]:
    """variant -> (kind, make(rng) -> (line, secret, identifying parts))."""

    def token(line: str, secret: str, tail: str) -> tuple[str, str, tuple[str, ...]]:
        return line.replace("{}", secret), secret, (secret, tail)

    def pem(label: str) -> Callable[[random.Random], tuple[str, str, tuple[str, ...]]]:
        def make(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
            block, lines = _pem(rng, label)
            return block, block, lines

        return make

    def jwt(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        payload = _b64url({"sub": _pick(rng, ALNUM, 12), "iat": rng.randrange(1_600_000_000, 1_800_000_000)})
        signature = _pick(rng, URLSAFE, 43)
        value = f"{_b64url({'alg': 'HS256', 'typ': 'JWT'})}.{payload}.{signature}"
        return f"curl -H 'X-Session: {value}' https://api.internal/me", value, (payload, signature)

    def basic(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        cred = base64.b64encode(f"svc-{_pick(rng, ALNUM, 6)}:{_pick(rng, ALNUM, 18)}".encode()).decode()
        return f"Authorization: Basic {cred}", cred, (cred,)

    def simple(
        kind: str, line: str, prefix: str, chars: str, n: int, suffix: str = ""
    ) -> tuple[str, Callable[[random.Random], tuple[str, str, tuple[str, ...]]]]:
        def make(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
            tail = _pick(rng, chars, n)
            while tail[0] in "/%":  # the known gaps (GAPS) are planted on their own
                tail = _pick(rng, chars, n)
            if "{{" in line:  # a line that is a format string itself
                return (
                    line.format(prefix + tail + suffix),
                    prefix + tail + suffix,
                    (prefix + tail + suffix, tail),
                )
            return token(line, prefix + tail + suffix, tail)

        return kind, make

    def github_pat(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        head, tail = _pick(rng, ALNUM, 20), _pick(rng, ALNUM, 59)
        value = f"github_pat_11{head}_{tail}"
        return f"use {value} for the bot", value, (head, tail)

    def sendgrid(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        head, tail = _pick(rng, URLSAFE, 22), _pick(rng, URLSAFE, 43)
        value = f"SG.{head}.{tail}"
        return f"sg = SendGridAPIClient('{value}')", value, (head, tail)

    def twilio(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        sid, auth = "".join(rng.choice(HEX) for _ in range(32)), "".join(rng.choice(HEX) for _ in range(32))
        return f'client = Client("AC{sid}", "{auth}")', "AC" + sid, (sid, auth)

    def telegram(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        bot, tail = str(rng.randrange(10**8, 10**10)), _pick(rng, URLSAFE, 33)
        value = f"{bot}:AA{tail}"
        return f"curl https://api.telegram.org/bot{value}/getMe", value, (tail,)

    def azure_sas(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        sig = (
            base64.b64encode(rng.randbytes(32))
            .decode()
            .replace("+", "%2B")
            .replace("/", "%2F")
            .replace("=", "%3D")
        )
        url = f"https://st{rng.randrange(10, 99)}.blob.core.windows.net/c/f.bin?sv=2023-01-03&sp=r&sig={sig}"
        return f"curl -o f.bin '{url}'", sig, (sig[:24],)

    def docker_auth(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        value = base64.b64encode(f"ci-{_pick(rng, ALNUM, 5)}:{_pick(rng, ALNUM, 20)}".encode()).decode()
        return '{"auths": {"ghcr.io": {"auth": "' + value + '"}}}', value, (value[:24],)

    def gcp_key_id(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        value = "".join(rng.choice(HEX) for _ in range(40))
        return f'"private_key_id": "{value}",', value, (value,)

    def cookie(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        value = _pick(rng, ALNUM, 24)
        return f"Cookie: sessionid={value}; theme=dark", value, (value,)

    def phone(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        digits = str(rng.randrange(10**7, 10**8))
        return f"on-call: +49 30 {digits} (office)", digits, (f"30 {digits}",)

    def ssn(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        area = rng.choice([n for n in range(100, 900) if n != 666])
        value = f"{area}-{rng.randrange(10, 100)}-{rng.randrange(1000, 10000)}"
        return f"ssn: {value}", value, (value,)

    def nino(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        prefix = rng.choice(["AB", "JG", "NY", "SC", "WP", "YZ"])
        pairs = " ".join(f"{rng.randrange(100):02d}" for _ in range(3))
        value = f"{prefix} {pairs} {rng.choice('ABCD')}"
        return f"NI number: {value}", value, (value,)

    def steuer_id(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        body = str(rng.randrange(10**9, 10**10))
        product = 10  # ISO 7064 MOD 11,10
        for d in map(int, body):
            product = ((d + product) % 10 or 10) * 2 % 11
        value = body + str((11 - product) % 10)
        return f"Steuer-ID: {value} (Lohnsteuer)", value, (value,)

    def fr_phone(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        separator = rng.choice(" .")
        value = rng.choice(["06", "07"]) + "".join(f"{separator}{rng.randrange(100):02d}" for _ in range(4))
        return f"portable : {value}", value, (value,)

    def uk_phone(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        value = f"07{rng.randrange(100, 1000)} {rng.randrange(100_000, 1_000_000)}"
        return f"mobile: {value} after six", value, (value,)

    def card(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        body = "4" + "".join(rng.choice(string.digits) for _ in range(14))
        total = sum(
            d if i % 2 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(map(int, reversed(body)))
        )
        value = body + str(-total % 10)
        return f"card {value} exp 12/29", value, (value,)

    def age(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        tail = "".join(rng.choice(BECH32) for _ in range(58))
        return "AGE-SECRET-KEY-1" + tail, tail, (tail,)

    def pem_base64(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        block, _ = _pem(rng, "EC PRIVATE KEY")
        value = base64.b64encode(block.encode()).decode()
        return f"tls.key: {value}", value, (value[20:60], value[-40:])

    def mysql(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        value = _pick(rng, ALNUM, 16)
        return f"mysql -h db -u app -p{value} shop", value, (value,)

    def url_at(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        head, tail = _pick(rng, ALNUM, 8), _pick(rng, ALNUM, 10)
        value = f"{head}@{tail}"
        return f"DATABASE_URL=postgres://app:{value}@db.internal:5432/app", value, (head, tail)

    def dollar(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        value = "$" + _pick(rng, string.ascii_letters, 3) + str(rng.randrange(1, 9)) + _pick(rng, ALNUM, 14)
        return f"ADMIN_PASSWORD={value}", value, (value[1:],)

    def tilde(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        name = (
            "u" + "".join(rng.choice(string.ascii_lowercase) for _ in range(7)) + str(rng.randrange(10, 99))
        )
        return f"cp build.log ~{name}/logs/", name, ("~" + name,)

    def id_output(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        name = (
            "u" + "".join(rng.choice(string.ascii_lowercase) for _ in range(7)) + str(rng.randrange(10, 99))
        )
        uid = rng.randrange(1000, 2000)
        return f"uid={uid}({name}) gid={uid}({name}) groups={uid}({name}),27(sudo)", name, (f"({name})",)

    def email(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        local = rng.choice(["jo", "mia", "li", "sam"]) + "." + _pick(rng, string.ascii_lowercase, 6)
        local += str(rng.randrange(1000, 9999))
        value = f"{local}@northwind-{rng.randrange(100, 999)}.io"
        return f"ping {value} about the rollout", value, (local + "@",)

    def home(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
        name = (
            "u" + "".join(rng.choice(string.ascii_lowercase) for _ in range(7)) + str(rng.randrange(10, 99))
        )
        return f"cat /home/{name}/.config/app.toml", name, ("/home/" + name,)

    return {
        "pem_rsa": ("private_key", pem("RSA PRIVATE KEY")),
        "pem_openssh": ("private_key", pem("OPENSSH PRIVATE KEY")),
        "jwt": ("jwt", jwt),
        "akia": simple("aws_access_key", "export AWS_ACCESS_KEY_ID={}", "AKIA", UPPER_DIGITS, 16),
        "asia": simple("aws_access_key", "aws_access_key_id = {}", "ASIA", UPPER_DIGITS, 16),
        "aws_secret": simple("aws_secret_key", "aws_secret_access_key = {}", "", ALNUM + "/+", 40),
        "ghp": simple("github_token", "git clone https://x:{}@github.com/acme/app", "ghp_", ALNUM, 36),
        "gho": simple("github_token", "GH_TOKEN={} gh pr list", "gho_", ALNUM, 36),
        "ghs": simple("github_token", "token {}", "ghs_", ALNUM, 36),
        "github_pat": ("github_token", github_pat),
        "glpat": simple("gitlab_token", "export CI_JOB_TOKEN={}", "glpat-", ALNUM, 20),
        "anthropic": simple("anthropic_key", "ANTHROPIC_API_KEY={}", "sk-ant-api03-", URLSAFE, 93, "AA"),
        "openai_proj": simple("openai_key", 'client = OpenAI(api_key="{}")', "sk-proj-", URLSAFE, 120),
        "openai_legacy": simple("openai_key", "openai.api_key = '{}'", "sk-", ALNUM, 48),
        "xoxb": simple(
            "slack_token",
            "SLACK_BOT_TOKEN={}",
            "xoxb-",
            string.digits,
            12,
            "-1234567890123-Ab3dEf6hIj9kLm2nOp5qRs8t",
        ),
        "xoxp": simple("slack_token", "slack.WebClient({})", "xoxp-", ALNUM, 40),
        "slack_webhook": simple(
            "slack_webhook",
            "curl -X POST https://hooks.slack.com/services/{}",
            "T0AB12CD3/B0EF45GH6/",
            ALNUM,
            24,
        ),
        "google": simple("google_api_key", 'maps.init("{}")', "AIza", URLSAFE, 35),
        "sk_live": simple("stripe_key", "stripe.api_key = {}", "sk_live_", ALNUM, 40),
        "rk_live": simple("stripe_key", "STRIPE_RESTRICTED={}", "rk_live_", ALNUM, 40),
        "whsec": simple("stripe_key", "endpoint secret {}", "whsec_", ALNUM, 32),
        "npm": simple("npm_token", "//registry.npmjs.org/:_authToken={}", "npm_", ALNUM, 36),
        "hf": simple(
            "huggingface_token", "huggingface-cli login --token {}", "hf_", string.ascii_letters, 34
        ),
        "bearer": simple(
            "bearer_token",
            "curl -H 'Authorization: Bearer {}' https://api.internal/v1",
            "",
            ALNUM + "._-",
            40,
        ),
        "basic": ("auth_header", basic),
        "url_password": simple(
            "url_password", "DATABASE_URL=postgres://app:{}@db.internal:5432/app", "", ALNUM, 20
        ),
        "password_assign": simple("password", "password={}", "", ALNUM + "!%^*", 18),
        "password_json": simple("password", '{"db_password": "{}"}', "", ALNUM + "!%^*", 18),
        "secret_assign": simple("secret", "CLIENT_SECRET={}", "", ALNUM, 32),
        "secret_flag": simple("secret", "deploy --api-key {}", "", ALNUM, 28),
        "email": ("email", email),
        "home_user": ("home_user", home),
        # Kinds added after the planted-secrets audit, and the shapes that leaked in it.
        "sendgrid": ("sendgrid_key", sendgrid),
        "twilio": ("twilio_key", twilio),
        "pypi": simple(
            "pypi_token", "twine upload -u __token__ -p {} dist/*", "pypi-AgEIcHlwaS5vcmc", URLSAFE, 120
        ),
        "digitalocean": simple("digitalocean_token", "export DO_TOKEN={}", "dop_v1_", HEX, 64),
        "databricks": simple("databricks_token", 'cfg = {{"pat": "{}"}}', "dapi", HEX, 32),
        "telegram": ("telegram_token", telegram),
        "vault": simple("vault_token", "vault login {}", "hvs.", URLSAFE, 90),
        "azure_sas": ("azure_sas", azure_sas),
        "docker_auth": ("docker_auth", docker_auth),
        "gcp_key_id": ("gcp_key_id", gcp_key_id),
        "cookie": ("session_cookie", cookie),
        "phone": ("phone", phone),
        "ssn": ("national_id", ssn),
        # National formats without a country code, and a German tax id next to its label.
        "nino": ("national_id", nino),
        "steuer_id": ("national_id", steuer_id),
        "fr_phone": ("phone", fr_phone),
        "uk_phone": ("phone", uk_phone),
        "card": ("payment_card", card),
        "age": ("private_key", age),
        "pem_base64": ("private_key", pem_base64),
        "mysql_flag": ("password", mysql),
        "dollar_literal": ("password", dollar),
        "url_password_at": ("url_password", url_at),
        "tilde": ("home_user", tilde),
        "id_output": ("home_user", id_output),
    }


def make_canaries(seed: int = SEED, per_variant: int = PER_VARIANT) -> list[Canary]:
    """`per_variant` distinct canaries of every variant, drawn from one seeded stream."""
    rng = random.Random(seed)
    canaries: list[Canary] = []
    seen: set[str] = set()
    for variant, (kind, make) in _variants().items():
        made = 0
        while made < per_variant:
            line, secret, parts = make(rng)
            if secret in seen:
                continue
            seen.add(secret)
            canaries.append(Canary(kind, variant, line, secret, parts))
            made += 1
    return canaries


# Shapes that once leaked (found by this test, since fixed in redact.py), planted end to end beside
# the canaries, which avoid them: test_shapes_that_once_leaked_are_redacted keeps them fixed.
GAPS = {
    # An AWS secret key may start with "/" (1 in 64 do); it was judged a path and kept.
    "aws_secret_key_leading_slash": Canary(
        "aws_secret_key",
        "gap",
        "aws_secret_access_key = /x38Tr2ZjlnIqGOOrj82daCWRc/So7ZApCkn7/1f",
        "/x38Tr2ZjlnIqGOOrj82daCWRc/So7ZApCkn7/1f",
        ("x38Tr2ZjlnIqGOOrj82daCWRc",),
    ),
    # Only `%X%`-style values are templates; any value starting with "%" was kept.
    "password_leading_percent": Canary(
        "password", "gap", "password=%5kGPBffuFYKz!910b", "%5kGPBffuFYKz!910b", ("5kGPBffuFYKz!910b",)
    ),
    # From the planted-secrets audit: a literal that starts with "/" was judged a path, a
    # ";" ended a password, a token cut before its closing quote was kept.
    "password_leading_slash": Canary(
        "password", "gap", "VAULT_PASSWORD=/Zq8vK2mW9xLp4Tb7", "/Zq8vK2mW9xLp4Tb7", ("Zq8vK2mW9xLp4Tb7",)
    ),
    "password_semicolon": Canary(
        "password", "gap", "DB_PASSWORD=Hx4;mP2vL8qW4zR7Tn", "Hx4;mP2vL8qW4zR7Tn", ("mP2vL8qW4zR7Tn",)
    ),
    "token_cut_before_its_quote": Canary(
        "openai_key",
        "gap",
        'client = OpenAI(api_key="sk-proj-Wq7Lm2Xz9Kp4Rv8T',
        "sk-proj-Wq7Lm2Xz9Kp4Rv8T",
        ("Wq7Lm2Xz9Kp4Rv8T",),
    ),
}


# --- Planting ----------------------------------------------------------------------------
# String fields that hold text a person or a tool wrote: user and assistant text, commands,
# written files, command output and files shown by a read, in all four formats.
TEXT_KEYS = frozenset(
    {
        "content",  # Claude Code and chat messages, tool results, Write's file; own agent messages
        "text",  # Claude Code and Codex text blocks
        "message",  # Codex user_message / agent_message
        "command",  # Bash / run_command inputs, Codex exec_command_end
        "cmd",  # Codex exec_command arguments
        "output",  # Codex function_call_output, own agent tool results
        "aggregated_output",
        "stdout",
        "new_string",  # Edit inputs
        "old_string",
        "decision",
    }
)
JSON_STRING_KEYS = frozenset({"arguments"})  # Codex and chat tool arguments: JSON in a string


def _rewrite(value: Any, key: str, visit: Callable[[str, str], str]) -> Any:
    """`value` with every text field passed through `visit(key, text)`."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in JSON_STRING_KEYS and isinstance(v, str):
                try:
                    parsed = json.loads(v)
                except json.JSONDecodeError:
                    out[k] = v
                    continue
                out[k] = json.dumps(_rewrite(parsed, k, visit), ensure_ascii=False, separators=(",", ":"))
            else:
                out[k] = _rewrite(v, k, visit)
        return out
    if isinstance(value, list):
        return [_rewrite(v, key, visit) for v in value]
    # Whitespace marks text; ids, paths, times and type names have none.
    if isinstance(value, str) and key in TEXT_KEYS and any(c.isspace() for c in value):
        return visit(key, value)
    return value


def _lines(path: Path) -> Iterator[tuple[int, Any]]:
    """Each line that parses as a JSON object; malformed lines are left as they are."""
    for i, raw in enumerate(path.read_bytes().split(b"\n")):
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(obj, dict):
            yield i, obj


SOURCE_OF = {"claude": "claude_code", "codex": "codex", "agent_logs": "own_agent", "chat": "chat_jsonl"}


class _Appender:
    """Appends the canaries chosen for the n-th text field of a line to that field."""

    def __init__(self, chosen: dict[int, list[Canary]], tally: Counter[str]) -> None:
        self.chosen, self.tally, self.n = chosen, tally, -1

    def __call__(self, key: str, text: str) -> str:
        self.n += 1
        extra = self.chosen.get(self.n, [])
        self.tally.update(f"{c.kind}@{key}" for c in extra)
        return "\n".join([text, *(c.text for c in extra)])


def plant(corpus: Path, canaries: list[Canary]) -> dict[str, Counter[str]]:
    """Appends the canaries, in turn, to the corpus' text fields; returns, per source, how many
    canaries of each kind went into each field (`"jwt@command"`)."""
    files = sorted(corpus.rglob("*.jsonl"))
    sites = [(path, i, n) for path in files for i, obj in _lines(path) for n in range(_count_sites(obj))]
    random.Random(SEED).shuffle(sites)
    by_site: dict[tuple[Path, int], dict[int, list[Canary]]] = {}
    for j, canary in enumerate(canaries):
        path, i, n = sites[j % len(sites)]
        by_site.setdefault((path, i), {}).setdefault(n, []).append(canary)
    planted: dict[str, Counter[str]] = {}
    for path in files:
        source = SOURCE_OF[path.relative_to(corpus).parts[0]]
        raw_lines = path.read_bytes().split(b"\n")
        for i, obj in _lines(path):
            chosen = by_site.get((path, i))
            if chosen:
                append = _Appender(chosen, planted.setdefault(source, Counter()))
                line = json.dumps(_rewrite(obj, "", append), ensure_ascii=False, separators=(",", ":"))
                raw_lines[i] = line.encode()
        mtime = path.stat().st_mtime
        path.write_bytes(b"\n".join(raw_lines))
        os.utime(path, (mtime, mtime))  # the corpus dates each file by its last event
    return planted


def _count_sites(obj: Any) -> int:
    n = 0

    def visit(key: str, text: str) -> str:
        nonlocal n
        n += 1
        return text

    _rewrite(obj, "", visit)
    return n


# --- Scanning ----------------------------------------------------------------------------
# Written for this test from the vendors' published formats, not taken from the redactor: a
# secret of each kind, wherever it stands. A placeholder never matches.
PATTERNS: dict[str, re.Pattern[str]] = {
    "private_key": re.compile(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:\\n|\s)*[A-Za-z0-9+/]{16}"
        r"|AGE-SECRET-KEY-1[0-9A-Z]{58}|LS0tLS1CRUdJTiBFQyBQUklWQVRF[A-Za-z0-9+/]{16}"
    ),
    "jwt": re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    "aws_access_key": re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    "aws_secret_key": re.compile(
        r"(?i:aws_secret_access_key)[\s=:\"'\\]{1,6}+(?!\[REDACTED)[A-Za-z0-9/+]{40}"
    ),
    "github_token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{40,}"),
    "gitlab_token": re.compile(r"glpat-[A-Za-z0-9_-]{20}"),
    "anthropic_key": re.compile(r"sk-ant-api\d\d-[A-Za-z0-9_-]{40,}"),
    "openai_key": re.compile(r"\bsk-(?:proj-[A-Za-z0-9_-]{40,}|[A-Za-z0-9]{40,}|proj-Wq7Lm2)"),
    "slack_token": re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{20,}"),
    "slack_webhook": re.compile(r"hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}"),
    "google_api_key": re.compile(r"\bAIza[A-Za-z0-9_-]{35}"),
    "stripe_key": re.compile(r"\b(?:[sr]k_live_[A-Za-z0-9]{24,}|whsec_[A-Za-z0-9]{32})"),
    "npm_token": re.compile(r"\bnpm_[A-Za-z0-9]{36}"),
    "huggingface_token": re.compile(r"\bhf_[A-Za-z]{34}"),
    "bearer_token": re.compile(r"Bearer (?!\[REDACTED)[A-Za-z0-9._-]{30,}"),
    "auth_header": re.compile(r"Basic (?!\[REDACTED)[A-Za-z0-9+/]{20,}={0,2}"),
    "url_password": re.compile(
        r"[a-z]+://[A-Za-z0-9_-]+:(?!\[REDACTED)(?=[^@\s]*\d)[^@\s/]{12,}@|app:(?!\[REDACTED)[A-Za-z0-9]{8}@"
    ),
    "password": re.compile(
        r"(?i:password)[\s=:\"'\\]{1,6}+(?!\[REDACTED)(?=[^\s\"']*\d)(?=[^\s\"']*[A-Z])[^\s\"',]{14,}"
        r"|mysql -h db -u app -p(?!\[REDACTED)[A-Za-z0-9]{14,}"
    ),
    "secret": re.compile(r"(?:CLIENT_SECRET=|--api-key )(?!\[REDACTED)[A-Za-z0-9]{20,}"),
    "email": re.compile(r"[a-z]+\.[a-z]+\d{4}@northwind-\d{3}\.io"),
    "home_user": re.compile(r"/home/u[a-z]{7}\d\d\b|~u[a-z]{7}\d\d/|\(u[a-z]{7}\d\d\)"),
    "sendgrid_key": re.compile(r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    "twilio_key": re.compile(r"\bAC[0-9a-f]{32}\b|\", \\?\"[0-9a-f]{32}\b"),
    "pypi_token": re.compile(r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{20,}"),
    "digitalocean_token": re.compile(r"\bdo[por]_v1_[0-9a-f]{64}"),
    "databricks_token": re.compile(r"\bdapi[0-9a-f]{32}"),
    "telegram_token": re.compile(r"[0-9]{8,10}:AA[A-Za-z0-9_-]{33}"),
    "vault_token": re.compile(r"\bhvs\.[A-Za-z0-9_-]{90}"),
    "azure_sas": re.compile(r"[?&]sig=(?!\[REDACTED)[A-Za-z0-9%]{40,}"),
    "docker_auth": re.compile(r"auth\\*\"\s*:\s*\\*\"(?!\[REDACTED)[A-Za-z0-9+/=]{16,}"),
    "gcp_key_id": re.compile(r"private_key_id\\*\"\s*:\s*\\*\"(?!\[REDACTED)[0-9a-f]{40}"),
    "session_cookie": re.compile(r"sessionid=(?!\[REDACTED)[A-Za-z0-9]{24}"),
    "phone": re.compile(
        r"\+49 30 [0-9]{8}\b|portable : 0[67](?:[ .][0-9]{2}){4}\b|mobile: 07[0-9]{3} [0-9]{6}\b"
    ),
    "national_id": re.compile(
        r"ssn: [0-9]{3}-[0-9]{2}-[0-9]{4}|NI number: [A-Z]{2} [0-9]{2} [0-9]{2} [0-9]{2} [A-D]\b"
        r"|Steuer-ID: [0-9]{11}\b"
    ),
    "payment_card": re.compile(r"\bcard 4[0-9]{15}\b"),
}


def _texts(root: Path) -> dict[str, str]:
    """Every output of the run as text: Parquet files as their cells, anything else as bytes."""
    out: dict[str, str] = {}
    for path in sorted(
        p for p in root.rglob("*") if p.is_file() and "corpus" not in p.relative_to(root).parts
    ):
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path)
            out[str(path)] = "\n".join(str(v) for column in frame.columns for v in frame[column].tolist())
        else:
            out[str(path)] = path.read_bytes().decode("utf-8", errors="replace")
    return out


@dataclass(frozen=True)
class Run:
    canaries: list[Canary]
    planted: dict[str, Counter[str]]  # source -> "kind@field" -> canaries planted
    corpus: str  # every corpus file, for the check that each canary went in
    outputs: dict[str, str]  # path -> text
    report: Path
    model: Path  # the tiny model, its tokenizer trained on the rendered records


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("canaries")
    canaries = make_canaries()
    planted: dict[str, Counter[str]] = {}

    def plant_all(corpus: Path) -> None:
        planted.update(plant(corpus, [*canaries, *GAPS.values()]))

    # As test_replay_eval's window: every split non-empty.
    ingest_sample_window(root, sessions_per_day=6, seed=11, before=plant_all)
    eval_config = {
        "holdout_cases": 2,
        "seen_exact_cases": 1,
        "seen_variant_cases": 1,
        "max_tokens": 8,
        "min_cases": 1,
    }
    result = train_and_evaluate(root, eval_config)
    assert result.success
    report = Path(str(result.asset_materializations_for_node("replay_eval")[0].metadata["report_path"].value))
    corpus = "\n".join(
        p.read_bytes().decode("utf-8", errors="replace") for p in (root / "corpus").rglob("*.jsonl")
    )
    return Run(canaries, planted, corpus, _texts(root), report, root / "model")


# Fields each format must have received canaries in: user text, tool inputs, tool results and
# files shown by a read ("content" of Claude Code and chat tool results, "output" of the others).
EXPECTED_FIELDS = {
    "claude_code": {"content", "text", "command", "stdout", "new_string"},
    "codex": {"message", "text", "cmd", "output", "aggregated_output"},
    "own_agent": {"content", "command", "output"},
    "chat_jsonl": {"content", "command"},
}
KINDS = sorted({kind for kind, _ in _variants().values()})
SOURCES = tuple(EXPECTED_FIELDS)


def test_every_kind_is_planted_at_least_50_times_in_every_format(run: Run) -> None:
    per_kind = Counter(c.kind for c in run.canaries)
    assert set(per_kind) == set(KINDS) and min(per_kind.values()) >= PER_VARIANT
    assert sorted(run.planted) == sorted(SOURCES)
    for source in SOURCES:
        assert {key.split("@")[0] for key in run.planted[source]} >= set(KINDS), source
        assert {key.split("@")[1] for key in run.planted[source]} >= EXPECTED_FIELDS[source], source
    missing = [
        c.variant for c in [*run.canaries, *GAPS.values()] if not all(p in run.corpus for p in c.parts)
    ]
    assert missing == []  # each canary really went in, so a clean output means redaction worked


def test_the_patterns_find_every_canary() -> None:
    # Patterns that missed the canaries would pass any output.
    for canary in [*make_canaries(), *GAPS.values()]:
        written = json.dumps({"content": canary.text})  # as stored: inside a JSON string
        for text in (canary.text, written):
            assert PATTERNS[canary.kind].search(text), (canary.variant, text[:60])


def test_the_outputs_cover_every_stage(run: Run) -> None:
    names = "\n".join(run.outputs)
    for stage in (
        "raw_sessions/",
        "raw_sessions_quarantine/",
        "rendered_splits/",
        "replay_eval/",
        "action_memory/",
        "adapters.sqlite",  # the registry, and the action memory's SQL copy
        "train.jsonl",
    ):
        assert stage in names, stage
    assert run.report.name == "report.md" and str(run.report) in run.outputs
    # The tokenizer is learned from the rendered records: its vocabulary must be scanned too.
    for name in ("tokenizer.json", "tokenizer_config.json"):
        assert str(run.model / name) in run.outputs, name


@pytest.mark.parametrize("kind", KINDS)
def test_no_canary_survives(run: Run, kind: str) -> None:
    leaks = [
        (c.variant, part[:12], Path(path).relative_to(Path(path).parents[1]).as_posix())
        for c in run.canaries
        if c.kind == kind
        for part in c.parts
        for path, text in run.outputs.items()
        if part in text
    ]
    assert leaks == []
    hits = [
        (Path(path).name, m[:24]) for path, text in run.outputs.items() for m in PATTERNS[kind].findall(text)
    ]
    assert hits == []


@pytest.mark.parametrize("gap", list(GAPS))
def test_shapes_that_once_leaked_are_redacted(run: Run, gap: str) -> None:
    canary = GAPS[gap]
    assert not any(part in text for part in canary.parts for text in run.outputs.values())
