"""Secret and personal-data redaction for transcript text, applied at ingestion.

Every event text and every canonical-JSON tool input goes through `Redactor.redact`
before anything is written, so no live credential reaches Parquet, the training data or
the UI. A secret becomes a typed placeholder such as `[REDACTED:github_token]`; a login
name becomes `<user>` (`/home/<user>/repo`), so paths stay consistent across sessions.
`redact` returns the new text and a count per kind, for the asset's metadata.

    from trajectory_pipeline.ingest.redact import Redactor
    text, counts = Redactor().redact("export OPENAI_API_KEY=sk-... && run")

Where the patterns come from. Token formats follow gitleaks' default rules
(`config/gitleaks.toml`: aws-access-token, github-pat/oauth/app/refresh/fine-grained,
gitlab-*, anthropic-api-key, openai-api-key, slack-*-token, slack-webhook-url,
gcp-api-key, stripe-access-token, npm-access-token, huggingface-access-token, jwt,
private-key, curl-auth-header) and detect-secrets' plugins (aws, github_token,
gitlab_token, openai, slack, stripe, private_key, jwt, basic_auth, keyword). Secret-named
assignments use gitleaks' generic-api-key keywords and its `^[a-zA-Z_.-]+$` allowlist.
They are hand-written, not loaded from detect-secrets at run time: that library scans
two to three orders of magnitude slower (bench/bench_redact.py) and its keyword plugin
cannot tell `password = get_password()` from a literal.

Why it is fast. CPython's `re` skips ahead quickly only when a pattern starts with a
literal character; a pattern that starts with a character class (one combined
prefilter regex, say) costs a few nanoseconds per byte however rare its characters
are, and `in` checks for a keyword list measured no faster. So the patterns are grouped
into fifteen passes that each start on one literal anchor: a vendor prefix (`sk-`,
`gl`, `xox`), the "_" after one (`ghp_`, `npm_`), "A" of AKIA/AIza, `eyJ` of a JWT,
`earer` of Bearer, the "=" or ":" after a secret-named key, "-" of a flag, "@" of an
e-mail, "/" of a home path, the newline before an `ls -l` line. Fixed-width lookbehinds
reject most anchors inside `re` (the "=" and ":" passes test the two characters before
the anchor at once, since one letter such as the "s" of `pass` ends too many words), and
every alternative after an anchor starts with a literal where it can, which `re` rejects
at a glance; the judgement (word boundaries, placeholders, identifiers versus
literals) runs in Python only on the rare matches. A text with no candidate costs one
fast C-level scan per pass: about 2 µs for a short text, roughly 100 MB/s on
event-sized texts (bench/bench_redact.py). Where hyperscan is installed (x86_64 Linux),
one hyperscan scan of the text first says which passes can match at all and only those
run (trajectory_pipeline/ingest/redact_prefilter.py, same output): a text with no candidate
then costs about 1 µs, and event texts redact about twice as fast.

Why it is safe inside JSON strings. No placeholder holds a quote, a backslash or a
brace; a replaced span never holds an unescaped quote, never starts on the second
character of a backslash escape and never ends inside one, so redacting a canonical JSON
string leaves valid JSON, e.g. `{"cmd": "export OPENAI_API_KEY=sk-... && run"}`. Keys
and quoted values are recognized up to two levels of JSON nesting (`\\"password\\"`).
Redaction is deterministic and idempotent: placeholders never match again, and when a
finding was glued to another candidate the text is scanned once more, so the second
candidate is judged as it will stand after the first is replaced. Text cut mid-value (a
quarantine excerpt is a cut line) is redacted as if the end of the text closed the
value: `{"env":{"DB_PASSWORD":"p4ss` loses `p4ss`, and a trailing vendor-prefixed token
shorter than its format (`ghp_abc123`, `AKIAQ7Q7`, `sk-ant-api03-abc`, a JWT header
alone) is masked when it ends the text and what follows its prefix looks random (four
characters or more with a digit or an inner capital; after AKIA any four; after
`sk-ant-`, `sk-proj-`, ... any one), so identifiers that end a text (`hf_token`,
`npm_package`, `sk-learn`) stay. A short token inside the text is left alone.

Decisions on ambiguous cases. The value of a secret-named key (`password=`, `api_key:`,
`--token x`, `SMTP_PASS=`, `AccountKey=`) is kept when it is empty, templated (`$X`,
`${X}`, `%X%`, `{{ x }}`, `<your-password>`), a mask (`***`), a number, a path or URL, a
call or subscript (`get_token()`, `os.environ["X"]`), or made only of letters, spaces
and `_ . -`: code identifiers (`anthropic_api_key`, `self.password`, `None`) and word
placeholders (`changeme`, `your-api-key`) are worth more as training data than the rare
all-letter password they would let through. One exception: a quoted value of two words
or more (`"password": "correct horse battery staple"`) is a passphrase, since code never
quotes an identifier with spaces in it, unless a word names what it labels
(`"Enter your password"`, `"your API key here"`); an unquoted one
(`password=self.password`, `api_key: anthropic_api_key`) stays an identifier. The price:
a multi-word string under such a key that is not a secret (`"token": "New York"`, a
translated label) is redacted. Anything else is redacted, however weak
(`password=hunter2`). An unquoted value ends with its shell word: at whitespace, a
quote, a backslash or `, ; ( ) { } [ ] < > |`; a "&" inside stays in it
(`password=Tr0ub4dor&3`) unless it ends a command (`&&`, `& `, last character:
`password=x&&ls`) or starts a query parameter or an entity (`?password=x&next=/`,
`&amp;`). Bare `key=` and `pass=` (and `--pass`) are too common in code to judge, so
they are left alone; "pass" counts as the last part of a longer name (`SMTP_PASS`,
`db-pass`, `mail.pass`, `smtpPass`, not `bypass` or `COMPASS`), and `PWD=/path` is the
working directory. A password in a connection string (after `user:`, before `@host`) is
always a literal, so only a templated one is kept; after curl's `-u user:` or
`--user user:` it is judged like a key's value, since docker's `-u` takes `uid:gid` or
`user:group` (`1000:1000`, `app:app`). A Bearer or Basic credential of 16 letters or
more with no separator is a token; shorter words (`Bearer authentication`) and
placeholders with separators (`Bearer YOUR_GITHUB_TOKEN`) are kept. AWS's documentation
keys (ending in `EXAMPLE`) are kept, as gitleaks does. `git@...` and `noreply@...`
addresses are not personal and are kept. Login names are replaced in /home/NAME,
/Users/NAME, C:\\Users\\NAME, Claude Code's encoded project folders (-home-NAME-repo; a
name holding "_" or "." is encoded as "-", so only its first part can be told apart) and
the owner and same-named group columns of `ls -l` listings; system accounts (root,
nobody, _spotlight, ...) are kept.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from trajectory_pipeline.ingest.redact_prefilter import Prefilter, caseless, load

Span = tuple[int, int, str]  # start, end, kind
Resolver = Callable[[str, re.Match[str]], tuple[Span, ...]]
# A pass as a Redactor runs it: search, finditer, resolver (see `_scanners`).
_Pass = tuple[Callable[[str], re.Match[str] | None], Callable[[str, int], Iterable[re.Match[str]]], Resolver]

# Every kind a count can name. "password" and "secret" are values of secret-named keys
# (password=, API_KEY=, client_secret:, --token x); "auth_header" is a non-Bearer
# Authorization credential; "home_user" is a login name (home path or `ls -l` owner).
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
    "stripe_key",
    "npm_token",
    "huggingface_token",
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
_NONE: tuple[Span, ...] = ()


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


def _one(start: int, end: int, kind: str) -> tuple[Span, ...]:
    return ((start, end, kind),)


# --- Values of secret-named keys, shared by the "=", ":" and "--flag" passes -------
# A double quote may carry 0, 1 or 3 backslashes: plain text, a JSON string, a JSON
# string inside a JSON string. `_value_span` checks that the closing quote is real.
# The value ends at the first quote like the opening one (it may hold the other kinds:
# `"it's"`, never an unescaped double quote), or at the end of the text: a quarantine
# excerpt is a cut line, so `"DB_PASSWORD":"p4ss` may stop mid-value (a trailing lone
# backslash stays outside the value).
_QUOTED = r"(?P<q>(?:\\{3}|\\)?\"|['`])(?P<qv>(?:(?!(?P=q))[^\"\\\r\n]|\\[^\r\n]){1,512}?)(?:(?P=q)|\\*\Z)"
# An unquoted value is a shell word: it stops at whitespace, a quote, a backslash and
# , ; ( ) { } [ ] < > |. A "&" belongs to it (`Tr0ub4dor&3`) unless it separates
# commands: `&&`, `&` before a space, a stop or the end (`password=x&&ls`); `_value_span`
# also cuts it before a query parameter or an entity (`?password=x&next=/`, `x&amp;`). Nor does
# it run into a PEM block glued after it (`-u user:pass@host-----BEGIN ...`): the block's own
# pass must see its header.
_STOP = r"\s\"'`\\,;(){}\[\]<>|"
_WORD_CHAR = rf"(?:(?!-----BEGIN )[^{_STOP}&]|&(?=[^{_STOP}&]))"
_UNQUOTED = rf"(?P<uv>{_WORD_CHAR}{{1,512}})"
# A lookahead, so that a value judged a reference is not consumed: "a=$X_b=..." still
# shows the pass the "b=" inside it.
_VALUE = rf"(?=(?:{_QUOTED}|{_UNQUOTED}))"
# gitleaks' generic-api-key keywords, narrowed to the ones whose value is the secret;
# "key" counts only after api/secret/access/private/... (see _SECRET_KEY_NAMES), and
# "pass" only as the last part of a longer name (SMTP_PASS, db-pass, smtpPass).
_KEYWORDS = ("password", "passwd", "pwd", "pass", "secret", "token", "key")
_SECRET_KEY_NAMES = (
    "apikey",
    "accountkey",  # Azure: AccountKey=..., AZURE_STORAGE_ACCOUNT_KEY
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


def _letters(names: Iterable[str], i: int) -> str:
    """The letters at position i of `names`, both cases, for a character class."""
    return "".join(sorted({c for name in names for c in (name[i].lower(), name[i].upper())}))


def _gate(names: tuple[str, ...], closers: tuple[str, ...], separator: str = "") -> str:
    """A two-character test that may pass where a name, a closer and `separator` end: the
    first test of a pass, one lookbehind that rejects most separators in ordinary text.

    The two characters before the separator are the name's last two letters, its last
    letter and a one-character closer, or a closer's last two characters.
    """
    first: set[str] = set()
    second: set[str] = set()
    for closer in closers:
        if closer:
            first.update(closer[-2:-1] or _letters(names, -1))
            second.add(closer[-1])
        else:
            first.update(_letters(names, -2))
            second.update(_letters(names, -1))
    classes = ("".join(re.escape(c) for c in sorted(chars)) for chars in (first, second))
    return f"(?<=[{next(classes)}][{next(classes)}]{re.escape(separator)})"


def _names_end(names: tuple[str, ...], closers: tuple[str, ...], separator: str) -> str:
    """A test that one of `names`, then a closer (quote, space), then `separator` ends here.

    Classes on the names' last two letters run first (one lookbehind), so most
    separators in ordinary text (`args:`, `id=`) are rejected before the per-name ones.
    """
    before_last = _letters(names, -2)
    parts = [
        f"(?<=[{before_last}][{_letters(names, -1)}]{re.escape(closer + separator)})"
        + _lookbehind_any([name + closer + separator for name in names])
        for closer in closers
    ]
    return f"(?:{'|'.join(parts)})"


_WORDISH = frozenset("_.- ")
_MASK = frozenset("*xX•.#")
_AWS_SECRET = re.compile(r"[A-Za-z0-9/+]{40}")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


# Templates that start with "%": Windows' %NAME%, printf's %s and Python's %(name)s.
_PERCENT_TEMPLATE = re.compile(r"%[A-Za-z_][A-Za-z0-9_]*%|%\([A-Za-z_]\w*\)[sdr]|%[sdr]")


def _looks_random(value: str) -> bool:
    """Upper and lower case letters and digits together: a key, not a path or a word."""
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
    )


def _is_reference(value: str) -> bool:
    """True for values that name or template a secret rather than being one."""
    if not value or value.startswith(("[REDACTED", "$", "<", "{", "#{")):
        return True
    if value.startswith("%"):
        return _PERCENT_TEMPLATE.fullmatch(value) is not None
    if _AWS_SECRET.fullmatch(value) and _looks_random(value):
        return False  # an AWS secret key may start with "/" (1 in 64): not a path
    if all(c.isalpha() or c in _WORDISH for c in value):
        return True  # identifiers, dotted paths, words: gitleaks' ^[a-zA-Z_.-]+$ allowlist
    if all(c in _MASK for c in value) or _NUMBER.fullmatch(value):
        return True
    return value.startswith(("/", "~/", "./", "../")) or "://" in value


# Words that make a quoted phrase a label or a prompt ("Enter your password", "your API
# key here", "GitHub personal access token") rather than a passphrase.
_LABEL_WORDS = frozenset(("password", "passphrase", "pass", "secret", "token", "key", "api", "credential"))
_NOT_LETTERS = re.compile(r"[^a-z]+")


def _is_passphrase(value: str) -> bool:
    """True for a quoted value of words (`"correct horse battery staple"`), not a label."""
    words = value.split()
    if len(words) < 2 or not all(c.isalpha() or c in _WORDISH for c in value):
        return False
    words = _NOT_LETTERS.split(value.lower())
    return not any(w in _LABEL_WORDS or w.removesuffix("s") in _LABEL_WORDS for w in words)


# A "&" inside an unquoted value that starts a query parameter or an entity:
# `?password=x&next=/`, `x&amp;` (the ";" of an entity is just past the value).
_AMP_CUT = re.compile(r"&(?:[A-Za-z_][\w.-]*=|#?[A-Za-z0-9]+;)")


def _identifier_before(text: str, end: int) -> str:
    start = end
    while start > 0 and text[start - 1] in _PATH_WORD:
        start -= 1
    return text[start:end]


def _keyword_at(text: str, end: int) -> tuple[int, str] | None:
    """The secret-named key ending at `end`: its start and the kind of its value."""
    for kw in _KEYWORDS:
        start = end - len(kw)
        if start < 0 or text[start:end].lower() != kw:
            continue
        if kw == "key":
            name = (_identifier_before(text, start) + kw).lower()
            if not name.replace("_", "").replace("-", "").replace(".", "").endswith(_SECRET_KEY_NAMES):
                return None  # key=..., monkey: ..., sort(key=...)
            return start, "secret"
        if kw == "pass":
            return (start, "password") if _pass_boundary(text, start) else None
        if not _keyword_boundary(text, start, text[start:end]):
            return None
        return start, "password" if kw.startswith("p") else "secret"
    return None


def _pass_boundary(text: str, start: int) -> bool:
    """True when "pass" at start ends a longer name: SMTP_PASS, db-pass, mail.pass, smtpPass.

    Bare `pass`, `--pass` and words glued in one case (bypass, COMPASS) do not count.
    """
    if start < 2:
        return False
    c = text[start - 1]
    if c in "_-.":
        return text[start - 2] in _ALNUM
    return text.startswith("Pass", start) and (c.islower() or c.isdigit())


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


def _closing_quote(text: str, q: str, start: int, end: int) -> int:
    """Where a value opened by an escaped quote `q` really ends, given the regex's `end`.

    A closing quote at nesting level L is 2**L - 1 backslashes and the quote; more
    backslashes before it (modulo 2**(L+1)) mean it is escaped inside the value. The
    search stops at an unescaped quote, which would end the enclosing JSON string.
    """
    b = len(q) - 1
    limit = min(len(text), start + 512)
    newline = text.find("\n", start, limit)
    if newline != -1:
        limit = newline
    i = end + b
    while start <= i < limit:
        run = 0
        while i - run > 0 and text[i - run - 1] == "\\":
            run += 1
        if run % 2 == 0:
            break
        if run % (2 * (b + 1)) == b:
            return i - b
        i = text.find('"', i + 1, limit)
    return end


def _word_end(text: str, start: int, end: int) -> int:
    """The end of the unquoted value text[start:end]: before a query "&" and trailing dots."""
    amp = text.find("&", start, end)
    while amp != -1:
        if _AMP_CUT.match(text, amp):
            end = amp
            break
        amp = text.find("&", amp + 1, end)
    while end > start and text[end - 1] == ".":
        end -= 1
    return end


def _value_span(text: str, m: re.Match[str], kind: str, name: str) -> tuple[Span, ...]:
    """The span of the value assigned to secret-named key `name`, unless it is a reference."""
    quoted = m.group("uv") is None
    if not quoted:
        start, end = m.span("uv")
        if end < len(text) and text[end] in "([":
            return _NONE  # get_token(), os.environ["X"]
        end = _word_end(text, start, end)
    else:
        start, end = m.span("qv")
        q = m.group("q")
        if q[-1] == '"' and text[start:end].lstrip()[:1] in (",", ":", "]", "}"):
            return _NONE  # the quote closed an enclosing JSON string: this is JSON, not a value
        if len(q) > 1 and text.startswith(q, end):
            end = _closing_quote(text, q, start, end)
    value = text[start:end]
    if _is_reference(value) and not (quoted and _is_passphrase(value)):
        return _NONE
    if value.endswith(("EXAMPLE", "EXAMPLEKEY")):
        return _NONE
    if name.lower().endswith("pwd") and value.startswith(("/", "~")):
        return _NONE  # PWD=/home/... is the working directory
    if _AWS_SECRET.fullmatch(value):
        full = name.lower().replace("_", "").replace("-", "")
        if "aws" in full or "secretaccesskey" in full:
            kind = "aws_secret_key"
    return _one(start, end, _vendor_kind(value) or kind)


# A token cut short by the end of the text (a quarantine excerpt is a cut line) is
# matched by an alternative that ends in `\Z`, and masked when what follows its prefix
# looks random (`_cut_token`). Elsewhere a short token is left alone, as before.
def _cut_token(tail: str) -> bool:
    """True when `tail`, what follows a vendor prefix up to the end of the text, looks random.

    Four characters or more with a digit or an inner capital: `abc123`, `Q7Q7`, not the
    identifiers `hf_token`, `npm_package`, `pk_test_data`, `sk-learn` that end a text.
    """
    return len(tail) >= 4 and any(c.isdigit() or (c.isupper() and i > 0) for i, c in enumerate(tail))


# --- Passes "sk-", "gl", "x": OpenAI/Anthropic, GitLab and Slack tokens ----------------
_SK = re.compile(
    r"sk-(?:ant-[A-Za-z0-9_-]{20,}|(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}"
    r"|or-v1-[a-f0-9]{64}|[A-Za-z0-9]{32,}|(?P<cut>[A-Za-z0-9_-]{4,})\Z)"
)
# After these, any character at the end of the text is a cut key: `sk-ant-api03-abc`.
_SK_KINDS = re.compile(r"(?:ant|proj|svcacct|admin|None|or-v1)-.")
_GL = re.compile(
    r"gl(?:pat|dt|ft|rt|soat|cbt|ptt|imt|oas|agent|ffct)-"
    r"(?:[A-Za-z0-9_-]{20,300}(?:\.[0-9a-z]{9})?|(?P<cut>[A-Za-z0-9_-]{4,19})\Z)"
)
_X = re.compile(
    r"x(?:ox[abposre]-[A-Za-z0-9-]{10,}|app-\d-[A-Za-z0-9-]{10,}|(?:ox[abposre]|app)-(?P<cut>[A-Za-z0-9-]{4,})\Z)"
)


def _prefixed_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if not _starts_token(text, m.start()):
        return _NONE
    cut = m.group("cut")
    if cut is not None and not (_cut_token(cut) or (m.group().startswith("sk-") and _SK_KINDS.match(cut))):
        return _NONE
    token = m.group()
    if token.startswith("sk-"):
        kind = "anthropic_key" if token.startswith("sk-ant-") else "openai_key"
    else:
        kind = "gitlab_token" if token.startswith("gl") else "slack_token"
    return _one(m.start(), m.end(), kind)


# --- Pass "_": tokens whose vendor prefix ends in "_" -----------------------------------
_UNDERSCORE = re.compile(
    # Ten characters, or four to nine that end the text, in one possessive run.
    r"_(?=[A-Za-z0-9]{4,9}+(?:[A-Za-z0-9]|\Z))(?:"
    r"(?<=gh[pousr]_)(?:[A-Za-z0-9]{36,255}|[A-Za-z0-9]{4,35}\Z)"
    r"|(?<=github_pat_)(?:[A-Za-z0-9_]{22,255}|[A-Za-z0-9_]{4,21}\Z)"
    r"|(?<=npm_)(?:[A-Za-z0-9]{36}(?![A-Za-z0-9])|[A-Za-z0-9]{4,35}\Z)"
    r"|(?<=hf_)(?:[A-Za-z0-9]{30,}|[A-Za-z0-9]{4,29}\Z)"
    r"|(?<=whsec_)(?:[A-Za-z0-9]{32,}|[A-Za-z0-9]{4,31}\Z)"
    r"|(?:(?<=k_live_)|(?<=k_test_))(?:[A-Za-z0-9]{10,}|[A-Za-z0-9]{4,9}\Z))"
)
# The vendor prefix that ends at the "_" anchor, its kind and its shortest whole token
# (else ghp_, gho_, ...: github_token, 36); a shorter one is cut by the end of the text.
_UNDERSCORE_PREFIXES: tuple[tuple[str, str, int], ...] = (
    ("github_pat_", "github_token", 22),
    ("npm_", "npm_token", 36),
    ("hf_", "huggingface_token", 30),
    ("whsec_", "stripe_key", 32),
    ("sk_live_", "stripe_key", 10),
    ("rk_live_", "stripe_key", 10),
    ("pk_live_", "stripe_key", 10),
    ("sk_test_", "stripe_key", 10),
    ("rk_test_", "stripe_key", 10),
    ("pk_test_", "stripe_key", 10),
)


def _underscore_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    anchor = m.start()
    start, kind, shortest = anchor - 3, "github_token", 36  # ghp_, gho_, ghu_, ghs_, ghr_
    for prefix, prefix_kind, prefix_shortest in _UNDERSCORE_PREFIXES:
        if text.startswith(prefix, anchor + 1 - len(prefix)):
            start, kind, shortest = anchor + 1 - len(prefix), prefix_kind, prefix_shortest
            break
    tail = text[anchor + 1 : m.end()]
    if len(tail) < shortest and not _cut_token(tail):
        return _NONE  # hf_token, npm_package at the end of a text
    return _one(start, m.end(), kind) if _starts_token(text, start) else _NONE


# --- Pass "A": AWS access key ids and Google API keys ---------------------------------
_A = re.compile(
    r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])(?:[A-Z0-9]{16}(?![A-Za-z0-9])|(?P<aws_cut>[A-Z0-9]{4,15})\Z)"
    r"|AIza(?:[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])|(?P<google_cut>[A-Za-z0-9_-]{4,34})\Z)"
)


def _a_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    token = m.group()
    if not _starts_token(text, m.start()):
        return _NONE
    if m.group("google_cut") is not None and not _cut_token(m.group("google_cut")):
        return _NONE
    aws_cut = m.group("aws_cut")
    if aws_cut is not None and not token.startswith("AKIA") and not any(c.isdigit() for c in aws_cut):
        return _NONE  # ASIAPACIFIC: only AKIA never starts a word
    if token.startswith("AIza"):
        return _one(m.start(), m.end(), "google_api_key")
    if token.endswith("EXAMPLE"):
        return _NONE  # AWS's documentation key, allowlisted by gitleaks too
    return _one(m.start(), m.end(), "aws_access_key")


# --- Pass "eyJ": JSON Web Tokens ------------------------------------------------------
# Cut by the end of the text, a header alone (`eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXV`) is enough.
_JWT = re.compile(
    r"eyJ[A-Za-z0-9_-]{8,}(?:\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*|(?:\.[A-Za-z0-9_-]*){0,2}\Z)"
)


def _jwt_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    return _one(m.start(), m.end(), "jwt") if _starts_token(text, m.start()) else _NONE


# --- Pass "-": PEM blocks, --secret flags, curl -u user:password, encoded home folders --
def _user_password(form: str) -> str:
    """`user:password` after curl's -u (form "short") or --user (form "long"), maybe quoted."""
    return rf"(?:\\*[\"'])?(?P<{form}_user>[^\s:\"'`\\]{{1,64}}):(?P<{form}_pw>{_WORD_CHAR}{{1,256}})"


