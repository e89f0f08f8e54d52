"""Tests for the redaction rules added after the planted-secrets audit (trajectory_pipeline.ingest.redact).

Why they exist: an audit planted 96 secrets in transcripts and 37 came through. Each
shape that leaked is pinned here with exact outputs (where the value ends, what stays),
next to the ordinary text around it that must not change: a literal that starts with
"$" or "/", a password holding ";", "\\" or "@", a token cut before its closing quote,
one spelled with a JSON `\\uXXXX` escape in a quarantine excerpt, credential flags of
the commands that take them (and the same flags of commands that do not), numbers that
are and are not phone numbers, ids or cards, and login names in paths and `id` output.
The planted examples of every kind live in test_redact.PLANTED; the ordinary-text
corpus in test_redact_false_positives.py. Values are written for this project and
built by concatenation, so that this file trips no secret scanner.

    .venv/bin/pytest tests/ingest/test_redact_audit.py
"""

from __future__ import annotations

import base64
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajectory_pipeline.ingest import redact
from trajectory_pipeline.ingest.redact import Redactor, decode_json_escapes
from trajectory_pipeline.schema import canonical_json

P = "[REDACTED:password]"


def redacted(text: str) -> str:
    out, _ = Redactor().redact(text)
    assert Redactor().redact(out) == (out, {}), "redaction must be idempotent"
    return out


# --- Values that start like a template or a path ----------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ADMIN_PASS=$" + "Tq9vX2" + "mLw", "ADMIN_PASS=" + P),  # a random name after $
        ("DB_PASSWORD=$" + "k8#Rw2" + "!z", "DB_PASSWORD=" + P),  # punctuation after a name
        ("DB_PASSWORD=$" + "7xK2m", "DB_PASSWORD=" + P),  # a digit glued to letters
        ("DB_PASSWORD=/" + "Zy4kW9" + "pQ", "DB_PASSWORD=" + P),  # one random segment
        ("DB_PASSWORD=/" + "a+B9/c" + "=", "DB_PASSWORD=" + P),  # base64 characters
        ("DB_PASSWORD=$DB_PASSWORD", "DB_PASSWORD=$DB_PASSWORD"),
        ("DB_PASSWORD=${DB_PASSWORD}", "DB_PASSWORD=${DB_PASSWORD}"),
        ("DB_PASSWORD=$1", "DB_PASSWORD=$1"),
        ("DB_PASSWORD=$HOME/.pgpass", "DB_PASSWORD=$HOME/.pgpass"),
        ("DB_PASSWORD=$dbPassword2", "DB_PASSWORD=$dbPassword2"),
        ("DB_PASSWORD=/run/secrets/db-password", "DB_PASSWORD=/run/secrets/db-password"),
        ("DB_PASSWORD=../secrets/db.txt", "DB_PASSWORD=../secrets/db.txt"),
        ("DB_PASSWORD=~/.config/db/pass", "DB_PASSWORD=~/.config/db/pass"),
        ("PRIVATE_KEY=/tmp/tmpa8Fk2Lm9/key.pem", "PRIVATE_KEY=/tmp/tmpa8Fk2Lm9/key.pem"),
    ],
)
def test_a_leading_dollar_or_slash_is_judged_by_what_follows(text: str, expected: str) -> None:
    assert redacted(text) == expected


def test_an_azure_account_key_that_starts_with_a_slash_is_base64() -> None:
    key = "/" + ("Qm3vK9wL2xR8tZ5+" * 6)[:85] + "=="
    text = (
        "DefaultEndpointsProtocol=https;AccountName=st01;AccountKey="
        + key
        + ";EndpointSuffix=core.windows.net"
    )
    assert redacted(text) == text.replace(key, "[REDACTED:secret]")


