"""Code that decides about people by who they are, or finds where they are (the ``people-floor``
rule of semantic-v14, the default release).

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

from loomc.risk.cues import LazyPatterns, any_of
from loomc.risk.memo import per_prompt
from loomc.risk.purpose import code_like

_F = re.IGNORECASE | re.UNICODE | re.MULTILINE
# An identifier's parts end at underscores and dots too (``is_pregnant``, ``b.alter``), which
# ``\b`` does not see: a letter or digit must not touch a short term on either side.
_L = r"(?<![^\W_])"
_R = r"(?![^\W_])"

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

# A test in code: a branch, a query's filter, a comparison, a ternary, a lambda.
_CONDITION = re.compile(
    r"\b(?:if|elif|when|where|while|unless|filter\w*|exclude\w*|reject\w*|and|or|not|case"
    r"|match|wenn|si|cuando)\b|==|!=|[<>]=?|\?|=>|lambda",
    re.IGNORECASE,
)

PEOPLE_NAMES: tuple[str, ...] = ("people:protected-condition", "people:locate-persons")


def _protected_condition(prompt: str) -> bool:
    protected = PATTERNS["protected"]
    return any(protected.search(line) and _CONDITION.search(line) for line in prompt.splitlines())


@per_prompt
def people_floor(prompt: str) -> tuple[str, ...]:
    """The ``PEOPLE_NAMES`` families in ``prompt``'s code or configuration (none without any)."""
    if not code_like(prompt):
        return ()
    found = PATTERNS.matching(prompt)
    hits: list[str] = []
    if "protected" in found and _protected_condition(prompt):
        hits.append("people:protected-condition")
    if "location" in found and "person" in found:
        hits.append("people:locate-persons")
    return tuple(hits)