# Each alternative starts with a literal, which `re` rejects at a glance where it fails.
_DASH = re.compile(
    r"-(?:"
    r"----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
    r"(?P<pem>[^\"]*?(?=-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----)"
    r"|(?:[A-Za-z0-9+/=\r\n]|\\[nr])*)"
    + r"|-(?:user(?:=|[ \t]+)"
    + _user_password("long")
    + r"|(?P<flag>[A-Za-z0-9][A-Za-z0-9_-]{0,39}+)"
    + _gate(_KEYWORDS, ("",))
    + r"[ \t]+"
    + _VALUE
    + r")|u[ \t]+"
    + _user_password("short")
    + r"|(?:home|Users)-(?P<enc>[A-Za-z0-9]+)(?=[-/\\\"'\r\n]|$)"
    r")"
)


def _dash_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if m.group("pem") is not None:
        start, end = m.span("pem")
        body = text[start:end]
        if not body.strip(" \t\r\n\\nr") or body.startswith("[REDACTED"):
            return _NONE
        return _one(start, end, "private_key")
    if m.group("flag") is not None:
        found = _keyword_at(text, m.end("flag"))
        if found is None or not _starts_token(text, m.start(), _PATH_WORD):
            return _NONE
        return _value_span(text, m, found[1], m.group("flag"))
    for form in ("long", "short"):
        if m.group(f"{form}_pw") is not None:
            return _user_password_span(text, m, form)
    i = m.start()
    if i > 0 and text[i - 1] == "-":
        if not (i >= 2 and text[i - 2].isalpha() and _starts_token(text, i - 2, _PATH_WORD)):
            return _NONE  # only the drive of C--Users-bob may stand before
    elif not _starts_token(text, i, _PATH_WORD):
        return _NONE
    return _user_span(m, "enc")