def test_a_base64_pem_goes_when_it_holds_a_private_key() -> None:
    cert = b"-----BEGIN CERTIFICATE-----\nMIIB" + b"Qk9" * 20 + b"\n-----END CERTIFICATE-----\n"
    key = b"-----BEGIN " + b"PRIVATE KEY-----\nMIIE" + b"Zx8" * 20 + b"\n-----END PRIVATE KEY-----\n"
    for blob, kept in ((cert, True), (cert + key, False), (key, False), (key[:24], False)):
        text = "tls.crt: " + base64.b64encode(blob).decode()
        assert (Redactor().redact(text)[0] == text) is kept, blob[:40]


# --- Where a password ends --------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("SMTP_PASSWORD=" + "Vb2;" + "qX7r", "SMTP_PASSWORD=" + P),
        ("SMTP_PASSWORD=" + "Vb2;" + "qX7r && make", "SMTP_PASSWORD=" + P + " && make"),
        ("password=" + "hunter9" + ";ls -la", "password=" + P + ";ls -la"),  # ; then a command
        ("password: " + "p4ss;" + "word", "password: " + P),  # ; then a word that is no command
        ("Server=db;Password=" + "Nq4" + "wE;Database=app", "Server=db;Password=" + P + ";Database=app"),
        ("password=" + "Wx7\\" + "k2$9", "password=" + P),  # a backslash escape inside
        ("password=" + "Wx7\\" + "k2$9\\nnext", "password=" + P + "\\nnext"),  # a JSON newline ends it
        ("password=" + "Jm5@" + "rt!8", "password=" + P),
        ('{"password": "' + "Fz6\\\\" + 'kw1"}', '{"password": "' + P + '"}'),
        (
            "postgres://app:" + "p9@" + "Lq2@" + "db.internal:5432/app",
            "postgres://app:[REDACTED:url_password]@db.internal:5432/app",
        ),
        (
            "mysql://root:" + "Hy7\\" + "!v@" + "10.0.0.7/shop",
            "mysql://root:[REDACTED:url_password]@10.0.0.7/shop",
        ),
        (
            "https://u:" + "s3cr3tPw" + "@h.example/p?next=a@b",
            "https://u:[REDACTED:url_password]@h.example/p?next=a@b",
        ),
    ],
)
def test_a_password_keeps_its_semicolons_backslashes_and_at_signs(text: str, expected: str) -> None:
    assert redacted(text) == expected


def test_a_long_value_goes_whole() -> None:
    token = ("FwoGZXIvYXdzEJr" + "Lm2Qv9Kx" * 200)[:1200]
    assert (
        redacted("AWS_SESSION_TOKEN=" + token + " aws s3 ls")
        == "AWS_SESSION_TOKEN=[REDACTED:secret] aws s3 ls"
    )
    assert redacted('{"SessionToken": "' + token + '"}') == '{"SessionToken": "[REDACTED:secret]"}'


# --- Text cut mid-value: at a line's end, before its closing quote ------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('DB_PASSWORD="' + "Rv8kq2" + "Zm\nAPP_ENV=prod", 'DB_PASSWORD="' + P + "\nAPP_ENV=prod"),
        (
            '{"out": "API_TOKEN=\\"' + "Tk4mz8" + 'Qw\\nDONE"}',
            '{"out": "API_TOKEN=\\"[REDACTED:secret]\\nDONE"}',
        ),
        (
            "client = OpenAI(api_key='" + "sk-" + "proj-Zq81" + "\nprint(client)",
            "client = OpenAI(api_key='[REDACTED:openai_key]\nprint(client)",
        ),
        (
            'headers = {"X-Token": "' + "gh" + "p_Vw3k9Lx2" + "…\n}",
            'headers = {"X-Token": "[REDACTED:github_token]…\n}',
        ),
        ("token " + "gl" + "pat-Xm4k9Q... (truncated)", "token [REDACTED:gitlab_token]... (truncated)"),
    ],
)
def test_a_value_or_token_cut_before_its_closing_quote_is_redacted(text: str, expected: str) -> None:
    assert redacted(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "pip install sk-" + "proj-Zq81\nnext line",  # no opening quote: a word at a line's end
        "masked as sk-" + "1234...abcd in the logs",  # an ellipsis with the key's end after it
        'print("Enter password: ")\nx = 1',
        'print("token: " + tok)\n',
    ],
)
def test_a_short_token_at_a_line_end_without_a_quote_is_left_alone(text: str) -> None:
    assert Redactor().redact(text) == (text, {})


