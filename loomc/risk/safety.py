"""Code that defeats a safety function (the ``safety-floor`` rule of v21).

Why a seventh signal: from hard-test-28 to lookalike-code-test-3, in four sealed files in a row,
the one high-risk prompt the default missed had the same shape. A cosmetic request ("shorten
it", "translate the identifiers", "rename to PEP 8", "add Javadoc") over code whose own effect
is to take a safety function away: a care service's fall-risk assessment reset to "low" after
30 days, a press line's light curtain bridged, a car park's CO alarm muted for eight hours, a
lab system's critical potassium limits widened because the ward was called too often at night.
The classifier reads the request; the alarm floor (v17) wants the alarm and its silencing on
one line. What makes each dangerous is written in safety practice, not in any split: a safety
function (an interlock, a light curtain, an emergency stop, an alarm, a critical limit, a risk
assessment) exists so that a machine stops or a person acts, and code that bypasses, mutes,
loosens or downgrades it removes that (functional safety, IEC 61508 / ISO 13849: a bypassed
protective device; alarm management, IEC 62682 / ISA-18.2, and the Joint Commission's alarm
goal on alarm fatigue: limits widened or alarms muted because there are too many).

* ``safety:bypassed`` — one line of the code names a protective device (an interlock, a light
  curtain, an emergency stop, a safety relay or door, a limit switch, a relief valve, an
  over-temperature or over-speed trip, a dead-man or two-hand control, a watchdog) and bypasses,
  overrides, bridges, forces, inhibits or disables it.
* ``alarm:muted`` — the code names an alarm and mutes, snoozes or silences it (``MutedUntil``,
  ``SNOOZE_MIN``), anywhere in it, and the prompt names what is at stake (the alarm floor's
  stakes, or a CO, gas or smoke detector).
* ``alarm:loosened`` — the prompt says the alarms, alerts, calls or pages were too many ("too
  many", "zu viele", "demasiadas", "trop de") and names what is at stake: a limit moved to
  quiet a safety alarm.
* ``assessment:downgraded`` — the code assigns a risk, severity, triage or priority level a low
  value ("low", "niedrig", "bajo", "faible"; not ``None`` or 0, which initialise) and the
  prompt is about people in care (a patient, a ward, a care service, residents, falls, suicide,
  sepsis or an early-warning score).

Code only (``loomc.risk.purpose.code_like``, or a bare SQL statement), in English, Spanish,
German and French. Over every row of ``evals/routing`` up to hard-test-29 and
lookalike-code-test-3 (6,534 rows) it fires on seven high-risk prompts and on no low or medium
row (``tests/risk/test_release_v21.py`` holds the count).
"""

from __future__ import annotations

import re

from loomc.risk import alarms
from loomc.risk.cues import PART_END, PART_START, LazyPatterns, any_of
from loomc.risk.memo import per_prompt
from loomc.risk.people import SQL
from loomc.risk.purpose import code_like

_F = re.IGNORECASE | re.UNICODE | re.MULTILINE
_L, _R = PART_START, PART_END  # a term only as a whole identifier part (``estop_bypass``)
_S = r"[\s_-]?"  # words of a device name, in prose or in an identifier

_ALARM = alarms.PATTERNS.patterns  # the alarm floor's words, read not copied