def _user_password_span(text: str, m: re.Match[str], form: str) -> tuple[Span, ...]:
    """The password of `curl -u user:password`, unless it is a reference or a group name."""
    if not _starts_token(text, m.start(), _PATH_WORD):
        return _NONE
    user = m.group(f"{form}_user")
    start, end = m.span(f"{form}_pw")
    end = _word_end(text, start, end)
    password = text[start:end]
    if _is_reference(password) or password == user or ("@" in user and "/" in password):
        return _NONE  # -u $USER:$PASS, docker -u 1000:1000 or app:app, git@host:org/repo
    return _one(start, end, _vendor_kind(password) or "password")


# --- Pass "earer": bearer tokens --------------------------------------------------------
_BEARER = re.compile(r"earer(?<=[Bb]earer)[ \t]+(?P<token>[A-Za-z0-9._~+/-]{16,}=*)")


def _is_credential_reference(cred: str) -> bool:
    """`_is_reference` for the credential after Bearer or Basic: 16 letters or more with
    no separator (`ABCDEFGHIJKLMNOPQRSTUVWX`) are a token, not a word or a placeholder."""
    return _is_reference(cred) and not (len(cred) >= 16 and cred.isalpha())


def _bearer_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    token = m.group("token")
    if not _starts_token(text, m.start() - 1, _ALNUM) or _is_credential_reference(token):
        return _NONE  # prose: "Bearer authentication"; placeholders: "Bearer YOUR_TOKEN"
    return _one(m.start("token"), m.end("token"), _vendor_kind(token) or "bearer_token")


