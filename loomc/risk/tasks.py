"""Task versus topic (semantic-v7): what a prompt asks to *do*, apart from what it *mentions*.

Why: a router trained on a few hundred labelled prompts learns topics ("poison", "ransomware",
"tornado", a child, a fire brigade) and escalates harmless requests that merely mention them:
hyphenating a word, conjugating a verb, writing a thank-you card, a caption, a docstring, a
trivia answer. What decides the risk of those is the operation: an operation on words, on a
harmless artefact or on code's wording cannot hurt anyone whatever the words are, unless the
prompt also describes a real situation (the cues' ``situation:*``), which this module leaves to
them. The converse is the short, trigger-free question about one's own plans ("... ok?",
"is it safe to ..."): the asker is about to act, so a wrong answer lands on them.

Families, each in English, Spanish, German and French, written from general knowledge of how
such requests are phrased (not from any test split's wording):

* ``do:language`` — operations on words: translate, spell, hyphenate, syllables, conjugate,
  plural, define, what an expression means, synonyms, rhymes, pronunciation, etymology, grammar
  and punctuation, the difference between two quoted words.
* ``do:compose`` — writing a harmless artefact: a card, an invitation, a caption, a toast, a
  poem, a slogan, a name; shortening, summarising, rephrasing, proofreading, an emoji.
* ``do:code-text`` — cosmetic work on code: a docstring, a comment, a clearer name, type hints,
  formatting, "more idiomatic", explaining what a line does.
* ``do:trivia`` — questions about the past or general facts (who/which/when/what year ...).
* ``frame:play`` — the artefact is for a game, a story, a class, a quiz, a party, a newsletter,
  a simulation or a test fixture.
* ``quoted`` — the alarming words are quoted (a quoted span of one to six words).
* ``ask:is-it-safe`` — a short question about one's own plan or state ("ok?", "safe to ...?",
  "should I worry", "¿es seguro?", "ist das gefährlich?", "c'est grave ?").
"""

from __future__ import annotations

import re

from loomc.risk.cues import LazyPatterns, any_of
from loomc.risk.memo import per_prompt

_F = re.IGNORECASE | re.UNICODE


