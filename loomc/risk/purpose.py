"""What a prompt is *for* (semantic-v9): code whose purpose is the hazard, secrets kept where
others can read them, high-power appliances on extension leads, and the shapes of harmless
requests the earlier signals still escalate.

Why a fourth signal: the code-hazard families (``loomc.risk.codehazards``) read *constructs*
(``eval``, ``verify=False``, a ``DELETE`` without ``WHERE``), and six sealed splits later the
code that routers still miss holds none: a bucket policy whose JSON is merely malformed, a dose
function that multiplies pounds by a per-kilogram dose, twelve wallet words drawn with
``random``. What makes those dangerous is the *domain* the code serves: money moving, keys and
wallet seeds, doses and medical devices, who may read or change what (IAM, bucket and sharing
policies), what is deleted or kept, safety interlocks, logins and sessions. A mistake there
costs money, health or data whatever the task verb ("fix", "name", "format", "review") says.
So ``p9:domain-*`` name those domains in English, Spanish, German and French, and
``p9:code-purpose`` is code in a prompt that names one (and is not framed as a game or story).

The other families, from general knowledge of the same guidance the exposure families used:

* ``p9:cloud-secret`` — a seed phrase, recovery words, a private key, passwords or backup codes
  kept in notes apps, cloud drives, photos, screenshots, chats or e-mail drafts.
* ``p9:power-lead`` — a high-draw appliance (hot tub, heater, kettle, dryer, oven, EV charger,
  welder, air-conditioner) run on an extension lead or reel.
* ``p9:explain`` — a request to explain or describe for a child, a class or a talk.
* ``p9:word-op`` — operations on words the v7 task families do not cover in es/de/fr (rhymes,
  hyphenation, how to say or write, counting words, naming, capitalising, styling).
* ``p9:how-many`` — a factual counting or identification question ("how many", "cuántos",
  "wie viele", "combien", "who is on").
* ``p9:play-code`` — code framed as a game, a story or a toy, with no domain and no hazard
  construct: identifiers like ``victim`` or ``detonate`` mean nothing there.
* ``p9:office`` — spreadsheet, layout, font and styling questions (Excel, CSS, fonts, logos).
* ``p9:long`` and ``p9:long-op`` — a prompt over 500 characters, and one that is long *and*
  asks for an operation on the words with no domain, secret or power-lead situation in it.

They are classifier columns after v8's (``loomc.risk.signals``), read only by a file whose
weights are that wide, and the rule ``purpose-floor`` escalates ``p9:code-purpose``,
``p9:cloud-secret`` and ``p9:power-lead`` whatever the probability.
"""

from __future__ import annotations

import re

from loomc.risk.codehazards import code_present, hazards_of
from loomc.risk.cues import LazyPatterns, any_of
from loomc.risk.memo import per_prompt
from loomc.risk.tasks import tasks_of

_F = re.IGNORECASE | re.UNICODE | re.MULTILINE

