"""Situational cues for the semantic profiler: what a prompt *asks for* and what it *describes*.

The keyword rules look for risk vocabulary; the hard routing corpus (``evals/routing/hard-*``)
showed that vocabulary misleads both ways: "translate 'phishing attack'" is harmless, and "I'll
just run the payroll again from the top" is dangerous without a single risk word. These cues are
extra classifier features (never a decision on their own), each a named family of patterns in
English, Spanish, German and French:

* ``task:*`` — harmless transformations of the text (translate, spell, count letters, sort,
  format, rhyme, trivia phrasing): the request is about the words, not the situation.
* ``code:*`` — the prompt carries code, and whether the code itself holds a known-dangerous
  construct (a general CWE-style list: shell/eval/pickle, unverified TLS or tokens, string-built
  SQL, deletes without WHERE, world-writable files, hard-coded secrets, wildcard CORS ...).
* ``situation:*`` — what is happening to whom: irreversible deletion, money moving or repeating,
  a body or symptom, a vulnerable person, a physical hazard, access open to too many people,
  secrecy or urgency.

The lists were written from general knowledge and the hard *train* split only; the cue names
that fire are listed in a profile's ``reasons`` so a decision can be traced back to them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from loomc.risk.memo import per_prompt
from loomc.risk.prescan import INDEX, Prescanned, fold, may_match_folded, present

_F = re.IGNORECASE | re.UNICODE


# A term's edges inside an identifier. Its parts end at underscores and dots too
# (``is_pregnant``, ``alert.ack``), which ``\b`` does not see: a letter or digit must not touch a
# short term on either side (the people and alarm floors' tables are written with them).
PART_START = r"(?<![^\W_])"
PART_END = r"(?![^\W_])"


def any_of(*alts: str) -> str:
    """One regex source matching any of ``alts`` (each grouped, so its own ``|`` stays inside);
    the cue, task and code-hazard tables are written with it."""
    return "|".join(f"(?:{a})" for a in alts)


class LazyPatterns(Mapping[str, "re.Pattern[str]"]):
    """Named patterns, each compiled on first use (then kept), each with a literal prescan.

    Why: compiling all of them costs ~7-25 ms of one core (case-insensitive Unicode
    alternations are slow to compile), which ``import loomc.risk.semantic`` paid even in
    processes that never profile a prompt (``loomc doctor``, a run whose guards never read
    the risk), and a cold run that profiles one prompt needs few of them: ``may_match`` says
    which a prompt can match at all (``loomc.risk.prescan``) before any is compiled."""

    def __init__(self, sources: Mapping[str, str], flags: int = _F) -> None:
        self.patterns = {name: Prescanned(src, flags) for name, src in sources.items()}
        INDEX.add(self.patterns.values())  # a fixed table: its literals join the one scan

    def __getitem__(self, name: str) -> re.Pattern[str]:
        return self.patterns[name].compiled

    def __iter__(self) -> Iterator[str]:
        return iter(self.patterns)

    def __len__(self) -> int:
        return len(self.patterns)

    def may_match(self, name: str, folded: str) -> bool:
        """False only when pattern ``name`` cannot match the text whose :func:`fold` is
        ``folded``; then it need not be compiled."""
        return self.patterns[name].may_match(folded)

    def matching(self, text: str, folded: str | None = None) -> tuple[str, ...]:
        """The names of the patterns that match ``text``, in order."""
        folded = fold(text) if folded is None else folded
        got = present(folded)
        return tuple(
            name
            for name, p in self.patterns.items()
            if may_match_folded(p, folded, got) and p.compiled.search(text)
        )

    def compiled_names(self) -> list[str]:
        """The patterns compiled so far (the others were never needed)."""
        return [name for name, p in self.patterns.items() if p.is_compiled]


_CUE_SOURCES: dict[str, str] = {
    # --- what is asked: operations on the words themselves
    "task:transform": any_of(
        r"\btranslat\w*|\btradu\w*|\büberse\w*|\bspell\w*|\bdeletre\w*|\bbuchstabier\w*|\bépel\w*",
        r"\bhow many (?:letters|vowels|syllables|words|characters)|\bcount (?:the )?(?:words|letters)",
        r"\bcuántas letras|\bwie viele buchstaben|\bcombien de lettres",
        r"\balphabeti[sz]\w*|\bsort (?:these|this list)|\bput [^.?!]{0,40} in alphabetical",
        r"\bsynonyms?\b|\bantonyms?\b|\brhym\w*|\bplural of\b|\bpronounc\w*|\betymolog\w*",
        r"\btitle[- ]case\b|\bcapitali[sz]e\b|\bcrossword\b|\bacronym\b|\bstand for\b",
        r"\bmake this (?:sentence )?passive\b|\bone word or two\b|\bspelling\b",
        r"\bformat (?:this|these|as)\b|\bmarkdown table\b|\bbulleted list\b|\bturn this list\b",
    ),
    "task:trivia": any_of(
        r"^\s*(?:which|who|when|in which|what year|what was|name the)\b",
        r"\baccording to (?:legend|plato|the fbi|historians)|\btrivia\b|\bquiz\b|\bhistory\b",
        r"\bin (?:agatha christie|the story|the film|the novel)",
    ),
    "task:fiction": any_of(
        r"\bnovel\b|\bstory\b|\bmystery\b|\bplot\b|\bcharacter sheets?\b|\bfictional\b|\bpretend\b"
    ),
    # --- code in the prompt, and dangerous constructs in it
    "code:present": any_of(
        r"\n\s{2,}\S|```|\bdef \w+\(|\bfunction \w+\(|;\s*$|\b\w+\(\w*\)\s*[:{]",
        r"\bimport \w+|\b\w+\.\w+\([^)]{0,300}\)|=\s*['\"\[{]|`[^`]{4,300}`",
    ),
    "code:exec": any_of(
        r"shell\s*=\s*true|os\.system\(|\beval\(|\bexec\(|pickle\.loads?\(|yaml\.load\(",
        r"subprocess\.\w+\([^)]{0,300}\+|child_process|Runtime\.getRuntime",
        r"\bTemplate\([^)]{0,300}\)\.render|\|\s*safe\b|innerHTML\s*=|dangerouslySetInnerHTML",
    ),
    "code:trust": any_of(
        r"verify\s*=\s*false|verify_signature['\"]?\s*:\s*false|rejectUnauthorized\s*:\s*false",
        r"origin\s*:\s*['\"]\*|allow all\b|ALLOWED_HOSTS\s*=\s*\[\s*['\"]\*|DEBUG\s*=\s*True",
        r"\bmd5\(|\bsha1\(|random\.(?:seed|randint|random)\([^)]{0,300}\)[^\n]{0,40}(?:token|session|password)",
        r"(?:api_?key|secret|token|passwd|password)\s*=\s*['\"][^'\"]{8,}|\bsk_live_\w+|\bAKIA[0-9A-Z]{8,}",
        r"request\.(?:args|GET|POST|json|form|files)\b|user[_ ]supplied|from the query string",
    ),
    "code:destroy": any_of(
        r"\brm\s+-\w*r\w*f|\brm\s+-\w*f\w*r|\bdrop\s+(?:table|column|database|schema)\b",
        r"\btruncate\s+(?:table\s+)?\w+|\bdelete\s+from\s+\w+(?![^;\n]{0,300}\bwhere\b)",
        r"\bupdate\s+\w+\s+set\b(?![^;\n]{0,300}\bwhere\b)|\bkubectl\s+delete\b|-delete\b|--force\b",
        r"\bchmod\s+(?:-R\s+)?777\b|\bUSER\s+root\b|\.delete\(\)",
    ),
    "code:sql-built": any_of(
        r"(?:select|insert|update|delete)\b[^\n]{0,80}['\"]\s*(?:\+|%\s|%\()",
        r"execute\(\s*f['\"]|f['\"](?:select|insert|update|delete)\b",
    ),
    # --- what the prompt describes
    "situation:irreversible": any_of(
        r"\b(?:no|without|sin|sans|ohne|keine?)\s+(?:backups?|cop(?:y|ies)|copias?|sauvegardes?|sicherung|backup)",
        r"\bonly cop(?:y|ies)\b|\bseuls? exemplaires?\b|\bsolo ahí\b",
        r"\boverwrit\w*|\bwip(?:e|ing)\b|\bdelet\w*|\bdrop\b|\btruncat\w*|\bpurg\w*|\berase\w*",
        r"\bborra\w*|\bformatea\w*|\blösch\w*|\bentsorg\w*|\bsupprim\w*|\bvider\b|\bcancel the old",
    ),
    "situation:repeat": any_of(
        r"\bagain\b|\bre-?run\w*|\bfrom the top\b|\bmore than once\b|\btwice\b|\bthree times\b",
        r"\bboth (?:workers|servers|cron|app)|\bsame (?:job|counter|stock)|\bat once\b|\blisted twice\b",
        r"\bnochmal\b|\bbeide server\b|\bdos veces\b|\bdeux fois\b|\brecarga\b|\bone of each\b",
    ),
    "situation:money-moving": any_of(
        r"\b(?:wire|transfer|move|send|pay)\w*\s[^.?!]{0,30}(?:\$|€|£|\d+k\b|account|iban|difference)",
        r"\bgift ?cards?\b|\biban\b|\bpension\b|\bsavings\b|\bemergency fund\b|\bguarantee\w*\s+\d+%",
        r"\bcode (?:they|it) (?:texted|sent)\b|\bsix-digit code\b|\bcosign\w*",
        r"\bvir(?:er|ement)\b|\bübe?rweis\w*|\btransfier\w*|\bgutschein\w*|\btarjetas? regalo\b",
        r"\bahorros\b|\béconomies\b|\bcódigo\b|\bcode reçu\b|\bsms\b",
    ),
    "situation:body": any_of(
        r"\bswallow\w*|\bate\b|\bdrank\b|\bpills?\b|\btablets?\b|\bdoses?\b|\bdoubl\w* (?:up|my)",
        r"\bfever\b|\bchest\b|\bdizz\w*|\bfaint\w*|\bhard to wake\b|\bconfus\w*|\bslurr\w*|\bdroop\w*",
        r"\bhit (?:his|her|my) head\b|\binsulin\b|\bantibiotics?\b|\bheart pills\b|\bstiff neck\b",
        r"\bpastillas?\b|\btom[óo]\b|\bfiebre\b|\bpecho\b|\bjarabe\b|\bdolor\b",
        r"\btablette\w*|\bgeschluckt\b|\bgegessen\b|\bfieber\b|\bbrust\b|\bschmerz\w*|\bantidepressiva\b",
        r"\bavalé\b|\bbu du\b|\bcomprimés?\b|\bsomnifères?\b|\bfièvre\b|\bpoitrine\b|\bmal à\b",
    ),
    "situation:vulnerable-person": any_of(
        r"\bbaby\b|\btoddler\b|\bkids?\b|\bchild\w*|\b\d+-month-old\b|\bgrand(?:pa|ma|father|mother)\b",
        r"\bmy (?:son|daughter|dad|mum|mom|father|mother|friend|neighbour|neighbor)\b|\belderly\b",
        r"\bbebé\b|\bhij[oa]\b|\bpadre\b|\bmadre\b|\bkind\b|\bvater\b|\bmutter\b|\bsohn\b|\btochter\b",
        r"\bfille\b|\bfils\b|\bpère\b|\bmère\b|\bbébé\b",
    ),
    "situation:hazard": any_of(
        r"\bgenerator\b|\bgas\b|\bcharcoal\b|\bbarbecue\b|\bgrill\b|\bheater\b|\bthin ice\b|\bice on\b",
        r"\bquarry\b|\bswim\w*|\bbrakes?\b|\bcord\b|\bsmoke detector\b|\bbattery\b|\bbatteries\b",
        r"\bin the (?:garage|basement|car)\b|\bfridge\b|\bbath(?:tub)?\b|\bbañera\b|\bmultiprise\b",
        r"\bradiateur\b|\bgarage\b|\bbeers?\b|\bwet hands\b|\boven\b|\bmagnets?\b",
    ),
    "situation:open-access": any_of(
        r"\banyone (?:who|can|with)\b|\beveryone (?:on|in)\b|\bshare[sd]? (?:the )?(?:one|same)\b",
        r"\bsame password\b|\bpublic (?:link|tweet)\b|\bnever expires\b|\bstill has\b|\bleft last\b",
        r"\bdifferent number\b|\bchanging the number\b|\bhides?\b|\bwithout any code\b|\bdate of birth\b",
        r"\bcualquiera\b|\btodos usamos\b|\btodavía (?:tiene|puede)\b|\bn'importe qui\b|\btout le monde\b",
        r"\bnoch zugang\b|\bjeder\b|\bnur den benutzernamen\b|\bexempleado\b|\behemalige\b",
    ),
    "situation:secrecy": any_of(
        r"\bkeep it quiet\b|\bwithout telling\b|\bdon't tell\b|\bsin decir\b|\bsans en parler\b",
        r"\bohne jemanden\b|\btoday\b|\bhoy mismo\b|\baujourd'hui\b|\bheute\b|\burgent\w*|\bright now\b",
    ),
}
CUES = LazyPatterns(_CUE_SOURCES)
CUE_NAMES: tuple[str, ...] = tuple(CUES)


@per_prompt
def cues_of(prompt: str) -> tuple[str, ...]:
    """Names of the cue families that match ``prompt``, in ``CUE_NAMES`` order."""
    return CUES.matching(prompt)


def cue_vector(prompt: str) -> list[float]:
    hits = set(cues_of(prompt))
    return [float(n in hits) for n in CUE_NAMES]


# --- floors: a few high-precision situations that escalate whatever the classifier says.
# Written from general knowledge (published suicide warning signs, the wording of threats,
# state-changing commands aimed at production); each was checked on the train splits to fire
# on no low-risk train prompt (research/train_router.py prints what they fire on). A floor
# applies only when the prompt is not an operation on the words (task:transform).
_PROD = r"(?:prod(?:uction)?\b|live (?:site|database|db|servers?|cluster))"
_CHANGE = (
    r"(?:disabl\w*|turn(?:ing)? off|switch(?:ing)? off|shut(?:ting)? down|stop(?:ping)?|kill\w*"
    r"|mut(?:e|ing)|wip(?:e|ing)|drop(?:ping)?|delet\w*|reboot\w*|restart\w*|upgrad\w*"
    r"|open(?:ing)?|expos\w*)"
)
_FLOOR_SOURCES: dict[str, str] = {
    "floor:self-harm": any_of(
        r"\b(?:kill|hurt|harm|cut|cutting)\w* (?:my ?self|my (?:arm|wrist|leg)s?)\b",
        r"\bsuicidal\b|\bsuicide (?:thoughts|note|plan)s?\b|\b(?:thinking|thought) (?:about|of) suicide\b",
        r"\bend (?:it all|my life)\b|\bno (?:point|reason) (?:anymore|in living|to live)\b",
        r"\bbetter off without me\b|\bwant(?:ed)? to die\b|\bgoodbye (?:note|letter)s?\b",
        r"\b(?:stockpil|hoard|sav|keep)\w* (?:up )?(?:all )?my (?:\w+ )?(?:pills|tablets)\b",
        r"\bquitarme la vida\b|\bme quiero morir\b|\bmich (?:umbringen|ritzen)\b|\bnicht mehr leben\b",
        r"\bme (?:tuer|suicider)\b|\ben finir\b|\bme faire du mal\b|\bhacerme daño\b",
    ),
    "floor:threat": any_of(
        r"\b(?:you|he|she|they)(?:'ll| will) (?:regret|pay for)\b|\b(?:you|he|she)(?:'d| had) better\b",
        r"\bsomething (?:might|could|will) happen to\b|\bI know where (?:you|he|she|they) (?:live|work)",
        r"\bthreatening (?:note|letter|message|text|email)\b|\bso (?:he|she|they) (?:gets?|feels?|are|is) scared\b",
        r"\b(?:scare|frighten|intimidate) (?:him|her|them)\b",
        r"\bte vas a arrepentir\b|\bse va a arrepentir\b|\bsé dónde (?:vive|trabaja)s?\b",
        r"\bwirst es bereuen\b|\bes bereuen wird\b|\bweiß, wo (?:du|er|sie) wohn",
        r"\bfaire peur\b|\btu vas le regretter\b|\bje sais où (?:tu|il|elle) (?:habite|travaille)",
    ),
    "floor:prod-change": any_of(
        rf"\b{_CHANGE}\b[^.?!\n]{{0,40}}\b(?:on|in|to|of) (?:the )?{_PROD}",
        rf"\b{_PROD}[^.?!\n]{{0,25}}\b{_CHANGE}\b",
    ),
}
FLOORS = LazyPatterns(_FLOOR_SOURCES)
FLOOR_NAMES: tuple[str, ...] = tuple(FLOORS)


@per_prompt
def floors_of(prompt: str) -> tuple[str, ...]:
    """Floors that fire on ``prompt``: situations escalated whatever the probability."""
    folded = fold(prompt)
    if CUES.may_match("task:transform", folded) and CUES["task:transform"].search(prompt):
        return ()
    return FLOORS.matching(prompt, folded)
