"""Credentials said in words, in English, French, German, Spanish, Chinese (and a few more).

Each language gives its credential words and how a value follows them:

    my   password   for the bank   now   is      hunter2
         credential qualifier      filler connector value

A credential word alone never fires ("my favourite password manager is KeePassXC", "I forgot
my password"): a value must follow. After a connector ("is", "est", "ist", "es", "是") any value
counts unless it describes the secret instead of giving it ("is too short", "is stored in
Bitwarden", "is 12 characters long"); without one, the value must look like a password (a digit,
a symbol, mixed case). Weak words ("pass", "code", "clave") always need such a value; PIN-like
words need four digits or more. The reverse order is caught too ("hunter2 is my password").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from assistant.memory.secret_tokens import is_placeholder, looks_like_value

_KIND = {
    "strong": "password",
    "weak": "password",
    "pin": "PIN or access code",
    "cvv": "card security code",
}


@dataclass(frozen=True, slots=True)
class Phrasing:
    """How one language names a credential and gives its value (see the module docstring)."""

    credential: re.Pattern[str]  # groups: strong | pin | cvv | weak
    qualifier: re.Pattern[str]  # "for the bank", matched right after the credential word
    filler: re.Pattern[str]  # "now", "I use everywhere"
    connector: re.Pattern[str]  # "is", "=", ":"
    descriptive: frozenset[str]  # first words of a value that describe rather than give it
    units: frozenset[str]  # "12 characters": a length, not a password
    value: re.Pattern[str] = re.compile(r"\s*[\"'“‘«「]?(?P<v>[^\s\"'”’»」]+)")
    not_before: re.Pattern[str] | None = None  # "gestionnaire de " + mot de passe
    not_after: re.Pattern[str] | None = None  # password + " manager"
    login: re.Pattern[str] | None = None  # a login named earlier makes "pass" a password
    reverse: re.Pattern[str] | None = None  # "hunter2 is my password"


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# --- English ----------------------------------------------------------------------------------

_EN_CREDENTIAL = (
    r"(?:(?P<strong>pass\s?words?|passwd|pwd|pw|p/w|pword|pass\s?phrases?|pass\s?codes?|"
    r"secret\s+(?:code|word|key)|master\s+key|wi-?fi\s+key|"
    r"(?:unlock|access|vault|login|log-?in|sign-?in|logon|admin|root)\s+"
    r"(?:secrets?|pass\s?phrases?|keys?|words?)|security\s+(?:question\s+)?answers?|"
    r"recovery\s+keys?|api\s+keys?|access\s+tokens?)|"
    r"(?P<pin>pin(?:\s*(?:code|number|no\.?|#))?|(?:unlock|phone|screen|sim)\s+(?:code|pin)|"
    r"(?:door|alarm|gate|garage|safe|lock|keypad|entry|access|building|locker)\s+"
    r"(?:code|combination|combo)|combination)|"
    r"(?P<cvv>cvv2?|cvc2?|csc|card\s+security\s+code)|"
    r"(?P<weak>pass|creds?|credentials|keys?))"
)
_EN_QUALIFIER = (
    r"\s+(?:for|to|of|on|at|in|into|with|from)\s+(?:(?:my|the|our|his|her|your|their|a|an|"
    r"this|that|its)\s+)?[\w.@'’-]+(?:\s+(?:account|app|site|website|server|router|laptop|"
    r"computer|pc|phone|box|vault|network|wifi|wi-fi|database|db|card|door|portal|email|"
    r"mail|bank|machine|lock|padlock|safe|locker|suitcase|gate|service|system|tool|platform|"
    r"api|drive|storage|wallet|exchange))?"
)
_EN_DESCRIPTIVE = _words(
    "a an the my your his her our their its this that these those too very so quite really "
    "pretty not never always still now also just only in on at under inside into with without "
    "written stored saved kept managed generated hidden secret safe secure insecure strong weak "
    "long short easy hard simple complex complicated different same unique random expired "
    "changed reset required needed set wrong incorrect invalid valid case something "
    "nothing what which where how why one two three four five six seven eight nine ten based "
    "similar like about more less longer shorter stronger weaker due used shared known unknown "
    "forgotten lost compromised leaked encrypted hashed protected empty blank fine ok okay good "
    "bad great terrible awful new old there here somewhere everywhere available mandatory "
    "optional sent attached given printed listed noted same-as and or but if when because "
    "whatever"
)
_EN_UNITS = _words(
    "characters character chars letters letter digits digit symbols words word days day weeks "
    "months years long"
)
ENGLISH = Phrasing(
    credential=_compile(rf"\b{_EN_CREDENTIAL}\b"),
    qualifier=_compile(_EN_QUALIFIER),
    filler=_compile(
        r",?\s*(?:in\s+case\s+i\s+forget|just\s+in\s+case|for\s+the\s+record|for\s+reference)|"
        r"\s+(?:now|currently|still|today|these\s+days|i\s+use|we\s+use|i\s+used|everywhere|"
        r"always|usually|again|actually|really|then|also|too|here|there|that\s+i\s+use)"
    ),
    connector=_compile(
        r"\s*(?:(?:(?:is|was|are|were|will\s+be|has\s+been|became|becomes|reads|equals)\b|'s\b|’s\b)"
        r"(?:\s*:)?(?:\s+(?:now|still|just|simply|set\s+to|changed\s+to))?|"
        r"(?:changed|set|updated|reset)\s+to\b|[:=：]|->|=>)"
    ),
    descriptive=_EN_DESCRIPTIVE,
    units=_EN_UNITS,
    not_after=_compile(
        r"\s*-?\s*(?:managers?|policy|policies|hints?|resets?|fields?|prompts?|strength|"
        r"requirements?|rules?|generators?|vaults?|less|protected|changes?|recovery|expiry)\b"
    ),
    # Named first, these make a weak word a password: "login: bob pass: …", "Wi-Fi …, key …".
    login=_compile(r"\b(?:login|log-in|user\s?(?:name|id)?|account|e-?mail|id|wi-?fi|"
                   r"network|ssid|router|hotspot)\b"),
    reverse=_compile(
        rf"(?:^|\s)[\"'“‘]?(?P<v>[^\s\"'”’]+?)[\"'”’]?\s+(?:is|was)\s+(?:(?:my|the|our|his|her|"
        rf"your|their)\s+)?(?:[\w'’-]+\s+){{0,2}}?{_EN_CREDENTIAL}(?:{_EN_QUALIFIER})?"
        r"\s*(?:$|[.!,;)?])"
    ),
)

# --- French -----------------------------------------------------------------------------------

FRENCH = Phrasing(
    credential=_compile(
        r"(?<!\w)(?:(?P<strong>mots?\s+de\s+passe|mdp|phrases?\s+de\s+passe|codes?\s+secrets?|"
        r"codes?\s+confidentiels?)|"
        r"(?P<pin>code\s+pin|code\s+(?:de\s+la\s+porte|d['’]accès|d['’]entrée|de\s+l['’]alarme|"
        r"du\s+portail|du\s+coffre|de\s+(?:la\s+)?carte(?:\s+bleue|\s+bancaire)?)|digicode)|"
        r"(?P<cvv>cryptogramme(?:\s+visuel)?)|"
        r"(?P<weak>codes?|identifiants?))(?!\w)"
    ),
    qualifier=_compile(
        r"\s+(?:du|de\s+la|de\s+l['’]|des|de|d['’]|pour|sur|à|au)\s*(?:(?:mon|ma|mes|le|la|les|"
        r"l['’]|notre|son|sa|ses|ton|ta)\s*)?[\w.@'’-]+"
    ),
    filler=_compile(r"\s+(?:actuel|actuellement|maintenant|toujours|que\s+j['’]utilise)"),
    connector=_compile(
        r"\s*(?:(?:est|était|sera|c['’]est|reste|devient|vaut)\b(?:\s*:)?"
        r"(?:\s+(?:maintenant|toujours|désormais))?|[:=：]|->)"
    ),
    descriptive=_words(
        "le la les l un une mon ma mes ton ta son sa notre votre trop très assez pas jamais "
        "toujours encore dans sur sous noté notée écrit écrite stocké stockée enregistré "
        "enregistrée sauvegardé sauvegardée gardé gardée caché cachée fort forte faible long "
        "longue court courte simple compliqué compliquée différent différente même unique "
        "expiré expirée oublié oubliée changé changée perdu perdue sécurisé sécurisée secret "
        "secrète correct correcte incorrect incorrecte faux fausse bon bonne mauvais mauvaise "
        "vide chiffré chiffrée basé basée composé composée géré gérée en de du des à au "
        "quelque"
    ),
    units=_words("caractères caractère chiffres chiffre lettres jours mois ans"),
    not_before=_compile(
        r"(?:gestionnaire|générateur|coffre-fort|logiciel|gestion)\s+(?:de|d['’]|des)\s*$"
    ),
    login=_compile(r"\b(?:identifiant|utilisateur|login|compte|e-?mail|courriel)\b"),
)

# --- German -----------------------------------------------------------------------------------

GERMAN = Phrasing(
    credential=_compile(
        r"(?<![\w])(?:(?P<strong>[\w-]*(?:passwort|kennwort|passwörter|kennwörter)|passphrase|"
        r"zugangsdaten|geheimzahl|geheimcode|zugangscode)|"
        r"(?P<pin>(?:\w+-)?pin(?:-?code|-?nummer)?|(?:tür|alarm|tor|tresor|safe|garagen|"
        r"schloss)-?code|zahlenkombination)|"
        r"(?P<cvv>kartenprüfnummer|prüfziffer)|"
        r"(?P<weak>code))(?![\w])"
    ),
    qualifier=_compile(
        r"\s+(?:für|von|vom|zum|zur|bei|beim|des|der|am|im|fürs|fuer)\s+(?:(?:die|das|den|dem|"
        r"der|mein|meine|meinen|meinem|meiner|meines|unser|unsere|unseren|unserem|sein|seine|"
        r"ihr|ihre)\s+)?[\w.@-]+"
    ),
    filler=_compile(r"\s+(?:jetzt|aktuell|immer\s+noch|noch|derzeit)"),
    connector=_compile(
        r"\s*(?:(?:ist|lautet|war|heißt|heisst|wird|bleibt)\b(?:\s*:)?"
        r"(?:\s+(?:jetzt|nun|immer\s+noch|noch))?|[:=：]|->)"
    ),
    descriptive=_words(
        "der die das den dem des ein eine einen mein meine dein deine sein seine ihr ihre unser "
        "unsere zu sehr ziemlich nicht nie immer noch im in auf unter sicher unsicher stark "
        "schwach lang kurz einfach kompliziert abgelaufen vergessen gespeichert notiert "
        "geändert verloren geheim falsch richtig gleich derselbe dasselbe dieselbe anders leer "
        "verschlüsselt jetzt überall irgendwo geschrieben aufgeschrieben hinterlegt"
    ),
    units=_words("zeichen ziffern stellen buchstaben tage monate jahre stellig"),
    not_after=_compile(r"\s*-?\s*(?:manager|verwaltung|generator|safe|tresor|richtlinie)"),
    login=_compile(r"\b(?:benutzer(?:name)?|login|konto|e-?mail|nutzer(?:name)?|kennung)\b"),
)

# --- Spanish ----------------------------------------------------------------------------------

SPANISH = Phrasing(
    credential=_compile(
        r"(?<!\w)(?:(?P<strong>contraseñas?|contrasenas?|claves?\s+(?:de\s+acceso|secretas?)|"
        r"palabras?\s+clave|password)|"
        r"(?P<pin>pin|c[oó]digo\s+pin|n[uú]mero\s+pin|c[oó]digo\s+de\s+(?:la\s+puerta|acceso|"
        r"la\s+alarma|seguridad))|"
        r"(?P<weak>claves?|c[oó]digos?\s+secretos?|c[oó]digos?))(?!\w)"
    ),
    qualifier=_compile(
        r"\s+(?:de|del|de\s+la|de\s+los|para|en|a|al)\s+(?:(?:mi|mis|tu|su|la|el|los|las|"
        r"nuestro|nuestra)\s+)?[\w.@-]+"
    ),
    filler=_compile(r"\s+(?:actual|ahora|todavía|todavia)"),
    connector=_compile(
        r"\s*(?:(?:es|era|será|sera|sigue\s+siendo|quedó\s+como)\b(?:\s*:)?"
        r"(?:\s+(?:ahora|todavía))?|[:=：]|->)"
    ),
    descriptive=_words(
        "la el los las un una mi mis tu su muy demasiado bastante no nunca siempre todavía en "
        "de del segura seguro insegura fuerte débil larga largo corta corto fácil difícil "
        "sencilla complicada igual misma mismo distinta diferente única caducada olvidada "
        "guardada cambiada perdida secreta correcta incorrecta vacía cifrada paciencia "
        "importante"
    ),
    units=_words("caracteres carácter dígitos digitos letras días meses años"),
    not_before=_compile(r"(?:gestor|administrador|generador|gestión)\s+de\s*$"),
    login=_compile(r"\b(?:usuario|login|cuenta|correo|e-?mail)\b"),
)

# --- Chinese ----------------------------------------------------------------------------------

CHINESE = Phrasing(
    credential=re.compile(
        r"(?:(?P<strong>密码|口令|密钥|暗码|暗号|通行码)|"
        r"(?P<pin>PIN码|pin码|取款码|支付码|门禁码|验证码|开锁码))"
    ),
    qualifier=re.compile(r"(?!)"),  # qualifiers come first in Chinese (银行卡密码)
    filler=re.compile(r"\s*(?:现在|目前|一直|还|都|也|仍然)"),
    connector=re.compile(r"\s*(?:就是|是|为|：|:|=|改成了?|改为|设为|设置为|设成|变成了?)"),
    descriptive=frozenset(),
    units=frozenset(),
    # A value in Chinese characters describes the password (我狗的名字); a given one is ASCII.
    value=re.compile(r"\s*[\"'“‘「]?(?P<v>[\x21-\x7e]{3,})"),
    not_after=re.compile(r"\s*(?:管理器|管理工具|管理|提示|策略|强度|规则|重置|找回|忘记|错误)"),
)

# --- a few more, credential words and connectors only -----------------------------------------

_OTHER_QUALIFIER = re.compile(r"(?!)")
OTHERS = tuple(
    Phrasing(
        credential=_compile(credential),
        qualifier=_compile(qualifier) if qualifier else _OTHER_QUALIFIER,
        filler=_OTHER_QUALIFIER,
        connector=_compile(connector),
        descriptive=_words(descriptive),
        units=frozenset(),
    )
    for credential, qualifier, connector, descriptive in (
        # Portuguese
        (r"(?<!\w)(?:(?P<strong>senhas?)|(?P<pin>pin|c[oó]digo\s+pin))(?!\w)",
         r"\s+(?:do|da|de|para|no|na)\s+(?:(?:meu|minha)\s+)?[\w.@-]+",
         r"\s*(?:(?:é|era)\b|[:=])", "a o um uma muito forte fraca segura minha meu"),
        # Italian
        (r"(?<!\w)(?:(?P<strong>parola\s+d['’]ordine|chiave\s+di\s+accesso)|"
         r"(?P<pin>codice\s+pin))(?!\w)",
         r"\s+(?:del|della|di|per)\s+(?:(?:mio|mia)\s+)?[\w.@-]+",
         r"\s*(?:(?:è|era)\b|[:=])", "la il un una molto sicura mia mio"),
        # Dutch
        (r"(?<!\w)(?:(?P<strong>\w*wachtwoord)|(?P<pin>pincode))(?!\w)",
         r"\s+(?:van|voor)\s+(?:(?:mijn|de|het)\s+)?[\w.@-]+",
         r"\s*(?:(?:is|was)\b|[:=])", "de het een mijn te erg sterk zwak veilig"),
        # Russian
        (r"(?<!\w)(?:(?P<strong>пароль|пароля)|(?P<pin>пин-?код))(?!\w)",
         r"\s+(?:от|для)\s+[\w.@-]+",
         r"\s*(?:—|-|:|=|это\b)", "мой моя очень слишком"),
        # Japanese
        (r"(?:(?P<strong>パスワード)|(?P<pin>暗証番号))", "",
         r"\s*(?:は|:|：|=)", ""),
    )
)

LANGUAGES: tuple[Phrasing, ...] = (ENGLISH, FRENCH, GERMAN, SPANISH, CHINESE, *OTHERS)

# A password given by what it opens, without the word: "I use Tr1cky-Pass to log into my work
# laptop", "I log into the NAS with Falcon!77", "to get into my laptop I type M00nlight".
_INTO = (r"(?:log(?:s|ged|ging)?\s*(?:in(?:to)?|on(?:to)?)|sign(?:s|ed)?\s+in(?:to)?|"
         r"get\s+into|unlock)")
_LOGIN_VALUE = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"\b(?:use|type|enter)\s+[\"'“‘]?(?P<v>[^\s\"'”’]+)[\"'”’]?\s+to\s+{_INTO}\b",
    rf"\b{_INTO}\s+(?:[\w'’-]+\s+){{0,4}}?(?:with|using)\s+[\"'“‘]?(?P<v>[^\s\"'”’]+)",
    rf"\bto\s+{_INTO}\s+(?:[\w'’-]+\s+){{0,4}}?(?:i|we)\s+(?:type|use|enter)\s+"
    r"[\"'“‘]?(?P<v>[^\s\"'”’]+)",
    # "use opensesame99 as the password for the router"
    r"\b(?:use|set|chose|picked)\s+[\"'“‘]?(?P<v>[^\s\"'”’]+)[\"'”’]?\s+as\s+(?:the|my|our|a)\s+"
    r"(?:[\w'’-]+\s+)?(?:password|passphrase|passcode|pin|code)\b",
))


def _login_values(text: str) -> Iterator[tuple[str, str]]:
    for pattern in _LOGIN_VALUE:
        for match in pattern.finditer(text):
            value = match.group("v").strip(_TRAILING)
            if looks_like_value(value) and not is_placeholder(value):
                yield "password", value

_TRAILING = ".,;:!?)]}\"'”’»」。，；！？"


def _skip(pattern: re.Pattern[str], text: str, pos: int, times: int) -> int:
    for _ in range(times):
        match = pattern.match(text, pos)
        if match is None or match.end() == pos:
            break
        pos = match.end()
    return pos


def _next_word(text: str, pos: int) -> str:
    match = re.match(r"\s*([\w'’-]+)", text[pos:])
    return match.group(1).lower() if match else ""


def _gives_value(
    lang: Phrasing, kind: str, value: str, *, connected: bool, after: str
) -> bool:
    core = value.strip(_TRAILING)
    if not core or is_placeholder(core):
        return False
    if kind == "pin":
        return sum(c.isdigit() for c in core) >= 4 and bool(re.fullmatch(r"[\d#*-]+", core))
    if kind == "cvv":
        return bool(re.fullmatch(r"\d{3,4}", core))
    if after in lang.units:
        return False  # "12 characters long"
    lowered = core.lower().strip("'’")
    if kind == "strong" and connected:
        if lowered in lang.descriptive or len(core) < 3:
            return False
        # "is expiring", "is protected", "is really …": an English -ing/-ed/-ly word describes.
        return not (lang is ENGLISH and core.isalpha() and core.islower()
                    and lowered.endswith(("ing", "ed", "ly")))
    return looks_like_value(value) and lowered not in lang.descriptive


def _phrases(lang: Phrasing, text: str) -> Iterator[tuple[str, str]]:
    """(kind, value) for every credential given in `text` in this language."""
    for match in lang.credential.finditer(text):
        kind = match.lastgroup or "strong"
        if lang.not_before and lang.not_before.search(text[max(0, match.start() - 40):
                                                           match.start()]):
            continue
        pos = match.end()
        if lang.not_after and lang.not_after.match(text, pos):
            continue
        if kind == "weak" and lang.login and lang.login.search(text, 0, match.start()):
            kind = "strong"  # "login: bob pass: hunter"
        pos = _skip(lang.qualifier, text, pos, 2)
        pos = _skip(lang.filler, text, pos, 3)
        connector = lang.connector.match(text, pos)
        if connector is not None:
            pos = connector.end()
        elif kind == "weak" and lang is not ENGLISH:
            continue  # "code 1234", "clave 99": too common without "is"
        found = lang.value.match(text, pos)
        if found is None:
            continue
        value = found.group("v")
        if _gives_value(lang, kind, value, connected=connector is not None,
                        after=_next_word(text, found.end())):
            yield _KIND[kind], value.strip(_TRAILING)
    if lang.reverse is not None:
        for match in lang.reverse.finditer(text):
            kind = next((g for g in ("strong", "pin", "cvv", "weak") if match.group(g)), "strong")
            value = match.group("v")
            if kind in ("pin", "cvv"):
                if _gives_value(lang, kind, value, connected=True, after=""):
                    yield _KIND[kind], value.strip(_TRAILING)
            elif looks_like_value(value):
                yield _KIND[kind], value.strip(_TRAILING)


def find(text: str) -> str | None:
    for lang in LANGUAGES:
        for kind, _ in _phrases(lang, text):
            return kind
    for kind, _ in _login_values(text):
        return kind
    return None


def given_values(text: str) -> list[tuple[str, str]]:
    """(kind, value) of every credential `text` gives: what a user's own turn presented as a
    password, PIN or code, for the grounding check (secrets.find_grounded_secret)."""
    return [*(found for lang in LANGUAGES for found in _phrases(lang, text)),
            *_login_values(text)]
