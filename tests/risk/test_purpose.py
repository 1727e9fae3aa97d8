"""The purpose signal (semantic-v9, ``loomc.risk.purpose``): each family fires on what it names
and not on its harmless look-alikes, in English, Spanish, German and French; its rules
(``purpose-floor``, ``play-calm``) change a decision only in the direction they name; any text
gives a vector of zeros and ones. The examples are written here, not taken from a routing split.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.risk.purpose import (
    DOMAIN_NAMES,
    FLOOR_FAMILIES,
    PURPOSE_NAMES,
    code_like,
    domains_of,
    families_of,
    purpose_floor,
    purpose_vector,
)
from loomc.risk.signals import V8_NAMES, apply_rules, play_calm, signal_vector

# Code or configuration whose domain is the hazard, asked about with a harmless verb.
PURPOSEFUL = [
    (
        "money",
        "Add type hints please:\n\ndef refund(order, amount):\n"
        "    gateway.refund(order.id, amount)\n    order.status = 'refunded'",
    ),
    (
        "secret",
        "Make this shorter:\n\nimport secrets\nseed_phrase = make_mnemonic(words, 24)\n"
        "print(seed_phrase)",
    ),
    (
        "dose",
        "Pick a better name for this function, it runs on the ward tablets:\n\n"
        "def f(weight_kg, mg_per_kg):\n    return weight_kg * mg_per_kg",
    ),
    (
        "access",
        'Format this JSON for the wiki:\n\n{"Effect": "Allow", "Principal": "*", '
        '"Action": "s3:PutObject"}',
    ),
    (
        "interlock",
        "Rename the variables here:\n\nif temp > max_temp:\n    relay.off()\nwatchdog.kick()",
    ),
    (
        "auth",
        "Tidy this up:\n\ndef login(user, password):\n    session['user'] = user\n    return True",
    ),
    (
        "dose",
        "Renombra las variables de este código de nuestra bomba de infusión:\n\n"
        "def f(p, d):\n    return p * d  # dosis por kg",
    ),
    (
        "money",
        "Kannst du die Einrückung korrigieren?\n\ndef ueberweisung(konto, betrag):\n"
        "    bank.transfer(konto, betrag)",
    ),
    (
        "access",
        "Peux-tu reformater ce YAML ?\n\nroles:\n  admin:\n    permissions: ['*']",
    ),
]

# Harmless code with alarming identifiers, framed as play: no domain, no floor.
PLAYFUL = [
    "Why does my tag game crash?\n\nlet victim = players.pop().unwrap();\nchase(victim);",
    "My escape room's fake bomb timer lags:\n\nwhile t > 0:\n    t -= 1\n    show(t)",
    "¿Por qué falla mi juego de piratas?\n\ndef saquear(barco):\n    barco.botin += 1",
    "Warum blinkt mein Spiel-Sprite so schnell?\n\nsprite.visible = !sprite.visible;",
    "Pourquoi mon jeu plante ?\n\nfunction exploser(navire) { navire.pv = 0; }",
]

CLOUD_SECRETS = [
    "took a photo of my 24 recovery words and it synced to google photos, fine?",
    "keeping the wallet seed phrase in apple notes for now",
    "mis 12 palabras de recuperación están en una captura en la nube, ¿pasa algo?",
    "Ich habe die 24 Wörter meiner Wallet in den iCloud Notizen gespeichert.",
    "J'ai mis ma phrase de récupération dans une note sur iCloud, c'est grave ?",
]
NOT_CLOUD_SECRETS = [
    "What is a seed phrase, in one sentence?",
    "Which cloud storage has the cheapest photo plan?",
    "Wie viele Wörter hat dieser Satz?",
]

POWER_LEADS = [
    "running the hot tub off an extension reel from the shed till the electrician comes",
    "the fan heater is on a power strip behind the sofa, with the kettle",
    "Tengo la estufa y la secadora en el mismo alargador.",
    "Der Heizlüfter hängt an der Kabeltrommel im Keller.",
    "Le radiateur est branché sur une rallonge enroulée.",
]
NOT_POWER_LEADS = [
    "How long should an extension lead be for a desk lamp?",
    "Which hot tub chemicals are kindest to skin?",
    "Quelle rallonge pour une guirlande de Noël ?",
]

HARMLESS_SHAPES = [
    ("p9:word-op", "Dame tres rimas con 'explosión' para una canción."),
    ("p9:word-op", "Wie trennt man 'Brandbeschleuniger' am Zeilenende?"),
    ("p9:word-op", "Pourquoi dit-on « tomber dans les pommes » ?"),
    ("p9:word-op", "Make 'Killer Brownies' sound fancier for the menu."),
    ("p9:explain", "Explain to a class of ten-year-olds how vaccines train the body."),
    ("p9:explain", "Explique à des CM2 la différence entre un virus et une bactérie."),
    ("p9:how-many", "Wie viele Richter sitzen beim Schwurgericht?"),
    ("p9:how-many", "¿Cuántos huesos tiene una jirafa?"),
    ("p9:office", "In Excel, how do I colour a cell red when B2 is over 3?"),
]


@pytest.mark.parametrize(("domain", "prompt"), PURPOSEFUL)
def test_code_whose_domain_is_the_hazard_reaches_the_floor(domain: str, prompt: str) -> None:
    assert code_like(prompt)
    assert domain in domains_of(prompt)
    assert "p9:code-purpose" in families_of(prompt)
    assert purpose_floor(prompt) != ()
    esc, why = apply_rules(False, prompt, ("purpose-floor",))
    assert esc is True and why is not None and "p9:code-purpose" in why


@pytest.mark.parametrize("prompt", PLAYFUL)
def test_code_framed_as_play_is_calm_and_not_floored(prompt: str) -> None:
    fams = families_of(prompt)
    assert "p9:code-purpose" not in fams and "p9:play-code" in fams
    assert purpose_floor(prompt) == ()
    assert play_calm(prompt)
    esc, why = apply_rules(True, prompt, ("play-calm",))
    assert esc is False and why is not None and why.startswith("play-calm")


def test_the_same_domain_in_prose_without_code_is_a_column_not_a_floor() -> None:
    prompt = "What does a refund policy usually say about digital downloads?"
    assert "money" in domains_of(prompt)
    assert not code_like(prompt) and purpose_floor(prompt) == ()


def test_play_code_that_handles_a_domain_is_not_calm() -> None:
    """A game's login code is still login code: the domain wins over the frame."""
    prompt = "For my game's website:\n\ndef login(user, password):\n    session['u'] = user"
    assert "p9:play-code" not in families_of(prompt) and not play_calm(prompt)


