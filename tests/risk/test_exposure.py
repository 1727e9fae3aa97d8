"""semantic-v8's situation families (loomc.risk.exposure) and its ``situation-floor`` rule: each
family fires on situations written for it, in English, Spanish, German and French, and not on
their harmless counterparts (the same words in an operation on words, or without the other half
of the situation); the parser never raises on any text. The examples are written here, not taken
from a routing split."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.risk.exposure import EXPOSURE_NAMES, exposure_vector, families_of, situations_of
from loomc.risk.signals import (
    SIGNAL_NAMES,
    V7_NAMES,
    V8_NAMES,
    apply_rules,
    signal_vector,
    situation_floor,
)

SITUATIONS = [
    # (family, prompt): the family must fire and the floor must escalate
    (
        "x8:exposure",
        "We'll post the volunteers' phone numbers and home addresses on the open forum.",
    ),
    ("x8:exposure", "Vamos a publicar en la web las notas de los alumnos con su dirección."),
    ("x8:exposure", "Der Verein will die Mitgliederliste mit Adressen online stellen."),
    ("x8:exposure", "On va mettre en ligne la liste des adhérents avec leurs adresses."),
    ("x8:open-link", "The payroll sheet is shared with anyone with the link, quicker that way."),
    ("x8:open-link", "La hoja está abierta a cualquiera con el enlace."),
    ("x8:open-link", "Die Datei ist für jeder mit dem Link freigegeben."),
    ("x8:home-hazard", "The bookcase in the nursery isn't fixed to the wall yet."),
    ("x8:home-hazard", "My son swallowed two magnets from the fridge toy."),
    ("x8:home-hazard", "There's a gas smell in the hall since this morning."),
    ("x8:home-hazard", "Huele raro, creo que es olor a gas en la cocina."),
    ("x8:home-hazard", "Es riecht nach Gas im Keller."),
    ("x8:home-hazard", "Il y a une odeur de gaz dans la cave."),
    ("x8:works", "We're knocking through the load-bearing wall on Saturday."),
    ("x8:works", "Vamos a tirar el muro de carga sin licencia."),
    ("x8:works", "Wir reißen die tragende Wand ohne Genehmigung raus."),
    ("x8:works", "On abat le mur porteur sans permis."),
    ("x8:known-danger", "went scuba diving this morning, flying home tonight"),
    ("x8:known-danger", "the dog ate a pack of xylitol gum"),
    ("x8:known-danger", "Der Hund hat Schokolade gefressen, ist das schlimm?"),
    ("x8:known-danger", "Mon chien a mangé du chocolat noir."),
    ("x8:money-proxy", "Grandma's carer has her card and PIN and does the shopping."),
    ("x8:money-proxy", "Su cuidadora tiene la tarjeta y el PIN."),
]

HARMLESS = [
    # the same topics with nothing at stake: no family the floor escalates on may fire
    "Write a caption for the photo of our prize pumpkin that we're posting online.",
    "Post the bake sale total on the school page, no names.",
    "Which year did the GDPR come into force?",
    "Publica el horario de verano de la piscina en la web.",
    "Schreib eine Einladung zum Sommerfest.",
    "Propose un titre pour l'affiche de la kermesse.",
    "My band's called Carbon Monoxide, logo in caps?",
    "Rhyme something with 'ladder' for a nursery book.",
    "What's the capital of Australia?",
    "Give me three pun names for a shop selling fairy lights.",
]


@pytest.mark.parametrize(("family", "prompt"), SITUATIONS)
def test_each_family_fires_on_its_situation(family: str, prompt: str) -> None:
    assert family in families_of(prompt)
    assert situation_floor(prompt)
    assert apply_rules(False, prompt, ("situation-floor",))[0] is True


@pytest.mark.parametrize("prompt", HARMLESS)
def test_harmless_counterparts_stay_below_the_floor(prompt: str) -> None:
    assert situations_of(prompt) == ()
    assert apply_rules(False, prompt, ("situation-floor",)) == (False, None)


def test_sharing_or_records_alone_is_not_exposure() -> None:
    """Each half is ordinary: an act of sharing, or records kept to oneself."""
    assert "x8:exposure" not in families_of("Share the cake recipe on Facebook.")
    assert "x8:exposure" not in families_of("Sort the members' addresses by postcode.")
    assert "x8:exposure" in families_of("Share the members' addresses on Facebook.")


def test_an_operation_on_words_is_not_a_situation() -> None:
    """The floor does not fire on a prompt that opens with an operation on words (quoted danger)."""
    prompt = "Translate 'post the patients' addresses online' into German."
    assert "x8:exposure" in families_of(prompt)
    assert situation_floor(prompt) == ()


def test_the_floor_never_lowers_a_decision() -> None:
    assert apply_rules(True, "What's the capital of Peru?", ("situation-floor",)) == (True, None)


def test_v8_columns_come_after_v7s() -> None:
    """A file trained on v7's columns reads the first ``len(V7_NAMES)`` (the router cuts its input
    to its weights' width), so the exposure columns are appended, never inserted."""
    prompt = "Share the members' addresses on Facebook."
    vec = signal_vector(prompt)
    assert SIGNAL_NAMES[: len(V7_NAMES)] == V7_NAMES
    assert vec[len(V7_NAMES) : len(V8_NAMES)] == exposure_vector(prompt)
    assert len(exposure_vector(prompt)) == len(EXPOSURE_NAMES)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_gives_zeros_and_ones(text: str) -> None:
    vec = exposure_vector(text)
    assert len(vec) == len(EXPOSURE_NAMES) and set(vec) <= {0.0, 1.0}
    assert set(situation_floor(text)) <= set(EXPOSURE_NAMES)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(SITUATIONS),
    st.text(alphabet=st.characters(categories=["L", "Zs"]), max_size=80),
)
def test_a_situation_after_unrelated_prose_still_fires(case: tuple[str, str], prose: str) -> None:
    """Rambling before the situation does not hide it (the families search the whole prompt)."""
    family, prompt = case
    assert family in families_of(f"{prose}.\n{prompt}")
