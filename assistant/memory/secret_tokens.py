"""Secrets recognisable by their shape: provider tokens, private keys, credentials in URLs,
secret-named assignments and long random strings. `find(text)` returns the kind or None."""

from __future__ import annotations

import math
import re
from collections import Counter

_PREFIXED: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern)) for kind, pattern in (
        ("private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
        ("private key", r"PuTTY-User-Key-File-\d"),
        ("private key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{20,}"),
        ("API key", r"\bsk-(?:proj-|ant-(?:api\d\d-)?|live-|or-v1-|svcacct-)?[A-Za-z0-9_\-]{20,}"),
        ("API key", r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"),
        ("GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
        ("GitLab token", r"\bgl(?:pat|dt|ptt|rt|cbt|soat|ft)-[A-Za-z0-9_\-]{20,}"),
        ("AWS access key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
        ("Slack token", r"\bxox[abposre]-[A-Za-z0-9\-]{10,}"),
        ("Slack webhook", r"hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+"),
        ("Google API key", r"\bAIza[0-9A-Za-z_\-]{35}"),
        ("Google OAuth token", r"\bya29\.[0-9A-Za-z_\-]{20,}"),
        ("Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}"),
        ("npm token", r"\bnpm_[A-Za-z0-9]{36}\b"),
        ("PyPI token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}"),
        ("SendGrid key", r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
        ("Shopify token", r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
        ("DigitalOcean token", r"\bdo[por]_v1_[a-f0-9]{64}"),
        ("Telegram bot token", r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b"),
        ("Twilio key", r"\bSK[0-9a-f]{32}\b"),
        ("Mailgun key", r"\bkey-[0-9a-f]{32}\b"),
        ("Azure key", r"(?i)\bAccountKey=[A-Za-z0-9+/]{40,}"),
        ("JWT", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
        ("bearer token", r"\b(?:Bearer|Basic)\s+[A-Za-z0-9._~+/\-]{16,}=*"),
    )
)

# scheme://user:password@host — the password part must be non-empty.
_URL_CREDENTIALS = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/:@]+:[^\s/@]+@[^\s/@]+")

# NAME = value, NAME: value, export NAME=value, "name": "value" (JSON, YAML, .env, shell).
_ASSIGNMENT = re.compile(
    r"""(?<![\w$])["']?([A-Za-z_][A-Za-z0-9_.\-]*)["']?\s*(?::=|=>|=|:)\s*(["']?)([^\s"',;]+)"""
)
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# Name parts that make the value a password (any value) or a secret token (a random one).
_PASSWORD_PARTS = ("password", "passwd", "passphrase", "passcode", "passwort", "kennwort",
                   "contrasena", "motdepasse")
_PASSWORD_WORDS = frozenset({"pwd", "pw"})
_WEAK_WORDS = frozenset({"pass"})  # "bus pass: valid" is not a credential; "pass: x9!" is
_PIN_WORDS = frozenset({"pin", "pincode"})
_SECRET_WORDS = frozenset({"secret", "token", "key", "apikey", "auth", "credential",
                           "credentials", "creds", "cookie", "privatekey", "accesskey",
                           "secretkey", "bearer"})
_SECRET_SUFFIXES = ("token", "secret", "apikey", "accesskey", "secretkey", "privatekey")
# password_manager = KeePassXC, token_budget = 8192: the name is about the secret, not it.
_ABOUT_WORDS = frozenset({"manager", "policy", "hint", "reset", "length", "strength", "rules",
                          "generator", "vault", "app", "tool", "budget", "limit", "count",
                          "expiry", "ttl", "size", "file", "path", "url", "type", "name"})
# Not a value but a reference to one: $VAR, <your key>, ***, getpass(), os.environ[...].
_PLACEHOLDER = re.compile(r"^(?:[$%<{]|\*+$|x+$|\.+$|…)|\(|^(?:os|process|env|config|settings|"
                          r"self|secrets)\.|^(?:none|null|nil|true|false|"
                          r"undefined|redacted|hidden|example|required|optional)$",
                          re.IGNORECASE)

# A long run of token characters with no space: a random key has all three character classes
# and high entropy; words, paths and hex digests (commit ids, checksums) do not qualify.
_LONG_TOKEN = re.compile(r"(?<![\w/.+\-=])[A-Za-z0-9+/_\-]{32,}={0,2}(?![\w/])")
_MIN_ENTROPY = 4.0  # bits per character; English words ~3, random base64 ~5


def _entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _name_strength(name: str) -> str | None:
    """How a name qualifies its value: "password", "pin", "weak", "token" or None."""
    words = {w.lower() for w in _NAME_WORDS.findall(name)}
    words.add(re.sub(r"[^a-z]", "", name.lower()))
    if words & _ABOUT_WORDS:
        return None
    if words & _PASSWORD_WORDS or any(p in w for w in words for p in _PASSWORD_PARTS):
        return "password"
    if words & _PIN_WORDS:
        return "pin"
    if words & _SECRET_WORDS or any(w.endswith(_SECRET_SUFFIXES) for w in words):
        return "token"
    if words & _WEAK_WORDS:
        return "weak"
    return None


def looks_like_value(value: str) -> bool:
    """A word that reads like a password rather than a word: a digit, a symbol inside, or a
    capital after the first letter (hunter2, pa$$word, tr0ub4dor, xKcd!)."""
    core = value.strip(".,;:!?\"'`)(")
    return len(core) >= 3 and (
        any(c.isdigit() for c in core)
        or any(not c.isalnum() and c not in "-'’" for c in core)
        or (any(c.isupper() for c in core[1:]) and any(c.islower() for c in core))
    )


def is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.search(value))


def secret_value(value: str, strength: str) -> bool:
    """Whether `value`, given under a name of this strength, is a secret."""
    if is_placeholder(value):
        return False
    if strength == "password":
        return len(value) >= 3
    if strength == "pin":
        return sum(c.isdigit() for c in value) >= 4
    if strength == "weak":
        return looks_like_value(value)
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return (len(value) >= 10 and has_digit and has_alpha) or (
        len(value) >= 20 and _entropy(value) >= 3.5
    )


_ASSIGNED_KIND = {"password": "password", "weak": "password", "pin": "PIN or access code",
                  "token": "secret token"}


def _assignment(text: str) -> str | None:
    for match in _ASSIGNMENT.finditer(text):
        name, value = match.group(1), match.group(3)
        if "://" in text[match.start(3) - 3 : match.start(3) + 3]:
            continue  # a URL (scheme://), judged by _URL_CREDENTIALS
        strength = _name_strength(name)
        if strength is not None and secret_value(value, strength):
            return _ASSIGNED_KIND[strength]
    return None


# user / password, user:password after a login word: "admin / P@ssw0rd123", "jdoe / Winter2024!".
_PAIR = re.compile(
    r"(?<![\w/.@-])(?P<user>[A-Za-z][\w.+-]{1,40}(?:@[\w-]+(?:\.[\w-]+)+)?)"
    r"(?P<sep>\s+/\s+|\s*/\s*(?=\S*[^\w\s]))(?P<v>\S{6,64}?)[.,;)]?(?=\s|$)"
)


def _password_shape(value: str) -> bool:
    """A password as people make them: letters and digits, and a symbol or capital too."""
    letters = any(c.isalpha() for c in value)
    digits = any(c.isdigit() for c in value)
    extra = any(not c.isalnum() for c in value) or any(c.isupper() for c in value)
    return letters and digits and extra and "/" not in value and not value.isdigit()


def _user_password_pair(text: str) -> bool:
    return any(_password_shape(m.group("v").strip(".,;)")) for m in _PAIR.finditer(text))


def _random_token(text: str) -> bool:
    for match in _LONG_TOKEN.finditer(text):
        value = match.group().rstrip("=")
        classes = sum((any(c.islower() for c in value), any(c.isupper() for c in value),
                       any(c.isdigit() for c in value)))
        if classes == 3 and _entropy(value) >= _MIN_ENTROPY:
            return True
    return False


def find(text: str) -> str | None:
    for kind, pattern in _PREFIXED:
        if pattern.search(text):
            return kind
    if _URL_CREDENTIALS.search(text):
        return "password in a URL"
    assigned = _assignment(text)
    if assigned is not None:
        return assigned
    if _random_token(text):
        return "secret token"
    if _user_password_pair(text):
        return "user name and password"
    return None
