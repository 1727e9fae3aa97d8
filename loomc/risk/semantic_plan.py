"""What a semantic profiler's settings resolve to before any weight is read: the thresholds a
policy fixes, and the plan of the cascade's MiniLM stage (which encoder, on which backend, from
which folder, with which LoRA delta, or why it cannot run).

Why apart from ``loomc.risk.semantic``: the profiler's job is to turn prompts into decisions;
these are the answers to "what did the policy ask for, and can this install give it", settled
once at build from ``risk.options`` (already checked by ``loomc.risk.options``) and the router's
header, and read-only afterwards. Kept here they can be read and tested without a profiler, and
the profiler stays one module under ~400 lines.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from loomc.policy.models import RiskSettings
from loomc.risk.decision import Limits
from loomc.risk.releases import MINILM_KINDS, backend_of, lora_delta, minilm_missing, opt_float

# (the risk.options key, the RiskSettings field that means the same, if any)
_THRESHOLD_KEYS = (
    ("threshold", "high_threshold"),
    ("signal_threshold", None),
    ("medium_threshold", "medium_threshold"),
    ("band_low", None),
    ("band_high", None),
)


class TrainedLimits(Protocol):
    """What a threshold reads of a router (numpy's ``RouterWeights`` or the plain reader's)."""

    @property
    def threshold(self) -> float: ...
    @property
    def signal_threshold(self) -> float: ...
    @property
    def medium_threshold(self) -> float: ...


class TrainedBand(Protocol):
    """The band a router file was trained with (numpy's ``RouterWeights`` or the plain one's)."""

    @property
    def cascade_low(self) -> float: ...
    @property
    def cascade_high(self) -> float: ...


@dataclass(frozen=True)
class Thresholds:
    """The thresholds a policy fixes; each one not fixed is the deciding stage's trained one.

    An explicit threshold applies to both stages: both are Platt-calibrated probabilities of the
    same event. ``risk.options`` wins over the ``RiskSettings`` field of the same meaning, which
    counts only when the policy set it (a default value would override every release)."""

    fixed: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: RiskSettings, opts: dict[str, Any]) -> Thresholds:
        explicit = settings.model_fields_set
        fixed: dict[str, float] = {}
        for key, setting in _THRESHOLD_KEYS:
            if opts.get(key) is not None:
                fixed[key] = opt_float(opts, key, 0.0)
            elif setting is not None and setting in explicit:
                fixed[key] = float(getattr(settings, setting))
        return cls(fixed)

    def escalation(self, router: TrainedLimits) -> tuple[float, float]:
        """(threshold, signal threshold) for ``router``; the signal one is never the higher."""
        t = self.fixed.get("threshold", router.threshold)
        return t, min(t, self.fixed.get("signal_threshold", router.signal_threshold))

    def band(self, router: TrainedBand) -> tuple[float, float]:
        """The cascade's band on the static probability, (low, high): prompts strictly inside go
        on to MiniLM. Each edge not fixed is the release's (chosen in training with a cap on the
        share deferred); a narrower band trades routing accuracy for fewer MiniLM passes (the
        measured trade-off of v13's: docs/routing.md)."""
        return (
            self.fixed.get("band_low", router.cascade_low),
            self.fixed.get("band_high", router.cascade_high),
        )

    def limits(self, router: TrainedLimits) -> Limits:
        """Every threshold the decision needs, for the stage ``router`` decided in."""
        threshold, signal = self.escalation(router)
        return Limits(
            threshold, signal, self.fixed.get("medium_threshold", router.medium_threshold)
        )


class Header(Protocol):
    """What the plan reads of the first stage's router file."""

    @property
    def encoder(self) -> str: ...
    @property
    def cascade(self) -> str | None: ...


@dataclass(frozen=True)
class MiniLMPlan:
    """The MiniLM stage as the settings and this install allow it.

    ``missing`` says why MiniLM is not used though the router would use it (None: it is, or it
    is not wanted); ``second_path`` is the cascade's MiniLM-stage router (None: no cascade);
    ``delta`` the LoRA delta merged into the encoder (checked against the installed base)."""

    kind: str  # minilm, minilm-q8 or minilm-q8-lora: what the release's stage was trained on
    dtype: str
    threads: int
    backend: str  # numpy or onnxruntime
    folder: Path | None
    missing: str | None
    second_path: Path | None
    delta: Path | None


def plan_minilm(
    opts: dict[str, Any],
    release: str,
    data_path: Path,
    head: Header,
    minilm: Callable[[], Path | None],
) -> MiniLMPlan:
    """Resolve the MiniLM stage. ``minilm`` finds the weights folder and is called only when the
    router wants MiniLM. ImportError when a MiniLM-only file cannot run here;
    FileNotFoundError when the cascade's second file is not beside the first;
    ``loomc.risk.lora.LoraError`` when the release's delta was trained on another base."""
    dtype, threads = str(opts.get("dtype", "float32")), int(opts.get("threads", 1))
    if opts.get("data"):
        kind, own_delta = data_encoder(data_path, head)
    else:
        kind, own_delta = MINILM_KINDS.get(release, "minilm"), None
    backend = backend_of(opts, dtype, kind)
    wants = head.encoder == "minilm" or (
        head.cascade is not None and bool(opts.get("cascade", True))
    )
    folder = minilm() if wants else None
    missing = minilm_missing(folder, threads, backend) if wants else None
    if head.encoder == "minilm" and missing:
        raise ImportError(missing)
    second_path: Path | None = None
    if head.encoder == "static" and wants and not missing:
        assert head.cascade is not None
        second_path = data_path.with_name(head.cascade)
        if not second_path.is_file():
            raise FileNotFoundError(f"No such file: {second_path}")
    delta = lora_delta(release, kind, second_path and folder, own_delta)
    return MiniLMPlan(kind, dtype, threads, backend, folder, missing, second_path, delta)


def data_encoder(data_path: Path, head: Header) -> tuple[str, Path | None]:
    """(the MiniLM kind, the LoRA delta) a router file given by ``risk.options.data`` was trained
    on, as its MiniLM stage's meta records them (the file itself, or the cascade's second file).

    Why: a release's kind and delta come from ``loomc.risk.releases``, but a file given by path
    names its own; serving it with the float MiniLM (as before) fed a head trained on int8,
    LoRA-tuned embeddings with other embeddings, and gave other probabilities with no word said
    (v28's files by path: 0.13 where v28 gives 0.54). The delta is looked for beside the file,
    then among the shipped files, and must be the one the meta names by sha256; ValueError in
    one line otherwise."""
    import json

    from loomc.risk.files import data_file
    from loomc.risk.lora_base import file_sha256
    from loomc.risk.npz import NpzFormatError, read_members

    stage = data_path if head.encoder == "minilm" else None
    if head.encoder == "static" and head.cascade is not None:
        stage = data_path.with_name(head.cascade)
    if stage is None or not stage.is_file():
        return "minilm", None  # no MiniLM stage, or one plan_minilm reports missing
    try:  # the meta member only, not the 5 MB of weights beside it
        meta = json.loads(read_members(stage, ("meta",))["meta"].texts()[0])
    except NpzFormatError as exc:
        if "has no member" not in str(exc):
            raise ValueError(f"risk.options.data: {exc}") from None
        meta = {}  # a file from before metas: the float MiniLM, as then
    except (OSError, ValueError) as exc:  # unreadable, or a meta that is not JSON
        raise ValueError(f"risk.options.data: {stage.name}: {exc}") from None
    kind = str(meta.get("encoder_kind", "minilm"))
    if kind not in ("minilm", "minilm-q8", "minilm-q8-lora"):
        raise ValueError(
            f"risk.options.data: {stage.name} was trained on an unknown encoder {kind!r}"
        )
    if kind != "minilm-q8-lora":
        return kind, None
    name, digest = str(meta.get("lora", "")), str(meta.get("lora_sha256", ""))
    for delta in (stage.with_name(name), data_file(name)):
        if name and delta.is_file() and file_sha256(delta) == digest:
            return kind, delta
    raise ValueError(
        f"risk.options.data: {stage.name} was trained over the LoRA delta {name or '?'} "
        f"(sha256 {digest[:12]}...), which is neither beside it nor shipped with loomc"
    )