# The domains whose mistakes cost money, health or access, however harmless the task verb.
_DOMAINS: dict[str, str] = {
    "money": any_of(
        r"\b(?:payments?|payouts?|refunds?|withdraw\w*|deposits?|transfers?|ledger|invoices?|iban"
        r"|swift|payroll|salar(?:y|ies)|wages?|exchange[_ ]?rates?|fx[_ ]?rate|currency|checkout"
        r"|charge[_ ]?card|stripe|paypal|balance|credit[_ ]limit|interest[_ ]rate|tax(?:es)?|vat)\b",
        r"\b(?:pago|transferencia|reembolso|saldo|nómina|factura|Überweisung|Zahlung|Kontostand"
        r"|Gehalt|Rechnung|paiement|virement|remboursement|solde|facture)\w*",
        r"\b\w*(?:amount|price|_cents|_eur|_usd|_gbp)\b",
    ),
    "secret": any_of(
        r"\b(?:private[_ ]?keys?|priv[_ ]?key|seed[_ ]?phrase|mnemonic|bip-?39|bip-?32|recovery"
        r"[_ ](?:words|phrase|codes?)|wallet|keystore|passphrase|entropy|signing[_ ]key"
        r"|api[_ ]?keys?|secret[_ ]?keys?|encryption[_ ]key|backup[_ ]codes?|crypto\w*)\b",
        r"\b(?:clave privada|frase semilla|palabras de recuperación|cartera|monedero|billetera"
        r"|privater schlüssel|wiederherstellungs\w*|seed-phrase|geldbörse|clé privée"
        r"|phrase de récupération|portefeuille)\b",
    ),
    "dose": any_of(
        r"\b(?:dos(?:e|es|ing|age)|mg|mcg|µg|ml/h|mmol|units?/kg|per[_ ]kg|_per_kg|insulin|bolus"
        r"|infusion|drip[_ ]rate|syringe|pump|ventilator|pacemaker|glucose|medication|prescription"
        r"|patient|weight[_ ](?:kg|lb)s?|weight_lb|weight_kg|mg_per|anticoagul\w*|morphine)\b",
        r"\b(?:dosis|insulina|bomba de infusión|paciente|medicación|Dosis|Dosierung|Infusion\w*"
        r"|Patient\w*|Medikament\w*|posologie|perfusion|patient\w*|médicament\w*)\b",
    ),
    "access": any_of(
        r"\"?(?:Principal|Effect|Action)\"?\s*:\s*|\bs3:\w+|\barn:aws\b|\biam\b|\bbucket[_ ]polic"
        r"\w*|\bacls?\b|\brbac\b|\broles?\b|\bpermissions?\b|\bgrants?\b|\bis_?admin\b|\badmin\w*"
        r"|\bsuperuser\b|\bsharing\b|\bshare[_ ]link|\bpublic[_ ]?(?:read|access|link)|\ballow_?all\b"
        r"|\bfirewall\b|\bsecurity[_ ]group|\bingress\b|\bcidr\b|\bcors\b",
        r"\b(?:permisos?|política de acceso|Berechtigung\w*|Zugriffs\w*|droits d'accès|autorisations?)\b",
    ),
    "retention": any_of(
        r"\b(?:retention|retain\w*|purge\w*|gdpr|erase\w*|erasure|right to be forgotten|ttl"
        r"|lifecycle|backups?|snapshot\w*|archiv\w*|soft[_ ]?delete\w*|hard[_ ]?delete\w*"
        r"|delete[_ ]\w*|expire\w*|expiry|cleanup|clean_up)\b",
        r"\b(?:retención|copia de seguridad|borrado|Aufbewahrung\w*|Löschfrist\w*|Sicherung\w*"
        r"|conservation des données|sauvegarde\w*|suppression)\b",
    ),
    "interlock": any_of(
        r"\b(?:interlock\w*|e[-_ ]?stop|emergency[_ ]stop|watchdog|fail[_ ]?safe|failsafe|fail[_ ]open"
        r"|over[_ ]?temp\w*|max[_ ]?(?:temp|pressure|speed|current|rpm)\w*|limit[_ ]switch\w*|relay"
        r"|brake\w*|safety[_ ](?:check|cutoff|cut[_ ]off|valve|limit|guard|override)|override\w*"
        r"|thermostat|heater|boiler|burner|valve|cutoff|cut[_ ]off|door[_ ]?(?:open|lock)\w*)\b",
        r"\b(?:parada de emergencia|enclavamiento|Not-?Aus|Sicherheitsabschaltung|Verriegelung"
        r"|arrêt d'urgence|verrouillage|soupape)\b",
    ),
    "auth": any_of(
        r"\b(?:login|log_?in|logout|auth\w*|session\w*|jwt|oauth|csrf|otp|mfa|2fa|totp|password\w*"
        r"|passwd|pwd|credentials?|cookies?|tokens?|reset[_ ]link|verify[_ ]email|sign[_ ]?in)\b",
        r"\b(?:contraseña|inicio de sesión|Passwort|Anmeldung|Sitzung|mot de passe|connexion)\b",
    ),
}
DOMAIN_NAMES: tuple[str, ...] = tuple(_DOMAINS)

