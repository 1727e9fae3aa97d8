"""Code that decides about people by who they are, or finds where they are (the ``people-floor``
rule of semantic-v14; v15, v18 ... v34 and the default release, v35, read it wider: ``people_floor_wide``; v17 also
reads a characteristic that prices a person through a lookup: ``people_floor_table``).

Why a fifth signal: from hard-test-15 to -20 the default (v13) missed one high-risk prompt on
three sealed splits, and all three had one shape: a cosmetic request (rename to camelCase,
translate the variable names, make it faster) over code whose *purpose* is the harm. One was an
applicant filter that rejects on age, pregnancy and a headscarf; one a dating app's distance
label; one a script that lists every woman's profile within a kilometre. None holds a hazard
construct (``loomc.risk.codehazards``) or a domain of ``loomc.risk.purpose`` (money, doses,
access ...), and a classifier trained on a few thousand rows reads a rename. What they share is
written in law, not in any split:

* ``people:protected-condition`` — a characteristic that anti-discrimination law protects (the
  UK Equality Act's nine: age, disability, gender reassignment, marriage, pregnancy and
  maternity, race, religion or belief, sex, sexual orientation; the EU Charter's Art. 21 adds
  ethnic origin, nationality and language) or a GDPR Art. 9 special category, used in a condition
  of the code: a line that holds the characteristic and a test (``if``, ``where``, ``filter``,
  a comparison). Age counts only compared with a number of two digits (``age > 45``), since
  ``age`` alone names cache lifetimes (``max_age > 60``).
* ``people:locate-persons`` — code that handles where people are (coordinates, "nearby", a
  radius or a distance, last seen, a live or home location) and names people (profiles, users,
  women, members, children, a partner): precise location is sensitive data (the CCPA's "precise
  geolocation") and the means of stalking.

Both read code or configuration only (``loomc.risk.purpose.code_like``): in prose, the same
words are the classifier's to weigh. Over every row of ``evals/routing`` up to hard-test-20 (723
prompts with code) the two fire on 18 high-risk prompts and on none of the 320 low-risk ones
(``tests/risk/test_people.py`` holds that count). The terms are in English, Spanish, German and
French, as the other families.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from loomc.risk.cues import PART_END, PART_START, LazyPatterns, any_of
from loomc.risk.memo import per_prompt
from loomc.risk.purpose import code_like

_F = re.IGNORECASE | re.UNICODE | re.MULTILINE
_L, _R = PART_START, PART_END  # a short term only as a whole identifier part (``is_pregnant``)

_SOURCES: dict[str, str] = {
    # Long, distinctive stems: safe inside identifiers (``isPregnant``, ``ethnicity_code``).
    "protected": any_of(
        r"pregnan|maternity|religio|ethnic|ethnie|ethnisch|etnia|headscarf|hijab|hiyab|kopftuch"
        r"|niqab|burqa|burka|turban|kippa|yarmulke|schwanger|embarazad|enceinte|grossesse"
        r"|mutterschaft|disabilit|disabled|behinder|discapacid|handicap|wheelchair|rollstuhl"
        r"|nationalit|staatsangeh|nacionalidad|transgender|homosex|lesbian|skin_?colou?r"
        r"|hautfarbe|muslim|musulm|jewish|jüdisch|judío|juif|juive|immigra"
        r"|migrationshintergrund|marital|familienstand|estado_?civil|situation_?familiale"
        r"|sexual_?orientation",
        # Short terms: whole identifier parts only.
        _L + r"(?:gender|sex|sexo|sexe|geschlecht|g[ée]nero|herkunft|origin|orientation|female"
        r"|woman|women|frau|frauen|mujer|mujeres|femme|femmes|male|caste|religion)s?" + _R,
        # Race only compared (``race`` is also a race condition, a game, a sports event).
        _L + r"(?:race|raza|rasse)\s*(?:==|!=|\bin\b|\bnot in\b)",
        # Age only as a whole name (not ``max_age``), compared with a two-digit number.
        r"(?<!\w)(?:age|alter|edad|âge|age_years|birth_?year|geburtsjahr|year_of_birth)\s*[<>]=?"
        r"\s*\d{2}(?!\d)",
    ),
    "location": _L
    + r"(?:lat|lon|lng|latitude|longitude|geo_?loc\w*|gps|coords?|coordinates|nearby|near_?me"
    r"|radius(?:_k?m)?|distance(?:_k?m)?|metres away|meters away|km away|last_?seen"
    r"|live_?location|current_?location|home_?address|standort|ubicaci[oó]n|localisation)s?" + _R,
    "person": _L
    + r"(?:profiles?|users?|women|woman|girls?|men|females?|males?|singles|matches|dating"
    r"|members?|people|persons?|employees?|staff|drivers?|kids?|child(?:ren)?|students?"
    r"|pupils?|neighbou?rs?|frauen|mujeres|chicas|femmes|filles|usuarios?|nutzer|benutzer"
    r"|utilisateurs?|personas|personen|kinder|niños|enfants|ex|wife|husband|girlfriend"
    r"|boyfriend|partner)s?" + _R,
}
PATTERNS = LazyPatterns(_SOURCES, _F)

# ``people-floor-wide`` (v15): the same two families, read more widely (see ``people_floor_wide``).
_WIDE_SOURCES: dict[str, str] = {
    "protected": any_of(
        _SOURCES["protected"],
        # Spanish, French and German forms the stems above miss.
        r"embaraz|discapacit|religi[oó]n|lgbt|orientierung|fauteuil_?roulant"
        r"|silla_?de_?ruedas",
        _L + r"(?:origine|origen|hiv|vih)s?" + _R,
        # A group named by value, quoted as code quotes it (``D2="Traveller"``, ``'maghreb'``).
        r"[\"'](?:roma|romani|roms|sinti|travell?ers?|gypsy|gypsies|gitan[oa]s?|gitanes?"
        r"|tsiganes?|zigeuner|muslims?|musulman(?:e|es|s)?|jews?|jewish|juifs?|juives?"
        r"|jud[ií][oa]s?|arabs?|arabes?|árabes?|maghreb\w*|magreb\w*|africa\w*|afrique\w*"
        r"|asian|asiatiques?|asi[aá]tic[oa]s?|hispanic|latin[oa]s?|indigenous|aboriginal"
        r"|refugees?|r[ée]fugi[ée]s?|refugiad[oa]s?|fl[üu]chtling\w*|asylum\w*|gay|lesbians?"
        r"|bisexual|queer|hindus?|sikhs?|pregnant|disabled)[\"']",
    ),
    "location": any_of(
        _SOURCES["location"],
        _L + r"(?:st_dwithin|st_distance|geom|(?:location|gps)_?pings?|whereabouts|umkreis)" + _R,
    ),
    "person": any_of(
        _SOURCES["person"],
        _L + r"(?:empleados?|empleadas?|mitarbeiter\w*|salari[ée]s?|clients?|clientes?|kunden"
        r"|tenants?|applicants?|candidates?|candidat[oa]s?|demandeurs?|bewerber\w*"
        r"|solicitantes?|inquilinos?|locataires?|mieter\w*)" + _R,
    ),
}
WIDE_PATTERNS = LazyPatterns(_WIDE_SOURCES, _F)

# ``people-floor-tracking`` (v16): the wide reading, with more words for where people have been
# (a location history or trail, a movement profile, German compounds of ``Standort``) and for
# employees (``emp``, as code abbreviates it; ``Beschäftigte``, ``Personalakte``).
_TRACKING_SOURCES: dict[str, str] = {
    "protected": _WIDE_SOURCES["protected"],
    "location": any_of(
        _WIDE_SOURCES["location"],
        r"standort\w*|aufenthaltsort\w*|bewegungs_?(?:profil|daten)\w*|handyortung"
        r"|g[ée]olocali[sz]\w*|ubicaciones",
        _L + r"(?:location|gps|geo)_?(?:history|histories|trail|trace|log|track\w*|visits?)" + _R,
    ),
    "person": any_of(
        _WIDE_SOURCES["person"],
        _L + r"(?:besch(?:ä|ae|a)ftigte\w*|angestellte\w*|belegschaft|personalakte\w*"
        r"|trabajador\w*|employ[ée]e?s?|emp)" + _R,
    ),
}
TRACKING_PATTERNS = LazyPatterns(_TRACKING_SOURCES, _F)

# ``people-floor-table`` (v17): a characteristic that prices or scores a person through a lookup
# rather than a branch (``RECARGO_POR_NACIONALIDAD = {'marroqui': 0.30, ...}``,
# ``premium * FACTOR[applicant.religion]``): a line with a protected term, a word for what a
# person is charged, scored or allowed, and a lookup (a subscript, ``.get(``, a mapping entry
# with a fraction or a percentage, or a name built with by/per and the characteristic).
_PRICE = re.compile(
    _L + r"(?:surcharges?|recargos?|premiums?|primas?|rates?|tarif\w*|pric\w*|precios?|prix"
    r"|preis\w*|scores?|scoring|weights?|factors?|multipliers?|penalt\w*|discounts?|limits?"
    r"|quotas?|bonus|malus|aufschl(?:ä|ae|a)ge?|zuschl(?:ä|ae|a)ge?|majorations?|coef\w*"
    r"|loadings?|uplifts?|markups?|fees?|cuotas?|descuentos?|rabatt\w*|remises?|beitr(?:ä|ae|a)ge?"
    r"|cotisations?)" + _R,
    _F,
)
_LOOKUP = re.compile(
    r"\w\s*\[|\.get\s*\(|[\"']\s*:\s*-?\d*\.\d|[\"']\s*:\s*-?\d+\s*%|=>\s*-?\d*\.\d"
    r"|" + _L + r"(?:by|per|por|par|nach|pro|para)_",
    _F,
)

# A test in code: a branch, a query's filter, a comparison, a ternary, a lambda.
_CONDITION = re.compile(
    r"\b(?:if|elif|when|where|while|unless|filter\w*|exclude\w*|reject\w*|and|or|not|case"
    r"|match|wenn|si|cuando)\b|==|!=|[<>]=?|\?|=>|lambda",
    re.IGNORECASE,
)

PEOPLE_NAMES: tuple[str, ...] = (
    "people:protected-condition",
    "people:locate-persons",
    "people:priced-characteristic",
)


def _protected_condition(lines: Iterable[str], patterns: LazyPatterns) -> bool:
    protected = patterns["protected"]
    return any(protected.search(line) and _CONDITION.search(line) for line in lines)


@per_prompt
def people_floor(prompt: str) -> tuple[str, ...]:
    """The ``PEOPLE_NAMES`` families in ``prompt``'s code or configuration (none without any)."""
    if not code_like(prompt):
        return ()
    return _families(prompt, PATTERNS)


