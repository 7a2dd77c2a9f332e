"""Text that came from outside, made safe to show: shortened, secrets redacted, control
characters escaped.

The redaction rule (docs/errors.md): a variable whose *name* contains TOKEN, SECRET, PASSW,
CRED, KEY, AUTH, COOKIE or SESSION (or is Open MPI's transport key) is replaced whole; in
any other text, the value of a ``key=value`` or ``key: value`` pair whose key contains one of
those words, the credentials of a URL (``https://user:pass@host``) and known token shapes
(Hugging Face ``hf_``, GitHub ``ghp_``/``github_pat_``, AWS ``AKIA``, Slack ``xox?-``,
OpenAI-style ``sk-``, 40-hex-digit W&B keys, Open MPI job keys) become ``<redacted>``.
"""

from __future__ import annotations

import re

__all__ = [
    "REDACTED",
    "escape",
    "redact_text",
    "redact_value",
    "secret_name",
    "shorten",
    "unicode_text",
]

REDACTED = "<redacted>"
_WORDS = re.compile(r"TOKEN|SECRET|PASSW|CRED|KEY|AUTH|COOKIE|SESSION", re.IGNORECASE)
_TRANSPORTS = "PRECONDITION_TRANSPORTS"  # Open MPI's job key
# No trailing boundary: a greedy match that needs none cannot backtrack (linear time).
_TOKENS = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{30,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{20,}"
    r"|(?=[0-9]{0,39}[a-f])[0-9a-f]{40}|[0-9a-f]{16}-[0-9a-f]{16})"
)
_VALUE_END = frozenset(" \t\n,;&'\"")


def secret_name(name: str) -> bool:
    """Whether variable ``name`` holds a secret by its name alone."""
    return _WORDS.search(name) is not None or _TRANSPORTS in name.upper()


def _key_char(char: str) -> bool:
    return char.isalnum() or char in "_.-"


def _pairs(text: str) -> str:
    """Redact the value of each ``key=value`` / ``key: value`` whose key has a secret word.

    Scans forward only, each character once (a regular expression with the word inside a
    key pattern backtracks quadratically on long word-character runs)."""
    out, copied, scanned = [], 0, 0
    for word in _WORDS.finditer(text):
        if word.start() < scanned:
            continue
        end = word.end()
        while end < len(text) and _key_char(text[end]):
            end += 1
        scanned = end
        while end < len(text) and text[end] in " \t":
            end += 1
        if end == len(text) or text[end] not in "=:":
            continue
        start = end + 1
        while start < len(text) and text[start] in " \t":
            start += 1
        if start < len(text) and text[start] in "'\"":  # a quoted value: up to its quote
            quote, start = text[start], start + 1
            stop = text.find(quote, start)
            stop = len(text) if stop < 0 else stop
        else:
            stop = start
            while stop < len(text) and text[stop] not in _VALUE_END:
                stop += 1
        if stop > start:
            out += [text[copied:start], REDACTED]
            copied = scanned = stop
    return "".join([*out, text[copied:]])


def _url_credentials(text: str) -> str:
    """``scheme://user:pass@host`` -> ``scheme://<redacted>@host``, scanning forward once."""
    out, copied = [], 0
    for scheme in re.finditer("://", text):
        start = stop = scheme.end()
        if start < copied:
            continue
        while stop < len(text) and text[stop] not in "/@ \t\n":
            stop += 1
        if stop < len(text) and text[stop] == "@" and stop > start:
            out += [text[copied:start], REDACTED]
            copied = stop
    return "".join([*out, text[copied:]])


def redact_text(text: str) -> str:
    """``text`` with every secret-looking value replaced, in linear time."""
    return _TOKENS.sub(REDACTED, _url_credentials(_pairs(text)))


def redact_value(name: str, value: str) -> str:
    """The value of variable ``name`` as it may be shown."""
    return REDACTED if secret_name(name) else redact_text(value)


def escape(text: str) -> str:
    """``text`` with control and format characters (escape sequences, bidi overrides)
    written as ``\\x1b``/``\\u202e``, so that printing it cannot drive a terminal.
    Newlines are kept: callers escape values, not their own layout."""
    if text.isprintable():
        return text
    return "".join(
        char
        if char == "\n" or char.isprintable()
        else (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")
        for char in text
    )


def unicode_text(text: str) -> str:
    """``text`` as valid Unicode: a byte that was not UTF-8 (which Python keeps in
    ``os.environ`` as a lone surrogate) is written ``\\udcff``, as :func:`escape` shows it,
    so that no encoder (JSON, a terminal) fails on it."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def shorten(value: str, limit: int = 60) -> str:
    """``value`` cut to ``limit`` characters, saying how long it was: for error messages."""
    if len(value) <= limit:
        return value
    return f"{value[: limit - 20]}…({len(value)} characters)"