# --- Pass "=": password=..., API_KEY = "...", 'token' => '...' --------------------------
_EQUALS_CLOSERS = ("", " ", '" ', "' ")
_EQUALS = re.compile(
    "="
    + _gate(_KEYWORDS, _EQUALS_CLOSERS, "=")
    + _names_end(_KEYWORDS, _EQUALS_CLOSERS, "=")
    + r">?(?!=)[ \t]*"
    + _VALUE
)


def _equals_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    end = m.start()
    while end > 0 and text[end - 1] in " \"'\\":
        end -= 1
    found = _keyword_at(text, end)
    if found is None:
        return _NONE
    return _value_span(text, m, found[1], _identifier_before(text, end))


# --- Pass ":": key: value, typed `password: str = "..."`, Authorization headers,
# URL credentials and Slack webhooks, Windows home folders ------------------------------
_COLON_CLOSERS = ("", '"', "'", '\\"', '\\\\\\"')
_COLON = re.compile(
    # Most colons in text (JSON keys, times, URLs) fail the first two-character test.
    ":(?:"
    + _gate((*_KEYWORDS, "authorization"), _COLON_CLOSERS, ":")
    + "(?:"
    + _names_end(("authorization",), _COLON_CLOSERS, ":")
    + r"[ \t]*(?:\\{3}|\\)?[\"']?(?P<scheme>[A-Za-z]+)[ \t]+(?P<cred>[A-Za-z0-9._~+/-]{8,}=*)"
    r"|"
    + _names_end(_KEYWORDS, _COLON_CLOSERS, ":")
    # Atomic: once `name: Type =` is seen, its value is the one after "=", even when
    # that value is rejected, so a second redaction decides as the first did.
    + r"(?>[ \t]*[A-Za-z_][A-Za-z0-9_.\[\], |]{0,40}?[ \t]*=(?!=)|=|(?![:=]))[ \t]*"
    + _VALUE
    + r")"
    r"|//(?:hooks\.slack\.com/(?:services|workflows|triggers)/(?P<hook>[A-Za-z0-9+/_-]{20,})"
    r"|[^\s:@/\"'\\<>\[\]]*:(?P<pw>[^\s@/\"'\\<>]+)@)"
    r"|(?P<sep1>\\+)(?:[Uu]sers|USERS)(?P<sep2>\\+)"
    r"(?P<win>[\w-]+(?:\.[\w-]+)*(?: [\w-]+(?:\.[\w-]+)*)*(?=\\)|[\w-]+(?:\.[\w-]+)*)"
    r")"
)


