"""The extra signals of semantic-v7, -v8 and -v9: task versus topic (``loomc.risk.tasks``), code
hazards (``loomc.risk.codehazards``), from v8 the situations the cues missed
(``loomc.risk.exposure``: privacy exposure, home hazards, building works, known dangerous pairs,
someone else handling a person's money) and, from v9, what a prompt is for
(``loomc.risk.purpose``: code whose domain is the hazard, secrets in the cloud, high-power
appliances on extension leads, harmless request shapes), as classifier columns and as optional
decision rules.

Why columns *after* the neighbour features: a router's input is cut to its weights' width
(``loomc.risk.router.assemble``), so files trained before v7 (v4, v6) never see them and are
served prompt for prompt as before; only a file whose weights are wider reads them.

The rules (a release names which it uses; ``research/loso_router.py`` chose them):

* ``hazard-floor`` — code in the prompt holds a hazard family: escalate, whatever the
  probability (as the cue floors do);
* ``situation-floor`` (v8) — the prompt holds one of ``loomc.risk.exposure.SITUATIONS`` and
  does not open with an operation on words: escalate, whatever the probability;
* ``purpose-floor`` (v9) — the prompt holds code or configuration serving a consequential
  domain, a secret kept in the cloud or a high-power appliance on an extension lead
  (``loomc.risk.purpose.FLOOR_FAMILIES``): escalate, whatever the probability;
* ``people-floor`` (v14) — the prompt's code tests a protected characteristic of a person or
  handles where people are (``loomc.risk.people``): escalate, whatever the probability;
* ``people-floor-wide`` (v15) — the same, read more widely (``people_floor_wide``: more
  languages' terms, groups named by value, bare SQL, code inline in a sentence);
* ``people-floor-tracking`` (v16) — the wide reading with more words for where people have been
  (a location history, German compounds of ``Standort``) and for employees
  (``people_floor_tracking``);
* ``people-floor-table`` (v17) — the wide reading, and a characteristic that prices or scores a
  person through a lookup (a table of multipliers keyed by nationality): ``people_floor_table``;
* ``alarm-floor`` (v17) — the prompt's code acknowledges, silences or suppresses an alarm with
  stakes named (a critical result, a patient, a smoke detector): ``loomc.risk.alarms``;
* ``safety-floor`` (v21) — the prompt's code bypasses a protective device, mutes an alarm with
  stakes named, loosens a limit because the alarms were too many, or downgrades a care risk
  assessment: ``loomc.risk.safety``;
* ``remote-code-floor`` (v34) — a download is run as code without being read: piped into a
  shell or interpreter, substituted into its program, or handed to ``mshta`` / ``regsvr32``
  (``loomc.risk.remote_code``);
* ``lexical-floor`` (v25) — a logistic regression over the prompt's character n-grams, learnt
  from the corpus, gives P >= its threshold: ``loomc.risk.lexical`` (a model's reading, not a
  named construct: it reads the spelling of any language, where both encoders read English);
* ``lexical-floor-v26`` (v26) — the same floor with the model retrained on every file to round
  39, ordinary traffic among them; ``lexical-floor-v27`` (v27), on every file to round 40;
* ``play-calm`` (v9) — the prompt's code is framed as a game, story or toy and names no domain
  and no hazard construct, and no situation, floor or "is it safe?" is around it: do not escalate;
* ``calm`` — the prompt opens with an operation on words, an artefact or code's wording, and
  describes no situation (no ``situation:*`` cue, no floor, no code hazard, no "is it safe?"):
  do not escalate, whatever the identifiers or the quoted words say.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from loomc.risk.alarms import alarm_floor
from loomc.risk.codehazards import CODE_FEATURE_NAMES, code_vector, hazards_of
from loomc.risk.context import CONTEXT_DIM, context_vector
from loomc.risk.cues import cues_of, floors_of
from loomc.risk.exposure import EXPOSURE_NAMES, exposure_vector, situations_of
from loomc.risk.lexical import FLOORS as LEXICAL_FLOORS
from loomc.risk.people import (
    people_floor,
    people_floor_table,
    people_floor_tracking,
    people_floor_wide,
)
from loomc.risk.purpose import PURPOSE_NAMES, families_of, purpose_floor, purpose_vector
from loomc.risk.remote_code import remote_code_floor
from loomc.risk.safety import safety_floor
from loomc.risk.tasks import TASK_FEATURE_NAMES, operation_first, task_vector, tasks_of

V7_NAMES: tuple[str, ...] = TASK_FEATURE_NAMES + CODE_FEATURE_NAMES
V8_NAMES: tuple[str, ...] = V7_NAMES + EXPOSURE_NAMES  # v8's columns: v7's, then exposure's
SIGNAL_NAMES: tuple[str, ...] = V8_NAMES + PURPOSE_NAMES  # v9's: v8's, then purpose's
V10_WIDTH = len(SIGNAL_NAMES) + CONTEXT_DIM  # v10's (semantic-v19): v9's, then the context block
RULES = (
    "hazard-floor",
    "calm",
    "situation-floor",
    "purpose-floor",
    "people-floor",
    "people-floor-wide",
    "people-floor-tracking",
    "people-floor-table",
    "alarm-floor",
    "safety-floor",
    "remote-code-floor",
    *LEXICAL_FLOORS,
    "play-calm",
)


def signal_vector(prompt: str, columns: int = len(SIGNAL_NAMES)) -> list[float]:
    """The first ``columns`` of the v9 columns, in ``SIGNAL_NAMES`` order, computed only as far
    as they are read: a file trained on v7's reads ``len(V7_NAMES)``, so no exposure or purpose
    pattern runs for it, and v8's no purpose pattern. v9's and every later one's read them all;
    v19's, v22's and every later one's (the default, v35, among them) also read the context block after them (``signal_columns``)."""
    out = task_vector(prompt) + code_vector(prompt)
    if columns > len(out):
        out += exposure_vector(prompt)
    if columns > len(out):
        out += purpose_vector(prompt)
    return out[:columns]