_SOURCES: dict[str, str] = {
    "p9:play": any_of(
        r"\b(?:game|games|gaming|idle game|tabletop|campaign|dungeon|rpg|dnd|d&d|minecraft|roblox"
        r"|sprite|level design|story|novel|fiction|escape room|toy|kata|exercise|homework"
        r"|nephews?|nieces?|kids'? (?:game|party)|board game|card game|quiz|puzzle|for fun|party"
        r"|halloween|unit tests? fixture|test fixture|fixtures?|mock(?:ed|s)?|toy example)\b",
        r"\b(?:juego|videojuego|partida|novela|cuento|Spiel\w*|Rollenspiel|jeu|jeux|partie|roman)\b",
    ),
    "p9:cloud-secret": any_of(
        r"\b(?:seed (?:phrase|words)|recovery (?:phrase|words|sheet|codes?)|(?:12|24|twelve|"
        r"twenty-four) (?:wallet |seed |recovery |secret )?words|private keys?|backup codes?|"
        r"passwords?|master password|pin codes?|wallet (?:words|phrase|seed))\b[^\n]{0,80}\b(?:icloud"
        r"|notes? app|apple notes|google (?:keep|drive|docs|photos)|onedrive|dropbox|evernote"
        r"|notion|the cloud|cloud|screenshots?|photos?|camera roll|whatsapp|telegram|signal|email"
        r"(?:ed)?|e-mail|gmail|drafts?|messenger|slack|discord|sticky note|my notes|notes)\b",
        r"\b(?:icloud|notes? app|apple notes|google (?:keep|drive|docs|photos)|onedrive|dropbox"
        r"|evernote|screenshots?|camera roll|whatsapp|telegram|email(?:ed)?|gmail|discord)\b[^\n]{0,80}"
        r"\b(?:seed (?:phrase|words)|recovery (?:phrase|words|codes?)|(?:12|24|twelve|twenty-four)"
        r" words|private keys?|backup codes?|passwords?)\b",
        r"\b(?:frase semilla|palabras (?:de recuperación|semilla)|(?:12|24|doce|veinticuatro) palabras"
        r"|clave privada|contraseñas)\b[^\n]{0,80}\b(?:icloud|nube|notas|fotos?|captura|whatsapp"
        r"|telegram|correo|drive)\b",
        r"\b(?:seed-phrase|wiederherstellungs(?:phrase|wörter)|(?:12|24|zwölf|vierundzwanzig) wörter"
        r"|privater schlüssel|passwörter)\b[^\n]{0,80}\b(?:icloud|cloud|notizen|fotos?|screenshot"
        r"|whatsapp|telegram|e-mail|drive)\b",
        r"\b(?:phrase de récupération|(?:12|24|douze|vingt-quatre) mots|clé privée|mots de passe)\b"
        r"[^\n]{0,80}\b(?:icloud|cloud|notes|photos?|capture|whatsapp|telegram|e-?mail|drive)\b",
    ),
    "p9:power-lead": any_of(
        r"\b(?:hot tub|jacuzzi|spa pool|heater|fan heater|oil heater|radiator|kettle|tumble dryer"
        r"|dryer|washing machine|oven|hob|air ?con\w*|ev|electric car|car charger|welder|pressure"
        r"washer|kiln|sauna|pool pump)\b[^\n]{0,120}\b(?:extension (?:leads?|reels?|cords?|cables?)"
        r"|(?:cable|cord) reel|power strip|multi-?plug|gang (?:plug|socket|extension)|adapter plug)\b",
        r"\b(?:extension (?:leads?|reels?|cords?|cables?)|(?:cable|cord) reel|power strip)\b[^\n]{0,120}"
        r"\b(?:hot tub|jacuzzi|heater|kettle|dryer|washing machine|oven|air ?con\w*|ev|electric car"
        r"|car charger|welder|pressure washer|kiln|sauna)\b",
        r"\b(?:jacuzzi|estufa|calefactor|secadora|horno|coche eléctrico|radiador)\b[^\n]{0,120}"
        r"\b(?:alargador|alargo|alargadera|regleta|prolongador)\b|\b(?:alargador|alargadera|regleta"
        r"|prolongador)\b[^\n]{0,120}\b(?:jacuzzi|estufa|calefactor|secadora|horno|coche eléctrico)\b",
        r"\b(?:whirlpool|heizlüfter|radiator|wasserkocher|trockner|backofen|elektroauto|wallbox)\b"
        r"[^\n]{0,120}\b(?:verlängerungskabel|kabeltrommel|mehrfachsteckdose|steckdosenleiste)\b"
        r"|\b(?:verlängerungskabel|kabeltrommel|mehrfachsteckdose)\b[^\n]{0,120}\b(?:whirlpool"
        r"|heizlüfter|radiator|wasserkocher|trockner|elektroauto)\b",
        r"\b(?:spa gonflable|jacuzzi|radiateur|chauffage|bouilloire|sèche-linge|four|voiture électrique)"
        r"\b[^\n]{0,120}\b(?:rallonge|enrouleur|multiprise)\b|\b(?:rallonge|enrouleur|multiprise)\b"
        r"[^\n]{0,120}\b(?:spa|jacuzzi|radiateur|chauffage|bouilloire|sèche-linge|voiture électrique)\b",
    ),
    "p9:explain": any_of(
        r"\bexplain\w*\b[^.?!\n]{0,60}\b(?:child|kid|kids|\d+-year-old|year olds?|class|pupils"
        r"|students|beginner|grandma|like I'?m)\b|\bfor (?:my|a) (?:daughter|son|kids?|class"
        r"|school|poster|talk|lecture|presentation|assembly)\b",
        r"\bexplíca\w*|\bexplica\w*\b[^.?!\n]{0,60}\b(?:niñ[oa]s?|clase|alumnos)\b|\bpara (?:mi|una)"
        r" (?:hija|hijo|clase|presentación)\b",
        r"\berklär\w*\b[^.?!\n]{0,60}\b(?:kind\w*|klasse|schüler\w*)\b|\bfür (?:meine|meinen|die)"
        r" (?:tochter|sohn|klasse|schule|präsentation)\b",
        r"\bexpliqu\w*\b[^.?!\n]{0,60}\b(?:enfants?|cm[12]|ce[12]|classe|élèves|exposé)\b"
        r"|\bpour (?:ma|mon|un|une) (?:fille|fils|classe|exposé)\b",
    ),
    "p9:word-op": any_of(
        r"\brimas?\b|\brim(?:a|en) con\b|\breim\w*|\brimes?\b|\bsilbentrennung\b|\btrennt man\b"
        r"|\bwie schreibt man\b|\bcómo se (?:dice|escribe)\b|\bcomment (?:dit-on|écrit-on|on dit)\b"
        r"|\bpourquoi dit-on\b|\bwas hei(?:ß|ss)t\b|\bqué quiere decir\b|\bcuenta las palabras\b"
        r"|\bzähl\w* (?:die )?wörter\b|\bcompte les mots\b|\bcount (?:the )?(?:words|letters|times)\b",
        r"\b(?:capitali[sz]\w*|lowercase|uppercase|all caps|ap style|chicago style|title case)\b"
        r"|\bsound (?:a bit )?(?:fancier|nicer|better|more \w+)\b|\bmake ['\"‘“][^'\"’”]{1,60}['\"’”]"
        r"|\b(?:nombre|título) para\b|\bnamen für\b|\bnom pour\b|\bpropose un nom\b",
    ),
    "p9:how-many": any_of(
        r"^\s*(?:how many|who'?s on|who is on|who wrote|who painted|what'?s the name)\b",
        r"^\s*¿?\s*(?:cuántos|cuántas|quién escribió)\b|^\s*wie viele\b|^\s*combien\b",
    ),
    "p9:office": any_of(
        r"\b(?:excel|spreadsheet formula|google sheets|vlookup|xlookup|pivot table|css|hover|font"
        r"|logo|layout|colour scheme|color scheme|typeface|kerning|markdown|latex|powerpoint|slides)\b",
        r"\b(?:fórmula|hoja de cálculo|Formel|Tabellenkalkulation|Schriftart|police de caractères"
        r"|mise en page|tableur)\b",
    ),
}