def _colon_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if m.group("hook") is not None:
        return _one(m.start("hook"), m.end("hook"), "slack_webhook")
    if m.group("pw") is not None:
        pw = m.group("pw")
        if pw.startswith(("[REDACTED", "$", "%", "{", "<")) or all(c in _MASK for c in pw):
            return _NONE
        return _one(m.start("pw"), m.end("pw"), _vendor_kind(pw) or "url_password")
    if m.group("win") is not None:
        i = m.start()
        if i < 1 or not text[i - 1].isalpha() or not _starts_token(text, i - 1):
            return _NONE  # the drive letter of C:\Users\bob
        if len(m.group("sep1")) != len(m.group("sep2")):
            return _NONE  # C:\\Users\\\n: the last backslash starts a JSON escape
        return _user_span(m, "win")
    if m.group("cred") is not None:
        cred = m.group("cred")
        if _is_credential_reference(cred):
            return _NONE
        kind = "bearer_token" if m.group("scheme").lower() == "bearer" else "auth_header"
        return _one(m.start("cred"), m.end("cred"), _vendor_kind(cred) or kind)
    return _equals_span(text, m)


# --- Pass "@": e-mail addresses ----------------------------------------------------------
# The local part is found backwards from "@". Not followed by "/" or "-" rules out npm
# scopes glued to a package name ("lmdb-store@sitespeed.io/x") and URL user names.
_EMAIL = re.compile(
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9_/-]|\.[A-Za-z0-9])"
)
_EMAIL_LOCAL = re.compile(r"[A-Za-z0-9._%+-]{1,64}\Z")
_NOT_PERSONAL_LOCAL = ("git", "noreply", "no-reply")  # git@github.com remotes, commit trailers