def _priced_lookup(lines: Iterable[str], patterns: LazyPatterns) -> bool:
    protected = patterns["protected"]
    return any(
        protected.search(line) and _PRICE.search(line) and _LOOKUP.search(line) for line in lines
    )


def _families(
    text: str, patterns: LazyPatterns, lines: Iterable[str] | None = None, tables: bool = False
) -> tuple[str, ...]:
    """The families in ``text`` (the code), whose condition lines are ``lines`` (``text``'s
    own lines when None: split only when a protected term is there to test); with ``tables``,
    a characteristic priced through a lookup too (``people-floor-table``)."""
    found = patterns.matching(text)
    hits: list[str] = []
    if "protected" in found:
        split = list(text.splitlines() if lines is None else lines)
        if _protected_condition(split, patterns):
            hits.append("people:protected-condition")
        elif tables and _priced_lookup(split, patterns):
            hits.append("people:priced-characteristic")
    if "location" in found and "person" in found:
        hits.append("people:locate-persons")
    return tuple(hits)


# Code inline in a sentence: a backticked span with an operator or a keyword of code, or a
# spreadsheet formula. Spans are found by one linear scan and searched one by one.
_SPAN = re.compile(r"`([^`\n]{1,600})`")
_INLINE_CODE = re.compile(
    r"==|!=|=>|&&|\|\||<=|>=|[<>]\s*\d|\w\(|\b(?:if|in|not|return|def|function|const|let"
    r"|lambda|select|where|filter)\b",
    re.IGNORECASE,
)
_FORMULA = re.compile(
    r"=\s*(?:if|ifs|arrayformula|filter|query|countifs?|sumifs?|vlookup|xlookup|si|wenn)\s*\(",
    re.IGNORECASE,
)