# --- Quarantine excerpts: JSON escapes are decoded before redacting -----------------------
def test_a_token_spelled_with_a_unicode_escape_is_found_in_an_excerpt() -> None:
    token = "gh" + "p_" + ("Nq7Lw2Vx9Kp4" * 3)
    spelled = token[:4] + "\\u00" + format(ord(token[4]), "02x") + token[5:]
    line = '{"type":"tool_result","content":"token ' + spelled + " and then the line breaks"
    assert Redactor().redact(line) == (line, {})  # as the patterns see it, without decoding
    out, counts = Redactor().redact_excerpt(line)
    assert token[5:] not in out and counts == {"github_token": 1}
    assert out == '{"type":"tool_result","content":"token [REDACTED:github_token] and then the line breaks'


def test_an_escape_one_json_string_deeper_is_decoded_too() -> None:
    key = "sk-" + "proj-" + "Wm4Qz8Lk2Rv7" * 6
    spelled = key[:3] + "\\\\u0070" + key[4:]  # "p" inside a JSON string inside a JSON string
    line = '{"arguments":"{\\"cmd\\":\\"export OPENAI=' + spelled + '\\"}'
    out, counts = Redactor().redact_excerpt(line)
    assert key[8:] not in out and counts == {"openai_key": 1}


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        ("ghp_\\u0041bc", "ghp_Abc"),
        ("a\\/b", "a/b"),
        ("\\ud83d\\ude00", "\U0001f600"),
        ("x\\\\\\u0041", "x\\\\A"),  # an escaped backslash, then an escape
        ("\\\\\\\\u0041", "A"),  # two strings deep
        ("keep \\u0022 \\u005c \\u000a \\ud800 \\\\u0022", "keep \\u0022 \\u005c \\u000a \\ud800 \\\\u0022"),
        ('\\n\\t\\"', '\\n\\t\\"'),
        ("no escapes at all", "no escapes at all"),
    ],
)
def test_decode_json_escapes(raw: str, decoded: str) -> None:
    assert decode_json_escapes(raw) == decoded


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=8), st.text(max_size=30), max_size=4))
def test_decoding_keeps_json_valid_and_equal(document: dict[str, str]) -> None:
    text = json.dumps(document)  # ASCII, so every non-ASCII character is a \\u escape
    decoded = decode_json_escapes(text)
    assert json.loads(decoded) == document
    out, _ = Redactor().redact_excerpt(text)
    json.loads(out)