# Configuration carries the purpose as often as code does: a JSON policy, a YAML or INI block.
_CONFIG = re.compile(
    r"^\s*[{\[]\s*\"[\w.-]+\"\s*:|\"[\w.-]+\"\s*:\s*[\[{\"]|^\s*[\w.-]+\s*:\s*\n\s+[\w.-]+\s*:"
    r"|^\s*\[[\w.-]+\]\s*$|^\s*[a-z_]+\s+[\w./-]+\s*$",
    re.MULTILINE,
)


@per_prompt
def code_like(prompt: str) -> bool:
    """Code, or a configuration block (a JSON policy, YAML, INI): what ``p9:code-purpose`` reads."""
    return code_present(prompt) or _CONFIG.search(prompt) is not None


# Each compiled on first need, and searched only where its literals are (loomc.risk.prescan).
DOMAINS = LazyPatterns(_DOMAINS, _F)
FAMILIES = LazyPatterns(_SOURCES, _F)


@per_prompt
def domains_of(prompt: str) -> tuple[str, ...]:
    """The consequential domains ``prompt`` names, in ``DOMAIN_NAMES`` order."""
    return DOMAINS.matching(prompt)


def _hit(name: str, prompt: str) -> bool:
    return FAMILIES.patterns[name].search(prompt) is not None


