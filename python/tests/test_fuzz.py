"""A short, bounded fuzz run in the normal test suite (the long campaign is
`benchmarks/fuzz_campaign.py`): generated scenarios either validate or raise a
ScenarioError that names its field; accepted small ones run without error."""
from __future__ import annotations

import random

import fuzzgen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aqmlab

# Seconds, not minutes: each example is one validate (~1 ms) or one 0.2 s run.
VALIDATE_EXAMPLES = 300
RUN_EXAMPLES = 25
RUN_MAX_EVENTS = 2e5


def _validate(sc):
    try:
        return aqmlab.validate(sc)
    except aqmlab.ScenarioError as e:
        if isinstance(sc, dict):
            # only whole-file problems may leave the field empty
            assert e.field or "no topology" in e.message or "TOML" in e.message, str(e)
        assert e.message
        return None


@settings(max_examples=VALIDATE_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False))
def test_generated_scenarios_validate_or_name_the_field(rng):
    _validate(fuzzgen.mutate(rng))


@settings(max_examples=RUN_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False))
def test_accepted_generated_scenarios_run(rng):
    sc = fuzzgen.shorten(fuzzgen.mutate(rng))
    plan = _validate(sc)
    if plan is None or plan["estimate"]["events"] > RUN_MAX_EVENTS:
        return
    r = aqmlab.run(sc)  # an accepted scenario must not fail
    assert r.flows.shape[0] == len(plan["flows"])


def test_generator_is_reproducible():
    a = fuzzgen.mutate(random.Random(12345))
    b = fuzzgen.mutate(random.Random(12345))
    assert a == b or (a != a and b != b)  # NaN values compare unequal to themselves


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
        max_leaves=20,
    )
)
def test_arbitrary_values_in_run_table(value):
    sc = fuzzgen.copy.deepcopy(fuzzgen.BASES[0])
    sc.setdefault("run", {})["duration"] = value
    _validate(sc)


STUDY_EXAMPLES = 40


@settings(max_examples=STUDY_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False))
def test_generated_study_files_parse_or_raise_a_study_error(rng):
    """A mutated study file is read, expanded and checked as `aqmlab sweep` does before
    it runs anything, or refused with an AqmlabError (StudyError, ScenarioError) — never
    another exception (the long campaign: benchmarks/fuzz_campaign.py --studies)."""
    from aqmlab import report
    from aqmlab.errors import AqmlabError
    from aqmlab.runner import _validate_all
    from aqmlab.study import parse_study

    text = fuzzgen.mutate_study(rng)
    try:
        study = parse_study(text, quick=True)
        runs = study.runs()
        report.validate_outputs(study)
        _validate_all(runs[:: max(1, len(runs) // 4)], study.text)
    except AqmlabError as e:
        assert str(e).strip()