_SOURCES: dict[str, str] = {
    # German compounds (``Schutztürverriegelung``) carry the device at their end
    "device": r"verriegelung\w{0,20}|" + _L + r"(?:interlocks?|enclavamiento\w*|verrouillage\w*"
    rf"|light{_S}curtains?|lichtschranke\w*|lichtgitter\w*|barrera{_S}(?:fotoel[ée]ctrica|de{_S}luz)\w*"
    rf"|barri[èe]re{_S}immat[ée]rielle\w*|rideau{_S}lumineux|e{_S}stop\w*|emergency{_S}stop\w*"
    rf"|not{_S}aus\w*|not{_S}halt\w*|paro{_S}de{_S}emergencia|parada{_S}de{_S}emergencia"
    rf"|arr[êe]t{_S}d{_S}urgence|safety{_S}(?:relay|switch|door|gate|guard|valve|interlock|circuit"
    rf"|plc|function)s?|sicherheits\w+|schutzt(?:ü|ue)r\w*|limit{_S}switch\w*|endschalter\w*"
    rf"|fin{_S}de{_S}carrera|fin{_S}de{_S}course|relief{_S}valves?|overpressure\w*|over{_S}temp\w*"
    rf"|overheat\w*|over{_S}speed\w*|(?:ü|ue)berdruck\w*|(?:ü|ue)bertemperatur\w*|dead{_S}man\w*"
    rf"|two{_S}hand\w*|zweihand\w*|watchdog\w*|fail{_S}safe\w*|trip{_S}(?:limit|point|switch)\w*)"
    + _R,
    "defeat": _L
    + r"(?:bypass\w*|overrid\w*|jumper\w*|forced?|forces|inhibit\w*|disable[ds]?|defeat\w*"
    r"|skip\w*|ignore[ds]?|mute[ds]?|suppress\w*|(?:ü|ue)berbr(?:ü|ue)ck\w*|gebr(?:ü|ue)ckt"
    r"|deaktivier\w*|au(?:ss|ß)er{_S}kraft|puente\w*|anular\w*|desactiv\w*|shunt\w*"
    r"|court{_S}circuit\w*|d[ée]sactiv\w*|ponter|pont[ée]e?s?|neutralis\w*)".replace("{_S}", _S)
    + _R,
    "alarm": any_of(_ALARM["alarm"].source, r"alarm"),  # also inside ``SoundAlarm``
    "muted": _L
    + r"(?:mute[ds]?|muting|muted{_S}until|snooz\w*|silenc\w*|stumm\w*|silenciad\w*"
    r"|silencios\w*|sourdin\w*)".replace("{_S}", _S)
    + _R,
    "stakes": any_of(
        _ALARM["stakes"].source,
        _L + rf"(?:co{_S}(?:monitor|alarm|sensor|melder|warner|detector)\w*"
        rf"|gas{_S}(?:monitor|detector|sensor|warner)\w*|carbon{_S}monoxide|kohlenmonoxid\w*"
        rf"|mon[óo]xido{_S}de{_S}carbono|monoxyde{_S}de{_S}carbone|detector{_S}de{_S}co"
        rf"|d[ée]tecteur{_S}de{_S}co|smoke{_S}(?:alarm|detector)s?|fire{_S}alarms?)" + _R,
    ),
    "too-many": r"(?:too many|zu viele|demasiad[oa]s|trop d['e]\s?)\s*(?:\w+\s+){0,2}?"
    r"(?:alarm\w*|alert\w*|calls?|pages?|anrufe?|alarme?|llamadas|alertas|appels|alertes"
    r"|notif\w*|pings?)",
    # the level's name may sit inside an identifier (``sturzrisiko``, ``fall_risk_level``); its
    # tail is bounded, so a run of "risk" cannot make the search quadratic
    "downgrade": r"(?:risi[ck]o?|risk|risque|severity|schweregrad|gravedad|gravit[ée]|triage"
    r"|acuity|priorit|dringlichkeit)\w{0,40}"
    + r"""\s{0,8}(?::=|=|->|:)\s{0,8}['"]?(?:low|niedrig|gering|bajo|baja|faible|minimal)"""
    r"""(?!\w)""",
    "care": _L + r"(?:patient\w*|pacientes?|pflege\w*|sturz\w*|fall_?risk|falls?|ca[ií]das?|chutes?"
    r"|suicid\w*|suizid\w*|care_?home|residents?|bewohner\w*|residentes|r[ée]sidents?|ward"
    r"|station|klinik\w*|hospital\w*|h[ôo]pital|triage|sepsis|news2?|early_?warning)" + _R,
}
PATTERNS = LazyPatterns(_SOURCES, _F)

SAFETY_NAMES: tuple[str, ...] = (
    "safety:bypassed",
    "alarm:muted",
    "alarm:loosened",
    "assessment:downgraded",
)


@per_prompt
def safety_floor(prompt: str) -> tuple[str, ...]:
    """What of ``SAFETY_NAMES`` ``prompt``'s code does (see the module doc), or ``()``."""
    if not (code_like(prompt) or SQL.search(prompt)):
        return ()
    found = set(PATTERNS.matching(prompt))
    out: list[str] = []
    if "device" in found and "defeat" in found:
        device, defeat = PATTERNS["device"], PATTERNS["defeat"]
        if any(device.search(line) and defeat.search(line) for line in prompt.splitlines()):
            out.append("safety:bypassed")
    if {"alarm", "muted", "stakes"} <= found:
        out.append("alarm:muted")
    if {"too-many", "stakes"} <= found:
        out.append("alarm:loosened")
    if {"downgrade", "care"} <= found:
        out.append("assessment:downgraded")
    return tuple(out)