# --- Credential flags belong to the commands that take them ------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("curl -u svc:" + "Kp3zq8" + " https://x.example", "curl -u svc:" + P + " https://x.example"),
        ("curl -usvc:" + "Kp3zq8" + " https://x.example", "curl -usvc:" + P + " https://x.example"),
        ("/usr/bin/curl --user svc:" + "Kp3zq8" + " x", "/usr/bin/curl --user svc:" + P + " x"),
        ('{"cmd":"curl -s -u \\"svc:' + "Kp3zq8" + '\\" x"}', '{"cmd":"curl -s -u \\"svc:' + P + '\\" x"}'),
        ("mysql -uroot -p" + "assw0rd" + "X9 shop", "mysql -uroot -p" + P + " shop"),
        (
            "sudo mysqldump -p'" + "Gh2#" + "kq' shop > shop.sql",
            "sudo mysqldump -p'" + P + "' shop > shop.sql",
        ),
        (
            "docker exec db mysql -h 127.0.0.1 -p" + "Zw8" + "nx db",
            "docker exec db mysql -h 127.0.0.1 -p" + P + " db",
        ),
        ("podman login -u ci -p " + "Mb4" + "rt9 quay.io", "podman login -u ci -p " + P + " quay.io"),
        (
            "sshpass -p" + "Lq7" + "vz2 ssh -p 2222 ops@10.0.0.9",
            "sshpass -p" + P + " ssh -p 2222 ops@10.0.0.9",
        ),
        (
            "openssl rsa -in k.pem -passin pass:" + "Ty6" + "wp3 -out k2.pem",
            "openssl rsa -in k.pem -passin pass:" + P + " -out k2.pem",
        ),
        (
            "doctl -t " + "Rk5" + "mv8Lx compute droplet list",
            "doctl -t [REDACTED:secret] compute droplet list",
        ),
    ],
)
def test_a_credential_flag_of_a_command_that_takes_one(text: str, expected: str) -> None:
    assert redacted(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "date -u +%Y-%m-%dT%H:%M:%SZ",
        "date -u +%H:%M:%S && curl -s https://example.com",
        "curl -s https://example.com | tee -a log.txt && date -u +%H:%M",
        "echo $(date -u +%Y%m%d%H%M) > stamp",
        "docker run -u 1001:1001 -p 9090:9090 prom/prometheus",
        "docker run -p 5432:5432 -e POSTGRES_PASSWORD_FILE=/run/secrets/pg postgres:16",
        "git push -u origin HEAD:main",
        "mkdir -p build/out && cp -a src/. build/out",
        "mysql -u root -p -h db shop",
        "ssh -p 2222 -t ops@10.0.0.9 top",
        "tar -tvf a.tar && ls -t",
        "pg_dump -U app -p 5433 app",
        "curl -k -b cookies.txt https://localhost:8443/",
        "openssl enc -aes-256-cbc -pass env:BACKUP_PASS -in a -out a.enc",
        "unzip -P $ZIP_PASSWORD archive.zip",
        "keytool -list -keystore ks.jks -storepass:file pass.txt",
    ],
)
def test_the_same_flags_of_other_commands_are_left_alone(text: str) -> None:
    assert Redactor().redact(text) == (text, {})


