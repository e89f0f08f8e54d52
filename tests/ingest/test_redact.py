"""Tests for secret and personal-data redaction at ingestion (trajectory_pipeline.ingest.redact).

Why they exist: redaction is the one step that must never leak (a live key in training
data or the UI) and never mangle (false positives destroy training data about code).
So every kind is shown a realistic planted example, every near-miss from real code must
come back unchanged, redacted canonical JSON must still parse, redaction must be
idempotent, and the real transcript corpus (../shared/corpus/real) is scanned end to
end with the counts its SOURCES.md leads us to expect: no token-pattern secrets, but
e-mail addresses and login names (in home-directory paths and `ls -l` listings).

Fake tokens are built by concatenation at test time so that this file does not trip
secret scanners itself.

    .venv/bin/pytest tests/ingest/test_redact.py
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from trajectory_pipeline.ingest import redact
from trajectory_pipeline.ingest.redact import KINDS, Redactor, placeholder
from trajectory_pipeline.schema import canonical_json


def fake(n: int, alphabet: str = "aB3xY7kQ9") -> str:
    """A deterministic token body of length n, mixed case and digits like a real one."""
    return (alphabet * (n // len(alphabet) + 1))[:n]


AZURE_KEY = fake(86, "Zx81kq7tAbC+dEf/") + "=="
PEM_BODY = "MIIEow" + fake(64, "AbCdEf0123+/") + "\n" + fake(40, "QwErTy987/") + "=="
PEM_HEADERS = ("Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC," + fake(32, "3F17A9C0E2B5D846"))


def luhn(prefix: str, length: int) -> str:
    """`prefix` padded with 7s to `length` digits, the last one a Luhn check digit."""
    body = (prefix + "7" * length)[: length - 1]
    total = sum(
        d if i % 2 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(map(int, reversed(body)))
    )
    return body + str(-total % 10)


HEX32 = fake(32, "3f9a0c7e1b5d8246")
HEX40 = fake(40, "e1b5d82463f9a0c7")
SENDGRID_TAIL = fake(43, "Rb8Nc3Vy6Qf1Jd5Gs0Ue")
VAULT_BODY = fake(92, "CAESIJz4kQ7mW2pX9vLrT3bN8cY5dF1gH6")
PYPI_BODY = fake(160, "Wq2Lm9_Xz4-Kp7")
DO_BODY = fake(64, "0a9b8c7d6e5f4321")
TELEGRAM_BODY = fake(33, "Hk3_mQ9-zXw2")
# AWS STS session tokens: base64 whose first bytes are fixed, as regional and global endpoints issue them.
STS_TOKEN = "IQoJb3Jp" + "Z2luX2Vj" + fake(600, "EHb8aCXVzLWVhc3QtMSJHMEUCIQDx7kM2/+")
STS_GLOBAL_TOKEN = "FwoGZXIv" + "YXdzE" + fake(360, "Pn4tQa8Wm2Lx/Kr7+") + "=="
AGE_BODY = fake(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")
DOCKER_AUTH = base64.b64encode(("ci-bot:" + "Wd7kq2" + "Lp9x").encode()).decode()
PEM_B64 = base64.b64encode(
    (
        "-----BEGIN EC "
        + "PRIVATE KEY-----\nMHcCAQEEI"
        + fake(60, "Lk2Pq9Zr")
        + "\n-----END EC PRIVATE KEY-----\n"
    ).encode()
).decode()
PUTTY_LINES = [fake(64, "AAAAIQCm3Zk9Lw2Q"), fake(64, "Rv7Tn4Xp1Yb8Jc5E"), fake(24, "Gh6Dk0Mf3Ws9")]
PUTTY = (
    "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: deploy\nPublic-Lines: 1\n"
    + fake(64, "AAAAB3NzaC1yc2EA")
    + "\nPrivate-Lines: 3\n"
    + "\n".join(PUTTY_LINES)
    + "\nPrivate-MAC: "
    + fake(64, "0f1e2d3c4b5a6978")
)
# (kind, text, the part that must disappear)
PLANTED: list[tuple[str, str, str]] = [
    ("aws_access_key", "export AWS_ACCESS_KEY_ID=" + "AKIA" + "Q" * 16, "AKIA" + "Q" * 16),
    ("aws_access_key", "creds: " + "ASIA" + "Z7Q2" * 4 + " (session)", "ASIA" + "Z7Q2" * 4),
    (
        "aws_secret_key",
        "aws_secret_access_key = " + fake(40, "wJalrXUtnFEMI" + "/K7MDENG+bPxRfiCY"),
        fake(40, "wJalrXUtnFEMI" + "/K7MDENG+bPxRfiCY"),
    ),
    ("github_token", "git clone https://" + "gh" + "p_" + fake(36) + "@github.com/o/r", "p_" + fake(36)),
    ("github_token", "GH_TOKEN=" + "gh" + "s_" + fake(36), "s_" + fake(36)),
    ("github_token", "token " + "github" + "_pat_" + fake(22) + "_" + fake(59), "_pat_" + fake(22)),
    ("gitlab_token", "curl -H 'PRIVATE-TOKEN: " + "gl" + "pat-" + fake(20) + "'", "pat-" + fake(20)),
    ("anthropic_key", "ANTHROPIC_API_KEY=" + "sk-" + "ant-api03-" + fake(93) + "AA", "ant-api03-" + fake(93)),
    ("openai_key", "client = OpenAI(api_key='" + "sk-" + "proj-" + fake(74) + "')", "proj-" + fake(74)),
    ("openai_key", "legacy " + "sk-" + fake(20) + "T3Blbk" + "FJ" + fake(20), fake(20) + "T3Blbk"),
    ("slack_token", "SLACK_BOT=" + "xo" + "xb-" + "1234567890-1234567890123-" + fake(24), "xb-1234567890"),
    (
        "slack_webhook",
        "POST " + "https://hooks.slack.com/services/" + "T0" + fake(8) + "/B0" + fake(8) + "/" + fake(24),
        fake(24),
    ),
    ("google_api_key", "maps.js?key=" + "AI" + "za" + fake(35, "SyD-_3kq"), "za" + fake(35, "SyD-_3kq")),
    ("stripe_key", "stripe.api_key = '" + "sk" + "_live_" + fake(24) + "'", "_live_" + fake(24)),
    ("stripe_key", "STRIPE=" + "rk" + "_test_" + fake(24), "_test_" + fake(24)),
    ("npm_token", "//registry.npmjs.org/:_authToken=" + "np" + "m_" + fake(36), "m_" + fake(36)),
    ("huggingface_token", "huggingface-cli login --token " + "h" + "f_" + fake(34), "f_" + fake(34)),
    (
        "private_key",
        "-----BEGIN RSA " + "PRIVATE KEY-----\n" + PEM_BODY + "\n-----END RSA " + "PRIVATE KEY-----\n",
        PEM_BODY,
    ),
    ("private_key", "$ head -3 id_ed25519\n-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + PEM_BODY, PEM_BODY),
    (
        "jwt",
        "Cookie: session=" + "eyJ" + "hbGciOiJIUzI1NiJ9." + "eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0." + fake(43),
        "hbGciOiJIUzI1NiJ9",
    ),
    ("bearer_token", 'curl -H "Authorization: Bearer ' + fake(40) + '" https://api.example.com', fake(40)),
    (
        "bearer_token",
        "send it with bearer " + fake(32, "abcdef0123456789") + " next",
        fake(32, "abcdef0123456789"),
    ),
    ("auth_header", "Authorization: Basic " + "dXNlcjpw" + "YXNzd29yZA==", "dXNlcjpw"),
    (
        "url_password",
        "DATABASE_URL=postgres://app:" + "s3cr3t-" + "Pw9" + "@db.internal:5432/app",
        "s3cr3t-Pw9",
    ),
    ("url_password", "redis-cli -u redis://:" + "hunter" + "42@cache:6379", "hunter42"),
    ("password", "password=" + "hunter" + "2", "hunter2"),
    ("password", "PGPASSWORD='" + "Tr0ub4dor" + "&3' psql -h db", "Tr0ub4dor&3"),
    ("password", 'config = {"db_password": "' + "c0rrect-h0rse" + '"}', "c0rrect-h0rse"),
    ("password", "mysql --password " + "p4ss" + "w0rd! -u root", "p4ssw0rd!"),
    ("password", "  passwd: " + "Sup3r" + "Secret\n  user: admin", "Sup3rSecret"),
    ("password", 'password: str = "' + "hunter" + '2"', "hunter2"),
    ("password", 'password: str="' + "hunter" + '2"', "hunter2"),
    # A Kubernetes Secret's data: base64 with one "=" of padding, not `name: Type =`.
    ("password", "data:\n  password: " + "c3VwZXJz" + "ZWNyZXQxMjM=\n", "c3VwZXJz"),
    ("secret", "  api-token: " + "c2stcHJv" + "ai1hYmNkZWY=", "c2stcHJv"),
    ("secret", "secret: " + "Zx9k" + "=Lm2pQ7", "Zx9k"),
    # A YAML block scalar after a secret-named key: raw or JSON-escaped lines, indented more.
    ("password", "password: |\n  " + "hunter2" + "Zq9xW3vB7\n", "hunter2Zq9xW3vB7"),
    ("password", "db:\n  password: >-\n    " + "Tr0ub4" + "dorZq9", "Tr0ub4dorZq9"),
    (
        "secret",
        json.dumps("auth:\n  client_secret: |-\n    " + "cS7kq2" + "Lp9xWm\n  id: web\n"),
        "cS7kq2Lp9xWm",
    ),
    (
        "secret",
        "- api_token: |\n    " + "first" + "Zq9xW3\n    " + "second" + "Hk3mQ9\n  user: bob",
        "secondHk3mQ9",
    ),
    # After an anchor or a standard tag; a folded block's lines are one value, all of them go.
    ("password", "password: &pw |\n  " + "hunter2" + "Zq9xW3vB7\n", "hunter2Zq9xW3vB7"),
    ("password", "db:\n  password: !!str >-\n    " + "Tr0ub4" + "dorZq9\n", "Tr0ub4dorZq9"),
    ("secret", "secret: >\n  " + "Zq9xW3" + "vB7kLm\n  continued\n", "continued"),
    # Another key's block inside a secret's is the secret's text: its lines are judged too.
    (
        "secret",
        "token: |\n  config:\n    data: |\n      " + fake(24, "Zq8wLm3N1b") + "\n  user: bob\n",
        fake(24, "Zq8wLm3N1b"),
    ),
    # A block whose only line is words, judged as a quoted value of them: a passphrase goes.
    ("password", "password: >\n  correct horse " + "battery staple\n", "correct horse battery"),
    (
        "password",
        json.dumps({"content": "db:\n  passphrase: |-\n    purple monkey " + "dishwasher\n  port: 5432\n"}),
        "purple monkey dishwasher",
    ),
    # In a JSON string after a key (a file's content in a tool call), its tab JSON-escaped.
    ("password", json.dumps({"content": "password: |\n  " + "Wx4kP9" + "mQ2zL\t\n"}), "Wx4kP9mQ2zL"),
    # Vendor keys of known shapes with no kind of their own: Groq, Shopify, Linear, Replicate.
    ("secret", 'GROQ="gsk_' + "iK2ZWeqhFWCEPyYngFb51yBMWXaSCrUZoL8g5ubbbPIa84yRnBUb" + '"', "iK2ZWeqh"),
    ("secret", "X-Shopify-Access-Token: shpat_" + "7ef7b77e90d3593ad699fc1f7cd5bb2e", "7ef7b77e"),
    ("secret", "linear --key lin_api_" + "QGgXkH1zxFUbEctT2NLLzPkkGoaXmI63JozGw82K", "QGgXkH1z"),
    ("secret", "REPLICATE=r8_" + "wD6rQJM9UayY20948VGZiHXJnB8dE3xKJm8GA", "wD6rQJM9"),
    # xAI, Perplexity, Docker Hub, Figma, Linear OAuth, Sentry, New Relic, Postman, Atlassian.
    ("secret", "XAI_API_KEY=x" + "ai-" + fake(80), fake(80)),
    ("secret", "key: pp" + "lx-" + fake(48), fake(48)),
    ("secret", "docker login -u me --password-stdin <<< dckr" + "_pat_" + fake(27, "aB3-x_Y7k"), "aB3-x_Y7k"),
    ("secret", "FIGMA_TOKEN=fi" + "gd_" + fake(40, "Zq4-Wm_8"), "Zq4-Wm_8"),
    ("secret", "lin" + "_oauth_" + fake(64, "0a1b2c3d4e5f6789"), fake(64, "0a1b2c3d4e5f6789")),
    ("secret", "SENTRY_AUTH_TOKEN=sntr" + "yu_" + fake(64, "9f8e7d6c5b4a3021"), fake(64, "9f8e7d6c5b4a3021")),
    ("secret", "sntr" + "ys_" + "eyJpYXQiOjE2ODc" + fake(80, "aB3+/xY7"), fake(80, "aB3+/xY7")),
    ("secret", "NEW_RELIC_API_KEY: NR" + "AK-" + fake(27, "Q7W2E9R4"), fake(27, "Q7W2E9R4")),
    ("secret", "x-api-key: PM" + "AK-" + fake(24, "0a1b2c") + "-" + fake(34, "3d4e5f"), fake(34, "3d4e5f")),
    ("secret", "jira --token AT" + "ATT3" + fake(180, "xFfGF0aB3_-") + "=A1B2C3D4", fake(180, "xFfGF0aB3_-")),
    ("password", "GPG_PASSPHRASE=" + "Zx9kLm" + "2pQ7 gpg --batch --pinentry-mode loopback", "Zx9kLm"),
    # A presigned URL's signature is its credential (valid until it expires).
    (
        "secret",
        "curl 'https://b.s3.amazonaws.com/k?X-Amz-Expires=3600&X-Amz-Signature="
        + "5d672d79c15b1316"
        + "2d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7'",
        "5d672d79c15b1316",
    ),
    (
        "secret",
        "?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature=" + "8a7f3c0e1d2b4a59" + "68778695a4b3",
        "8a7f3c0e",
    ),
    ("password", '  passphrase: "' + "Zx9kLm" + '2pQ7"', "Zx9kLm"),
    # Not code that names a secret (`&str`, `@token`, `process.env.X!`): passwords.
    ("password", "password: " + "hunter" + "2!", "hunter2"),
    ("password", "password: @" + "dm1n", "dm1n"),
    ("secret", "export OPENAI_API_KEY=" + "abc" + "123xyz456", "abc" + "123xyz456"),
    ("secret", "SECRET=" + "9f8e7d" + "6c5b4a", "9f8e7d" + "6c5b4a"),
    ("secret", "  client_secret: '" + "x9y8" + "z7w6'", "x9y8z7w6"),
    ("secret", "headers = {'X-Api-Key': '" + "k3y-" + "v4lue'}", "k3y-v4lue"),
    ("secret", 'const accessToken = "' + "0a1b2c" + '3d4e5f";', "0a1b2c" + "3d4e5f"),
    ("secret", "gh auth login --with-token < f; export GITHUB_TOKEN=" + "t0k" + "3n99", "t0k3n99"),
    ("email", "Signed-off-by: Marco Rotili <" + "marco.rotili" + "@handgemacht.ai>", "marco.rotili@"),
    ("home_user", "cd /home/" + "marco" + "/src/spotter && pytest", "/home/marco"),
    ("home_user", "open /Users/" + "Jane_Smith" + "/Documents/report.md", "Jane_Smith"),
    ("home_user", "dir C:\\Users\\" + "bob" + "\\AppData", "\\bob\\"),
    ("home_user", "ls ~/.claude/projects/-home-" + "marco" + "-src-spotter/", "-marco-"),
    ("home_user", "total 8\n-rw-r--r--  1 " + "nina nina" + "  220 Jan  5 10:02 .bashrc", "nina"),
    # Names that can only hold a secret: *_PASS, *_PASSWD, *_PWD, Azure keys, curl -u.
    ("password", "export SMTP_PASS=" + "Zx81" + "kq7t", "Zx81kq7t"),
    ("password", "DB_PASS=" + "Zx81" + "kq7t ./migrate", "Zx81kq7t"),
    ("password", "MAIL_PASSWD=" + "Zx81" + "kq7t", "Zx81kq7t"),
    ("password", "export MYSQL_PWD=" + "Zx81" + "kq7t", "Zx81kq7t"),
    ("password", 'env = {"SMTP_PASS": "' + "Zx81" + 'kq7t"}', "Zx81kq7t"),
    ("password", "const smtpPass = '" + "Zx81" + "kq7t';", "Zx81kq7t"),
    (
        "secret",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + AZURE_KEY + ";EndpointSuffix=x.net",
        AZURE_KEY[:20],
    ),
    (
        "secret",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=" + AZURE_KEY,
        AZURE_KEY[:20],
    ),
    ("password", "curl -u admin:" + "S3cr3t" + "Pass99 https://api.example.com/v1", "S3cr3tPass99"),
    ("password", "curl --user admin:" + "pw4X" + "q9 -X POST https://api.example.com", "pw4Xq9"),
    ("password", 'curl -s -u "deploy:' + "Hx7kq" + '2Lp" https://api.example.com', "Hx7kq2Lp"),
    # A bearer token of letters only.
    ("bearer_token", "Authorization: Bearer " + "ABCDEFGHIJKL" + "MNOPQRSTUVWX", "ABCDEFGHIJKLMNOPQRSTUVWX"),
    ("bearer_token", "send it with bearer " + "qwertyuiop" + "asdfghjkl please", "qwertyuiopasdfghjkl"),
    # A quoted passphrase under a key that can only hold a secret.
    ("password", '{"password":"' + "correct horse " + 'battery staple"}', "horse"),
    ("password", 'db_password: "' + "it's a secret " + 'between us"', "between"),
    ("secret", "client_secret = '" + "purple monkey " + "dishwasher'", "monkey"),
    ("secret", 'API_KEY="' + "open sesame " + 'please"', "sesame"),
    # An unquoted value runs to the end of its shell word: the "&3" goes too.
    ("password", "password=" + "Tr0ub4dor" + "&3 psql -h db", "&3"),
    # Vendor tokens with known shapes (gitleaks' rule ids in redact.py).
    (
        "sendgrid_key",
        "sg = SendGridAPIClient('" + "SG." + fake(22, "Hq7vLw2Zp9Kx") + "." + SENDGRID_TAIL + "')",
        SENDGRID_TAIL[:24],
    ),
    ("twilio_key", "client = Client('" + "AC" + HEX32 + "', '" + HEX40[:32] + "')", HEX40[:32]),
    ("twilio_key", "TWILIO_KEY_SID=" + "SK" + HEX40[8:], HEX40[8:]),
    (
        "pypi_token",
        "twine upload -u __token__ -p " + "pypi-" + "AgEIcHlwaS5vcmc" + PYPI_BODY + " dist/*",
        PYPI_BODY[:40],
    ),
    ("digitalocean_token", "doctl auth init --access-token " + "dop" + "_v1_" + DO_BODY, DO_BODY[:24]),
    (
        "databricks_token",
        '{"host": "https://adb-7.azuredatabricks.net", "pat": "' + "dapi" + HEX32 + '-2"}',
        HEX32,
    ),
    (
        "telegram_token",
        "curl https://api.telegram.org/bot" + "6104773925:" + "AA" + TELEGRAM_BODY + "/getMe",
        TELEGRAM_BODY,
    ),
    ("vault_token", "vault login " + "hvs." + VAULT_BODY, VAULT_BODY[:30]),
    (
        "azure_sas",
        "curl -o f.bin 'https://st01.blob.core.windows.net/c/f.bin?sv=2023-01-03&sp=r&sig="
        + "Xq3%2Bk9Lm2"
        + "Wp8rT4vN6zY%3D'",
        "Xq3%2Bk9Lm2",
    ),
    ("docker_auth", '{"auths": {"registry.internal:5000": {"auth": "' + DOCKER_AUTH + '"}}}', DOCKER_AUTH),
    ("gcp_key_id", '{"type": "service_account", "private_key_id": "' + HEX40 + '"}', HEX40),
    ("private_key", "tls.key: " + PEM_B64, PEM_B64[16:60]),
    ("private_key", PUTTY, PUTTY_LINES[1]),
    ("private_key", "# created: 2026-11-02\n" + "AGE" + "-SECRET-KEY-1" + AGE_BODY, AGE_BODY),
    ("secret", "SECRET_KEY_BASE=" + HEX40 + HEX32, HEX40),
    ("secret", "APP_KEY=base64:" + "Zk2pQ9vX4mT7ab12" + "cdEFgh34ijKL56mnOP78qrST90U=", "Zk2pQ9vX4mT7ab12"),
    # Session cookies, phone numbers, national ids, payment cards, login names.
    ("session_cookie", "Cookie: _app_session=" + "Zr8Kq2" + "mW5xT9vN3pL7; locale=en", "Zr8Kq2mW5xT9vN3pL7"),
    (
        "session_cookie",
        "Set-Cookie: PHPSESSID=" + "q4vk8m" + "2rt9wz6ln3; path=/; HttpOnly",
        "q4vk8m2rt9wz6ln3",
    ),
    (
        "session_cookie",
        "curl -b 'remember_token=" + "Vd3nq8" + "Lk2Xw7' https://app.internal/me",
        "Vd3nq8Lk2Xw7",
    ),
    ("phone", "on-call: +49 30 9018" + "2047 (office)", "9018 2047"),
    ("phone", "support line (312) 555-" + "0148 weekdays", "555-0148"),
    ("national_id", "ssn: 356-71-" + "2044", "356-71-2044"),
    ("payment_card", 'charge({"number": "' + luhn("4716", 16) + '"})', luhn("4716", 16)),
    (
        "payment_card",
        "card 5412 7519 " + luhn("54127519", 16)[8:12] + " " + luhn("54127519", 16)[12:],
        luhn("54127519", 16)[12:],
    ),
    (
        "home_user",
        "$ id\nuid=1003(" + "oksana" + ") gid=1003(oksana) groups=1003(oksana),998(docker)",
        "oksana",
    ),
    ("home_user", "$ whoami\n" + "tobias" + "\n$ ls", "tobias"),
    ("home_user", "cp build.log ~" + "ingrid" + "/logs/", "ingrid"),
    ("home_user", "gcc -I/home/" + "yusuf" + "/include main.c", "yusuf"),
    ("home_user", "ls ../../home/" + "petra" + "/notes", "petra"),
    # Homes mounted elsewhere, as paths and as Claude Code's encoded project folders.
    ("home_user", "cd /mnt/c/Users/" + "alice" + "/proj", "alice"),
    ("home_user", 'cd "/mnt/c/Users/John ' + "Smith" + '/proj"', "Smith"),
    ("home_user", "~/.claude/projects/-mnt-c-Users-" + "alice" + "-proj/s.jsonl", "alice"),
    ("home_user", "~/.claude/projects/-var-home-" + "bob" + "-proj/s.jsonl", "bob"),
    # Literals that start like a template or a path, and passwords holding ; \ @.
    ("password", "export ROOT_PASSWORD=$" + "Wq7vN2" + "xTz", "Wq7vN2xTz"),
    ("password", "SMTP_PASSWORD=$" + "hk3!rp" + "9Z", "hk3!rp9Z"),
    ("password", "VAULT_PASSWORD=/" + "Gm4tR8" + "wq", "Gm4tR8wq"),
    ("password", "REDIS_PASSWORD=/" + "k9=Vb+2" + "Lq", "k9=Vb+2Lq"),
    (
        "secret",
        "AccountName=st01;AccountKey=/" + AZURE_KEY[1:] + ";EndpointSuffix=core.windows.net",
        AZURE_KEY[1:21],
    ),
    ("password", "DB_PASSWORD=" + "Rt5;" + "kw8Q psql", "kw8Q"),
    ("password", "MAIL_PASSWORD=" + "Lp2\\" + "vx9N", "vx9N"),
    ("url_password", "mysql://svc:" + "Jx6@" + "wp2K" + "@10.1.2.3:3306/app", "wp2K"),
    ("url_password", "amqp://guest:" + "Tb8;" + "zq3W" + "@rabbit:5672/", "zq3W"),
    ("secret", "AWS_SESSION_TOKEN=" + fake(900, "IQoJb3JpZ2luX2Vj"), fake(900, "IQoJb3JpZ2luX2Vj")[-40:]),
    # Credential flags of the commands that take them.
    ("password", "mysql -h db -u app -p" + "Qm4tz" + "8W appdb", "Qm4tz8W"),
    ("password", "sshpass -p '" + "Wd5#q" + "z1' ssh deploy@10.0.0.5", "Wd5#qz1"),
    ("password", "redis-cli -h cache -a " + "Kt7mq" + "2X INFO", "Kt7mq2X"),
    ("password", "redis-cli --pass " + "Dz5kp" + "8Y ping", "Dz5kp8Y"),
    ("password", "docker login registry.example.com -u ci -p " + "Rf3nv" + "8Q", "Rf3nv8Q"),
    ("password", "curl -sS -U proxyuser:" + "Nt4bw" + "6R https://example.com", "Nt4bw6R"),
    ("password", "http -a ops:" + "Vc7mq" + "5T GET https://api.internal/x", "Vc7mq5T"),
    ("password", "security add-generic-password -a me -s github.com -w " + "Lq7vz" + "2Rk", "Lq7vz2Rk"),
    ("password", "ssh-keygen -t ed25519 -N '" + "Hm3#p" + "q8W' -f deploy_key", "Hm3#pq8W"),
    ("password", "ssh-keygen -N '" + "correct horse " + "battery staple' -f k", "battery staple"),
    ("password", "security unlock-keychain -p " + "Ci7kq" + "2Wz build.keychain", "Ci7kq2Wz"),
    ("secret", "gh secret set NPM_TOKEN --body " + "Gq7mW" + "2xZk9", "Gq7mW2xZk9"),
    ("secret", "gh secret set NPM_TOKEN -b '" + "Gq7mW" + "2xZk9'", "Gq7mW2xZk9"),
    # HTTP basic auth in code: requests' auth tuple, HTTPBasicAuth, aiohttp's BasicAuth.
    ("password", 'requests.get(url, auth=("admin", "' + "Wq8#z" + 'k2V"))', "Wq8#zk2V"),
    ("password", "session.auth = ('api', '" + "key-3ax6xnjp" + "29jd6fds')", "key-3ax6xnjp"),
    ("password", 'aiohttp.BasicAuth("svc", "' + "Pn4vX" + '9qL")', "Pn4vX9qL"),
    ("password", 'auth=(\n    "admin",\n    "' + "Wq8#z" + 'k2V",\n)', "Wq8#zk2V"),
    ("password", 'Elasticsearch(hosts, basic_auth=(USER, "' + "Tr4mQ" + '9zL"))', "Tr4mQ9zL"),
    # A Google OAuth access token, as `gcloud auth print-access-token` prints it.
    ("secret", "$ gcloud auth print-access-token\nya" + "29." + fake(120, "a0AfH6S_Mx-8"), "a0AfH6S_Mx-8"),
    ("secret", "token: ya" + "29.c." + fake(100, "c0ASRK0GYOvb_t0"), "c0ASRK0GYOvb_t0"),
    # A secret-named name, a blank and its value: Windows' setx, fish's set, aws and npm config.
    ("secret", "setx OPENAI_API_KEY " + "Zx81kLm" + "Q2pR7tV", "Zx81kLmQ2pR7tV"),
    ("secret", "set -gx GITHUB_TOKEN '" + "Tk9wQ" + "2mZ7'", "Tk9wQ2mZ7"),
    ("secret", "set --universal --export OPENAI_API_KEY " + "Zx81kLm" + "Q2pR7tV", "Zx81kLmQ2pR7tV"),
    (
        "aws_secret_key",
        "aws configure set aws_secret_access_key " + "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzQq81kLmZd",
        "bPxRfiCYz",
    ),
    ("secret", "npm config set //registry.npmjs.org/:_authToken " + "Np5kW" + "8qZ2x", "Np5kW8qZ2x"),
    # A .netrc entry, on one line and on several (also a JSON-escaped tool result).
    ("password", "machine api.example.com login deploy password " + "Xk9mQ" + "2vLp7", "Xk9mQ2vLp7"),
    ("password", "default login anonymous password " + "Xk9mQ" + "2vLp7", "Xk9mQ2vLp7"),
    ("password", "machine github.com\n  login octo\n  password " + "ghx9L" + "m2Qp7\n", "ghx9Lm2Qp7"),
    ("password", "openssl pkcs12 -export -in c.pem -passout pass:" + "Hv2kx" + "9M", "Hv2kx9M"),
    ("password", "keytool -list -keystore ks.jks -storepass " + "Bn5wq" + "1Z", "Bn5wq1Z"),
    ("password", "smbclient //fs/share -U ops%" + "Gp8zt" + "4K", "Gp8zt4K"),
    ("password", "zip -P " + "Cw4tn" + "7D out.zip notes.txt", "Cw4tn7D"),
    ("password", "ldapsearch -x -D cn=admin -w " + "Jm9vq" + "2H -b dc=ex", "Jm9vq2H"),
    ("password", "sqlcmd -S db -U sa -P " + "Xk3rz" + "8Q -Q 'select 1'", "Xk3rz8Q"),
    ("password", "7z a -p" + "Fy6mw" + "2J backup.7z dir", "Fy6mw2J"),
    ("password", "mongosh -u admin -p " + "Lw8rx" + "3N mongodb://db", "Lw8rx3N"),
    ("secret", "vercel deploy --prod -t " + "Lm2qz" + "7Xw", "Lm2qz7Xw"),
    ("secret", "aws secretsmanager create-secret --name db --secret-string " + "Yt6pw" + "3Zk", "Yt6pw3Zk"),
    ("secret", "cli login --token-value " + "Qe4vk" + "9Rb", "Qe4vk9Rb"),
    # A secret-named subscript assigned (the notebook's setup line), and a quoted name, "," and a
    # quoted value (PHP's define, a default, a setter, a flag in an MCP server's args).
    ("secret", 'os.environ["TAVILY_API_KEY"] = "' + fake(12) + '"', fake(12)),
    ("password", "$_ENV['DB_PASSWORD']='" + fake(12, "Qw7Er") + "';", fake(12, "Qw7Er")),
    # A secret-named name compared with a literal: a hard-coded check in code or a shell test.
    ("password", 'if os.environ["DB_PASSWORD"] == "' + fake(12, "Cm4Pq") + '":', fake(12, "Cm4Pq")),
    ("secret", "if (process.env.API_TOKEN === '" + fake(16, "Jt8Wz") + "') next();", fake(16, "Jt8Wz")),
    ("secret", "ENV['SECRET_KEY'] == \"" + fake(12, "Rk2Ns") + '"', fake(12, "Rk2Ns")),
    ("secret", '[[ $API_TOKEN == "' + fake(12, "Bs5Hv") + '" ]] && echo ok', fake(12, "Bs5Hv")),
    ("secret", "if token != '" + fake(12, "Nq3Ye") + "': abort(401)", fake(12, "Nq3Ye")),
    ("secret", 'if os.getenv("API_TOKEN") != "' + fake(12, "Gv6Lc") + '":', fake(12, "Gv6Lc")),
    # The literal first, and comparisons by a call (Java's equals, Python's compare_digest, C's
    # strcmp, PHP's hash_equals, a test's assertEquals), raw and in JSON.
    ("password", 'if "' + fake(12, "Rv5Cq") + '" == os.environ["DB_PASSWORD"]:', fake(12, "Rv5Cq")),
    (
        "secret",
        json.dumps({"code": "if ('" + fake(16, "Rj8Tz") + "' === process.env.API_TOKEN) next();"}),
        fake(16, "Rj8Tz"),
    ),
    (
        "password",
        json.dumps({"code": 'if "' + fake(12, "Rd3Jm") + '" != os.getenv("DB_PASSWORD"):'}),
        fake(12, "Rd3Jm"),
    ),
    ("password", 'if (password.equals("' + fake(12, "Eq4Jv") + '")) {', fake(12, "Eq4Jv")),
    ("password", 'if ("' + fake(12, "Eq7Yd") + '".equalsIgnoreCase(dbPassword)) {', fake(12, "Eq7Yd")),
    ("secret", 'return Objects.equals(apiKey, "' + fake(16, "Oe2Kp") + '");', fake(16, "Oe2Kp")),
    ("secret", 'hmac.compare_digest(token, "' + fake(12, "Hc9Dg") + '")', fake(12, "Hc9Dg")),
    (
        "secret",
        json.dumps({"code": 'secrets.compare_digest(api_key, b"' + fake(32, "4f9a8b7c6d5e") + '")'}),
        fake(32, "4f9a8b7c6d5e"),
    ),
    ("password", 'if (strcmp(user->password, "' + fake(12, "Sc6Mp") + '") == 0)', fake(12, "Sc6Mp")),
    ("secret", "$ok = hash_equals($token, '" + fake(12, "Ph5Hq") + "');", fake(12, "Ph5Hq")),
    ("password", 'if (strncmp(password, "' + fake(12, "Sn4Qx") + '", 12) == 0)', fake(12, "Sn4Qx")),
    (
        "password",
        'if (password.equals("' + fake(12, "Kt2Ic") + '", ignoreCase = true)) login()',
        fake(12, "Kt2Ic"),
    ),
    ("secret", 'assertEquals("' + fake(16, "Ae3Qt") + '", token);', fake(16, "Ae3Qt")),
    # A test's assertion with a message: JUnit 4's first (a literal or a variable, the secret-named
    # operand second or third), JUnit 5's last; also in JSON.
    ("secret", 'assertEquals("token matches", "' + fake(16, "Jm4Qa") + '", token);', fake(16, "Jm4Qa")),
    (
        "secret",
        json.dumps(
            {"code": 'Assert.assertNotEquals("token doesn\'t match", apiKey, "' + fake(16, "Jn7Wb") + '");'}
        ),
        fake(16, "Jn7Wb"),
    ),
    ("password", 'assertEquals(message, "' + fake(16, "Jv2Kc") + '", dbPassword);', fake(16, "Jv2Kc")),
    ("secret", 'assertEquals("' + fake(16, "Jf5Td") + '", token, "token matches");', fake(16, "Jf5Td")),
    (
        "secret",
        'assertEquals(\n    "token matches",\n    "' + fake(16, "Jl8Re") + '",\n    token);',
        fake(16, "Jl8Re"),
    ),
    # One case only, as long as a key: 32 hex digits, 20 letters and digits.
    ("secret", 'if api_key == "' + fake(32, "4f9a8b7c6d5e") + '":', fake(32, "4f9a8b7c6d5e")),
    ("secret", "assert token != '" + fake(20, "a8f3k2m9x7q1") + "'", fake(20, "a8f3k2m9x7q1")),
    ("password", "define( 'DB_PASSWORD', '" + fake(12, "Zx9kL") + "' );", fake(12, "Zx9kL")),
    ("secret", 'api_key = os.getenv("OPENAI_API_KEY", "' + fake(14, "Lm2pQ") + '")', fake(14, "Lm2pQ")),
    ("secret", '"args": ["-y", "server", "--access-token", "' + fake(20, "Tk4Wq") + '"]', fake(20, "Tk4Wq")),
    # Vendor prefixes (gitleaks' rules): Supabase, Pinecone, LangSmith, Notion, Grafana.
    ("secret", "--access-token " + "sb" + "p_" + fake(40, "0123456789abcdef"), fake(40, "0123456789abcdef")),
    ("secret", 'Pinecone("' + "pc" + "sk_2abc_" + fake(48) + '")', fake(48)),
    (
        "secret",
        'Client("' + "lsv2" + "_pt_" + fake(32, "0a1b") + "_" + fake(10, "9c8d") + '")',
        fake(32, "0a1b"),
    ),
    ("secret", "NOTION_KEY " + "nt" + "n_" + fake(46, "Zx9kLm2pQ7ab"), fake(46, "Zx9kLm2pQ7ab")),
    ("secret", "grafana " + "gl" + "sa_" + fake(32) + "_" + fake(8, "0a1b2c3d"), fake(32)),
    (
        "github_token",
        "git clone https://" + fake(40, "0123456789abcdef") + ":x-oauth-basic@github.com/o/r.git",
        fake(40, "0123456789abcdef"),
    ),
    # Kubernetes and ECS environment entries: the name, then its value (YAML, JSON, CloudFormation).
    ("password", "env:\n  - name: DB_PASSWORD\n    value: " + fake(12, "Hu7nT2"), fake(12, "Hu7nT2")),
    ("secret", '[{"name": "API_TOKEN", "value": "' + fake(16, "Ec5sT9") + '"}]', fake(16, "Ec5sT9")),
    (
        "secret",
        '{\n  "name": "STRIPE_SECRET",\n  "value": "' + fake(16, "Wq3Rt8") + '"\n}',
        fake(16, "Wq3Rt8"),
    ),
    ("password", "- Name: DbPassword\n  Value: '" + fake(12, "Cf4Nm1") + "'", fake(12, "Cf4Nm1")),
    # A password piped to sudo -S or chpasswd, or given to htpasswd -b or ConvertTo-SecureString.
    ("password", "echo '" + fake(12, "Su6dO3") + "' | sudo -S apt-get install -y jq", fake(12, "Su6dO3")),
    ("password", "printf '%s\\n' \"" + fake(12, "Pf8tR2") + '" | sudo --stdin true', fake(12, "Pf8tR2")),
    ("password", "echo 'deploy:" + fake(12, "Ch9pW4") + "' | sudo chpasswd", fake(12, "Ch9pW4")),
    ("password", "htpasswd -bc /etc/nginx/.htpasswd admin " + fake(12, "Ht5pS7"), fake(12, "Ht5pS7")),
    ("password", "htpasswd -nbB admin '" + fake(12, "Nb2Hx6") + "'", fake(12, "Nb2Hx6")),
    (
        "password",
        '$pw = ConvertTo-SecureString "' + fake(12, "Ps3Cr8") + '" -AsPlainText -Force',
        fake(12, "Ps3Cr8"),
    ),
    # sudo by its path or with other options before -S, a here-string to sudo -S or chpasswd, a
    # string piped to ConvertTo-SecureString, htpasswd's bcrypt cost (-C takes it) and an empty user.
    ("password", "echo " + fake(12, "Sk4uE8") + " | sudo -k -u root -S apt install x", fake(12, "Sk4uE8")),
    (
        "password",
        "echo " + fake(12, "Pt7hB2") + " | /usr/bin/sudo --user=root --stdin true",
        fake(12, "Pt7hB2"),
    ),
    ("password", "sudo -S apt install x <<< '" + fake(12, "Hs3tR9") + "'", fake(12, "Hs3tR9")),
    ("password", "chpasswd <<< 'deploy:" + fake(12, "Hc6pW1") + "'", fake(12, "Hc6pW1")),
    (
        "password",
        '"' + fake(12, "Ps8Pp4") + '" | ConvertTo-SecureString -AsPlainText -Force',
        fake(12, "Ps8Pp4"),
    ),
    ("password", 'htpasswd -bnBC 10 "" ' + fake(12, "Bc5Hn3"), fake(12, "Bc5Hn3")),
    ("password", "htpasswd -b -B -C 12 /etc/nginx/.htpasswd admin " + fake(12, "Bc2Ht7"), fake(12, "Bc2Ht7")),
    # A ";", "|" or "&&" quoted in sudo's command does not end it (nor a curl header's its
    # command), and a PowerShell prompt's "> " may stand before the string piped in.
    (
        "password",
        "sudo -S bash -c 'apt-get update; apt-get install -y nginx' <<< '" + fake(12, "Qs4cM8") + "'",
        fake(12, "Qs4cM8"),
    ),
    ("password", "sudo -S sh -c 'dmesg | tail' <<< '" + fake(12, "Qp7dT2") + "'", fake(12, "Qp7dT2")),
    (
        "password",
        'sudo -S bash -c "make && make install" <<< "' + fake(12, "Qa5mK1") + '"',
        fake(12, "Qa5mK1"),
    ),
    (
        "password",
        'curl -H "X-Trace: a && b" -u admin:' + fake(12, "Qh3cU6") + " https://x",
        fake(12, "Qh3cU6"),
    ),
    # A quoted program, an "&" inside a word, a quote glued to a flag: the plain reading's command.
    (
        "password",
        'subprocess.run(["mysql", "-u", "root", "-p' + fake(12, "Av3gR7") + '"])',
        fake(12, "Av3gR7"),
    ),
    (
        "password",
        '"C:\\Program Files\\MySQL\\bin\\mysql" -u root -p' + fake(12, "Wq4pF8"),
        fake(12, "Wq4pF8"),
    ),
    ("password", "curl https://x/?a=1&b=2 -u admin:" + fake(12, "Ua7mP2"), fake(12, "Ua7mP2")),
    ("password", "curl -H'X: a;b' -u admin:" + fake(12, "Gh5qL3") + " https://x", fake(12, "Gh5qL3")),
    (
        "password",
        'PS C:\\> "' + fake(12, "Pr9mT4") + '" | ConvertTo-SecureString -AsPlainText -Force',
        fake(12, "Pr9mT4"),
    ),
    # The string after ConvertTo-SecureString's switches, positional or after -String, also in
    # JSON; RHEL's `passwd --stdin` reading a piped or here-string password.
    (
        "password",
        '$pw = ConvertTo-SecureString -AsPlainText -Force "' + fake(12, "Sf4Pq8") + '"',
        fake(12, "Sf4Pq8"),
    ),
    (
        "password",
        "$pw = ConvertTo-SecureString -AsPlainText '" + fake(12, "Sm7Pk2") + "' -Force",
        fake(12, "Sm7Pk2"),
    ),
    (
        "password",
        '$s = ConvertTo-SecureString -Force -AsPlainText -String "' + fake(12, "Sj3Ws6") + '"',
        fake(12, "Sj3Ws6"),
    ),
    ("password", "echo '" + fake(12, "Rh5pS9") + "' | passwd --stdin bob", fake(12, "Rh5pS9")),
    # -String's string after a colon, a switch's `:$true`, common parameters among the switches.
    (
        "password",
        '$pw = ConvertTo-SecureString -String:"' + fake(12, "Sc4Lq7") + '" -AsPlainText:$true -Force',
        fake(12, "Sc4Lq7"),
    ),
    (
        "password",
        '$pw = ConvertTo-SecureString -AsPlainText -Verbose -Force "' + fake(12, "Sv6Bn3") + '"',
        fake(12, "Sv6Bn3"),
    ),
    (
        "password",
        json.dumps(
            {
                "command": "$pw = ConvertTo-SecureString -AsPlainText:$true -ErrorAction Stop -Force '"
                + fake(12, "Se2Xt8")
                + "'"
            }
        ),
        fake(12, "Se2Xt8"),
    ),
    (
        "password",
        'echo "' + fake(12, "Rs2uP7") + '" | sudo passwd --stdin root',
        fake(12, "Rs2uP7"),
    ),
    (
        "password",
        "printf '%s\\n' '" + fake(12, "Rp8fT3") + "' | /usr/bin/passwd deploy --stdin",
        fake(12, "Rp8fT3"),
    ),
    ("password", "passwd --stdin bob <<< '" + fake(12, "Rw4hS1") + "'", fake(12, "Rw4hS1")),
    # An AWS secret access key right after its key id, with no keyword (the IAM credentials CSV).
    (
        "aws_secret_key",
        "Access key ID,Secret access key\n" + "AKIA" + "Q7Q7" * 4 + "," + fake(40, "wJalr" + "XUtn/K7MD+"),
        fake(40, "wJalr" + "XUtn/K7MD+"),
    ),
    (
        "aws_secret_key",
        "AKIA" + "Z9Q2" * 4 + ":" + fake(40, "Kq8Lm" + "3Np/Zx7+"),
        fake(40, "Kq8Lm" + "3Np/Zx7+"),
    ),
    (
        "aws_secret_key",
        "AKIA" + "Z9Q2" * 4 + " " + fake(40, "Tv4Rb" + "9Yc/Jd2+"),
        fake(40, "Tv4Rb" + "9Yc/Jd2+"),
    ),
    # A tab between them JSON-escaped, once or twice (a pair printed into a JSON string).
    (
        "aws_secret_key",
        json.dumps("AKIA" + "Z9Q2" * 4 + "\t" + fake(40, "Hw5Ke" + "2Mb/Pq8+")),
        fake(40, "Hw5Ke" + "2Mb/Pq8+"),
    ),
    (
        "aws_secret_key",
        json.dumps(json.dumps("AKIA" + "Z9Q2" * 4 + "\t" + fake(40, "Gn3Xa" + "7Lc/Vr1+"))),
        fake(40, "Gn3Xa" + "7Lc/Vr1+"),
    ),
    # ... on the next line, the line break raw or JSON-escaped.
    (
        "aws_secret_key",
        "AKIA" + "Z9Q2" * 4 + "\n" + fake(40, "Rt6Wd" + "1Qs/Lk4+") + "\n",
        fake(40, "Rt6Wd" + "1Qs/Lk4+"),
    ),
    (
        "aws_secret_key",
        json.dumps({"output": "AKIA" + "Z9Q2" * 4 + "\r\n" + fake(40, "Rt6Wd" + "1Qs/Lk4+")}),
        fake(40, "Rt6Wd" + "1Qs/Lk4+"),
    ),
    # ... a field or two away: `aws iam create-access-key --output text` (the CreateDate
    # between), its tabs raw, JSON-escaped or shown as spaces; `aws sts get-session-token`.
    (
        "aws_secret_key",
        "ACCESSKEY\t"
        + "AKIA"
        + "Z9Q2" * 4
        + "\t2024-05-01T12:00:00+00:00\t"
        + fake(40, "Mp2Vc" + "8Hs/Tn5+")
        + "\tActive\tbob\n",
        fake(40, "Mp2Vc" + "8Hs/Tn5+"),
    ),
    (
        "aws_secret_key",
        json.dumps(
            {
                "stdout": "ACCESSKEY\t"
                + "AKIA"
                + "Z9Q2" * 4
                + "\t2024-05-01T12:00:00+00:00\t"
                + fake(40, "Mp2Vc" + "8Hs/Tn5+")
                + "\tActive\tbob\n"
            }
        ),
        fake(40, "Mp2Vc" + "8Hs/Tn5+"),
    ),
    (
        "aws_secret_key",
        "ACCESSKEY  "
        + "AKIA"
        + "Z9Q2" * 4
        + "  2024-05-01T12:00:00+00:00  "
        + fake(40, "Mp2Vc" + "8Hs/Tn5+")
        + "  Active  bob",
        fake(40, "Mp2Vc" + "8Hs/Tn5+"),
    ),
    (
        "aws_secret_key",
        "CREDENTIALS\t" + "ASIA" + "Z9Q2" * 4 + "\t2024-05-01T13:00:00Z\t" + fake(40, "Bv7Nq" + "3Ws/Xe6+"),
        fake(40, "Bv7Nq" + "3Ws/Xe6+"),
    ),
    # ... after a comma and a line break, or a blank line (raw or JSON-escaped).
    (
        "aws_secret_key",
        "AKIA" + "Z9Q2" * 4 + ",\n" + fake(40, "Lc4Pz" + "8Jd/Wr2+") + "\n",
        fake(40, "Lc4Pz" + "8Jd/Wr2+"),
    ),
    (
        "aws_secret_key",
        "New key pair:\n\n" + "AKIA" + "Z9Q2" * 4 + "\n\n" + fake(40, "Lc4Pz" + "8Jd/Wr2+") + "\n",
        fake(40, "Lc4Pz" + "8Jd/Wr2+"),
    ),
    (
        "aws_secret_key",
        json.dumps({"stdout": "AKIA" + "Z9Q2" * 4 + "\r\n\r\n" + fake(40, "Yh3Ks" + "6Fw/Nb9+") + "\r\n"}),
        fake(40, "Yh3Ks" + "6Fw/Nb9+"),
    ),
    # ... in the next cell of a table row: markdown (after its header row, also in code spans)
    # and `--output table` where the terminal is wide enough for columns.
    (
        "aws_secret_key",
        "| Access key ID | Secret access key |\n|---|---|\n| "
        + "AKIA"
        + "Z9Q2" * 4
        + " | "
        + fake(40, "Qm5Tx" + "2Cv/Hk7+")
        + " |\n",
        fake(40, "Qm5Tx" + "2Cv/Hk7+"),
    ),
    (
        "aws_secret_key",
        json.dumps(
            "| User | Key | Secret |\n|---|---|---|\n| ci | `"
            + "AKIA"
            + "Z9Q2" * 4
            + "` | `"
            + fake(40, "Qm5Tx" + "2Cv/Hk7+")
            + "` |"
        ),
        fake(40, "Qm5Tx" + "2Cv/Hk7+"),
    ),
    (
        "aws_secret_key",
        "||      AccessKeyId     |        CreateDate          |"
        + "              SecretAccessKey               ||\n"
        + "||  "
        + "AKIA"
        + "Z9Q2" * 4
        + "|  2026-12-07T12:00:00+00:00 |  "
        + fake(40, "Wd8Gn" + "4Rj/Ms1+")
        + "  |  Active |  bob       ||\n",
        fake(40, "Wd8Gn" + "4Rj/Ms1+"),
    ),
    # ... or in a row of its own, under its name: `--output table` on a narrow terminal.
    (
        "aws_secret_key",
        "||  AccessKeyId     |  "
        + "AKIA"
        + "Z9Q2" * 4
        + "                      ||\n||  CreateDate      |  2026-12-07T12:00:00+00:00                 ||\n"
        + "||  SecretAccessKey |  "
        + fake(40, "Zt2Bq" + "9Lx/Pe4+")
        + "  ||\n",
        fake(40, "Zt2Bq" + "9Lx/Pe4+"),
    ),
    (
        "aws_secret_key",
        json.dumps({"output": "||  SecretAccessKey|  " + fake(40, "Zt2Bq" + "9Lx/Pe4+") + "  ||\n"}),
        fake(40, "Zt2Bq" + "9Lx/Pe4+"),
    ),
    (
        "aws_secret_key",
        "| Secret Access Key | `" + fake(40, "Zt2Bq" + "9Lx/Pe4+") + "` |",
        fake(40, "Zt2Bq" + "9Lx/Pe4+"),
    ),
    (
        "aws_secret_key",
        "| Variable | Value |\n|---|---|\n| AWS_SECRET_ACCESS_KEY | " + fake(40, "Jr5Nw" + "1Kc/Dt8+") + " |",
        fake(40, "Jr5Nw" + "1Kc/Dt8+"),
    ),
    # An STS session token wherever it stands, by its prefix: `--output text` after the pair,
    # a `--output table` row, an echoed variable (the global endpoint's prefix).
    (
        "secret",
        "CREDENTIALS\t"
        + "ASIA"
        + "Z9Q2" * 4
        + "\t2026-12-08T00:00:00+00:00\t"
        + fake(40, "Bv7Nq" + "3Ws/Xe6+")
        + "\t"
        + STS_TOKEN
        + "\n",
        STS_TOKEN,
    ),
    (
        "secret",
        json.dumps({"stdout": "||  SessionToken   |  " + STS_TOKEN + "  ||\n"}),
        STS_TOKEN,
    ),
    ("secret", "$ echo $AWS_SESSION_TOKEN\n" + STS_GLOBAL_TOKEN + "\n", STS_GLOBAL_TOKEN),
    # XML elements and attributes named like a secret (Maven's settings.xml, NuGet, appSettings).
    (
        "password",
        "<server><id>nexus</id><password>" + fake(12, "Mv7nX2") + "</password></server>",
        fake(12, "Mv7nX2"),
    ),
    ("secret", "<apiKey>" + fake(20, "Ak3yQ8") + "</apiKey>", fake(20, "Ak3yQ8")),
    ("password", '<add key="ClearTextPassword" value="' + fake(12, "Nu6gT4") + '" />', fake(12, "Nu6gT4")),
    # Single-quoted attributes, Spring's and Ant's name-value pairs, a namespace prefix, a CDATA
    # section and an Apple property list's key then string.
    ("password", "<add key='Password' value='" + fake(14, "Sq5wR8") + "' />", fake(14, "Sq5wR8")),
    (
        "password",
        '<property name="db.password" value="' + fake(14, "Sp7rG3") + '"/>',
        fake(14, "Sp7rG3"),
    ),
    ("secret", "<param name='secret'  value='" + fake(16, "Pm4sK9") + "'/>", fake(16, "Pm4sK9")),
    (
        "password",
        "<ns2:login><ns2:password>" + fake(14, "Ns8pW2") + "</ns2:password></ns2:login>",
        fake(14, "Ns8pW2"),
    ),
    ("password", "<password><![CDATA[" + fake(14, "Cd6aT1") + "]]></password>", fake(14, "Cd6aT1")),
    ("password", "<password>Tr0ub4dor! " + fake(6, "x3Z") + "</password>", "Tr0ub4dor! " + fake(6, "x3Z")),
    # An element named by its last attribute: Hibernate's properties, Java's properties XML.
    (
        "password",
        '<property name="hibernate.connection.password">' + fake(12, "Hb8Qw2") + "</property>",
        fake(12, "Hb8Qw2"),
    ),
    ("secret", "<entry key='api.token'>" + fake(20, "Et4Kp9") + "</entry>", fake(20, "Et4Kp9")),
    # The text on a line of its own, as a pretty-printed file has it.
    ("password", "<password>\n  " + fake(12, "Ln4wQ8") + "\n</password>", fake(12, "Ln4wQ8")),
    (
        "password",
        '<entry key="jdbc.password">\r\n\t' + fake(12, "Cr6nT2") + "\r\n</entry>",
        fake(12, "Cr6nT2"),
    ),
    # A namespace prefix on the name: Azure AD's web.config.
    (
        "secret",
        '<add key="ida:ClientSecret" value="' + fake(32, "Az7+Qw3/") + '=" />',
        fake(32, "Az7+Qw3/") + "=",
    ),
    (
        "password",
        "<dict>\n\t<key>Password</key>\n\t<string>" + fake(14, "Pl3iS7") + "</string>",
        fake(14, "Pl3iS7"),
    ),
    ("secret", "<key>api_token</key><string>" + fake(20, "Tk2pL9") + "</string>", fake(20, "Tk2pL9")),
    # A secret-named element with attributes after its name: WS-Security's SOAP header, an
    # `encrypted=` flag, `xml:space=`; raw and in a JSON string.
    (
        "password",
        '<wsse:UsernameToken><wsse:Username>svc</wsse:Username><wsse:Password Type="http://docs.oasis-open.org/'
        'wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordText">'
        + fake(16, "Ws7eC2")
        + "</wsse:Password>",
        fake(16, "Ws7eC2"),
    ),
    (
        "password",
        json.dumps('<wsse:Password Type="...#PasswordText">' + fake(16, "Wj4sN8") + "</wsse:Password>"),
        fake(16, "Wj4sN8"),
    ),
    ("password", '<password encrypted="false">' + fake(14, "Ef3lS9") + "</password>", fake(14, "Ef3lS9")),
    (
        "secret",
        '<ClientSecret xml:space="preserve">\n  ' + fake(24, "Cs5pR1") + "\n</ClientSecret>",
        fake(24, "Cs5pR1"),
    ),
    (
        "secret",
        json.dumps(json.dumps("<token type='bearer'><![CDATA[" + fake(20, "Tb6cD3") + "]]></token>")),
        fake(20, "Tb6cD3"),
    ),
    # Attributes on lines of their own, or parted by a tab: the key's, then the value's.
    ("password", '<add key="DbPassword"\n     value="' + fake(14, "Ak9nL2") + '" />', fake(14, "Ak9nL2")),
    (
        "password",
        json.dumps("<property name='db.password'\n\tvalue='" + fake(14, "Pn5tV7") + "'/>"),
        fake(14, "Pn5tV7"),
    ),
    ("secret", "<add key='ApiToken'\tvalue='" + fake(20, "Tv3aB8") + "' />", fake(20, "Tv3aB8")),
    (
        "password",
        '<add key="SmtpPassword"\r\n       value="' + fake(14, "Cr2lF6") + '" />',
        fake(14, "Cr2lF6"),
    ),
    # The text on a line of its own with blank lines around it.
    ("password", "<password>\n\n    " + fake(12, "Bl4nK7") + "\n\n</password>", fake(12, "Bl4nK7")),
    ("password", json.dumps("<password>\n    " + fake(12, "Jl8mW3") + "\n</password>"), fake(12, "Jl8mW3")),
    # .npmrc's _auth (base64 of user:password), a 40-hex GitHub token as a URL's user, WireGuard.
    (
        "npm_token",
        "//registry.npmjs.org/:_auth=" + base64.b64encode(b"ci:" + fake(10).encode()).decode(),
        "Y2k6",
    ),
    (
        "github_token",
        "git clone https://" + fake(40, "0a1b2c3d4e5f6789") + "@github.com/o/r",
        fake(40, "0a1b2c3d4e5f6789"),
    ),
    ("secret", "PresharedKey = " + fake(43, "yAnz5TF+lXJ/te14") + "=", fake(43, "yAnz5TF+lXJ/te14")),
    # A PEM block written as joined string literals.
    (
        "private_key",
        'KEY = (\n    "-----BEGIN PRIVATE '
        + 'KEY-----\\n"\n    "'
        + fake(64, "MIIEv0Ab+/")
        + '\\n"\n    "'
        + fake(40, "Qw3Er/7Ty")
        + '\\n"\n    "-----END PRIVATE '
        + 'KEY-----\\n"\n)',
        fake(40, "Qw3Er/7Ty"),
    ),
    (
        "private_key",
        'k = "-----BEGIN RSA PRIVATE ' + 'KEY-----\\n" +\n  "' + fake(64, "MIIEv0Ab+/") + '"',
        fake(64, "MIIEv0Ab+/"),
    ),
    # A PEM block as a list of its lines: JSON, Python, each line ending in "\n".
    (
        "private_key",
        json.dumps(
            [
                "-----BEGIN RSA " + "PRIVATE KEY-----",
                fake(64, "MIIEow9Ab+/"),
                "Zw==",
                "-----END RSA " + "PRIVATE KEY-----",
            ]
        ),
        fake(64, "MIIEow9Ab+/"),
    ),
    (
        "private_key",
        "lines = "
        + repr(["-----BEGIN " + "PRIVATE KEY-----", fake(64, "MIIEv8Qz+/"), fake(44, "Kp3Lr/7Ty")]),
        fake(44, "Kp3Lr/7Ty"),
    ),
    (
        "private_key",
        json.dumps(
            [line + "\n" for line in ("-----BEGIN EC " + "PRIVATE KEY-----", fake(64, "MHcCAQ1Ee+/"))]
        ),
        fake(64, "MHcCAQ1Ee+/"),
    ),
    # An encrypted key's headers before its base64: as list items, joined literals, a cut block.
    (
        "private_key",
        json.dumps(
            ["-----BEGIN RSA " + "PRIVATE KEY-----", *PEM_HEADERS, "", fake(64, "MIIEpQ9Ab+/"), "Zw=="]
        ),
        fake(64, "MIIEpQ9Ab+/"),
    ),
    (
        "private_key",
        "key = (\n"
        + "".join(
            f'    "{line}\\n" +\n'
            for line in ("-----BEGIN RSA " + "PRIVATE KEY-----", *PEM_HEADERS, "", fake(64, "MIIEpQ8Cd+/"))
        )
        + '    "-----END RSA '
        + 'PRIVATE KEY-----\\n"\n)',
        fake(64, "MIIEpQ8Cd+/"),
    ),
    (
        "private_key",
        "$ head -5 server.key\n-----BEGIN RSA "
        + "PRIVATE KEY-----\n"
        + "\n".join(PEM_HEADERS)
        + "\n\n"
        + fake(64, "MIIEpQ7Ef+/"),
        fake(64, "MIIEpQ7Ef+/"),
    ),
    # A JSON Web Key's private members.
    (
        "private_key",
        '{"kty":"EC","crv":"P-256","x":"' + fake(43, "zv3NLUS5") + '","d":"' + fake(43, "4vreeS16HQx") + '"}',
        fake(43, "4vreeS16HQx"),
    ),
    (
        "private_key",
        '{"d": "' + fake(43, "Jw8kP2") + '", "kty": "RSA", "n": "' + fake(40) + '"}',
        fake(43, "Jw8kP2"),
    ),
    # As a Python dict, and as a JavaScript object with bare keys.
    (
        "private_key",
        "jwk = {'kty': 'RSA', 'n': '" + fake(40) + "', 'e': 'AQAB', 'd': '" + fake(43, "Pd5vQ1") + "'}",
        fake(43, "Pd5vQ1"),
    ),
    (
        "private_key",
        "const key = { kty: 'oct', k: '" + fake(43, "Ko7cT3") + "', alg: 'HS256' }",
        fake(43, "Ko7cT3"),
    ),
    # a comparing call formatted over several lines (also in a JSON string)
    ("password", 'if (strcmp(password,\n           "' + fake(16, "Lb7Wc") + '") == 0) {', fake(16, "Lb7Wc")),
    ("password", 'if (password.equals(\r\n    "' + fake(16, "Mq3Xe") + '")) {', fake(16, "Mq3Xe")),
    (
        "secret",
        json.dumps('ok = hmac.compare_digest(\n    token,\n    "' + fake(20, "Ns4Vd") + '",\n)'),
        fake(20, "Ns4Vd"),
    ),
    ("secret", "<token>" + fake(20, "Ty6Pb") + "</token>", fake(20, "Ty6Pb")),
]


@pytest.mark.parametrize(
    ("kind", "text", "secret"), PLANTED, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(PLANTED)]
)
def test_planted_example_is_redacted_with_its_kind(kind: str, text: str, secret: str) -> None:
    out, counts = Redactor().redact(text)
    assert secret not in out
    assert placeholder(kind) in out
    assert counts.get(kind, 0) >= 1


def test_every_kind_has_a_planted_example() -> None:
    assert {kind for kind, _, _ in PLANTED} == set(KINDS)


NEAR_MISSES = [
    # After ",", lists of names, flags and phrases are no secret: the review's cases.
    'cols = ["user_id", "access_token", "expires_at_utc2", "scope"]',
    'fields = ("id", "api_key", "created_2024_01")',
    'parser.add_argument("--token", "--hf-token2")',
    'tokenizer("[CLS] my token", "second sentence 2")',
    'logger.warning("invalid token", "code=E401x")',
    '("secret", "v2.3.1-beta")',
    '["Bearer token", "application/json; charset=utf-8"]',
    # An element's text never spans two JSON strings (the "tail" key must survive).
    '{"head": "<apiKey>", "tail": "Zq8wLm3N1b</apiKey>"}',
    # Environment entries whose value is a reference, or no value at all.
    "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db\n        key: pw",
    "- name: DB_PASSWORD\n  value: $(DB_PASSWORD)",
    '{"name": "TOKEN_TTL", "value": "3600"}',
    "- name: Set token\n  value: 3",
    # sudo -S with no echoed password, content piped to sudo tee, htpasswd prompting.
    "sudo -S true",
    'echo "$SUDO_PASS" | sudo -S apt-get update',
    "echo 'nameserver 1.1.1.1' | sudo tee /etc/resolv.conf",
    "echo root:root | chpasswd",
    "htpasswd -c /etc/nginx/.htpasswd admin",
    "$cred = ConvertTo-SecureString $encrypted",
    # Here-strings to other commands or of references, sudo without -S (a word between sudo and
    # -S is the command's), htpasswd without -b, a SecureString from a variable or a file.
    'cat <<< "hello world" | wc',
    'grep foo <<< "$line"',
    'sudo -S apt-get update <<< "$SUDO_PASS"',
    "sudo -S true <<< $(cat pw.txt)",
    "sudo -S true; grep -c x <<< 'Zq9xW3vB7'",
    # The reader quoted in another command's argument, or ended by an unquoted "|" or "&&"; a
    # word after a redirection's ">" piped to ConvertTo-SecureString is no password.
    "grep \"sudo -S\" <<< 'Zq9xW3vB7'",
    "sudo -S true | grep -c x <<< 'Zq9xW3vB7'",
    "sudo -S true && grep -c x <<< 'Zq9xW3vB7'",
    '"a" > "b" | ConvertTo-SecureString -AsPlainText -Force',
    "kernel<<<blocks, threads>>>(d_out, d_in);",
    "sudo -k ls",
    "sudo -u root -i",
    "echo done | sudo tee /etc/x",
    "echo 2y | sudo -u root pacman -S jq",
    "htpasswd -c file user",
    "htpasswd -B -C 12 /etc/nginx/.htpasswd admin",
    'htpasswd -bnBC 10 "" "$PW"',
    "Get-Content f | ConvertTo-SecureString",
    "$pw | ConvertTo-SecureString -AsPlainText -Force",
    # A SecureString from a variable, a prompt or a placeholder after its switches, and prose; a
    # password piped to passwd without --stdin (it reads the terminal) or from a variable.
    "$s = ConvertTo-SecureString -AsPlainText -Force $env:DB_PASSWORD",
    '$s = ConvertTo-SecureString -AsPlainText -Force (Read-Host "Password")',
    "$s = ConvertTo-SecureString -String $cred.Password -AsPlainText -Force",
    '$s = ConvertTo-SecureString -AsPlainText -Force "your-password-here"',
    "$s = ConvertTo-SecureString -AsPlainText -Force $pw | Out-Null",
    "Use `ConvertTo-SecureString -AsPlainText -Force` to convert a plain string.",
    "$s = ConvertTo-SecureString -Force $encrypted",
    # The same with a colon's value or common parameters among the switches.
    "$s = ConvertTo-SecureString -String:$pw -AsPlainText:$true -Force",
    "$s = ConvertTo-SecureString -AsPlainText:$true -Force -ErrorAction Stop $env:DB_PASSWORD",
    '$s = ConvertTo-SecureString -AsPlainText -Verbose -Force (Read-Host "Password")',
    "$s = ConvertTo-SecureString -String:(Get-Content pw.txt) -AsPlainText -Force",
    '$s = ConvertTo-SecureString -String:"your-password-here" -AsPlainText -Force',
    "$pw | ConvertTo-SecureString -AsPlainText -Force -ErrorAction Stop",
    "$s = ConvertTo-SecureString $encrypted -Key $key -ErrorAction Stop",
    "Pass -AsPlainText:$true to ConvertTo-SecureString -Debug to see it.",
    'echo "$NEWPASS" | passwd --stdin bob',
    'echo "${{ secrets.ROOT_PW }}" | sudo passwd --stdin root',
    "echo 'your-password-here' | passwd --stdin bob",
    "echo y | passwd bob",
    "echo done | passwd -S bob",
    "cat /etc/passwd | grep -c bob",
    "grep bob /etc/passwd <<< 'Zq9xW3vB7'",
    'passwd --stdin bob <<< "$PW"',
    'Get-Content "secret2.txt" | ConvertTo-SecureString -AsPlainText -Force',
    # An AWS key id followed by an ordinary word; XML without a literal secret.
    "AKIA" + "IOSFODNN7EXAMPLE " + fake(40, "wJalr" + "XUtn/K7MD+"),
    # AWS's documentation example of `aws iam create-access-key --output text`.
    "ACCESSKEY\t"
    + "AKIA"
    + "IOSFODNN7EXAMPLE\t2015-03-09T18:39:23.411Z\t"
    + "wJalrXUtnFEMI/"
    + "K7MDENG/bPxRfiCYEXAMPLEKEY\tActive\tBob",
    # ... and as tables: a markdown row, `--output table`'s row of its own; a documentation table.
    "| " + "AKIA" + "IOSFODNN7EXAMPLE | " + "wJalrXUtnFEMI/" + "K7MDENG/bPxRfiCYEXAMPLEKEY |",
    "||  SecretAccessKey |  " + "wJalrXUtnFEMI/" + "K7MDENG/bPxRfiCYEXAMPLEKEY  ||",
    "| SecretAccessKey | string | The secret key used to sign requests. |",
    "||  SecretAccessKey |  " + HEX40 + "  ||",
    "| Secret Access Key | `" + "abcdefghij" * 4 + "` |",
    "| AWS_SECRET_ACCESS_KEY | Your secret access key | yes |",
    "| `AWS_SECRET_ACCESS_KEY` | `" + "wJalrXUtnFEMI/" + "K7MDENG/bPxRfiCYEXAMPLEKEY` |",
    # An STS session token's prefix named, or a token's start shown; the prefix glued to base64.
    "Session tokens from regional endpoints start with IQoJb3JpZ2luX2Vj (base64).",
    "AWS_SESSION_TOKEN looks like IQoJb3JpZ2luX2VjEJr" + "//////////wEaCXVzLWVhc3QtMSJH...",
    "FwoGZXIvYXdzE" + fake(80, "Pn4tQa8Wm2Lx/Kr7+") + "...",
    fake(44, "Ab3+/Zq9") + "IQoJb3JpZ2luX2Vj" + fake(200, "Kd7/Lm2+Xp"),
    "<password>${env.PW}</password>",
    "<key>password</key><string>${PW}</string>",
    '<label for="password">Password</label>',
    '<add key="Username" value="deploy" />',
    '<input type="password" value="" />',
    # XML whose names are no secret's, or whose values are templates or empty.
    "<key>CFBundleName</key><string>MyApp</string>",
    "<key>PasswordHint</key>\n<string>your pet</string>",
    "<key>Password</key>\n\t<string>${PW}</string>",
    "<key>Password</key><string></string>",
    '<property name="username" value="bob"/>',
    '<param name="passwordField" value="pw_input2"/>',
    '<property name="password" value="${db.password}"/>',
    "<add key='Password' value='$(DB_PASSWORD)' />",
    '<property name="password" value=""/>',
    '<input type="password" name="password" value="" />',
    "<ns1:password>${env.PW}</ns1:password>",
    "<password><![CDATA[${PW}]]></password>",
    "<script><![CDATA[ if (a < b) { x = 1; } ]]></script>",
    "Each <token> element holds one word, e.g. <token>hello</token>.",
    "The <password> element, and </password> closes it.",
    '<property name="hibernate.connection.username">sa</property>',
    '<add key="ida:ClientId" value="6f0e3a52-1b2c-4d5e-8f90-a1b2c3d4e5f6" />',
    '<property name="db.password">${DB_PASSWORD}</property>',
    "<password>\n    ${env.DB_PASSWORD}\n</password>",
    '<textarea name="password">Type it here</textarea>',
    '<label for="password">Password</label>',
    '<option value="token">Personal access token</option>',
    '<a href="/reset-password">Reset your password</a>',
    # Elements with attributes and attributes over several lines without a literal secret.
    '<xs:element name="password" type="xs:string"/>',
    "<password></password>",
    "<password>\n  <value>${DB_PASSWORD}</value>\n</password>",
    '<password encrypted="true">{COQLCE6DU6GtcS5P=}</password>',
    '<wsse:Password Type="...#PasswordText">${PASSWORD}</wsse:Password>',
    json.dumps('<wsse:Password Type="...#PasswordText">your-password-here</wsse:Password>'),
    '<password encrypted="false">\n    ${env.DB_PASSWORD}\n</password>',
    '<ClientSecret xml:space="preserve"></ClientSecret>',
    '<password type="string">Enter your password</password>',
    '<span class="token keyword">return</span>',
    '<div class="secret">The secret is out, and it stays</div>',
    "print('<b>')\nx = 'z'>y</token>",
    '<add key="DbPassword"\n     value="${DB_PASSWORD}" />',
    json.dumps('<property name="db.password"\n\tvalue="$(DB_PASSWORD)"/>'),
    '<property name="db.username"\n\tvalue="' + fake(14) + '"/>',
    '<input name="password"\n       value="{{ form.password }}">',
    '<param name="passwordField"\n value="pw_input2"/>',
    "<password>\n    Put your real password here\n</password>",
    json.dumps("<password>\n    The password\n    for the database\n</password>"),
    # "d" in an object that is no JSON Web Key, a public JWK.
    '{"a": 1, "d": "' + fake(43) + '"}',
    '{"kty": "RSA", "e": "AQAB", "n": "' + fake(43) + '"}',
    "{'kty': 'EC', 'crv': 'P-256', 'x': '" + fake(43) + "', 'y': '" + fake(43, "Yq2") + "'}",
    "{ kty: 'EC', x: '" + fake(43) + "', y: '" + fake(43, "Yq2") + "', kid: '" + fake(43, "Kd4") + "' }",
    "basic_auth=dXNlcjpwYXNz",
    # A tokenizer's special tokens and bracketed placeholders are no secrets.
    'BertTokenizer(vocab, unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]")',
    'api_key = "[YOUR_API_KEY]"',
    # A Secrets Manager ARN names a secret; it is not one.
    '{"ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf", "Name": "prod/db"}',
    # After ",": labels, short test values and names built on the key stay.
    'form.add("password", "Mot de passe")',
    'check("token", "1.2.3")',
    'rename("password", "password2_old")',
    "      api_key: anthropic_api_key()",
    "api_key: anthropic_api_key",
    'password = os.environ["PASSWORD"]',
    # Comparisons with no literal secret: empty, a name, a short token, a word, a phrase.
    'if password == "":',
    'os.environ["DB_PASSWORD"] == ""',
    "assert token == expected",
    'mode == "password"',
    'if key == "enter":',
    'if token == "(" or token == "<|endoftext|>":',
    'if token == "end of input" or token == "\\n\\n\\n\\n":',
    'typeof token === "function" && password !== confirmPassword',
    'assert resp["token"] == "access_token"',
    'assert settings.SECRET_KEY == "django-insecure-key"',
    # Tokenizer, lexer and test code: a literal that does not look random is no secret.
    'if token == "#include":',
    'if token == "std::vector":',
    '    if token == "```python":',
    'assert next_token == "Paris123"',
    "if (token === 'Identifier1') {",
    'assert token == "2024-01-01T00:00:00Z"',
    'assert token == "v1.2.3-beta4"',
    'if token == "127.0.0.1":',
    'if token == "localhost:8080":',
    'if token == "paris1234567890123456":',
    'assert token == "verylongidentifiername1"',
    # The literal first or compared by a call: a short, word-like or empty literal, a variable, a
    # name that is no secret's, a call's result, two literals, two names.
    'if "hello" == token:',
    'if "2024-01-01T00:00:00Z" == token:',
    "if ('v1.2.3-beta4' === process.env.TOKEN_VERSION) {}",
    '"Zq8wLm3N1b" == get_token()',
    '"Zq8wLm3N1b" == token.strip()',
    'if ("Zq8wLm3N1b" == username) {}',
    'if password.equals("") {',
    'if (token.equals("Bearer")) {',
    'if (strcmp(password, "secret") == 0)',
    "hmac.compare_digest(token, expected)",
    "hmac.compare_digest(token.encode(), expected_token)",
    'assertEquals("Paris123", token)',
    'assertEquals("access_token", token.getType())',
    'if ("password".equals(field)) {',
    'if ("Zq8wLm3N1b".equals(username)) {',
    'if (username.equals("Zq8wLm3N1b")) {',
    'compare_digest(token, "verylongidentifiername1")',
    'strcmp(password, "hello world 123")',
    'if (strncmp(password, "secret", 6) == 0)',
    'if (strncmp(buf, "Zq8wLm3N1b", n) == 0)',
    'Objects.equals(keyword, "Zq8wLm3N1b")',
    'assertEquals("Zq8wLm3N1b", "Zq8wLm3N1b")',
    "assertEquals(token, token2)",
    # An assertion's message is prose, never a secret; a word-like expected value, or no literal.
    'assertEquals("token matches", expectedToken, token);',
    'assertEquals("expected token", "Paris123", token);',
    'assertEquals("token doesn\'t match", "Paris123", token);',
    'assertEquals("password must be hashed", "secret", user.password);',
    'assertEquals("Zq8wLm3N1b rotated", username, "Zq8wLm3N1b");',
    'assertEquals("Zq8wLm3N1b", username, "token mismatch");',
    'self.assertEqual(token, "Paris123", msg="token mismatch")',
    'assertEquals(message, "Zq8wLm3N1b", username);',
    'assertNotEquals("tokens differ", token1, token2);',
    'if (strncmp(buf, "Zq8wLm3N1b", token_len) == 0)',
    "The strcmp(password, input) call compares them in variable time; use hmac.compare_digest().",
    "password=None",
    "def connect(password: str | None = None, token: str = '') -> None:",
    "token = get_token()",
    "API_KEY=$API_KEY",
    "API_KEY=${API_KEY}",
    "set API_KEY=%API_KEY%",
    "password=<your-password>",
    "password: changeme",
    # Block scalars that hold no secret: another key's, templates, config, prose, an outdented line.
    "description: |\n  Tokens are sent in the header.\n  See token_url.\n",
    "password: |\n  ${PW}\n",
    "password: >-\n  {{ .Values.db.password }}\n",
    "secret: |\n  apiVersion: v1\n  data:\n    x: y\n  },\n",
    "password: |\nhunter2Zq9xW3vB7\n",
    "| api_token: |\n|---|---|\n| Zq8wLm3N1b | x |",
    "Set the password: |\n  Zq8wLm3N1b\n",
    # An encrypted Ansible value; a folded block whose words are a label.
    "password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6231336539666234306139346433616338376437\n",
    "password: >\n  Enter\n  your\n  password\n",
    # One line of words that is a label or a sentence; several lines of words (prose).
    "password: |\n  Enter your password\n",
    "api_key: >\n  Set it in the vault.\n",
    "secret: >\n  Kept in the vault. Ask ops\n",
    "password: >\n  Used by the admin\n  console only\n",
    "password: |\n  # set in CI\n",
    "description: |\n  correct horse battery staple\n",
    # Another key's block inside a secret's, holding prose.
    "secret: |\n  nested: |\n    Tokens are sent in the header.\n",
    "apiKey: " + "'proxy-handled'",
    "CODEMIE_API_KEY: " + "'sk-secret'",
    "const apiKey = await getKey();",
    "jwtToken: env.CODEMIE_JWT_TOKEN",
    "params: { _csrf_token: csrfToken }",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "tokenizer.pad_token = tokenizer.eos_token",
    "max_tokens=4096, temperature=0.0",
    "sorted(items, key=lambda item: item[1])",
    "for key, value in row.items(): out[key] = value",
    "monkey: 12345",
    "bypass=1",
    "PWD=/tmp/work",
    "password: '********'",
    "the password hunter2 is famous",
    "pip install sk-learn scikit-learn",
    "sk-ant- is the prefix of Anthropic keys",
    "git checkout 3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "data = 'U29tZSBvcmRpbmFyeSBi" + "YXNlNjQgdGV4dA=='",
    "git clone https://github.com/org/repo",
    "psql postgres://localhost:5432/db",
    "postgres://user:${DB_PASSWORD}@db:5432/app",
    "[REDACTED_TEXT len=5 sha=abcd1234]",
    "Bearer tokens are sent in the Authorization header.",
    "uses Bearer authentication",
    'curl -H "Authorization: Bearer $GITHUB_TOKEN"',
    "curl -H 'Authorization: bearer YOUR_GITHUB_TOKEN'",
    "AKIA" + "IOSFODNN7EXAMPLE is AWS's documentation key",
    "git remote add origin git@github.com:org/repo.git",
    "Co-Authored-By: Claude <noreply@anthropic.com>",
    "npm i @roots/bud-framework lmdb-store@sitespeed.io/edgedriver",
    "PromiseResolve = @Promise.@resolve.bind(@Promise)",
    "https://example.com/home/index.html and /api/Users/42",
    "ls /home/ and /home/$USER and /Users/{username}",
    "files in /Users/Shared/ and /home/<user>/repo",
    "-----BEGIN PUBLIC KEY-----",
    # A certificate as a list of its lines (public), a header paired with a name or its end.
    json.dumps(["-----BEGIN CERTIFICATE-----", fake(64, "MIIBy9Ab+/"), "-----END CERTIFICATE-----"]),
    repr(["-----BEGIN CERTIFICATE-----", fake(64, "MIIBy9Ab+/"), "-----END CERTIFICATE-----"]),
    '[("-----BEGIN EC ' + 'PRIVATE KEY-----", "ecdsa"), ("-----BEGIN RSA ' + 'PRIVATE KEY-----", "rsa")]',
    # ... with a name that looks random, or with the first characters every such key starts with.
    '[("-----BEGIN '
    + 'PRIVATE KEY-----", "Pkcs8PrivateKey"), ("-----BEGIN RSA '
    + 'PRIVATE KEY-----", "Pkcs1RsaKey")]',
    'PREFIXES = ["-----BEGIN OPENSSH ' + 'PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjE"]',
    "[('-----BEGIN RSA "
    + "PRIVATE KEY-----', 'Pkcs1RsaKey'), "
    + "('-----END RSA "
    + "PRIVATE KEY-----', 'end')]",
    "{'-----BEGIN RSA " + "PRIVATE KEY-----': 'rsa', '-----END RSA " + "PRIVATE KEY-----': 'end'}",
    # An encrypted key's headers with no key after them: a name, code that builds one, the format.
    json.dumps(["-----BEGIN RSA " + "PRIVATE KEY-----", *PEM_HEADERS, "", "encrypted"]),
    'pem = "-----BEGIN RSA '
    + 'PRIVATE KEY-----\\n" + "Proc-Type: 4,ENCRYPTED\\n" + "DEK-Info: AES-128-CBC," + iv + "\\n\\n" + body',
    "pem = '-----BEGIN RSA "
    + "PRIVATE KEY-----\\n' + 'Proc-Type: 4,ENCRYPTED\\n' + 'DEK-Info: AES-128-CBC,' + iv + '\\n\\n' + body",
    "-----BEGIN RSA "
    + "PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,<iv in hex>\n\n...\n",
    "a -home-grown tool",
    # Bare pass, the working directory, words ending in "pass"; docker's -u uid:gid.
    "pass=" + "Zx81kq7t",
    "openssl enc --pass " + "Zx81kq7t",
    "PWD=/srv/app/project OLDPWD=/tmp",
    "bypass=abc123 COMPASS=abc123",
    "SMTP_PASS=$SMTP_PASS",
    "docker run -u 1000:1000 img && docker exec -u www-data:www-data app sh",
    "git push -u origin HEAD:main",
    "pip install --user git+https://github.com/org/repo",
    'curl -u "$USER:$PASS" https://api.example.com',
    "Bearer YOUR_GITHUB_TOKEN_HERE",
    # Identifiers stay identifiers when unquoted; labels are not passphrases.
    "password=self.password",
    "password: correct horse",
    '"password": "Enter your password"',
    "api_key: 'your API key here'",
    # Templates and paths that look like what the audit's literals looked like.
    "ROOT_PASSWORD=$DB_ROOT_PASSWORD",
    "ROOT_PASSWORD=${DB_ROOT_PASSWORD:-changeme}",
    "password=$(cat /run/secrets/db_password)",
    '"password": "$MYSQL_ROOT_PASSWORD"',
    "DB_PASSWORD=/run/secrets/db_password",
    "TOKEN=~/.config/gh/hosts.yml",
    "'password' => $this->password,",
    # Prompts and labels whose quote closes a string.
    'print("Enter password: ")',
    'log.info("token: " + token_id)',
    'msg = "API key: ".join(parts)',
    # Flags of commands that take no credential with them.
    "TZ=UTC date -u +%H:%M:%S",
    "date -u '+%Y%m%d %H:%M'",
    "docker run --rm -u 1000:1000 -p 8080:80 nginx",
    "mkdir -p /tmp/build && ls -la",
    "find . -name '*.py' -print",
    "ssh -p 2222 ops@bastion",
    "mysql -u root -p appdb",
    "psql -U app -h db -p 5432",
    "docker login -u bob --password-stdin < token.txt",
    "redis-cli -a $REDIS_PASSWORD ping",
    "sshpass -p $SSH_PASS ssh -p 2222 deploy@host",
    "tar -tzf release.tgz",
    "curl -sSfL -o out.json https://example.com/api?page=2",
    "x-powered-by and pre-processing and well-known",
    "openssl enc -d -aes-256-cbc -pass env:ARCHIVE_PASS -in a.enc",
    # Numbers that are not phones, ids or cards.
    "build 4155550134 on port 8080, pid 23412",
    "released 2026-11-29 at 10:42:07+01:00",
    "timestamp 1764583200000 and nanos 1764583200000000000",
    "order 123-456-7890 and 078-00-1120",
    "v2-415-555-0134",
    "card 4242 4242 4242 4242 is the test card",
    "git diff\n+1234567890\n-42",
    "Elixir: ~r/agent-[0-9]+/ and ~~N/A~~ and HEAD~2/x",
    "tls.crt: " + base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB" + b"y" * 48).decode(),
    # a lexer's or a tokenizer's tokens, and a form's prose in an element with attributes
    '<token kind="op">=</token> <token kind="op">+=</token> <token kind="name">std::vector</token>',
    '<token id="t2" pos="PUNCT">,</token><token id="t3" pos="CD">3.5%</token>',
    "<tokens><token>Hello</token><token>world</token></tokens>",
    '<password required="true">Must be eight characters</password>',
    "if (strcmp(password,\n           buf) == 0) {",
    'if (token.equals(\n    "Bearer")) {',
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_miss_is_left_alone(text: str) -> None:
    assert Redactor().redact(text) == (text, {})


@pytest.mark.parametrize(
    "after",
    [
        " is the key id of user ci-bot",
        ",user/ci-bot/2026-11-29/created-by-tf",
        ": " + "abcdefghij" * 4,
        "\\t" + "abcdefghij" * 4,  # a JSON-escaped tab, then no secret
        "\n" + "abcdefghij" * 4,  # the next line: a word
        "\\n" + HEX40,  # a commit id, no capital
        "\t2024-05-01T12:00:00+00:00\tActive\tbob",  # `aws iam list-access-keys --output text`
        # table cells: a commit id, a word, other fields; a blank line then a commit id
        " | " + HEX40 + " |",
        "` | `" + "abcdefghij" * 4 + "` |",
        "|  ci-bot |  2024-05-01 |  Active ||",
        ",\n" + HEX40,
        "\n\n" + HEX40,
        "\\n\\n" + "abcdefghij" * 4,
        # Out of reach: three fields on, three lines on, after a word on the next line.
        " 2024-05-01 Active bob " + fake(40, "Mp2Vc" + "8Hs/Tn5+"),
        "\n\n\n" + fake(40, "Mp2Vc" + "8Hs/Tn5+"),
        "\nsecret " + fake(40, "Mp2Vc" + "8Hs/Tn5+"),
    ],
)
def test_what_follows_an_aws_key_id_is_no_secret_unless_it_looks_like_one(after: str) -> None:
    key_id = "AKIA" + "Q7Q7" * 4
    assert Redactor().redact(key_id + after) == ("[REDACTED:aws_access_key]" + after, {"aws_access_key": 1})


# Commands whose quoted value the shared value regexes read in a JSON string one level deep
# (a quote escaped by one backslash, or three): as a tool call's arguments hold them.
JSON_COMMANDS = [
    '$s = ConvertTo-SecureString -Force -AsPlainText -String "' + fake(12, "Sj5Wq6") + '"',
    '$s = ConvertTo-SecureString -AsPlainText "' + fake(12, "Sj5Wq6") + '" -Force',
    '$s = ConvertTo-SecureString -String:"' + fake(12, "Sj5Wq6") + '" -AsPlainText:$true -Force',
    '$s = ConvertTo-SecureString -AsPlainText -Debug -Force "' + fake(12, "Sj5Wq6") + '"',
    'echo "' + fake(12, "Sj5Wq6") + '" | sudo passwd --stdin root',
    'passwd --stdin bob <<< "' + fake(12, "Sj5Wq6") + '"',
]


@pytest.mark.parametrize("command", JSON_COMMANDS)
def test_a_command_in_a_json_string_loses_its_password(command: str) -> None:
    out, counts = Redactor().redact(json.dumps({"command": command}))
    assert fake(12, "Sj5Wq6") not in out
    assert json.loads(out) == {"command": command.replace(fake(12, "Sj5Wq6"), placeholder("password"))}
    assert counts == {"password": 1}


@pytest.mark.parametrize(("kind", "text", "secret"), PLANTED)
def test_redaction_inside_canonical_json_stays_valid(kind: str, text: str, secret: str) -> None:
    document = {
        "cmd": text,
        "nested": {"args": [text, "\n" + text + "\t"]},
        "json": canonical_json({"v": text}),
    }
    out, counts = Redactor().redact(canonical_json(document))
    decoded = json.loads(out)
    assert secret not in json.dumps(decoded)
    assert counts[kind] >= 3


def test_shell_command_in_json_keeps_its_shape() -> None:
    key = "sk-" + "proj-" + fake(80)
    out, counts = Redactor().redact(canonical_json({"cmd": f"export OPENAI_API_KEY={key} && run"}))
    assert json.loads(out) == {"cmd": "export OPENAI_API_KEY=[REDACTED:openai_key] && run"}
    assert counts == {"openai_key": 1}


@pytest.mark.parametrize(
    "document",
    [
        {"msg": "Enter your password: ", "n": 12345678},
        {"a": "token:", "b": "x", "c": ["secret=", 1234, "z"]},
        {"k": 'api_key: "', "v": {"w": "1"}},
    ],
)
def test_quotes_that_end_a_json_string_are_not_taken_for_a_value(document: dict[str, Any]) -> None:
    text = canonical_json(document)
    assert Redactor().redact(text) == (text, {})


# Text cut mid-value (a quarantine excerpt is a cut line): (kind, text, what must go).
CUT_AT_THE_END: list[tuple[str, str, str]] = [
    (
        "password",
        '{"type":"tool_call","args":{"env":{"DB_PASSWORD":"' + "p4ssw0rd-" + "Very-L0ng",
        "p4ssw0rd",
    ),
    ("password", 'export DB_PASSWORD="' + "p4ssw0rd" + "-Very", "p4ssw0rd"),
    ("password", '{"cmd":"mysql --password \\"' + "p4ssw0rd" + "-Ve", "p4ssw0rd"),
    ("password", 'cfg = {"password": "' + "correct horse " + "batt", "horse"),
    ("github_token", "git push https://" + "gh" + "p_abc123", "p_abc123"),
    ("github_token", "GH_TOKEN=" + "github" + "_pat_11ABCD", "_pat_11ABCD"),
    ("jwt", "Cookie: session=" + "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXV", "hbGciOiJIUzI1NiIs"),
    ("jwt", "t=" + "eyJ" + "hbGciOiJIUzI1NiJ9." + "eyJ" + "zdWIiOiIx", "hbGciOiJIUzI1NiJ9"),
    ("anthropic_key", "ANTHROPIC_API_KEY=" + "sk-" + "ant-api03-abc", "ant-api03-abc"),
    ("openai_key", "key: " + "sk-" + "proj-x", "proj-x"),
    ("openai_key", "key " + "sk-" + "aB3x" + "Y7kQ9", "aB3xY7kQ9"),
    ("aws_access_key", "aws configure set aws_access_key_id " + "AKIA" + "Q7Q7", "AKIAQ7Q7"),
    ("aws_access_key", "id=" + "ASIA" + "Z7Q2Z7", "ASIAZ7Q2Z7"),
    ("gitlab_token", "PRIVATE-TOKEN: " + "gl" + "pat-aB3xY7", "pat-aB3xY7"),
    ("slack_token", "SLACK=" + "xo" + "xb-123456", "xb-123456"),
    ("google_api_key", "maps.js?key=" + "AI" + "zaSyD3kq", "zaSyD3kq"),
    ("huggingface_token", "HF=" + "h" + "f_aB3xY7kQ9", "f_aB3xY7kQ9"),
    ("npm_token", "//registry.npmjs.org/:_authToken=" + "np" + "m_aB3x9", "m_aB3x9"),
    ("stripe_key", "STRIPE=" + "sk" + "_live_aB3x9", "_live_aB3x9"),
    ("sendgrid_key", "key: " + "SG." + "Ab3x9Kq2", "Ab3x9Kq2"),
    ("databricks_token", "DBX=" + "dapi" + "0a1b2c3d", "0a1b2c3d"),
    ("vault_token", "tok " + "hvs." + "CAESk3Z9", "CAESk3Z9"),
    ("digitalocean_token", "DO " + "dop" + "_v1_0a1b2c3d", "0a1b2c3d"),
    ("password", "passwd: '" + "Xk9mQ2" + "-cut", "Xk9mQ2"),
]


@pytest.mark.parametrize(
    ("kind", "text", "secret"), CUT_AT_THE_END, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(CUT_AT_THE_END)]
)
def test_a_value_or_token_cut_by_the_end_of_the_text_is_redacted(kind: str, text: str, secret: str) -> None:
    out, counts = Redactor().redact(text)
    assert secret not in out
    assert out.endswith(placeholder(kind))
    assert counts.get(kind, 0) == 1
    assert Redactor().redact(out) == (out, {})


def test_the_end_of_the_text_closes_a_json_value_in_place() -> None:
    text = '{"type":"tool_call","args":{"env":{"DB_PASSWORD":"' + "p4ssw0rd-" + "Very-L0ng"
    out, counts = Redactor().redact(text)
    assert out == '{"type":"tool_call","args":{"env":{"DB_PASSWORD":"[REDACTED:password]'
    assert counts == {"password": 1}
    # A lone backslash left by the cut (half of an escape) stays outside the placeholder.
    assert Redactor().redact('"password": "' + "p4ss" + "w0rd\\")[0] == '"password": "[REDACTED:password]\\'


@pytest.mark.parametrize(
    "text",
    [text for kind, text, _ in CUT_AT_THE_END if kind not in ("password",)],
)
def test_a_short_token_inside_the_text_is_left_alone(text: str) -> None:
    # Only the very end of a text can cut a token short; elsewhere a short one is not one.
    token = text.rsplit(" ", 1)[-1].rsplit("=", 1)[-1]
    inside = token + " is what the docs call it"
    assert Redactor().redact(inside) == (inside, {})


@pytest.mark.parametrize(
    "text",
    [
        "pip install sk-learn",
        "token = hf_token",
        "echo $npm_package",
        "df = pk_test_data",
        "SOUTHEAST ASIAN",
        "ASIAPACIFIC",
        "Anthropic keys start with sk-ant-",
        "xoxo-love",
        "the prefix is ghp_",
        "AKIA" + "IOSFODNN7EXAMPLE",
        "password: 'x",
        "def connect(token: str = '",
    ],
)
def test_identifiers_that_end_a_text_are_not_cut_tokens(text: str) -> None:
    assert Redactor().redact(text) == (text, {})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=" + "Tr0ub4dor" + "&3", "password=[REDACTED:password]"),
        ("password=" + "hunter2" + "&&ls", "password=[REDACTED:password]&&ls"),
        ("password=" + "hunter2" + " && ls", "password=[REDACTED:password] && ls"),
        ("password=" + "hunter2" + "& sleep 1", "password=[REDACTED:password]& sleep 1"),
        ("password=" + "hunter2" + ";ls", "password=[REDACTED:password];ls"),
        ("password=" + "hunter2" + "|cat", "password=[REDACTED:password]|cat"),
        ("f(password=" + "hunter2" + ", user=x)", "f(password=[REDACTED:password], user=x)"),
        ("password=" + "p@ss!w0rd#1" + "$", "password=[REDACTED:password]"),
        (
            "GET /login?user=bob&password=" + "hunter2" + "&next=/home",
            "GET /login?user=bob&password=[REDACTED:password]&next=/home",
        ),
        ("password=" + "hunter2" + "&amp;user=x", "password=[REDACTED:password]&amp;user=x"),
        ("curl -u admin:" + "S3cr3t" + "&x=1 u", "curl -u admin:[REDACTED:password]&x=1 u"),
    ],
)
def test_an_unquoted_value_ends_with_its_shell_word(text: str, expected: str) -> None:
    out, _ = Redactor().redact(text)
    assert out == expected
    assert Redactor().redact(out) == (out, {})


def test_json_escapes_are_not_split() -> None:
    text = canonical_json({"p": 'x\nmarco@example.org\n/home/nina\n"password": "ab\\"c1"\nghp_' + fake(36)})
    out, counts = Redactor().redact(text)
    assert json.loads(out) == {
        "p": 'x\n[REDACTED:email]\n/home/<user>\n"password": "[REDACTED:password]"\n[REDACTED:github_token]'
    }
    assert counts == {"email": 1, "home_user": 1, "password": 1, "github_token": 1}


@pytest.mark.parametrize(
    ("line", "depth", "redacted"),
    [
        ("Zq8wLm3N1b\t", 1, True),  # a tab JSON-escaped: the line's value is its one word
        ("Zq8wLm3N1b\t", 2, True),  # in a JSON string inside one
        ("Zq8wLm3N1b\\t", 1, False),  # a backslash and a "t": the value holds an escape
        ("Zq8wLm3N1b\\\t", 1, False),  # a backslash and a tab
        ("Zq8wLm3N1b\\t", 0, False),  # raw text: a backslash and a "t"
    ],
)
def test_a_block_line_loses_only_the_tabs_that_end_it(line: str, depth: int, redacted: bool) -> None:
    text = "password: |\n  " + line + "\n"
    for _ in range(depth):
        text = json.dumps({"content": text})
    out, _ = Redactor().redact(text)
    assert ("Zq8wLm3N1b" not in out) == redacted
    for _ in range(depth):
        out = json.loads(out)["content"]
    assert out.endswith(line.removeprefix("Zq8wLm3N1b") + "\n")


@pytest.mark.parametrize("depth", [0, 1, 2])
@pytest.mark.parametrize("gap", ["\n     ", "\n\t", "\t", "\r\n \t"])
def test_a_value_attribute_after_a_line_break_is_found_in_json_strings(gap: str, depth: int) -> None:
    """Double quotes too, escaped as deep as the value passes read them (PLANTED's documents
    nest one level more)."""
    text = '<add key="DbPassword"' + gap + 'value="' + fake(14, "Gq5xT2") + '" />'
    for _ in range(depth):
        text = json.dumps({"content": text})
    out, counts = Redactor().redact(text)
    assert fake(14, "Gq5xT2") not in out and counts == {"password": 1}


def test_counts_are_per_kind() -> None:
    text = " ".join(
        [
            "AKIA" + "Q" * 16,
            "AKIA" + "R" * 16,
            "password=" + "hunter" + "2",
            "a@example.org",
            "b@example.org",
            "c@example.org",
            "/home/" + "ann/x",
        ]
    )
    assert Redactor().redact(text)[1] == {"aws_access_key": 2, "password": 1, "email": 3, "home_user": 1}


def test_nothing_found_gives_the_same_text_and_an_empty_dict() -> None:
    text = "plain prose with no secrets"
    out, counts = Redactor().redact(text)
    assert out is text
    assert counts == {}


ALL_PLANTED = "\n".join(text for _, text, _ in PLANTED) + "\n" + "\n".join(NEAR_MISSES)


def test_redaction_is_idempotent_and_deterministic() -> None:
    once, counts = Redactor().redact(ALL_PLANTED)
    assert counts
    assert Redactor().redact(ALL_PLANTED) == (once, counts)
    assert Redactor().redact(once) == (once, {})


@pytest.mark.parametrize(
    ("emails", "home_paths", "expected"),
    [
        (True, True, "mail [REDACTED:email] from /home/<user>/x"),
        (False, True, "mail ann@example.org from /home/<user>/x"),
        (True, False, "mail [REDACTED:email] from /home/ann/x"),
        (False, False, "mail ann@example.org from /home/ann/x"),
    ],
)
def test_personal_kinds_can_be_switched_off(emails: bool, home_paths: bool, expected: str) -> None:
    redactor = Redactor(emails=emails, home_paths=home_paths)
    text = "mail ann@example.org from /home/ann/x"
    assert redactor.redact(text)[0] == expected
    assert redactor.redact("pwd=" + "s3cr3t")[0] == "pwd=[REDACTED:password]"


def test_home_paths_off_also_keeps_encoded_folders_windows_folders_and_listings() -> None:
    text = "C:\\Users\\bob\\x and ~/.claude/projects/-home-ann-repo\n-rw-r--r-- 1 ann ann 2 Jan 1 f"
    assert Redactor(home_paths=False).redact(text) == (text, {})


FRAGMENTS = [fake(36), "\n", "\t", '"', "\\", "'", " ", "=", ":", "@", "/", "-", "_", "é→✓", "\\n", '\\"']
FRAGMENTS += [text for _, text, _ in PLANTED] + NEAR_MISSES


# Found by this test: a short `pass:` value after a long redacted one was only found by a second call.
PASSOUT = "openssl pkcs12 -export -in c.pem -passout pass:"
GLUED_AFTER_A_LONG_ONE = (
    f"{PASSOUT}Hv2kx9MaB3xY7kQ9aB3xY7kQ9aB3xY7kQ9aB3xY7kQ9AWS_SESSION_TOKEN={'IQoJb3JpZ2luX2Vj' * 60}"
    f"IQoJ{PASSOUT}Hv2kx9M"
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(FRAGMENTS), max_size=6).map("".join), min_size=1, max_size=4))
@example([GLUED_AFTER_A_LONG_ONE])
def test_any_mix_of_fragments_stays_valid_json_and_idempotent(values: list[str]) -> None:
    redactor = Redactor()
    out, _ = redactor.redact(canonical_json({f"k{i}": v for i, v in enumerate(values)}))
    assert isinstance(json.loads(out), dict)
    assert redactor.redact(out) == (out, {})


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _corpus(root: Path) -> tuple[list[str], list[str]]:
    """Every string value in the corpus (as parsers hand them on), and every JSONL line."""
    texts: list[str] = []
    lines: list[str] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name != "SOURCES.md"):
        raw = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            for line in raw.splitlines():
                if line.strip():
                    lines.append(line)
                    texts.extend(_strings(json.loads(line)))
        elif path.suffix in (".json", ".traj"):
            texts.extend(_strings(json.loads(raw)))
        else:
            texts.append(raw)
    return texts, lines


def test_real_corpus_has_personal_data_but_no_secrets(real_corpus: Path) -> None:
    texts, _ = _corpus(real_corpus)
    redactor = Redactor()
    total: Counter[str] = Counter()
    redacted: list[str] = []
    for text in texts:
        out, counts = redactor.redact(text)
        total.update(counts)
        redacted.append(out)
    # Measured on the corpus of 2026-11-29. SOURCES.md says a pattern scan found no
    # keys, tokens or private keys, and lists the e-mails and the names in home paths;
    # the login names also fill the owner column of `ls -l` listings (378 of them).
    assert dict(total) == {"home_user": 4590, "email": 47}
    joined = "\n".join(redacted)
    for personal in (
        "marco.rotili@",
        "/home/marco",
        "marco  ",
        "Nikita_Levyankov",
        "-Users-Nikita",
        "Jane_Smith",
        "@epam.com",
    ):
        assert personal not in joined
    assert "/home/<user>/" in joined
    assert "api_key: anthropic_api_key" in joined


def test_real_corpus_lines_stay_valid_json(real_corpus: Path) -> None:
    _, lines = _corpus(real_corpus)
    redactor = Redactor()
    changed = 0
    for line in lines:
        out, counts = redactor.redact(line)
        json.loads(out)
        changed += bool(counts)
    assert changed > 100


@pytest.mark.parametrize(
    "before",
    [
        "curl -u user:s3cretpass@host",  # a flag's value that would run into the block
        "redis-cli -u redis://:hunter42@cache:6379",  # a finding of the same pass before it
        "redis-cli -u admin",  # a match of the same pass that reports nothing
    ],
)
def test_a_pem_block_glued_to_what_precedes_it_is_found_in_one_pass(before: str) -> None:
    pem = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + PEM_BODY + "\n-----END RSA " + "PRIVATE KEY-----\n"
    redactor = Redactor()
    out, found = redactor.redact(before + pem)
    assert PEM_BODY not in out and found.get("private_key") == 1
    assert redactor.redact(out) == (out, {})


@pytest.mark.parametrize(
    "literal",
    [json.dumps, repr, lambda line: json.dumps(line + "\n"), lambda line: json.dumps(json.dumps(line))[1:-1]],
    ids=["json", "python", "json-lines", "json-in-json"],
)
@pytest.mark.parametrize("separator", [", ", " +\n    ", "\n    "], ids=["list", "plus", "adjacent"])
def test_an_encrypted_pem_keys_literals_keep_their_headers_and_lose_their_base64(
    literal: Callable[[str], str], separator: str
) -> None:
    """Each literal of the base64 is replaced; the headers, the blank line and the "+" stay."""
    key_lines = [fake(64, "MIIEpQ9Ab+/"), fake(24, "Kp3Lr7Ty")]
    lines = [
        "-----BEGIN RSA " + "PRIVATE KEY-----",
        *PEM_HEADERS,
        "",
        *key_lines,
        "-----END RSA " + "PRIVATE KEY-----",
    ]
    text = "[" + separator.join(map(literal, lines)) + "]"
    out, found = Redactor().redact(text)
    expected = [placeholder("private_key") if line in key_lines else line for line in lines]
    assert (out, found) == ("[" + separator.join(map(literal, expected)) + "]", {"private_key": 2})


@pytest.mark.parametrize(
    "text",
    [
        "- name: API_TOKEN" + " " * 8_000 + "\n  value:\n",  # blanks split many ways before "value:"
        '{"kty":"RSA",' * 4_000,  # no "}": each "kty" scanned on to the end of the text
        "sudo -S x <<< " * 5_000,  # each here-string looks back over its command for a reader
        "sudo -S sh -c 'a | b' \"c; d\" <<< " * 5_000,  # and over the quoted stretches before it
        "{kty: 'RSA', " * 4_000,  # the same with bare keys
        "".join(" " * k + "token: |\n" for k in range(600)),  # each block holds the ones after it
        "  'token: |\n" * 4_000,  # a quote before each key: every block read all indented lines after it
        # headers with a rejected body: each scanned on to the one END at the end of the text
        ("-----BEGIN RSA " + "PRIVATE KEY-----'aaaa'") * 1_500 + "-----END RSA " + "PRIVATE KEY-----",
        "token==" * 10_000,  # each comparison scanned an unquoted value of 4,096 characters
        "API_TOKEN!=" * 6_000,
        # every "=" looked 4,096 characters ahead over a word its value is cut from
        "e.token=t;" * 10_000,  # a minified script
        "x.equals(password)" * 5_500,  # each call searched 210 characters back for a literal
        "strcmp(password," + " \n" * 50_000,  # a comparing call's line breaks, no argument after them
        "x&token=abc" * 9_000,  # a long query string
        "a='b'>x " * 12_000 + "</token>",  # a quote and ">": each element's text ran over the others
        "<password>" + "\n  " * 30_000 + "</",  # blank lines and no text
        '<add key="DbPassword"' + "\\n" * 40_000 + 'value="x',  # escaped line breaks to back over
        '<add key="DbPassword"\n value=' * 4_000,  # attributes on lines of their own, no value
        # after an AWS key id (AWS's example, kept): blanks, escaped tabs, short fields, line breaks
        "AKIA" + "IOSFODNN7EXAMPLE" + " " * 100_000,
        "AKIA" + "IOSFODNN7EXAMPLE" + "\\t" * 50_000,
        ("AKIA" + "IOSFODNN7EXAMPLE a b ") * 4_000,
        ("AKIA" + "IOSFODNN7EXAMPLE\n") * 5_000,
        # ... and table cells, rows of `--output table`, backquoted cells, a run of column rules
        ("AKIA" + "IOSFODNN7EXAMPLE |") * 4_500,
        ("||  " + "AKIA" + "IOSFODNN7EXAMPLE  |") * 3_500,
        ("AKIA" + "IOSFODNN7EXAMPLE` | `") * 4_000,
        "AKIA" + "IOSFODNN7EXAMPLE" + " |" * 50_000,
        # ... lines of `--output text`, commas and line breaks, blank lines
        ("CREDENTIALS\t" + "ASIA" + "IOSFODNN7EXAMPLE\t2026-12-08T00:00:00Z\t") * 2_000,
        ("AKIA" + "IOSFODNN7EXAMPLE,\n") * 4_500,
        ("AKIA" + "IOSFODNN7EXAMPLE\\n\\n") * 4_000,
        "AKIA" + "IOSFODNN7EXAMPLE" + " \\t\n" * 30_000,
        # a secret key's row name, many times over or before a run of blanks
        "SecretAccessKey |" * 6_000,
        "SecretAccessKey" + " " * 100_000 + "|",
        "AWS_SECRET_ACCESS_KEY | `" * 4_000,
        # STS token prefixes glued to base64 (each would run to the end), bare, or short of a token
        ("x" + "IQoJb3Jp" + "Z2luX2Vj") * 6_000,
        ("FwoGZXIv" + "YXdzE ") * 7_000,
        ("IQoJb3Jp" + "Z2luX2Vj" + "A" * 99 + " ") * 900,
        # an encrypted key's header items with no base64 after them, many times over
        '["-----BEGIN RSA ' + 'PRIVATE KEY-----", ' + '"Proc-Type: 4,ENCRYPTED", ' * 8_000,
        ("-----BEGIN RSA " + "PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: " + "x" * 150 + "\n") * 500,
        # a secret's block holding other keys' blocks, each indented more
        "token: |\n" + "".join(" " * (k + 2) + "nested: |\n" for k in range(600)),
        "echo x | passwd " + "-l " * 30_000,  # passwd's options, and no --stdin after them
        "passwd --stdin x <<< " * 5_000,  # each here-string looks back for its reader
        "ConvertTo-SecureString -AsPlainText -Force " * 3_000,  # switches, and no string after them
        "ConvertTo-SecureString -ErrorAction" + " " * 100_000,  # a parameter's value never comes
        "ConvertTo-SecureString" + " -Verbose:$true -ea:Stop" * 4_000,  # more switches than counted
        "ConvertTo-SecureString -String:" * 4_000,  # a colon's string never comes
        "'abcdefghij' == token " * 5_000,  # each reversed comparison looks back for its literal
        '"a"==' + "x" * 100_000,  # a name longer than a name
        'strcmp(password, "' * 6_000,  # calls with an unclosed literal
        "equals(token, " * 8_000,  # and with no second operand
        '"x".equals(' * 10_000,  # and with no operand at all
        'assertEquals("a message never closed, ' * 3_000,  # a message's literal holds blanks
        "assertEquals(message, " * 5_000,  # a first name taken for a message, no arguments after
        'assertEquals(msg, "abcdefgh", ' * 4_000,  # and no third argument
        'strncmp(token, "abcdefgh", ' * 5_000,  # and a last argument never closed
        # each credential flag looked 1,024 characters back for its command word, twice
        " -a" * 33_334,
        "-k " * 30_000,
        "curl -u x " * 10_000,
        # each vendor prefix ran to the end of a long word, and was refused there
        "sk-abcd-" * 12_500,  # a cut key the length of the rest: 89 s
        "xsk-abcd" * 12_500,  # glued to the word before
        "xxoxb-abcd" * 10_000,
        "xapp-abcd-" * 10_000,  # a cut app token the length of the rest: 64 s
        "figd_abcd-" * 10_000,  # a whole token that looks like a name
        "eyJabcd-" * 12_500,  # a cut JWT that starts like no header
        "xeyJabcdefgh" * 8_000,
        "eyJhbGciabcd-" * 8_000 + " x",  # headers, and no cut or payload after them
    ],
    ids=[
        "env-entry-blanks",
        "kty-unclosed",
        "here-strings",
        "here-strings-quoted",
        "kty-bare-unclosed",
        "yaml-blocks-nested",
        "yaml-quoted-keys",
        "pem-headers-one-end",
        "comparisons-equal",
        "comparisons-not-equal",
        "minified-assignments",
        "receivers-no-literal",
        "comparing-call-breaks",
        "query-parameters",
        "xml-attribute-quotes",
        "xml-blank-lines",
        "xml-escaped-line-breaks",
        "xml-value-lines",
        "aws-key-blanks",
        "aws-key-escaped-tabs",
        "aws-key-fields",
        "aws-key-lines",
        "aws-key-cells",
        "aws-key-table-rows",
        "aws-key-code-span-cells",
        "aws-key-column-rules",
        "aws-credentials-lines",
        "aws-key-commas-breaks",
        "aws-key-blank-lines",
        "aws-key-blank-line-runs",
        "aws-secret-row-names",
        "aws-secret-row-name-blanks",
        "aws-secret-env-row-names",
        "sts-prefixes-glued",
        "sts-prefixes-bare",
        "sts-prefixes-short",
        "pem-header-items",
        "pem-cut-headers",
        "yaml-block-other-openers",
        "passwd-options",
        "passwd-here-strings",
        "secure-string-switches",
        "secure-string-parameter-blanks",
        "secure-string-many-switches",
        "secure-string-colons",
        "comparisons-reversed",
        "comparisons-reversed-long-name",
        "comparing-calls-unclosed",
        "comparing-calls-one-operand",
        "comparing-calls-no-operand",
        "comparing-calls-message-unclosed",
        "comparing-calls-message-name",
        "comparing-calls-message-name-two-arguments",
        "comparing-calls-last-argument-unclosed",
        "flags-no-command",
        "flags-no-command-value-after",
        "flags-after-commands",
        "openai-cut-chain",
        "openai-glued",
        "slack-glued",
        "slack-app-cut-chain",
        "figma-name-chain",
        "jwt-cut-chain",
        "jwt-glued",
        "jwt-header-chain",
    ],
)
def test_pathological_texts_redact_in_linear_time(text: str) -> None:
    """Not timed: before the reviews' fixes each took 3 s to over a minute (pytest's durations
    show a regression); the text has no secret and must come back as it was."""
    assert Redactor().redact(text)[0] == text


def test_a_jws_with_a_certificate_chain_in_its_header_is_one_jwt() -> None:
    """An App Store JWS carries three certificates in its header's `x5c`: 6-9 KB of base64."""
    certificate = base64.b64encode(bytes(range(256)) * 6).decode()
    header = {"alg": "ES256", "x5c": [certificate] * 3}
    segments = [json.dumps(part).encode() for part in (header, {"transactionId": "2000000123"})]
    jws = ".".join(base64.urlsafe_b64encode(s).decode().rstrip("=") for s in segments) + ".c2lnbmF0dXJl"
    assert len(jws.split(".")[0]) > 8_000
    assert Redactor().redact("signedPayload " + jws) == ("signedPayload " + placeholder("jwt"), {"jwt": 1})


