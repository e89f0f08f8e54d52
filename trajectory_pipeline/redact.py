"""Secret and personal-data redaction for transcript text, applied at ingestion.

Every event text and every canonical-JSON tool input goes through `Redactor.redact`
before anything is written, so no live credential reaches Parquet, the training data or
the UI. A secret becomes a typed placeholder such as `[REDACTED:github_token]`; the user
name inside a home-directory path becomes `<user>` (`/home/<user>/repo`), so paths stay
consistent across sessions. `redact` returns the new text and a count per kind, for the
asset's metadata.

    from trajectory_pipeline.redact import Redactor
    text, counts = Redactor().redact("export OPENAI_API_KEY=sk-... && run")

Where the patterns come from. Token formats follow gitleaks' default rules
(`config/gitleaks.toml`: aws-access-token, github-pat/oauth/app/refresh/fine-grained,
gitlab-*, anthropic-api-key, openai-api-key, slack-*-token, slack-webhook-url,
gcp-api-key, stripe-access-token, npm-access-token, huggingface-access-token,
pypi-upload-token, jwt, private-key) and detect-secrets' plugins (aws, github_token,
gitlab_token, openai, slack, stripe, private_key, jwt, basic_auth, keyword). Secret-named
assignments use gitleaks' generic-api-key keywords and its `^[a-zA-Z_.-]+$` allowlist.
They are hand-written, not loaded from detect-secrets at run time: that library scans
two to three orders of magnitude slower (bench/bench_redact.py) and its keyword plugin
cannot tell `password = get_password()` from a literal.

Why it is fast. CPython's `re` skips ahead quickly only when a pattern starts with a
literal character; a pattern that starts with a character class costs a few
nanoseconds per byte however rare its characters are. So the patterns are grouped into
a few passes that each start on one literal anchor: "-" and "_" after a vendor prefix
(checked by a fixed-width lookbehind), "A" of AKIA/AIza, "eyJ" of a JWT, "earer" of
Bearer, the "=" or ":" after a secret-named key, "@" of an e-mail, "/" of a home path.
All the judgement (word boundaries, placeholders, identifiers versus literals) runs in
Python only on the rare matches. A text with no candidate costs one fast scan per pass.

Why it is safe inside JSON strings. No placeholder holds a quote, a backslash or a
brace; a replaced span never holds an unescaped quote, never starts on the second
character of a backslash escape and never ends inside one. So redacting a canonical
JSON string leaves valid JSON, e.g. `{"cmd": "export OPENAI_API_KEY=sk-... && run"}`.
Redaction is deterministic and idempotent: placeholders never match again.

Decisions on ambiguous values of secret-named keys (`password=`, `api_key:`,
`--token x`): a value is kept when it is empty, templated (`$X`, `${X}`, `%X%`,
`<your-password>`, `{{ x }}`), a mask (`***`), a number, a path or URL, a call or
subscript (`get_token()`, `os.environ["X"]`), or made only of letters, spaces and
`_ . -`: code identifiers (`anthropic_api_key`, `self.password`, `None`) and word
placeholders (`changeme`, `your-api-key`) are worth more as training data than the
rare all-letter password they would hide. Anything else is redacted, however weak
(`password=hunter2`). A connection-string password (`postgres://u:pw@host`) is always
a literal, so only a templated one is kept. AWS's documentation keys, which end in
`EXAMPLE`, are kept, as gitleaks does. `git@...` and `noreply@...` addresses are not
personal and are kept. Bare `key=` and `pass=` are too common in code to judge.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

Span = tuple[int, int, str]  # start, end, kind
Resolver = Callable[[str, re.Match[str]], Span | None]

KINDS: tuple[str, ...] = (
    "private_key",
    "jwt",
    "aws_access_key",
    "aws_secret_key",
    "github_token",
    "gitlab_token",
    "anthropic_key",
    "openai_key",
    "slack_token",
    "slack_webhook",
    "google_api_key",
    "google_oauth_secret",
    "stripe_key",
    "npm_token",
    "huggingface_token",
    "pypi_token",
    "bearer_token",
    "auth_header",
    "url_password",
    "password",
    "secret",
    "email",
    "home_user",
)
USER_PLACEHOLDER = "<user>"


def placeholder(kind: str) -> str:
    """The text that replaces a finding of `kind`."""
    return USER_PLACEHOLDER if kind == "home_user" else f"[REDACTED:{kind}]"


_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_WORD = _ALNUM | {"_"}
_PATH_WORD = _WORD | {".", "-"}


def _escaped(text: str, i: int) -> bool:
    """True when text[i] is the second character of a backslash escape (`\\n`, `\\"`)."""
    n = 0
    while i - n - 1 >= 0 and text[i - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def _starts_token(text: str, i: int, word: frozenset[str] = _WORD) -> bool:
    """True when a token may start at i: not glued to a longer word, nor escaped.

    The character before may be the letter of a JSON escape: `\\nghp_...` inside a JSON
    string is a newline followed by the token.
    """
    if i <= 0:
        return i == 0
    c = text[i - 1]
    if c == "\\":
        return not _escaped(text, i)
    if c in word:
        return c in "nrt" and _escaped(text, i - 1)
    return True


# --- Values of secret-named keys, shared by the "=", ":" and "--flag" passes -------
_QUOTED = r"(?P<q>\\?[\"'`])(?P<qv>(?:[^\"'`\\\r\n]|\\[^\r\n]){1,512}?)(?P=q)"
_UNQUOTED = r"(?P<uv>[^\s\"'`\\,;(){}\[\]<>|&]{1,512})"
_VALUE = rf"(?:{_QUOTED}|{_UNQUOTED})"
# gitleaks' generic-api-key keywords, narrowed to the ones whose value is the secret;
# "key" counts only after api/secret/access/private/... (see _SECRET_KEY_NAMES).
_KEYWORDS = ("password", "passwd", "pwd", "secret", "token", "key")
_SECRET_KEY_NAMES = (
    "apikey",
    "secretkey",
    "accesskey",
    "privatekey",
    "signingkey",
    "encryptionkey",
    "masterkey",
    "authkey",
)


def _lookbehind_any(literals: list[str]) -> str:
    """A case-insensitive test that one of `literals` ends here (lookbehinds need one width each)."""
    by_width: dict[int, list[str]] = {}
    for literal in literals:
        by_width.setdefault(len(literal), []).append(re.escape(literal))
    parts = [f"(?<={'|'.join(group)})" for _, group in sorted(by_width.items())]
    return f"(?i:{'|'.join(parts)})"


def _keyword_ends(separator: str, closers: tuple[str, ...]) -> str:
    return _lookbehind_any([kw + closer + separator for kw in _KEYWORDS for closer in closers])


_WORDISH = frozenset("_.- ")
_MASK = frozenset("*xX•.#")
_AWS_SECRET = re.compile(r"[A-Za-z0-9/+]{40}")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _is_reference(value: str) -> bool:
    """True for values that name or template a secret rather than being one."""
    if not value or value.startswith(("[REDACTED", "$", "%", "<", "{", "#{")):
        return True
    if all(c.isalpha() or c in _WORDISH for c in value):
        return True  # identifiers, dotted paths, words: gitleaks' ^[a-zA-Z_.-]+$ allowlist
    if all(c in _MASK for c in value) or _NUMBER.fullmatch(value):
        return True
    return value.startswith(("/", "~/", "./", "../")) or "://" in value


def _identifier_before(text: str, end: int) -> str:
    start = end
    while start > 0 and text[start - 1] in _PATH_WORD:
        start -= 1
    return text[start:end]


def _keyword_at(text: str, end: int) -> tuple[int, str, str] | None:
    """The secret-named key ending at `end`: its start, its text and the kind of its value."""
    for kw in _KEYWORDS:
        start = end - len(kw)
        if start >= 0 and text[start:end].lower() == kw:
            word = text[start:end]
            if kw == "key":
                name = (_identifier_before(text, start) + kw).lower()
                if not name.replace("_", "").replace("-", "").replace(".", "").endswith(_SECRET_KEY_NAMES):
                    return None  # key=..., monkey: ..., sort(key=...)
                return start, word, "secret"
            if not _keyword_boundary(text, start, word):
                return None
            return start, word, "password" if kw.startswith("p") else "secret"
    return None


def _keyword_boundary(text: str, start: int, word: str) -> bool:
    """True when the keyword at start begins an identifier part (snake, kebab, camel, CAPS)."""
    if start == 0:
        return True
    c = text[start - 1]
    if c not in _ALNUM:
        return c != "\\" or not _escaped(text, start)
    if c in "nrt" and _escaped(text, start - 1):
        return True
    if word[0].isupper() and (c.islower() or c.isdigit()):
        return True  # camelCase: dbPassword, csrfToken
    if word.isupper() and c.isupper():
        return True  # PGPASSWORD
    return c.islower() and word.islower() and word != "pwd"  # dbpassword, mytoken


def _value_span(text: str, m: re.Match[str], kind: str, name: str) -> Span | None:
    """The span of the value assigned to secret-named key `name`, unless it is a reference."""
    if m.group("uv") is not None:
        value, start, end = m.group("uv"), m.start("uv"), m.end("uv")
        if end < len(text) and text[end] in "([":
            return None  # get_token(), os.environ["X"]
        stripped = value.rstrip(".")
        end -= len(value) - len(stripped)
        value = stripped
    else:
        value, start, end = m.group("qv"), m.start("qv"), m.end("qv")
    if _is_reference(value) or value.endswith(("EXAMPLE", "EXAMPLEKEY")):
        return None
    if name.lower() == "pwd" and value.startswith(("/", "~")):
        return None  # PWD=/home/... is the working directory
    if _AWS_SECRET.fullmatch(value):
        full = name.lower().replace("_", "").replace("-", "")
        if "aws" in full or "secretaccesskey" in full:
            kind = "aws_secret_key"
    return start, end, _vendor_kind(value) or kind


# --- Passes "sk-", "gl", "x": OpenAI/Anthropic, GitLab and Slack tokens ----------------
_SK = re.compile(
    r"sk-(?:ant-[A-Za-z0-9_-]{20,}|(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}"
    r"|or-v1-[a-f0-9]{64}|[A-Za-z0-9]{32,})"
)
_GL = re.compile(r"gl(?:pat|dt|ft|rt|soat|cbt|ptt|imt|oas|agent|ffct)-[A-Za-z0-9_-]{20,300}(?:\.[0-9a-z]{9})?")
_X = re.compile(r"x(?:ox[abposre]-[A-Za-z0-9-]{10,}|app-\d-[A-Za-z0-9-]{10,})")


def _prefixed_span(text: str, m: re.Match[str]) -> Span | None:
    if not _starts_token(text, m.start()):
        return None
    token = m.group()
    if token.startswith("sk-"):
        kind = "anthropic_key" if token.startswith("sk-ant-") else "openai_key"
    else:
        kind = "gitlab_token" if token.startswith("gl") else "slack_token"
    return m.start(), m.end(), kind


# --- Pass "-": PEM blocks, --secret flags, encoded home folders, Google/PyPI tokens ---
_DASH = re.compile(
    r"-(?:"
    r"----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
    r"(?P<pem>[^\"]*?(?=-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----)"
    r"|(?:[A-Za-z0-9+/=\r\n]|\\[nr])*)"
    # Claude Code names project folders after the path with every separator as "-"
    # (-home-marco-repo, C--Users-bob-repo). Only the first part of the name can be
    # told apart: Nikita_Levyankov is encoded as Nikita-Levyankov.
    r"|(?:home|Users)-(?P<enc>[A-Za-z0-9]+)(?=[-/\\\"'\s]|$)"
    r"|-(?P<flag>[A-Za-z0-9_-]{1,40})(?<=[dDnNtTyY])[ \t]+"
    rf"{_VALUE}"
    r"|(?<=GOCSPX-)(?P<gocspx>[A-Za-z0-9_-]{28})"
    r"|(?<=pypi-)(?P<pypi>AgE[A-Za-z0-9_-]{50,})"
    r")"
)
# The vendor prefix that ends at a "_" anchor, and its kind (else ghp_, gho_, ...).
_ANCHORED_PREFIXES: tuple[tuple[str, str], ...] = (
    ("github_pat_", "github_token"),
    ("npm_", "npm_token"),
    ("hf_", "huggingface_token"),
    ("whsec_", "stripe_key"),
    ("sk_live_", "stripe_key"),
    ("rk_live_", "stripe_key"),
    ("pk_live_", "stripe_key"),
    ("sk_test_", "stripe_key"),
    ("rk_test_", "stripe_key"),
    ("pk_test_", "stripe_key"),
)


def _anchored_token(text: str, anchor: int, end: int) -> Span | None:
    """The token whose "_" anchor is at `anchor`, from its vendor prefix on."""
    for prefix, kind in _ANCHORED_PREFIXES:
        start = anchor + 1 - len(prefix)
        if text.startswith(prefix, start):
            break
    else:
        start, kind = anchor - 3, "github_token"  # ghp_, gho_, ghu_, ghs_, ghr_
    if not _starts_token(text, start):
        return None
    return start, end, kind


def _dash_span(text: str, m: re.Match[str]) -> Span | None:
    if m.group("pem") is not None:
        start, end = m.span("pem")
        body = text[start:end]
        if not body.strip(" \t\r\n\\nr") or body.startswith("[REDACTED"):
            return None
        return start, end, "private_key"
    if m.group("enc") is not None:
        i = m.start()
        if i > 0 and text[i - 1] == "-":
            if not (i >= 2 and text[i - 2].isalpha() and _starts_token(text, i - 2, _PATH_WORD)):
                return None  # only the drive of C--Users-bob may stand before
        elif not _starts_token(text, i, _PATH_WORD):
            return None
        return _user_span(m, "enc")
    if m.group("flag") is not None:
        found = _keyword_at(text, m.end("flag"))
        if found is None or not _starts_token(text, m.start(), _PATH_WORD):
            return None
        return _value_span(text, m, found[2], m.group("flag"))
    group, kind = ("gocspx", "google_oauth_secret") if m.group("gocspx") else ("pypi", "pypi_token")
    start = m.start(group) - (7 if group == "gocspx" else 5)
    return (start, m.end(group), kind) if _starts_token(text, start) else None


# --- Pass "_": underscore-anchored tokens --------------------------------------------
_UNDERSCORE = re.compile(
    r"_(?=[A-Za-z0-9]{10})(?:"
    r"(?<=gh[pousr]_)[A-Za-z0-9]{36,255}"
    r"|(?<=github_pat_)[A-Za-z0-9_]{22,255}"
    r"|(?<=npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])"
    r"|(?<=hf_)[A-Za-z0-9]{30,}"
    r"|(?<=whsec_)[A-Za-z0-9]{32,}"
    r"|(?:(?<=k_live_)|(?<=k_test_))[A-Za-z0-9]{10,})"
)


def _underscore_span(text: str, m: re.Match[str]) -> Span | None:
    return _anchored_token(text, m.start(), m.end())


# --- Pass "A": AWS access key ids and Google API keys ---------------------------------
_A = re.compile(r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])|AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])")


def _a_span(text: str, m: re.Match[str]) -> Span | None:
    token = m.group()
    if not _starts_token(text, m.start()):
        return None
    if token.startswith("AIza"):
        return m.start(), m.end(), "google_api_key"
    if token.endswith("EXAMPLE"):
        return None  # AWS's documentation key, allowlisted by gitleaks too
    return m.start(), m.end(), "aws_access_key"


# --- Pass "eyJ": JSON Web Tokens ------------------------------------------------------
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")


def _jwt_span(text: str, m: re.Match[str]) -> Span | None:
    return (m.start(), m.end(), "jwt") if _starts_token(text, m.start()) else None


# --- Pass "earer": bearer tokens --------------------------------------------------------
_BEARER = re.compile(r"earer(?<=[Bb]earer)[ \t]+(?P<token>[A-Za-z0-9._~+/-]{16,}=*)")


def _bearer_span(text: str, m: re.Match[str]) -> Span | None:
    token = m.group("token")
    if not _starts_token(text, m.start() - 1, _ALNUM) or _is_reference(token):
        return None  # prose: "Bearer authentication"; placeholders: "Bearer YOUR_TOKEN"
    return m.start("token"), m.end("token"), _vendor_kind(token) or "bearer_token"


# --- Pass "=": password=..., API_KEY = "...", 'token' => '...' --------------------------
_EQUALS = re.compile(
    r"=(?<=[dDnNtTyY\"' ]=)(?:" + _keyword_ends("=", ("", " ", '"', "'", '" ', "' ")) + r")>?(?!=)[ \t]*" + _VALUE
)


def _equals_span(text: str, m: re.Match[str]) -> Span | None:
    end = m.start()
    while end > 0 and text[end - 1] in " \"'\\":
        end -= 1
    found = _keyword_at(text, end)
    if found is None:
        return None
    start, _, kind = found
    return _value_span(text, m, kind, _identifier_before(text, start) + found[1])


# --- Pass ":": key: value, typed `password: str = "..."`, Authorization headers,
# URL credentials and Slack webhooks, Windows home folders ------------------------------
_COLON = re.compile(
    r":(?:"
    r"//(?:hooks\.slack\.com/(?:services|workflows|triggers)/(?P<hook>[A-Za-z0-9+/_-]{20,})"
    r"|[^\s:@/\"'\\<>]*:(?P<pw>[^\s@/\"'\\<>]+)@)"
    r"|\\+(?:[Uu]sers|USERS)\\+"
    r"(?P<win>[\w-]+(?:\.[\w-]+)*(?: [\w-]+(?:\.[\w-]+)*)*(?=\\)|[\w-]+(?:\.[\w-]+)*)"
    r"|(?<=[dDnNtTyY\"' ]:)(?:" + _lookbehind_any(["authorization:", 'authorization":', "authorization':", 'authorization\\":'])
    + r"[ \t]*\\?[\"']?(?P<scheme>[A-Za-z]+)[ \t]+(?P<cred>[A-Za-z0-9._~+/-]{8,}=*)"
    r"|" + _keyword_ends(":", ("", " ", '"', "'", '\\"'))
    + r"(?:[ \t]*[A-Za-z_][A-Za-z0-9_.\[\], |]{0,40}?[ \t]*=(?!=)|=|(?![:=]))[ \t]*"
    + _VALUE
    + r"))"
)


def _colon_span(text: str, m: re.Match[str]) -> Span | None:
    if m.group("hook") is not None:
        return m.start("hook"), m.end("hook"), "slack_webhook"
    if m.group("pw") is not None:
        pw = m.group("pw")
        if pw.startswith(("[REDACTED", "$", "%", "{", "<")) or all(c in _MASK for c in pw):
            return None
        return m.start("pw"), m.end("pw"), _vendor_kind(pw) or "url_password"
    if m.group("win") is not None:
        i = m.start()
        if i < 1 or not text[i - 1].isalpha() or not _starts_token(text, i - 1):
            return None  # the drive letter of C:\Users\bob
        return _user_span(m, "win")
    if m.group("cred") is not None:
        cred = m.group("cred")
        if _is_reference(cred):
            return None
        kind = "bearer_token" if m.group("scheme").lower() == "bearer" else "auth_header"
        return m.start("cred"), m.end("cred"), _vendor_kind(cred) or kind
    return _equals_span(text, m)


# --- Pass "@": e-mail addresses ----------------------------------------------------------
# The local part is found backwards from "@". Not followed by "/" or "-" rules out npm
# scopes glued to a package name ("lmdb-store@sitespeed.io/x") and URL user names.
_EMAIL = re.compile(
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9_/-]|\.[A-Za-z0-9])"
)
_EMAIL_LOCAL = re.compile(r"[A-Za-z0-9._%+-]{1,64}\Z")
_NOT_PERSONAL_LOCAL = ("git", "noreply", "no-reply")  # git@github.com remotes, commit trailers


def _email_span(text: str, m: re.Match[str]) -> Span | None:
    at = m.start()
    local = _EMAIL_LOCAL.search(text, max(0, at - 64), at)
    if local is None:
        return None
    start = local.start()
    if _escaped(text, start):
        start += 1  # "\nmarco@..." inside a JSON string: the n belongs to the escape
    while start < at and text[start] in "._%+-":
        start += 1
    if start == at or text[at - 1] == "." or text[start:at].lower() in _NOT_PERSONAL_LOCAL:
        return None
    return start, m.end(), "email"


# --- Pass "/": user names in /home/<user> and /Users/<user> -----------------------------
_HOME = re.compile(r"/(?:home|Users)/(?P<home>[\w-]+(?:\.[\w-]+)*)")
_NOT_USERS = frozenset({"Shared", "linuxbrew"})  # macOS's shared folder, Homebrew on Linux
_MOUNT_PREFIX = re.compile(r"(?:/mnt/[A-Za-z]|/var)\Z")  # WSL's /mnt/c/Users, Silverblue's /var/home


def _home_span(text: str, m: re.Match[str]) -> Span | None:
    i = m.start()
    if not _starts_token(text, i, _PATH_WORD) and _MOUNT_PREFIX.search(text, max(0, i - 6), i) is None:
        return None  # a URL path such as example.com/home/index.html
    return _user_span(m, "home")


def _user_span(m: re.Match[str], group: str) -> Span | None:
    if m.group(group) in _NOT_USERS:
        return None
    return m.start(group), m.end(group), "home_user"


# Priority order: where two findings overlap, the earlier pass wins.
_PASSES: tuple[tuple[re.Pattern[str], Resolver], ...] = (
    (_SK, _prefixed_span),
    (_GL, _prefixed_span),
    (_X, _prefixed_span),
    (_UNDERSCORE, _underscore_span),
    (_A, _a_span),
    (_JWT, _jwt_span),
    (_DASH, _dash_span),
    (_BEARER, _bearer_span),
    (_EQUALS, _equals_span),
    (_COLON, _colon_span),
    (_EMAIL, _email_span),
    (_HOME, _home_span),
)
_TOKEN_PASSES = _PASSES[:7]


def _vendor_kind(value: str) -> str | None:
    """The token kind when a whole value (of a password=, a URL, a bearer) is a known token."""
    for pattern, resolve in _TOKEN_PASSES:
        for m in pattern.finditer(value):
            span = resolve(value, m)
            if span is not None and span[0] == 0 and span[1] == len(value):
                return span[2]
    return None


class Redactor:
    """Replaces secrets (always) and e-mail addresses and home-folder user names (switchable)."""

    def __init__(self, *, emails: bool = True, home_paths: bool = True) -> None:
        self._skip = frozenset(
            kind for kind, on in (("email", emails), ("home_user", home_paths)) if not on
        )
        self._passes = tuple(
            (pattern, resolve)
            for pattern, resolve in _PASSES
            if not (pattern is _EMAIL and not emails) and not (pattern is _HOME and not home_paths)
        )

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        """The text with every finding replaced, and how many of each kind were replaced."""
        starts: list[int] = []
        spans: list[Span] = []
        for pattern, resolve in self._passes:
            first = pattern.search(text)
            if first is None:
                continue
            for m in pattern.finditer(text, first.start()):
                span = resolve(text, m)
                if span is None or span[2] in self._skip:
                    continue
                i = bisect.bisect_left(starts, span[0])
                if (i > 0 and spans[i - 1][1] > span[0]) or (i < len(spans) and spans[i][0] < span[1]):
                    continue  # overlaps a finding of an earlier pass
                starts.insert(i, span[0])
                spans.insert(i, span)
        if not spans:
            return text, {}
        parts: list[str] = []
        counts: dict[str, int] = {}
        pos = 0
        for start, end, kind in spans:
            parts.append(text[pos:start])
            parts.append(placeholder(kind))
            counts[kind] = counts.get(kind, 0) + 1
            pos = end
        parts.append(text[pos:])
        return "".join(parts), counts