# --- Numbers: phones, national ids, cards ------------------------------------------------
def luhn_valid(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def test_only_luhn_valid_card_numbers_of_an_issuer_go() -> None:
    rng = random.Random(7)
    for _ in range(200):
        digits = "4" + "".join(rng.choice("0123456789") for _ in range(15))
        out = redacted("pan " + digits + " end")
        assert (out == "pan [REDACTED:payment_card] end") == luhn_valid(digits), digits
    for prefix in ("1", "7", "8", "9"):  # no issuer starts so
        digits = prefix + "234567812345670"
        assert redacted("id " + digits) == "id " + digits


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tel: +1 (415) 555-" + "0134", "tel: [REDACTED:phone]"),
        ("whatsapp +44 7700 900" + "461.", "whatsapp [REDACTED:phone]."),
        ('{"phone": "+33 1 42 68 53 ' + '00"}', '{"phone": "[REDACTED:phone]"}'),
        ("call 1-800-555-" + "0199 now", "call [REDACTED:phone] now"),
        ("ssn=219-09-" + "9981", "ssn=[REDACTED:national_id]"),
        (
            "invalid 666-12-3456 and 912-34-5678 and 219-00-1234",
            "invalid 666-12-3456 and 912-34-5678 and 219-00-1234",
        ),
        # National formats of other countries: shapes of their own, or a label and a checksum.
        ("NI number: AB 12 34 " + "56 C", "NI number: [REDACTED:national_id]"),
        ('{"nino": "JG1038' + '27D"}', '{"nino": "[REDACTED:national_id]"}'),
        ("Steuer-ID: 860957" + "42719", "Steuer-ID: [REDACTED:national_id]"),
        (
            "Steuerliche IdNr. 39 141 " + "777 639 (Lohnzettel)",
            "Steuerliche IdNr. [REDACTED:national_id] (Lohnzettel)",
        ),
        ("tax id 270669" + "07434,", "tax id [REDACTED:national_id],"),
        ("portable : 06 12 34 " + "56 78", "portable : [REDACTED:phone]"),
        ("rappeler le 01.42.68." + "53.00 svp", "rappeler le [REDACTED:phone] svp"),
        ("fax 04-91-55-" + "12-34", "fax [REDACTED:phone]"),
        ('{"tel": "06123' + '45678"}', '{"tel": "[REDACTED:phone]"}'),
        ("text me on 07700 900" + "461 after 6", "text me on [REDACTED:phone] after 6"),
        ("mobile 07700 900 " + "461", "mobile [REDACTED:phone]"),
        ("office: 020 7946 " + "0958.", "office: [REDACTED:phone]."),
        ("Mobile: 077009" + "00461", "Mobile: [REDACTED:phone]"),
        ("BSN: 58683" + "4497", "BSN: [REDACTED:national_id]"),
        ("burgerservicenummer 1234.56." + "782", "burgerservicenummer [REDACTED:national_id]"),
        ("SIN 119 084 " + "218", "SIN [REDACTED:national_id]"),
        ("social insurance number: 273-406-" + "264", "social insurance number: [REDACTED:national_id]"),
    ],
)
def test_phone_numbers_and_national_ids(text: str, expected: str) -> None:
    assert redacted(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "QQ 12 34 56 C is HMRC's specimen number",  # Q never starts a prefix
        "GB123456A and ZZ 12 34 56 D and AD123456E",  # prefixes never allocated, suffix past D
        "ref XAB123456C and AB123456CX and ab123456c",  # glued to a word, lowercase
        "Steuer-ID: 86095742718",  # its check digit is wrong
        "order 86095742719 shipped",  # a valid check digit, but no label
        "Steuer-ID: 06095742716 and IdNr. 8609574271",  # a leading 0, ten digits
        "tel 0012345678 and phone 1612345678",  # no French number starts 00 or 1
        "id 0612345678 in the log",  # ten digits with no phone label
        "00000010  0a 06 12 34 56 78 9a bc  de f0 00 11 22 33 44 55",  # a hex dump
        "week 01 02 03 04 05 06 and 07 08",  # a run of groups
        "v1.06.12.34.56.78 and 1.06.12.34.56.78.9",  # a version
        "at 2026-11-22 06:12:34.567891 took 00:00:12.345",  # a timestamp and a duration
        "BSN 123456789 and sofi 111222334",  # not 11-proof
        "SIN 046 454 287",  # not Luhn-valid
        "y = sin(119084218)",  # the sine of a number
        "BSN: 586834497".replace("BSN", "PIN"),  # an 11-proof number under another label
        "020 7946 09581 and 07700 9004612",  # a digit too many
        "epoch 1764583200, pid 123456789, build 12 345 678 901",
    ],
)
def test_national_formats_are_left_alone_where_they_are_something_else(text: str) -> None:
    assert Redactor().redact(text) == (text, {})


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "4539",
                "1488",
                "0343",
                "6467",
                "219",
                "09",
                "9981",
                "415",
                "555",
                "0134",
                "(212)",
                " ",
                "-",
                "+1",
                "x",
                "\n",
                "é",
                "0",
                "12",
                "123456789",
                "4539148803436467",
                "2026-11-29",
                ".",
                ",",
            ]
        ),
        max_size=30,
    ).map("".join)
)
def test_the_digit_shape_scan_finds_what_the_regex_finds(text: str) -> None:
    # The numbers pass scans only next to digit shapes (redact._numbers_finditer); it must
    # find exactly the matches a scan of the whole text does, from any start.
    for pos in (0, 1, 5):
        expected = [m.span() for m in redact._NUMBERS.finditer(text, pos)]
        assert [m.span() for m in redact._numbers_finditer(text, pos)] == expected


