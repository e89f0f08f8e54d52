"""Tests for the hyperscan prefilter of the redaction passes (trajectory_pipeline.ingest.redact_prefilter).

Why they exist: the prefilter decides which passes run at all, so one expression that
misses what its pass's regex matches would let a secret through, silently. So every
pass is shown adversarial texts its regex matches (non-ASCII letters that fold to ASCII
ones, unicode digits and names, JSON escapes, tokens cut by the end of the text, lone
surrogates) and must be flagged on each; random mixes of such fragments must be too;
the redactor must give the same text and counts with and without the prefilter on the
redaction tests' inputs, the real corpus and a generated one; and without hyperscan the
pure-Python path must run.

    .venv/bin/pytest tests/ingest/test_redact_prefilter.py
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import json
import pickle
import re
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.ingest import test_redact, test_redact_audit, test_redact_false_positives
from trajectory_pipeline.ingest import redact
from trajectory_pipeline.ingest.redact import Redactor
from trajectory_pipeline.ingest.redact_prefilter import CASE_FOLDS, Prefilter
from trajectory_pipeline.sample.corpus import CorpusSpec, generate_corpus

# hyperscan is a dependency on x86_64 Linux only (pyproject.toml); elsewhere the tests that
# need it skip and the fallback is what every other redaction test runs.
needs_hyperscan = pytest.mark.skipif(
    importlib.util.find_spec("hyperscan") is None, reason="the prefilter needs hyperscan"
)

PASS_NAMES = {
    redact._SK: "sk-",
    redact._GL: "gl",
    redact._X: "x",
    redact._UNDERSCORE: "_",
    redact._A: "A",
    redact._S: "S",
    redact._DAPI: "dapi",
    redact._HV: "hv",
    redact._YA29: "ya29.",
    redact._JWT: "eyJ",
    redact._STS: "Z",
    redact._DASH: "-",
    redact._BEARER: "earer",
    redact._EQUALS: "=",
    redact._COLON: ":",
    redact._COMMA: ",",
    redact._CALL_COMPARED: "(",
    redact._ENV_PAIR: "ame",
    redact._PIPED: "|",
    redact._HERE_STRING: "<<<",
    redact._HTPASSWD: "htpasswd",
    redact._SECURE_STRING: "ecure",
    redact._XML_ELEMENT: "</",
    redact._XML_ATTRIBUTE: " value=",
    redact._JWK: "kty",
    redact._SET: "set",
    redact._NETRC: "password",
    redact._AUTH_PAIR: "uth",
    redact._PLUS: "+",
    redact._NUMBERS: "digits",
    redact._NATIONAL: "national",
    redact._LABELLED: "labelled",
    redact._EMAIL: "@",
    redact._HOME: "/",
    redact._TILDE: "~",
    redact._LS_LINE: "newline",
    redact._LS_JSON_LINE: "json newline",
    redact._LS_FIRST_LINE: "first line",
}


def prefilter() -> Prefilter:
    found = redact._prefilter()
    assert found is not None
    return found


def exact_matches(text: str) -> set[int]:
    """The passes whose regex finds something in text, as `Redactor._round` searches."""
    return {
        i
        for i, (pattern, _) in enumerate(redact._PASSES)
        if (pattern.match(text) if pattern is redact._LS_FIRST_LINE else pattern.search(text))
    }


def missed(text: str) -> set[str]:
    """The passes that match text but that the prefilter does not flag (must be empty)."""
    flagged = set(prefilter().scan(text))
    return {PASS_NAMES[redact._PASSES[i][0]] for i in exact_matches(text) - flagged}


@needs_hyperscan
def test_every_pass_has_expressions_and_a_name() -> None:
    assert set(redact._prefilter_expressions()) == {p for p, _ in redact._PASSES} == set(PASS_NAMES)


def test_the_case_folds_are_every_non_ascii_letter_that_python_folds_to_ascii() -> None:
    everything = "".join(map(chr, range(0x80, sys.maxunicode + 1)))
    folds: dict[str, str] = {}
    for c in re.findall("(?i)[a-z]", everything):
        (letter,) = (x for x in "abcdefghijklmnopqrstuvwxyz" if re.fullmatch(f"(?i){x}", c))
        folds[letter] = folds.get(letter, "") + c
    assert folds == CASE_FOLDS


BODY = "aB3xY7kQ9" * 12
# (pass, text): texts each pass's regex matches, written to probe the expressions' edges.
ADVERSARIAL: list[tuple[str, str]] = [
    ("sk-", "sk-" + "ant-" + BODY[:20]),
    ("sk-", "sk-" + "or-v1-" + "ab12" * 16),
    ("sk-", "key sk-" + BODY[:32]),
    ("sk-", "cut sk-" + "ab_-"),
    ("gl", "gl" + "pat-" + BODY[:20]),
    ("gl", "gl" + "agent-" + "a_-1"),
    ("x", "xo" + "xb-" + "1234567890"),
    ("x", "xa" + "pp-٣-" + "A1b2C3d4E5f6"),  # \d matches an Arabic-Indic digit
    ("x", "xa" + "pp-" + "A1b2"),
    ("x", "x" + "ai-" + "A1b_" * 20),
    ("x", "pp" + "lx-" + "A1b2"),
    ("_", "dckr" + "_pat_" + "-_a1" * 7),
    ("_", "fi" + "gd_" + "a-_b"),
    ("_", "sntr" + "ys_" + "eyJpYXQiOjE2" + "a+/=_" * 12),
    ("_", "lin" + "_oauth_" + "ab12" * 16),
    ("A", "NR" + "AK-" + "Q7" * 13 + "Q"),
    ("A", "PM" + "AK-" + "ab12" * 6 + "-" + "ab" * 17),
    ("A", "AT" + "ATT3" + "a_-=" * 25),
    ("_", "gh" + "p_" + BODY[:36]),
    ("_", "github" + "_pat_" + "Ab12"),
    ("_", "n" + "pm_" + BODY[:36] + "é"),
    ("_", "h" + "f_" + "ab12"),
    ("_", "wh" + "sec_" + BODY[:32]),
    ("_", "rk" + "_test_" + BODY[:10]),
    ("A", "AK" + "IA" + "Q7Q7"),
    ("A", "AK" + "IA" + "Q7Q7" * 4 + "\\t2024-05-01T12:00:00Z\\t" + "Ab1/" * 10),
    ("A", "AK" + "IA" + "Q7Q7" * 4 + "\r\n" + "Ab1+" * 10),
    ("A", "AK" + "IA" + "Q7Q7" * 4 + ",\\r\\n\t" + "Ab1/" * 10),
    ("A", "AK" + "IA" + "Q7Q7" * 4 + "\n \n" + "Ab1/" * 10),
    ("A", "AK" + "IA" + "Q7Q7" * 4 + "` |\t`x1:+_-` | `" + "Ab1/" * 10),
    ("A", "||  AK" + "IA" + "Q7Q7" * 4 + "|  2026-12-07T12:00:00+00:00 |  " + "Ab1/" * 10),
    ("A", "||  SecretAccessKey|  " + "Ab1/" * 10),
    ("A", "| Secret Access Key | `" + "Ab1+" * 10),
    ("A", "| AWS_SECRET_ACCESS_KEY` |\t`" + "Ab1+" * 10),
    ("A", "A3" + "TZ" + "Q" * 16),
    ("A", "AI" + "za" + "-_ab"),
    ("A", "A" + "C" + "0123456789abcdef" * 2),
    ("A", "AGE" + "-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2),
    ("A", "py" + "pi-AgE" + "IcHlwaS5vcmc"),
    ("A", "x٣12345:" + "A" + "b_-" * 11 + "b"),
    ("S", "S" + "G." + "a_b-"),
    ("S", "S" + "K" + "0123456789abcdef" * 2),
    ("S", "LS0t" + "LS1CRUdJTi"),
    ("dapi", "da" + "pi" + "0a1b"),
    ("hv", "hv" + "r.a_-B"),
    ("ya29.", "ya" + "29." + "a_-B"),
    ("-", "gh secret set X --body\tZx81"),
    ("eyJ", "ey" + "J" + "hbGciOiJ"),
    ("Z", "\\nIQoJb3Jp" + "Z2luX2Vj" + "a/+Z" * 25),
    ("Z", "FwoGZXIv" + "YXdzE" + "a/+Z" * 25 + "=="),
    ("eyJ", "ey" + "J" + "abcdefgh.eyJabcdefgh.sig"),
    ("-", "-----BEGIN " + "PRIVATE KEY-----\nMIIE"),
    ("-", "-----BEGIN" + " EC 2 PRIVATE KEY BLOCK-----\\nMIIE"),
    ("-", '["-----BEGIN ' + 'RSA PRIVATE KEY-----", "Proc-Type: 4,ENCRYPTED", "", "' + "MIIE" * 16 + '"]'),
    ("-", "-----BEGIN " + "RSA PRIVATE KEY-----\\\\nDEK-Info: AES-128-CBC,00\\\\n\\\\nMIIE"),
    ("-", "curl --user=bob:" + "s3cret"),
    ("-", "curl --user\tbob:" + "s3cret"),
    ("-", "tool --db-password Zx81"),
    ("-", "tool --TOKEN\t'abc'"),
    ("-", "curl -u bøb:pässwörd https://x"),
    ("-", 'curl -u \\"bob:pw\\" x'),
    ("-", "curl -u 'bob:pw'"),
    ("-", "C--Users-bob-repo"),
    ("-", "-p'x'"),
    ("-", "é-pS3"),
    ("-", "\\n--user a:b"),
    ("-", "--api-token-value x"),
    ("-", "x -storepass\tq"),
    ("-", "x -Users-b"),
    ("-", "x-home-bob"),
    ("earer", "bearer " + BODY[:16]),
    ("earer", "Bearer\t\t" + "a._~+/-" * 3),
    ("=", "pa\u017fsword=hunter2"),
    ("=", "\u017fecret = 'x'"),
    ("=", "to\u212aen=abc123"),
    ("=", "API_\u212aEY=abc123"),
    ("=", "PASSWORD=é"),
    ("=", 'db_password" = "x"'),
    ("=", "'token' => 'abc123'"),
    ("=", "to\u212aen !== 'abc123'"),
    ("=", 'getenv(\\"API_\u212aEY\\") == \\"x\\"'),
    ("=", "ENV['pa\u017fsword']!='x'"),
    ("=", "smtpPass=Zx81"),
    ("=", "'x'==\tos.environ[\\\"DB_PASSWORD\\\"]"),
    ("=", '"x" !== process.env.API_TOKEN'),
    ("=", "'x'!=user->pwd"),
    ("(", 'pa\u017fsword.EQUALS(\t"x")'),
    ("(", "Objects.equals($apiKey, 'x')"),
    ("(", 'hmac.compare_digest(token,\tb\\"x\\")'),
    ("(", "strcaſecmp(user->pwd, 'x')"),
    ("(", "Rack::Utils.secure_compare(os.environ['TOKEN'], 'x')"),
    ("(", "assertEqual('x', token)"),
    ("(", "assertEquals(\\\"a 'b'\\\",\t'x', pa\u017fsword)"),
    ("(", 'Assert.assertNotEquals(msg, apiKey, "x", 1)'),
    ("(", "strncmp(pwd, 'x', 1é)"),
    ("(", "password.equals(\\n\u2003 \\\\n'x')"),  # line breaks and a unicode blank
    ("=", "pwd=\ud800"),
    (":", "authorızation: Basic Zx81Zx81"),
    (":", "Author\u0130zat\u0131on: Bearer abcdefgh"),
    (":", 'password: "hunter2"'),
    (":", '{"client_secret":"x"}'),
    (":", '{\\"password\\":\\"x\\"}'),
    (":", '{\\\\\\"password\\\\\\":\\\\\\"x\\\\\\"}'),
    (":", "'token': 'abc'"),
    ("ame", "na\u212ae"[:0] + "- Name: x_TOKEN\\n  value: Zx81"),
    ("ame", '{\\"name\\":\\"pass\\",\\n\\"value\\": 1}'),
    ("ame", "name:'dbpwd',\n\t\\r 'Value' :'x'"),
    ("|", "echo x |\tsudo  -kS ls"),
    ("|", "x|chpasswd"),
    ("|", "x | /usr/sbin/chpasswd"),
    ("|", "x | /usr/bin/sudo -u root /usr/sbin/chpasswd"),
    ("|", 'x |sudo -p \\"a|b\\" --user ü -kS'),
    ("|", "x | sudo --preserve-env=A,B -C 3 --stdin"),
    ("|", "x |\t/usr/bin/sudo -E /usr/bin/passwd -f b0b.x$\t--stdin"),
    ("|", "x|passwd\t--stdin"),
    ("<<<", "sudo -S x <<<'pw'"),
    ("<<<", '<<<\\"pw'),
    ("htpasswd", "htpasswd -b\tf u p"),
    ("htpasswd", "htpasswd -5b f u p"),
    ("htpasswd", 'htpasswd -bnBC\t10 "" p'),
    ("ecure", "convertTo-secureString\t-String 'x'"),
    ("ecure", 'ConvertTo-SecureString -FORCE\t-asplaintext -String \\"x'),
    ("ecure", "ConvertTo-SecureString -ſtring:'x'"),
    ("ecure", "ConvertTo-SecureString -AsPlainText:$TRUE -Verbose -ea:stop\t-ErrorAction  Stop 'x'"),
    ("</", "<pa\u017fsword>é</"),
    ("</", "A_TO\u212aEN>x</"),
    (" value=", 'key=\\"my_secret\\" value=\\"x\\"'),
    (" value=", '1d" value="x"'),
    (" value=", "1d' value='x'"),
    (" value=", 'x   value=\\\\\\"x'),
    ("</", "<ns:pa\u017fsword> \t<![CDATA[é]]]>\t</"),
    ("</", "</key>\\n\u2003\r\n<string>é</string>"),
    ("</", 'name=\\\\\\"a.pa\u017fsword\\\\\\">é</'),
    ("</", "key='TO\u212aEN'> <![CDATA[x]]></"),
    ("</", "<pa\u017fsword>\r\n\t é\n </"),
    ("</", "<pa\u017fsword>\n\n\t é\r\n\n </"),  # blank lines around the text
    # an element with attributes: a quote before ">", a keyword ending the closing tag's name
    ("</", '\\"x\\">é</Ns:PassWord>'),
    ("</", "'>\n\n é \n</a.Secret_TOKEN>"),
    ("</", '"> \t<![CDATA[é]]]>\t</wsse:Password>'),
    (" value=", '1d"\n   value="x"'),
    (" value=", "x'\tvalue='x'"),
    (" value=", 'x"\r\n value="x"'),
    (" value=", 'x\\"\\n\\tvalue=\\"x'),
    (" value=", 'x\\\\\\" \\\\n value=\\\\\\"x'),
    ("kty", 'kty\\\\\\" :'),
    ("kty", "{'kty'\t:"),
    ("kty", "{kty :"),
    ("_", "key pcsk_a_b1"),  # a cut Pinecone token: "_" inside its first four
    ("set", "setx API_KEY Zx81"),
    ("set", "set\t-gx\tGITHUB_TOKEN\t'Zx81'"),
    ("set", "set -x my.pass 'Zx81'"),
    ("set", "npm config set //r.npmjs.org/:_authToken Zx81"),
    ("password", "login bob\\n password\tZx81"),
    ("uth", 'HTTPBasicAuth(\\"bob\\", \\"Zx81\\")'),
    ("uth", "auth\t=\t['bob',\t'Zx81']"),
    ("uth", "basic_auth=(\u2003\\n  user,\n  'Zx81')"),
    ("uth", "BasicAuth\u00a0(u, 'Zx81')"),
    ("ya29.", "ya" + "29.c." + "a_-B"),
    ("set", "set --export\\tAPI_KEY\\tZx81"),
    (":", "password: str = 'x'"),
    (":", "to\u212aen: >-\\n  Zx81"),
    (":", "pa\u017fsword: &pw !!str |\n  Zx81"),
    (":", "PRIVATE-TO\u212aEN: glpat"),
    (":", "https://hooks.slack.com/services/" + BODY[:24]),
    (":", "postgres://üser:päss\u2603@db"),
    (":", "redis://:p@host"),
    (":", "ftp://u:\ud800@h"),
    (":", "C:\\Users\\Bob"),
    (":", "Set-Coo\u212aie: a=b"),
    (":", '"auth":"YTpi"'),
    (":", "Private-Lines: 3"),
    (":", "private_\u212aey_id: 0a"),
    (":", "secret_key_base: x"),
    (":", "postgres://u:p\\!w@h"),
    (":", "C:\\\\\\\\USERS\\\\\\\\bøb"),
    ("=", "?a=1&sig=Ab3%2F0123456789ab"),
    ("=", "uid=1000(bob)"),
    ("=", "document.coo\u212aie = 'a=b'"),
    ("+", "+1 (415) 555-0134"),
    ("+", "+4 (0) 30-1234 5"),
    ("digits", "4539 1488 0343 6467"),
    ("digits", "219-09-9981"),
    ("digits", "(212)555-0199"),
    ("national", "NI AB 12 34 56 C"),
    ("national", "nino:AB123456D"),
    ("national", "é06.12.34.56.78é"),
    ("national", "06-12-34-56-78"),
    ("national", "\u066306 12 34 56 78"),
    ("national", "07700 900461"),
    ("national", "07700 900 461"),
    ("national", "020 7946 0958"),
    ("labelled", "Steuer-ID 86 095 742 719"),
    ("labelled", "BSN 1234.56.782"),
    ("labelled", "SIN 119-084-218"),
    ("labelled", "tel\u20030612345678"),
    ("labelled", "T\u00c9L: 0612345678"),
    ("labelled", "\u2014\u017fin 119084218"),
    ("labelled", "\u017fOCIAL INSURANCE"),
    ("labelled", "TAX-\u0130D"),
    ("labelled", "Identifi\u212aationsnummer"),
    ("labelled", "x_y fax"),
    ("labelled", "\u0130DNR"),
    ("labelled", "sof\u0131"),
    ("~", "~bob/x"),
    ("newline", "whoami\r\nbob"),
    ("json newline", "whoami\\\\nbob"),
    ("@", "mail bob@example.com"),
    ("@", "@a.co"),
    ("@", "x@sub-1.example-2.museum!"),
    ("@", "ålice@mail.exämple.org"),
    ("/", "/home/ålice/repo"),
    ("/", "/Users/\u0130lke"),
    ("/", "/home/٣bob"),
    ("newline", "total 8\n-rw-r--r-- 1 bob bob 12 Jan 1 x"),
    ("newline", "\ndrwxrwsrwT+ \u0663 bob staff \u0664"),
    ("newline", "\nlrwxrwxrwx@\t2\tbob\t_g\t9"),
    ("json newline", "total 8\\n-rw-r--r-- 1 bob bob 12 Jan 1 x"),
    ("json newline", "\\\\ncrw-rw---- ١ bob bob ١"),
    ("first line", "-rw-r--r-- 1 bob bob 12 Jan 1 x"),
    ("first line", "prwxr-xr-x. \u0661\u0662 alice users \u0664"),
]


@needs_hyperscan
@pytest.mark.parametrize(("name", "text"), ADVERSARIAL)
def test_the_prefilter_flags_every_adversarial_match(name: str, text: str) -> None:
    (pattern,) = (p for p, n in PASS_NAMES.items() if n == name)
    matched = pattern.match(text) if pattern is redact._LS_FIRST_LINE else pattern.search(text)
    assert matched is not None, f"the example must match its pass {name!r}: {text!r}"
    assert missed(text) == set()


# Pieces that put anchors, closers, escapes, folded letters and non-ASCII characters next
# to each other, and planted secrets and near misses from the redaction tests.
PIECES = [
    *(piece for _, text in ADVERSARIAL for piece in (text, text[:-3], text[3:])),
    *test_redact.FRAGMENTS,
    "sk-",
    "gl",
    "pat-",
    "set",
    "setx ",
    " -gx ",
    "TOKEN",
    "password ",
    "machine h ",
    "login ",
    "auth",
    "Auth",
    "=(",
    "(",
    ", ",
    "ya29.",
    "c.",
    "xai-",
    "pplx-",
    "dckr_pat_",
    "figd_",
    "NRAK-",
    "PMAK-",
    "ATATT3",
    "xox",
    "b-",
    "app-",
    "_",
    "gh",
    "p_",
    "A",
    "KIA",
    "Iza",
    "eyJ",
    "-",
    "--",
    "-u ",
    "user",
    "earer",
    "B",
    "=",
    ":",
    "://",
    "@",
    "/home/",
    "/Users/",
    "\\",
    "\\n",
    "\n",
    '"',
    "'",
    "`",
    " ",
    "\t",
    ".",
    "é",
    "\u0663",
    "\u2003",
    "\u017f",
    "\u212a",
    "\u0130",
    "\u0131",
    "\ud800",
    "\U0001f600",
    "pass",
    "word",
    "PASS",
    "token",
    "KEY",
    "secret",
    "api",
    "authorization",
    "Ab12",
    "Q7Q7Q7Q7",
    "drwxr-xr-x 2 bob bob 4",
    "SG.",
    "SK",
    "dapi",
    "hvs.",
    "pypi-AgE",
    "IcHlwaS5vcmc",
    "AGE-SECRET-KEY-1",
    "LS0tLS1CRUdJTi",
    "Cookie:",
    "uid=",
    "| ",
    "sudo ",
    "/usr/bin/",
    "-S",
    "--stdin",
    "chpasswd",
    "equals(",
    "strcmp(",
    "compare_digest(",
    '" == ',
    "'!=",
    "password",
    ", ",
    ".",
    "passwd ",
    " -AsPlainText",
    "<<<",
    "sig=",
    "whoami",
    "Private-Lines:",
    "~",
    "+",
    "4539",
    "1488",
    "219-09-",
    "(212) ",
    "06 12 ",
    "34.56.",
    "07700 ",
    "AB 12 34 ",
    "56 C",
    "123456",
    "Steuer-ID ",
    "BSN ",
    "SIN",
    "\u017fin",
    "tél",
    "mobile",
    "123456789",
    "-p",
    "-u ",
    "curl ",
    "mysql ",
    "…",
    "...",
]


@needs_hyperscan
@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=4), min_size=1, max_size=8).map("".join))
def test_the_prefilter_flags_every_pass_that_matches_a_mix_of_pieces(text: str) -> None:
    assert missed(text) == set()


Redacted = list[tuple[str, dict[str, int]]]


def both_paths(
    texts: list[str], monkeypatch: pytest.MonkeyPatch, redactor: Redactor | None = None
) -> tuple[Redacted, Redacted]:
    """Every text redacted with the prefilter, then with the pure-Python path."""
    redactor = redactor or Redactor()
    with_prefilter = [redactor.redact(t) for t in texts]
    with monkeypatch.context() as m:
        m.setattr(redact, "_prefilter", lambda: None)
        pure = [redactor.redact(t) for t in texts]
    return with_prefilter, pure


# The redaction tests' long texts (100 KB repetitions for the linear-time test) are redacted
# both ways by their first characters: whole, they took nineteen twentieths of these
# comparisons' time, each redacted 18 times over. The prefilter still sees them whole, for
# the matches only a long text holds (`<add key="DbPassword"`, 80 KB of escapes, `value=`).
LONG_TEXT_HEAD = 4_096


def heads(texts: list[str]) -> list[str]:
    return sorted({text[:LONG_TEXT_HEAD] for text in texts})


def redaction_test_inputs() -> Iterator[str]:
    """Every string the redaction tests hand to a redactor: module lists and parametrized arguments."""

    def strings(value: object) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, list | tuple):
            for item in value:
                yield from strings(item)
        elif isinstance(value, dict):
            for item in value.values():
                yield from strings(item)

    for module in (test_redact, test_redact_audit, test_redact_false_positives):
        for name, value in vars(module).items():
            if isinstance(value, list):
                yield from strings(value)
            elif inspect.isfunction(value) and name.startswith("test_"):
                for mark in getattr(value, "pytestmark", []):
                    if mark.name == "parametrize":
                        yield from strings(mark.args[1])


@needs_hyperscan
def test_same_output_on_the_redaction_tests_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = sorted(set(redaction_test_inputs()))
    texts = heads(whole)
    texts += [json.dumps(t) for t in texts] + [json.dumps(json.dumps(t)) for t in texts]
    assert len(texts) > 500
    assert all(missed(t) == set() for t in whole + texts)
    with_prefilter, pure = both_paths(texts, monkeypatch)
    assert with_prefilter == pure
    assert sum(bool(counts) for _, counts in pure) > 200


@needs_hyperscan
@pytest.mark.parametrize(("emails", "home_paths"), [(False, True), (True, False), (False, False)])
def test_same_output_with_personal_kinds_switched_off(
    emails: bool, home_paths: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = heads(list(redaction_test_inputs()))
    texts += [t + " mail bob@example.com in /home/bob\n-rw-r--r-- 1 bob bob 1 x" for t in texts]
    redactor = Redactor(emails=emails, home_paths=home_paths)
    with_prefilter, pure = both_paths(texts, monkeypatch, redactor)
    assert with_prefilter == pure


@needs_hyperscan
def test_same_output_on_the_real_corpus(real_corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    texts, lines = test_redact._corpus(real_corpus)
    texts += lines
    assert all(missed(t) == set() for t in texts)
    with_prefilter, pure = both_paths(texts, monkeypatch)
    assert with_prefilter == pure


@needs_hyperscan
def test_same_output_on_a_generated_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    generate_corpus(tmp_path, CorpusSpec(days=2, sessions_per_day=3, seed=3))
    texts: list[str] = []
    for path in sorted(p for p in tmp_path.rglob("*") if p.is_file()):
        # Its malformed lines hold bytes that are not UTF-8: lone surrogates here.
        for line in path.read_bytes().decode("utf-8", "surrogateescape").splitlines():
            texts.append(line)
            with contextlib.suppress(ValueError):  # a malformed line: the line itself is the text
                texts.extend(test_redact._strings(json.loads(line)))
    assert any("\udc80" <= c <= "\udcff" for t in texts for c in t)
    assert all(missed(t) == set() for t in texts)
    with_prefilter, pure = both_paths(texts, monkeypatch)
    assert with_prefilter == pure
    assert sum(bool(counts) for _, counts in pure) > 100


def test_the_pure_python_path_runs_without_hyperscan(monkeypatch: pytest.MonkeyPatch) -> None:
    text = test_redact.PLANTED[0][1] + " /home/bob " + json.dumps(test_redact.PLANTED[-1][1])
    expected = Redactor().redact(text)
    monkeypatch.setitem(sys.modules, "hyperscan", None)  # `import hyperscan` raises ImportError
    redact._prefilter.cache_clear()
    try:
        assert redact._prefilter() is None
        assert Redactor().redact(text) == expected
    finally:
        redact._prefilter.cache_clear()


@needs_hyperscan
def test_threads_and_pickles_redact_alike(real_corpus: Path) -> None:
    texts = test_redact._corpus(real_corpus)[0][:3000]
    redactor = Redactor()
    expected = [redactor.redact(t) for t in texts]
    copy = pickle.loads(pickle.dumps(redactor))
    with ThreadPoolExecutor(4) as pool:  # a scan runs without the GIL: one scratch per thread
        assert list(pool.map(copy.redact, texts)) == expected
