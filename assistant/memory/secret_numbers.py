"""Payment cards, national ids and bank accounts.

Bare numbers only count in a realistic format with their checksum where the format has one
(Luhn for cards, ISO 7064 for Chinese resident ids, mod 97 for IBANs and French NIRs, mod 23 for
Spanish DNI/NIE, Luhn for Canadian SINs, Verhoeff for Indian Aadhaar numbers), so ordinary
numbers in notes are not refused. A number *named* as an id ("my SSN is 536221234", "passport
number X1234567") counts whatever its format.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_ISBN = re.compile(r"isbn(?:-1[03])?:?\s*$", re.IGNORECASE)
_SSN = re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")
_CN_ID = re.compile(
    r"(?<!\d)[1-9]\d{5}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![\dXx])"
)
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")
_UK_NINO = re.compile(
    r"\b(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b"
)
_FR_NIR = re.compile(
    r"(?<!\d)([12]) ?(\d{2}) ?(0[1-9]|1[0-2]|[2-9]\d) ?(\d{2}|2[AB]) ?(\d{3}) ?(\d{3}) ?(\d{2})"
    r"(?!\d)"
)
_ES_DNI = re.compile(r"\b([XYZ]?)-?(\d{7,8})-?([A-Z])\b")
_IT_CF = re.compile(r"\b[A-Z]{6}\d{2}[A-EHLMPRST]\d{2}[A-Z]\d{3}[A-Z]\b")
# Canadian SIN as printed on the card (3-3-3, Luhn; 0 and 8 are not issued first digits) and
# Indian Aadhaar (4-4-4, Verhoeff, never starting with 0 or 1): bare, only in these formats.
_CA_SIN = re.compile(r"(?<![\d-])[1-79]\d{2}([ -])\d{3}\1\d{3}(?![\d-])")
_IN_AADHAAR = re.compile(r"(?<![\d-])[2-9]\d{3}([ -]?)\d{4}\1\d{4}(?![\d-])")

# An id number named as such, in the languages the phrases module covers.
_NAMED_ID = re.compile(
    r"(?:(?<!\w)(?:social\s+(?:security|insurance)(?:\s+(?:number|no\.?|#))?|ssn|"
    r"sin\s+(?:number|no\.?|#)|(?-i:SIN)|aadhaa?r(?:\s+(?:number|no\.?|#|id))?|uidai|"
    r"national\s+(?:id|identity|insurance)(?:\s+(?:number|no\.?|#|card\s+number))?|"
    r"ni\s+number|passport\s+(?:number|no\.?|#)|id\s+(?:card\s+)?(?:number|no\.?|#)|"
    r"tax\s+(?:id|identification)(?:\s+(?:number|no\.?|#))?|driver['’]?s?\s+licen[cs]e"
    r"(?:\s+(?:number|no\.?|#))?|(?:bank\s+)?account\s+(?:number|no\.?|#)|routing\s+number|"
    r"sort\s+code|"
    r"numéro\s+de\s+(?:sécurité\s+sociale|sécu|passeport|carte\s+d['’]identité|compte)|"
    r"n°\s*de\s+sécu|numéro\s+fiscal|sozialversicherungsnummer|steuer-?id|"
    r"steuer(?:identifikations)?nummer|personalausweisnummer|ausweisnummer|reisepassnummer|"
    r"kontonummer|n[uú]mero\s+de\s+(?:la\s+seguridad\s+social|pasaporte|cuenta|dni)|"
    r"dni|nif|nss|curp)|"
    # Chinese names follow other characters without a space (我的身份证号).
    r"身份证(?:号码?)?|护照(?:号码?)?|社保(?:号码?)?|银行卡号)"
    r"(?:\s+(?:is|was|est|ist|lautet|es|for|de|du)\b)?\s*(?:[:=：是为]|\s)\s*"
    r"(?P<v>[A-Za-z0-9][A-Za-z0-9 .\-/]{4,24}[A-Za-z0-9])",
    re.IGNORECASE,
)


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


_VERHOEFF_D = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 0, 6, 7, 8, 9, 5), (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
    (3, 4, 0, 1, 2, 8, 9, 5, 6, 7), (4, 0, 1, 2, 3, 9, 5, 6, 7, 8), (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2), (7, 6, 5, 9, 8, 2, 1, 0, 4, 3), (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
    (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)
_VERHOEFF_P = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 5, 7, 6, 2, 8, 3, 0, 9, 4), (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
    (8, 9, 1, 6, 0, 4, 3, 5, 2, 7), (9, 4, 5, 3, 1, 2, 6, 8, 7, 0), (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5), (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)


def verhoeff_ok(digits: str) -> bool:
    check = 0
    for i, ch in enumerate(reversed(digits)):
        check = _VERHOEFF_D[check][_VERHOEFF_P[i % 8][int(ch)]]
    return check == 0


def _digits(match: re.Match[str]) -> str:
    return re.sub(r"\D", "", match.group())


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


def _fr_nir_ok(match: re.Match[str]) -> bool:
    parts = list(match.groups())
    department = parts[3].upper()
    parts[3] = {"2A": "19", "2B": "18"}.get(department, department)
    number = int("".join(parts[:6]))
    return 97 - number % 97 == int(parts[6])


def _es_dni_ok(match: re.Match[str]) -> bool:
    prefix, digits, letter = match.groups()
    if prefix:
        if len(digits) != 7:
            return False
        digits = "XYZ".index(prefix).__str__() + digits
    elif len(digits) != 8:
        return False
    return "TRWAGMYFPDXBNJZSQVHLCKE"[int(digits) % 23] == letter


def _card(text: str) -> bool:
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if _ISBN.search(text[max(0, match.start() - 12) : match.start()]):
            continue
        if 13 <= len(digits) <= 19 and luhn_ok(digits) and len(set(digits)) > 1:
            return True
    return False


def _named_id(text: str) -> bool:
    for match in _NAMED_ID.finditer(text):
        value = match.group("v")
        if sum(c.isdigit() for c in value) >= 5:
            return True
    return False


def _checked(pattern: re.Pattern[str], ok: Callable[[re.Match[str]], bool], text: str) -> bool:
    return any(ok(m) for m in pattern.finditer(text))


def find(text: str) -> str | None:
    if _card(text):
        return "payment card number"
    if (
        _checked(_CN_ID, lambda m: _cn_id_ok(m.group()), text)
        or _SSN.search(text)
        or _UK_NINO.search(text)
        or _checked(_FR_NIR, _fr_nir_ok, text)
        or _checked(_ES_DNI, _es_dni_ok, text)
        or _IT_CF.search(text)
        or _checked(_CA_SIN, lambda m: luhn_ok(_digits(m)), text)
        or _checked(_IN_AADHAAR, lambda m: verhoeff_ok(_digits(m)), text)
        or _named_id(text)
    ):
        return "national ID or account number"
    if _checked(_IBAN, lambda m: _iban_ok(m.group()), text):
        return "bank account number (IBAN)"
    return None