def _email_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    at = m.start()
    local = _EMAIL_LOCAL.search(text, max(0, at - 64), at)
    if local is None:
        return _NONE
    start = local.start()
    if _escaped(text, start):
        start += 1  # "\nmarco@..." inside a JSON string: the n belongs to the escape
    while start < at and text[start] in "._%+-":
        start += 1
    if start == at or text[at - 1] == "." or text[start:at].lower() in _NOT_PERSONAL_LOCAL:
        return _NONE
    return _one(start, m.end(), "email")


# --- Pass "/": login names in /home/NAME and /Users/NAME --------------------------------
_HOME = re.compile(r"/(?:home|Users)/(?P<home>[\w-]+(?:\.[\w-]+)*)")
_NOT_USERS = frozenset({"Shared", "linuxbrew"})  # macOS's shared folder, Homebrew on Linux
_MOUNT_PREFIX = re.compile(r"(?:/mnt/[A-Za-z]|/var)\Z")  # WSL's /mnt/c/Users, Silverblue's /var/home


def _home_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    i = m.start()
    if not _starts_token(text, i, _PATH_WORD) and _MOUNT_PREFIX.search(text, max(0, i - 6), i) is None:
        return _NONE  # a URL path such as example.com/home/index.html
    return _user_span(m, "home")


def _user_span(m: re.Match[str], group: str) -> tuple[Span, ...]:
    if m.group(group) in _NOT_USERS:
        return _NONE
    return _one(m.start(group), m.end(group), "home_user")


# --- Passes "\n": the owner (and same-named group) columns of `ls -l` lines, after a
# newline, after a newline escaped inside a JSON string (at any depth), or first ------
_LS_BODY = (
    r"[-dlcbps][rwxsStT-]{9}[@+.]?[ \t]+\d+[ \t]+(?P<owner>[A-Za-z][A-Za-z0-9_.-]*)"
    r"[ \t]+(?P<group>[A-Za-z_][A-Za-z0-9_.-]*)[ \t]+\d"
)
_LS_LINE = re.compile("\n" + _LS_BODY)
_LS_JSON_LINE = re.compile(r"\\n" + _LS_BODY)
_LS_FIRST_LINE = re.compile(_LS_BODY)
_SYSTEM_ACCOUNTS = frozenset({"root", "nobody", "daemon", "bin", "sys", "www-data", "admin", "wheel"})


