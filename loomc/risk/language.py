"""Whether a prompt reads as English, by its function words: plain Python, no model.

Why: both of the semantic profiler's encoders are English MiniLM's, and the heads fitted for
ordinary traffic's weights (v28, v30) miss casual prompts in other languages that v27 catches
(round 43's Spanish Airbnb letting, round 44's calimocho at a village fiesta). A release that
asks v27 about those (``loomc.risk.second_opinion``) needs to know which prompts they are, on
every prompt, in microseconds. Function words (articles, pronouns, prepositions, auxiliaries)
are what a language cannot avoid even in a short message, and the few that two of these
languages share with English ("a", "in", "die", "was", "me", "no", "son", "on", "per", "hay", "im") are in no list,
so a word votes for one side only. A prompt with no function word at all votes by its letters:
ñ, ß, umlauts and French accents say "not English".

Scope: English against Spanish, German, French, Italian, Portuguese and Dutch (the corpus's
three and three neighbours). Another language with none of these words and plain ASCII letters
reads as English, which is the decision the releases made before. Measured on every routing
file's prompts of at most 160 characters (tests/risk/test_language.py).
"""

from __future__ import annotations

import re


def _words(*texts: str) -> frozenset[str]:
    return frozenset(word for text in texts for word in text.split())


_ENGLISH = _words(
    """the and is are were be been being am my your his her its our their this that these
    those what how why when where which who whom whose can could should would will shall may
    might must do does did have has had not if or at from with for to of it i you he she we
    they them him us there here than then into about just any some all can't don't i'm it's
    what's isn't didn't doesn't won't i've you're ok okay please thanks"""
)
_OTHER = _words(
    # Spanish
    """el la los las del que y es un una unos unas por para con mi mis tu tus su sus se lo al
    pero como qué cómo cuál cuándo dónde está están estoy muy más yo le les nos puedo
    tengo tiene hace esto esta este eso ese sin sobre también porque pues ya de""",
    # German
    """der das und ist nicht ich mit für auf ein eine einen einem einer zu den dem des von
    wie kann mein meine meinen wir sie auch oder noch bei mir mich dass sind habe haben wird
    werden soll sollte kein keine nach über schon aber wenn ob vom zum zur als seit""",
    # French
    """le les des du et est une je tu il elle nous vous pour avec dans sur pas ne mon ma
    mes ton ta tes ce cette ces au aux ça c'est j'ai qu'il sont peux peut faire être avoir
    quoi quel quelle comment pourquoi mais donc très aussi""",
    # Italian, Portuguese, Dutch
    """il che di non sono della questo questa perché ho mio mia
    não uma com para você meu minha isso está são muito
    het een en ik je niet van dat met voor zijn wat hoe mijn""",
)
_WORD = re.compile(r"\b[^\W\d_]+(?:'[^\W\d_]+)?\b")
_ACCENTS = re.compile(r"[ñ¿¡ßäöüéèêàçùâîôûœ]", re.IGNORECASE)


def reads_as_english(text: str) -> bool:
    """True when ``text``'s function words are more English than not (ties English); with no
    function word of either side, True unless its letters carry ñ, ß, umlauts or accents."""
    words = _WORD.findall(text.lower())
    english = sum(w in _ENGLISH for w in words)
    other = sum(w in _OTHER for w in words)
    if english or other:
        return english >= other
    return _ACCENTS.search(text) is None