COMMAND_PIECES = ["curl", "mysql", "mysqldump", "7z", "ssh-keygen", "nc", "git", "/usr/bin/", "~/", "x~"]
COMMAND_PIECES += ["a/", "/", "~", "-", ".", "\\n", "\\", "n", "'", " ", " -u ", "\n", "é"]


@pytest.mark.parametrize(
    "text",
    [
        "~/curl -u x~/git -u a/curl/git -u \\ncurl -u 'mysql' -u ncurl -u",
        "x/mysqldump~/7z\\n/usr/bin/ssh-keygen -N é~/nc -u \\\\nnc -u",
    ],
)
def test_command_words_found_once_are_what_each_reach_finds_wherever_it_starts_and_ends(text: str) -> None:
    """Every reach of a short text, in an order that looks back before and after words found,
    and the short ones with a quoted stretch anywhere in them (a word is judged by its start)."""
    reaches = [(start, i) for i in range(len(text) + 1) for start in range(max(0, i - 40), i + 1)]
    for start, i in reaches[::-1] + reaches[::7] + reaches:
        stretches = [[q, q + 2] for q in range(start, i) if i - start <= 12]
        for quoted in [[], *stretches]:
            expected = redact._scanned_last_command(text, start, i, quoted)
            assert redact._last_command(text, start, i, quoted) == expected, (start, i, quoted)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_a_texts_command_words_found_once_are_what_a_scan_of_each_reach_finds(data: st.DataObject) -> None:
    """Flags look back for their command word in the words their text's earlier flags found:
    what a scan of each flag's own reach, its quoted stretches left out, finds (any order)."""
    text = "".join(data.draw(st.lists(st.sampled_from(COMMAND_PIECES), max_size=200)))
    after_others = [i + 1 for i, c in enumerate(text) if not redact._COMMAND_WORD_CHAR.match(c)]
    ends = st.sampled_from(after_others) if after_others else st.just(0)
    for i in data.draw(st.lists(st.one_of(ends, st.integers(0, len(text))), min_size=1, max_size=20)):
        start = data.draw(st.integers(0, i))
        bounds = st.lists(st.integers(start, i), max_size=4).filter(lambda q: len(q) % 2 == 0)
        quoted = sorted(data.draw(bounds))
        expected = redact._scanned_last_command(text, start, i, quoted)
        assert redact._last_command(text, start, i, quoted) == expected