def _ls_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    owner = m.group("owner")
    if owner in _SYSTEM_ACCOUNTS:
        return _NONE
    spans = [(m.start("owner"), m.end("owner"), "home_user")]
    if m.group("group") == owner:
        spans.append((m.start("group"), m.end("group"), "home_user"))
    return tuple(spans)


_TOKEN_PASSES: tuple[tuple[re.Pattern[str], Resolver], ...] = (
    (_SK, _prefixed_span),
    (_GL, _prefixed_span),
    (_X, _prefixed_span),
    (_UNDERSCORE, _underscore_span),
    (_A, _a_span),
    (_JWT, _jwt_span),
)
# Priority order: where two findings overlap, the earlier pass wins. A changed regex needs its
# prefilter expressions (`_prefilter_expressions`) to stay a superset of it.
_PASSES: tuple[tuple[re.Pattern[str], Resolver], ...] = (
    *_TOKEN_PASSES,
    (_DASH, _dash_span),
    (_BEARER, _bearer_span),
    (_EQUALS, _equals_span),
    (_COLON, _colon_span),
    (_EMAIL, _email_span),
    (_HOME, _home_span),
    (_LS_LINE, _ls_span),
    (_LS_JSON_LINE, _ls_span),
    (_LS_FIRST_LINE, _ls_span),
)
_PERSONAL_PASSES = {"email": (_EMAIL,), "home_user": (_HOME, _LS_LINE, _LS_JSON_LINE, _LS_FIRST_LINE)}
# What may follow a finding and start another one whose judgement looks behind it.
_GLUED_STARTS = ("--", "/home/", "/Users/", "-home-", "-Users-")
_MAX_ROUNDS = 4