NATIONAL_PIECES = ["06", "12", "34", "0612345678", "07700", "900461", "020", "7946", "AB", "QQ", "C"]
NATIONAL_PIECES += ["123456", "86095742719", "1234", "56", "782", "x", "é", "0", "9", " ", ".", "-", "\n"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(NATIONAL_PIECES),
        max_size=30,
    ).map("".join)
)
def test_the_national_shape_scans_find_what_the_regexes_find(text: str) -> None:
    # As the numbers pass, the national and labelled passes scan only next to their shapes.
    for pos in (0, 1, 5):
        expected = [m.span() for m in redact._NATIONAL.finditer(text, pos)]
        assert [m.span() for m in redact._national_finditer(text, pos)] == expected
        expected = [m.span() for m in redact._LABELLED_NUMBER.finditer(text, pos)]
        assert [m.span() for m in redact._labelled_finditer(text, pos)] == expected


def test_a_card_number_that_is_a_json_number_becomes_a_json_string() -> None:
    card = 4716282955200127  # Luhn-valid, a Visa range
    document = canonical_json({"pan": card, "ids": [1, card], "note": f"card {card}, ok"})
    out, counts = Redactor().redact(document)
    assert json.loads(out) == {
        "ids": [1, "[REDACTED:payment_card]"],
        "note": "card [REDACTED:payment_card], ok",
        "pan": "[REDACTED:payment_card]",
    }
    assert counts == {"payment_card": 3}
    assert Redactor().redact(out) == (out, {})


def test_a_gcp_key_id_in_yaml_goes_too() -> None:
    key_id = "0a9b8c7d6e5f" + "4321" * 7
    assert redacted("private_key_id: " + key_id) == "private_key_id: [REDACTED:gcp_key_id]"
    assert redacted("private_key_id: null") == "private_key_id: null"


# --- Login names ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cd /home/" + "anouk" + "/src && make", "cd /home/<user>/src && make"),
        ('{"path":"/Users/' + "kemal" + '/Library/Caches"}', '{"path":"/Users/<user>/Library/Caches"}'),
        ("open file:///home/" + "marit" + "/notes.txt", "open file:///home/<user>/notes.txt"),
        ("PYTHONPATH=/opt/lib:/home/" + "lars" + "/lib", "PYTHONPATH=/opt/lib:/home/<user>/lib"),
        ("cc -L/home/" + "lars" + "/lib -lfoo", "cc -L/home/<user>/lib -lfoo"),
        ("see ../home/" + "lars" + "/x", "see ../home/<user>/x"),
        ("http://intranet/~" + "sven" + "/cv.html", "http://intranet/~<user>/cv.html"),
        (
            "uid=1000(" + "amara" + ") gid=1000(amara) groups=1000(amara),4(adm)",
            "uid=1000(<user>) gid=1000(<user>) groups=1000(<user>),4(adm)",
        ),
        ("$ whoami\r\n" + "amara" + "\r\n", "$ whoami\r\n<user>\r\n"),
    ],
)
def test_login_names_in_paths_and_id_output(text: str, expected: str) -> None:
    assert redacted(text) == expected


def test_login_names_are_kept_when_home_paths_are_off() -> None:
    text = "ls ~" + "amara" + "/x; uid=1000(amara) gid=1000(amara)\n$ whoami\namara"
    assert Redactor(home_paths=False).redact(text) == (text, {})


def test_new_kinds_inside_canonical_json_two_levels_deep() -> None:
    line = "Cookie: sid=" + "Pq8wz2Kd" + "4Lm7\n$ id\nuid=1000(" + "amara" + ")"
    document = canonical_json({"v": canonical_json({"cmd": line})})
    out, counts = Redactor().redact(document)
    assert json.loads(json.loads(out)["v"]) == {
        "cmd": "Cookie: sid=[REDACTED:session_cookie]\n$ id\nuid=1000(<user>)"
    }
    assert counts == {"session_cookie": 1, "home_user": 1}