LONG = 500  # characters: the corpus's "long" prompts start here


@per_prompt
def families_of(prompt: str) -> tuple[str, ...]:
    """The ``p9:*`` families that match ``prompt``, in ``PURPOSE_NAMES`` order."""
    code = code_like(prompt)
    domains = domains_of(prompt)
    play = _hit("p9:play", prompt)
    hits: list[str] = [f"p9:domain-{d}" for d in domains]
    if code and domains and not play:
        hits.append("p9:code-purpose")
    for name in ("p9:cloud-secret", "p9:power-lead"):
        if _hit(name, prompt):
            hits.append(name)
    for name in ("p9:explain", "p9:word-op", "p9:how-many", "p9:office"):
        if _hit(name, prompt):
            hits.append(name)
    if code and play and not domains and not hazards_of(prompt):
        hits.append("p9:play-code")
    if len(prompt) > LONG:
        hits.append("p9:long")
        situated = any(h in hits for h in FLOOR_FAMILIES)
        op = any(t.startswith("do:") for t in tasks_of(prompt)) or "p9:word-op" in hits
        if op and not situated and not domains:
            hits.append("p9:long-op")
    return tuple(hits)


FLOOR_FAMILIES: tuple[str, ...] = ("p9:code-purpose", "p9:cloud-secret", "p9:power-lead")
PURPOSE_NAMES: tuple[str, ...] = (
    *tuple(f"p9:domain-{d}" for d in DOMAIN_NAMES),
    "p9:code-purpose",
    "p9:cloud-secret",
    "p9:power-lead",
    "p9:explain",
    "p9:word-op",
    "p9:how-many",
    "p9:office",
    "p9:play-code",
    "p9:long",
    "p9:long-op",
)


def purpose_vector(prompt: str) -> list[float]:
    """Classifier columns, in ``PURPOSE_NAMES`` order."""
    hits = set(families_of(prompt))
    return [float(n in hits) for n in PURPOSE_NAMES]


def purpose_floor(prompt: str) -> tuple[str, ...]:
    """The families the ``purpose-floor`` rule escalates on."""
    return tuple(n for n in families_of(prompt) if n in FLOOR_FAMILIES)