def test_a_play_frame_never_calms_a_named_situation() -> None:
    """Only a situation some signal names (a floor, a cue, an exposure family) stops the calm:
    "before I shut down the live database", said 40 characters after "prod", names none, and
    the rule would calm it (a known limit, as for v7's ``calm``)."""
    floored = (
        "Our game server: check this before I restart it on production?\n\n"
        "def reset(world):\n    world.tiles = []"
    )
    assert "p9:play-code" in families_of(floored) and not play_calm(floored)
    exposed = (
        "For our club's game night I post the members' addresses on Facebook:\n\n"
        "for m in members:\n    print(m.name)"
    )
    assert not play_calm(exposed)


@pytest.mark.parametrize("prompt", CLOUD_SECRETS)
def test_secrets_kept_in_the_cloud(prompt: str) -> None:
    assert "p9:cloud-secret" in purpose_floor(prompt)


@pytest.mark.parametrize("prompt", NOT_CLOUD_SECRETS)
def test_secrets_or_clouds_alone_are_not_that(prompt: str) -> None:
    assert "p9:cloud-secret" not in families_of(prompt)


@pytest.mark.parametrize("prompt", POWER_LEADS)
def test_high_power_appliances_on_extension_leads(prompt: str) -> None:
    assert "p9:power-lead" in purpose_floor(prompt)


@pytest.mark.parametrize("prompt", NOT_POWER_LEADS)
def test_a_lead_or_an_appliance_alone_is_not_that(prompt: str) -> None:
    assert "p9:power-lead" not in families_of(prompt)


@pytest.mark.parametrize(("family", "prompt"), HARMLESS_SHAPES)
def test_harmless_request_shapes(family: str, prompt: str) -> None:
    fams = families_of(prompt)
    assert family in fams
    assert not set(fams) & set(FLOOR_FAMILIES)


def test_long_prompts_and_long_operations() -> None:
    log = "\n".join(f"[18:{i:02d}] Steve was slain by Zombie" for i in range(30))
    prompt = "Count the times each player died in this log:\n" + log
    assert len(prompt) > 500
    fams = families_of(prompt)
    assert "p9:long" in fams and "p9:long-op" in fams
    situated = "My 24 recovery words are in iCloud notes. " + "Some padding text here. " * 25
    fams = families_of(situated)
    assert "p9:long" in fams and "p9:long-op" not in fams


def test_purpose_columns_come_after_v8s() -> None:
    """v4-v8 files read a prefix of the columns (the router cuts its input to its weights'
    width), so the purpose columns are appended, never inserted."""
    prompt = PURPOSEFUL[0][1]
    vec = signal_vector(prompt)
    assert vec[: len(V8_NAMES)] == signal_vector(prompt, len(V8_NAMES))
    assert vec[len(V8_NAMES) :] == purpose_vector(prompt)
    assert len(PURPOSE_NAMES) == len(DOMAIN_NAMES) + 10


def test_the_floor_never_lowers_and_the_calm_never_raises() -> None:
    purposeful, playful = PURPOSEFUL[0][1], PLAYFUL[0]
    assert apply_rules(True, purposeful, ("purpose-floor",)) == (True, None)
    assert apply_rules(False, playful, ("play-calm",)) == (False, None)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=600))
def test_any_text_gives_zeros_and_ones(text: str) -> None:
    vec = purpose_vector(text)
    assert len(vec) == len(PURPOSE_NAMES) and set(vec) <= {0.0, 1.0}
    assert set(purpose_floor(text)) <= set(FLOOR_FAMILIES)
    assert isinstance(play_calm(text), bool)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(PURPOSEFUL),
    st.text(alphabet=st.characters(categories=["Nd", "Zs", "Po"]), max_size=80),
)
def test_prose_before_the_code_never_hides_its_purpose(case: tuple[str, str], prose: str) -> None:
    """Whatever is said first (digits, spaces, punctuation: no play frame), the code's domain
    still reaches the floor."""
    domain, code = case
    prompt = f"{prose}\n\n{code}"
    assert domain in domains_of(prompt)
    assert "p9:code-purpose" in purpose_floor(prompt)
