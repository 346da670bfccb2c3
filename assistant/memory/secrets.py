"""Secrets are never stored as memories: API keys, tokens, passwords, keys, card and ID numbers.

Realistic formats only, with checksums where the format has one (Luhn for cards, ISO 7064 for
Chinese resident IDs, mod-97 for IBANs), so ordinary numbers in notes are not refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SecretFinding:
    kind: str  # e.g. "API key", "password"

    def message(self) -> str:
        return f"it looks like it contains a {self.kind}; secrets are never stored in memory"


_TOKEN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")),
    ("API key", re.compile(r"\bsk-(?:proj-|ant-|live-)?[A-Za-z0-9_\-]{20,}")),
    ("API key", re.compile(r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("JWT", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
)

_PASSWORD = re.compile(
    r"(?ix)\b(?:pass\s*word|passwd|pwd|passcode|passphrase|pin(?:\s*code)?|"
    r"api[\s_-]*key|secret(?:\s*key)?|access[\s_-]*token|auth[\s_-]*token|token)"
    r"\s*(?:is|was|=|:|：|->)\s*[\"'`]?\S{4,}"
)
_PASSWORD_ZH = re.compile(r"(?:密码|口令|密钥|验证码|PIN码)\s*(?:是|为|：|:|=)\s*\S{3,}")

_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_SSN = re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")
_CN_ID = re.compile(
    r"(?<!\d)[1-9]\d{5}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![\dXx])"
)
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _cn_id_ok(number: str) -> bool:
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    total = sum(int(d) * w for d, w in zip(number[:17], weights, strict=True))
    return "10X98765432"[total % 11] == number[17].upper()


def _iban_ok(candidate: str) -> bool:
    compact = candidate.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    digits = "".join(str(int(ch, 36)) for ch in moved)
    return int(digits) % 97 == 1


def find_secret(text: str) -> SecretFinding | None:
    """The first kind of secret found in `text`, or None."""
    for kind, pattern in _TOKEN_PATTERNS:
        if pattern.search(text):
            return SecretFinding(kind)
    if _PASSWORD.search(text) or _PASSWORD_ZH.search(text):
        return SecretFinding("password or secret token")
    for match in _CN_ID.finditer(text):
        if _cn_id_ok(match.group()):
            return SecretFinding("national ID number")
    if _SSN.search(text):
        return SecretFinding("national ID number")
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and _luhn_ok(digits) and len(set(digits)) > 1:
            return SecretFinding("payment card number")
    for match in _IBAN.finditer(text):
        if _iban_ok(match.group()):
            return SecretFinding("bank account number (IBAN)")
    return None