# A SQL statement on one line (``code_like`` reads blocks and definitions, not a bare query).
SQL = re.compile(
    r"\b(?:SELECT\b[^\n]{0,300}?\bFROM|INSERT\s+INTO|UPDATE\b[^\n]{0,100}?\bSET|DELETE\s+FROM)\b"
)


def inline_code(prompt: str) -> list[str]:
    """The pieces of code written inline in ``prompt``'s sentences (backticked spans that read
    as code, spreadsheet formulas to the end of their line)."""
    spans = [m.group(1) for m in _SPAN.finditer(prompt) if _INLINE_CODE.search(m.group(1))]
    at = 0  # a formula runs to the end of its line, at most 600 characters, and pieces do not
    while found := _FORMULA.search(prompt, at):  # overlap: all of them hold at most the prompt
        end = prompt.find("\n", found.start(), found.start() + 600)
        end = end if end >= 0 else min(len(prompt), found.start() + 600)
        spans.append(prompt[found.start() : end])
        at = max(end, found.end())
    return spans


@per_prompt
def people_floor_wide(prompt: str) -> tuple[str, ...]:
    """``people_floor`` read more widely (the ``people-floor-wide`` rule of v15): the families'
    terms in Spanish, French and German forms the narrow reading missed (``origine``,
    ``embarazo``), groups named by value in a condition (``== "Traveller"``), a few more words
    for where people are (a PostGIS ``ST_DWithin``, location pings) and who (tenants,
    applicants), and code that ``code_like`` does not see: a bare SQL statement (read as code),
    and code written inline in a sentence (only the inline pieces are read, each as its own
    condition line)."""
    return _read_widely(prompt, WIDE_PATTERNS)


@per_prompt
def people_floor_tracking(prompt: str) -> tuple[str, ...]:
    """``people_floor_wide`` with more words for where people have been (a location history, a
    ``Standortverlauf``) and for employees (the ``people-floor-tracking`` rule of v16)."""
    return _read_widely(prompt, TRACKING_PATTERNS)


@per_prompt
def people_floor_table(prompt: str) -> tuple[str, ...]:
    """``people_floor_wide`` that also reads a characteristic priced or scored through a lookup
    (a table of multipliers keyed by nationality, ``FACTOR[applicant.religion]``): the
    ``people-floor-table`` rule of v17, ``people:priced-characteristic``."""
    return _read_widely(prompt, WIDE_PATTERNS, tables=True)


def _read_widely(prompt: str, patterns: LazyPatterns, tables: bool = False) -> tuple[str, ...]:
    """The families in ``prompt``'s code, a bare SQL statement read as code, or else in the
    pieces of code written inline in its sentences (each piece its own condition line)."""
    if code_like(prompt) or SQL.search(prompt):
        return _families(prompt, patterns, tables=tables)
    pieces = inline_code(prompt)
    if not pieces:
        return ()
    return _families("\n".join(pieces), patterns, pieces, tables)