def _prefilter_expressions() -> dict[re.Pattern[str], tuple[str, ...]]:
    """hyperscan expressions per pass, that together match wherever the pass's regex can.

    The rules that keep them supersets are in trajectory_pipeline/ingest/redact_prefilter.py;
    per pass:

    - `sk-`, `gl`, `eyJ`, `A`: the anchor, the literal alternatives after it and the
      first characters every alternative must have (`sk-` is followed by at least four
      of `[A-Za-z0-9_-]`: `ant-`, `proj-`, `or-v1-` and the 32-character key included).
    - `x`: `xox[abposre]-` or `xapp-` only: in `xapp-\\d-`, `\\d` is any unicode digit.
    - `_`: the lookbehinds' prefixes consumed before "_", then the four alphanumerics its
      lookahead requires.
    - `-`: one expression per alternative: `-----BEGIN`; `--user` and its separator;
      `--`, a flag whose last two characters pass the keyword gate, a blank (the gate's
      classes, unbounded); `-u`, blanks, an optional quote, a user name of characters
      outside ASCII blanks and the excluded punctuation, and ":"; `-home-` or `-Users-`
      and one alphanumeric.
    - `earer`: the lookbehind's `[Bb]`, then blanks and the sixteen token characters.
    - `=` and `:`: a secret-named key (`caseless`, as its `(?i:...)` lookbehind matches
      it), one of the pass's closers and the separator; `:` also: `://` then the Slack
      webhook host, or a user, ":", a password and "@" (negated classes excluding only
      ASCII characters Python excludes too, unbounded); and `:`, backslashes, `Users`
      and a backslash.
    - `@`: a domain's first character, the rest of its labels as one class, the last
      dot and two letters of the top-level domain.
    - `/`: `/home/` or `/Users/`; the name after it is unicode `\\w`, so left out.
    - `ls -l` lines: the newline (or `\\n`, or the start of the text) and the
      ten-character mode; the link count is unicode `\\d`, so left out.
    """
    keyword = "(?:" + "|".join(caseless(k) for k in _KEYWORDS) + ")"
    mode = r"[-dlcbps][rwxsStT-]{9}"
    return {
        _SK: (r"sk-[A-Za-z0-9_-]{4}",),
        _GL: (r"gl(?:pat|dt|ft|rt|soat|cbt|ptt|imt|oas|agent|ffct)-[A-Za-z0-9_-]{4}",),
        _X: (r"x(?:ox[abposre]|app)-",),
        _UNDERSCORE: (r"(?:gh[pousr]|github_pat|npm|hf|whsec|k_live|k_test)_[A-Za-z0-9]{4}",),
        _A: (r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{4}", r"AIza[A-Za-z0-9_-]{4}"),
        _JWT: (r"eyJ[A-Za-z0-9_-]{8}",),
        _DASH: (
            r"-----BEGIN",
            r"--user[= \t]",
            rf"--[A-Za-z0-9_-]*[{_letters(_KEYWORDS, -2)}][{_letters(_KEYWORDS, -1)}][ \t]",
            r"-u[ \t]+(?:\\*[\x22'])?[^\t\n\r \x22'`\\:]+:",
            r"-(?:home|Users)-[A-Za-z0-9]",
        ),
        _BEARER: (r"[Bb]earer[ \t]+[A-Za-z0-9._~+/-]{16}",),
        _EQUALS: (keyword + r"(?: |\x22 |' )?=",),
        _COLON: (
            "(?:" + keyword + "|" + caseless("authorization") + r")(?:\x22|'|\\\x22|\\{3}\x22)?:",
            r"://hooks\.slack\.com/",
            r"://[^\t\n\r :@/\x22'\\<>\[\]]*:[^\t\n\r @/\x22'\\<>]+@",
            r":\\+(?:[Uu]sers|USERS)\\",
        ),
        _EMAIL: (r"@[A-Za-z0-9][A-Za-z0-9.-]*\.[A-Za-z]{2}",),
        _HOME: (r"/(?:home|Users)/",),
        _LS_LINE: (r"\n" + mode,),
        _LS_JSON_LINE: (r"\\n" + mode,),
        _LS_FIRST_LINE: (r"^" + mode,),
    }


@functools.cache
def _prefilter() -> Prefilter | None:
    """This process's prefilter, built on first use; None where hyperscan is not installed."""
    expressions = _prefilter_expressions()
    return load(tuple(expressions[pattern] for pattern, _ in _PASSES))


def _vendor_kind(value: str) -> str | None:
    """The token kind when a whole value (of a password=, a URL, a bearer) is a known token.

    The value is judged with a space after it, so that a short value is not taken for a
    token cut by the end of the text (`password=sk-abc123` is a password).
    """
    padded = value + " "
    for pattern, resolve in _TOKEN_PASSES:
        for m in pattern.finditer(padded):
            for start, end, kind in resolve(padded, m):
                if start == 0 and end == len(value):
                    return kind
    return None


def _scanners(
    pattern: re.Pattern[str],
) -> tuple[Callable[[str], re.Match[str] | None], Callable[[str, int], Iterable[re.Match[str]]]]:
    """A pass's search and finditer; the first line of a listing is only looked for at 0."""
    if pattern is not _LS_FIRST_LINE:
        return pattern.search, pattern.finditer

    def at_start(text: str, pos: int = 0) -> tuple[re.Match[str], ...]:
        m = pattern.match(text) if pos == 0 else None
        return (m,) if m is not None else ()

    return pattern.match, at_start


def _pass_findings(
    finditer: Callable[[str, int], Iterable[re.Match[str]]], resolve: Resolver, text: str, pos: int
) -> Iterator[Span]:
    """Every finding of one pass, each match's scan going on from where its findings end.

    A match may consume more than it reports: `-u user:pass@host` runs on, without a space, into a
    PEM block glued after it. Scanning on from the match's end would hide a finding of the same
    pass inside the rest, and no later round would see it, so the scan restarts there instead.
    """
    while True:
        for m in finditer(text, pos):
            found = resolve(text, m)
            yield from found
            reach = max((end for _, end, _ in found), default=m.start() + 1)
            if reach < m.end():
                pos = max(reach, m.start() + 1)
                break
        else:
            return


class Redactor:
    """Replaces secrets (always) and e-mail addresses and login names (switchable)."""

    def __init__(self, *, emails: bool = True, home_paths: bool = True) -> None:
        self._options = {"emails": emails, "home_paths": home_paths}
        self._skip = frozenset(kind for kind, on in (("email", emails), ("home_user", home_paths)) if not on)
        skipped_passes = {p for kind in self._skip for p in _PERSONAL_PASSES[kind]}
        # Indexed like _PASSES (the prefilter's pass ids): None for a pass switched off.
        self._by_id = tuple(
            None if pattern in skipped_passes else (*_scanners(pattern), resolve)
            for pattern, resolve in _PASSES
        )
        self._passes = tuple(p for p in self._by_id if p is not None)

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        """Pickled as its options (its passes hold closures), so worker processes can redact too."""
        return functools.partial(Redactor, **self._options), ()

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        """The text with every finding replaced, and how many of each kind were replaced."""
        prefilter = _prefilter()
        if prefilter is None:
            passes: Sequence[_Pass] = self._passes
        else:
            # Only the passes that may match; later rounds, after a replacement, run them all.
            ids = prefilter.scan(text)
            if not ids:
                return text, {}
            ids.sort()
            passes = [p for i in ids if (p := self._by_id[i]) is not None]
        text, counts, settled = self._round(text, passes)
        for _ in range(_MAX_ROUNDS - 1):
            if settled:
                break
            text, found, settled = self._round(text, self._passes)
            for kind, n in found.items():
                counts[kind] = counts.get(kind, 0) + n
        return text, counts

    def _round(self, text: str, passes: Sequence[_Pass]) -> tuple[str, dict[str, int], bool]:
        """One scan by each of `passes`; `settled` is False when a second scan could find more.

        A finding glued to a word, or a candidate cut off by an overlapping finding, is
        judged by what stood next to it; once that neighbour is a placeholder the
        judgement can change, so the text is scanned again (rare in real transcripts).
        """
        starts: list[int] = []
        spans: list[Span] = []
        settled = True
        for search, finditer, resolve in passes:
            first = search(text)  # cheaper than an empty finditer
            if first is None:
                continue
            for span in _pass_findings(finditer, resolve, text, first.start()):
                if span[2] in self._skip:
                    continue
                start, end, _ = span
                i = bisect.bisect_left(starts, start)
                before = spans[i - 1] if i > 0 and spans[i - 1][1] > start else None
                after = spans[i] if i < len(spans) and spans[i][0] < end else None
                if before is None and after is None:
                    starts.insert(i, start)
                    spans.insert(i, span)
                elif not any(o[0] <= start and end <= o[1] for o in (before, after) if o is not None):
                    settled = False  # partly covered: what is left may be a finding
        if not spans:
            return text, {}, True
        parts: list[str] = []
        counts: dict[str, int] = {}
        pos = 0
        for start, end, kind in spans:
            if (start > 0 and text[start - 1] in _WORD) or (
                end < len(text) and (text[end] in _WORD or text.startswith(_GLUED_STARTS, end))
            ):
                settled = False
            parts.append(text[pos:start])
            parts.append(placeholder(kind))
            counts[kind] = counts.get(kind, 0) + 1
            pos = end
        parts.append(text[pos:])
        return "".join(parts), counts, settled