def signal_columns(
    prompt: str, columns: int, embed: Callable[[str], Sequence[float]]
) -> list[float]:
    """The first ``columns`` of v10's columns: v9's (``signal_vector``), then the context
    block (``loomc.risk.context``), whose prose ``embed`` (the static encoder's) embeds. Only a
    file wider than v9's columns (semantic-v19) reads the block, so no other one embeds prose."""
    out = signal_vector(prompt, min(columns, len(SIGNAL_NAMES)))
    if columns > len(SIGNAL_NAMES):
        out += context_vector(prompt, embed)[: columns - len(SIGNAL_NAMES)]
    return out


def situation_floor(prompt: str) -> tuple[str, ...]:
    """The situations (``loomc.risk.exposure``) that escalate ``prompt`` under the
    ``situation-floor`` rule: none when it opens with an operation on words."""
    if operation_first(prompt):
        return ()
    return situations_of(prompt)


def hazard_floor(prompt: str) -> tuple[str, ...]:
    """``code-hazard:<family>`` for each hazard family in the prompt's code."""
    return tuple(f"code-hazard:{name}" for name in hazards_of(prompt))


def calm(prompt: str) -> bool:
    """An operation with no situation around it (see the module doc)."""
    if not operation_first(prompt) or "ask:is-it-safe" in tasks_of(prompt):
        return False
    if any(c.startswith("situation:") for c in cues_of(prompt)):
        return False
    return not floors_of(prompt) and not hazards_of(prompt)


def play_calm(prompt: str) -> bool:
    """Code framed as play, with no domain, hazard, situation, floor or "is it safe?" around it."""
    if "p9:play-code" not in families_of(prompt) or "ask:is-it-safe" in tasks_of(prompt):
        return False
    if any(c.startswith("situation:") for c in cues_of(prompt)):
        return False
    return not floors_of(prompt) and not situations_of(prompt)


# The floor rules, in the order they are tried: each names what it found, or nothing.
FLOORS: dict[str, Callable[[str], tuple[str, ...]]] = {
    "hazard-floor": hazard_floor,
    "situation-floor": situation_floor,
    "purpose-floor": purpose_floor,
    "people-floor": people_floor,
    "people-floor-wide": people_floor_wide,
    "people-floor-tracking": people_floor_tracking,
    "people-floor-table": people_floor_table,
    "alarm-floor": alarm_floor,
    "safety-floor": safety_floor,
    "remote-code-floor": remote_code_floor,
    **LEXICAL_FLOORS,  # last: a model's reading, after every named construct
}


def apply_rules(escalate: bool, prompt: str, rules: tuple[str, ...]) -> tuple[bool, str | None]:
    """The decision after ``rules``, and why it changed (None when it did not)."""
    if not escalate:
        for name, floor in FLOORS.items():
            found = floor(prompt) if name in rules else ()
            if found:
                return True, ", ".join(found) + ": escalate"
    if "play-calm" in rules and escalate and play_calm(prompt):
        return False, "play-calm: code for a game or story, no domain, hazard or situation"
    if "calm" in rules and escalate and calm(prompt):
        return False, "calm: an operation on words or code, no situation described"
    return escalate, None
