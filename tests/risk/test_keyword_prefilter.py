"""The keyword profiler's one-pattern prefilter (every term of every rule in one scan) decides
exactly what the rules decide one by one: a prompt it passes over has no rule's term in it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.risk.keywords import (
    DEFAULT_ESCALATE_TERMS,
    DEFAULT_RESEARCH_TERMS,
    DEFAULT_SIGNALS,
    UNION_AFTER,
    KeywordProfiler,
)

KW = KeywordProfiler(union_after=0)
KW.profile("compile the union now")
TERMS = sorted(
    {t for ts in DEFAULT_SIGNALS.values() for t in ts}
    | set(DEFAULT_RESEARCH_TERMS)
    | set(DEFAULT_ESCALATE_TERMS)
)
# a term as a prompt may hold it: inflected, cut short, glued to a word, in another case
_WORDS = st.sampled_from(TERMS).flatmap(
    lambda t: st.sampled_from(
        [t.rstrip("*"), t.rstrip("*") + "s", t.rstrip("*") + "ing", t.rstrip("*")[:-1],
         "x" + t.rstrip("*"), t.rstrip("*") + "x", t.upper().rstrip("*"), t.rstrip("*") + "-ish"]
    )
)  # fmt: skip
_FILLER = st.sampled_from(
    ["the", "not", "no", "without", "what is", "a", "colours", "Name", "of", ".", ",", "?",
     "\n", "our", "briefly", "-", "_", "é", "1", "2"]
)  # fmt: skip
PROMPTS = st.lists(st.one_of(_WORDS, _FILLER, st.text(max_size=8)), max_size=14).flatmap(
    lambda parts: st.sampled_from([" ".join(parts), "".join(parts), "  ".join(parts)])
)


def _one_by_one(kw: KeywordProfiler, prompt: str) -> tuple[bool, bool, bool]:
    """Whether any rule's own pattern finds a term: signals, escalation, research."""
    text = prompt.lower()
    return (
        any(rx.search(text) for _, rx in kw._signals),
        kw._escalate is not None and kw._escalate.search(text) is not None,
        kw._research is not None and kw._research.search(text) is not None,
    )


@settings(max_examples=400)
@given(PROMPTS)
def test_the_prefilter_misses_only_prompts_no_rule_matches(prompt: str) -> None:
    assert KW._any is not None
    assert (KW._any.search(prompt.lower()) is not None) == any(_one_by_one(KW, prompt))


# the same rules without the prefilter (a profiler with no union pattern takes every rule's scan)
RULE_BY_RULE = KeywordProfiler(union_after=-1)


@settings(max_examples=400)
@given(PROMPTS, st.sampled_from([None, "general", "research", "code-review", "other"]))
def test_profiles_equal_the_rule_by_rule_profiles(prompt: str, hint: str | None) -> None:
    assert KW.profile(prompt, hint) == RULE_BY_RULE.profile(prompt, hint)


def test_a_policy_s_own_terms_are_in_the_prefilter() -> None:
    def custom(union_after: int) -> KeywordProfiler:
        return KeywordProfiler(
            signals={"billing": ["zorble*"]},
            research_terms=["survey"],
            escalate_terms=["vet*"],
            union_after=union_after,
        )

    kw, rule_by_rule = custom(0), custom(-1)
    assert kw.profile("fix the zorbles").signals == ("billing",)
    assert kw.profile("a survey of caches").kind == "research"
    assert kw.profile("vetting this plan").level == "medium"
    assert kw.profile("name three colours").level == "low"
    for prompt in ("fix the zorbles", "a survey of caches", "vetting this", "name colours"):
        assert kw.profile(prompt) == rule_by_rule.profile(prompt)


def test_the_union_is_compiled_only_once_enough_prompts_pay_for_it() -> None:
    """A cold `loomc run` profiles one prompt: it never pays the union's compile (~8 ms)."""
    kw = KeywordProfiler()
    prompts = [
        f"name {i} colours" if i % 2 else f"audit payment {i}" for i in range(UNION_AFTER + 2)
    ]
    profiles = []
    for i, prompt in enumerate(prompts):
        profiles.append(kw.profile(prompt))
        assert (kw._any is not None) == (i >= UNION_AFTER), i
    assert profiles == [RULE_BY_RULE.profile(p) for p in prompts]
    assert RULE_BY_RULE._any is None