_TASK_SOURCES: dict[str, str] = {
    "do:language": any_of(
        r"\btranslat\w*|\bspell\w*|\bhyphen\w*|\bsyllab\w*|\bconjugat\w*|\bplural\b|\bsingular\b",
        r"\bsynonyms?\b|\bantonyms?\b|\brhym\w*|\bpronounc\w*|\betymolog\w*|\banagram\w*|\bacronym\w*",
        r"\bwhat does (?:the )?(?:word|phrase|expression|idiom|term)\b|\bmeaning of (?:the )?"
        r"(?:word|phrase|expression|idiom|term)\b|^\s*define\b|\bdefinition of\b",
        r"\b(?:grammar|punctuation|spelling|grammatical(?:ly)?|tense|noun|verb|adjective)\b",
        r"\bdifference between ['\"‘“«]|['\"‘“][^'\"’”]{1,40}['\"’”]\s*(?:vs\.?|versus|or)\s*['\"‘“]",
        r"\btradu\w*|\bdeletre\w*|\bconjug\w*|\bsílaba\w*|\bsinónim\w*|\bqué significa\b|\bsignificado\b"
        r"|\bcorrige (?:la |el )?(?:ortografía|puntuación|gramática|texto|frase)|\bdiferencia entre\b",
        r"\büberse\w*|\bbuchstabier\w*|\bkonjugier\w*|\bsilbe\w*|\bsynonym\w*|\bwas bedeutet\b"
        r"|\bsprachlich\b|\brechtschreib\w*|\bzeichensetzung\b|\bgrammatik\b|\bunterschied zwischen\b",
        r"\btradui\w*|\bépel\w*|\bconjugu\w*|\bsyllabe\w*|\bsynonyme\w*|\bque (?:veut dire|signifie)\b"
        r"|\borthographe\b|\bponctuation\b|\bgrammaire\b|\bdifférence entre\b|\bpluriel\b",
    ),
    "do:compose": any_of(
        r"\b(?:write|draft|compose|suggest|come up with|give me)\b[^.?!\n]{0,40}\b(?:card|invitation|invite"
        r"|caption|toast|poem|limerick|haiku|slogan|tagline|title|name|headline|message|note|speech"
        r"|announcement|shout-?out|bio|blurb|jingle|riddle|joke|acrostic)s?\b",
        r"\b(?:shorten|summari[sz]e|rephrase|reword|paraphrase|proofread|tighten|condense)\b",
        r"\bemoji\b|\bthank-you\b|\bthank you (?:card|note)\b|\bcongratulat\w*|\bhappy birthday\b",
        r"\bescrib\w*\s+(?:un|una)\s+(?:mensaje|tarjeta|invitación|poema|texto|nota|brindis)\b"
        r"|\bfelicit\w*|\bresum\w*|\bacorta\w*|\breformula\w*",
        r"\bschreib\w*\s+(?:eine?n?|ein)\s+(?:\w+\s+)?(?:einladung|karte|gedicht|nachricht|text|rede"
        r"|glückwunsch\w*)|\bgratulier\w*|\bfass\w* [^.?!\n]{0,30}zusammen\b|\bkürze\b",
        r"\bécri[st]\w*\s+(?:un|une)\s+(?:\w+\s+)?(?:carte|invitation|poème|message|mot|texte|discours)"
        r"|\bfélicit\w*|\brésum\w*|\braccourci\w*|\breformul\w*|\bremerciement\w*",
    ),
    "do:code-text": any_of(
        r"\bdocstrings?\b|\badd (?:a )?comments?\b|\bcomment (?:this|explaining)\b|\btype hints?\b",
        r"\b(?:clearer|better|more descriptive) (?:variable |function )?names?\b|\brename (?:this|the)\b",
        r"\bmore (?:pythonic|idiomatic|readable)\b|\b(?:re)?format (?:this|the) (?:code|snippet|function)",
        r"\bwhat does this (?:line|snippet|code|function|command|regex)\b|\bexplain (?:this|the) "
        r"(?:line|snippet|code|function|regex)\b|\bf-strings?\b|\blist comprehension\b",
    ),
    "do:trivia": any_of(
        r"^\s*(?:who|which|when (?:did|was|were)|what year|in what year|in which|what was|name the"
        r"|how many \w+ did)\b",
        r"^\s*¿?\s*(?:quién|quiénes|cuál|cuándo|en qué año|qué (?:país|año|rey|barco))\b",
        r"^\s*(?:wer|welche[rsmn]?|wann|in welchem jahr)\b",
        r"^\s*(?:qui|quel(?:le)?s?|quand|en quelle année)\b",
        r"\b(?:in|en|im|dans)\s+(?:1[0-9]{3}|20[01][0-9])\b",
    ),
    "frame:play": any_of(
        r"\b(?:game|tabletop|campaign|dungeon|rpg|novel|story|fiction\w*|screenplay|quiz|trivia"
        r"|crossword|homework|essay|class|lesson|school project|newsletter|menu|calendar|party"
        r"|halloween|podcast|museum|simulat\w*|unit test|test fixture|mock|toy|board game)\b",
        r"\b(?:juego|novela|cuento|clase|deberes|ensayo|fiesta|menú|Spiel\w*|roman|aufsatz|unterricht"
        r"|hausaufgabe\w*|party|jeu|cours|devoirs|exposé|fête)\b",
    ),
    "quoted": r"['\"‘“«„]\s*[^'\"’”»“\n]{2,60}?\s*['\"’”»“]",
    "ask:is-it-safe": any_of(
        r"\b(?:ok|okay|safe|fine|alright|dangerous|bad|too much|too soon|too late)\s*\?",
        r"\b(?:is it|is that|is this|are they|would it be) (?:safe|ok|okay|fine|dangerous|bad)\b",
        r"\bshould I (?:worry|be worried|go|call)\b|\bcan I still\b|\bstill (?:ok|safe|fine)\b",
        r"\b(?:es|está) (?:seguro|peligroso|grave|normal)\b|\b(?:pasa|importa) algo\b",
        r"\bist (?:das|es) (?:gefährlich|schlimm|sicher|ok|okay|normal)\b|\bmuss ich mir sorgen\b",
        r"\bc'est (?:grave|dangereux|normal)\b|\best-ce (?:grave|dangereux)\b|\bje (?:peux|dois) encore\b",
    ),
}
TASK_NAMES: tuple[str, ...] = tuple(_TASK_SOURCES)
DOING = ("do:language", "do:compose", "do:code-text", "do:trivia")  # operations, not situations


# Each compiled on first need, and searched only where its literals are (loomc.risk.prescan).
TASKS = LazyPatterns(_TASK_SOURCES, _F | re.MULTILINE)


@per_prompt
def tasks_of(prompt: str) -> tuple[str, ...]:
    """The task families that match ``prompt``, in ``TASK_NAMES`` order."""
    return TASKS.matching(prompt)


_SENTENCE_END = re.compile(r"[.?!:\n]")


@per_prompt
def operation_first(prompt: str) -> bool:
    """Whether the prompt *opens* with an operation (``do:*`` within its first sentence): "Conjugate
    'poison'" does, "We turned off the login limit. Can you write the release note?" does not;
    the second describes its situation before asking for the operation."""
    m = _SENTENCE_END.search(prompt, 1)
    head = prompt[: m.end() if m else len(prompt)]
    return any(TASKS.patterns[name].search(head) for name in DOING)


def task_vector(prompt: str) -> list[float]:
    """Classifier features: one column per family, then "an operation" (any ``do:*``) and
    "opens with an operation" (``operation_first``)."""
    hits = set(tasks_of(prompt))
    doing = any(n in hits for n in DOING)
    return [float(n in hits) for n in TASK_NAMES] + [float(doing), float(operation_first(prompt))]


TASK_FEATURE_NAMES: tuple[str, ...] = (
    *tuple(f"task7:{n}" for n in TASK_NAMES),
    "task7:operation",
    "task7:operation-first",
)
