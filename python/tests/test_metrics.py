"""Metric functions against hand-computed values."""
import math

import numpy as np
import pytest

from aqmlab import metrics as m


def test_water_filling_with_demand_caps():
    # The issue quotes {1, 5, 10} on 12 -> {1, 5.5, 5.5}, but a flow demanding 5 cannot
    # get 5.5: max-min fairness caps it at 5 and gives the rest to the greedy flow.
    assert m.max_min_fair(12, demands=[1, 5, 10]).tolist() == pytest.approx([1.0, 5.0, 6.0])
    # With a second demand of at least 5.5 the two larger flows split the 11 left.
    assert m.max_min_fair(12, demands=[1, 6, 10]).tolist() == pytest.approx([1.0, 5.5, 5.5])


def test_weighted_tiers_docsis_example():
    # 9 Tier-1 flows at 6 Mbit/s and one Tier-2 flow at 12 Mbit/s share 38 Mbit/s:
    # per unit of weight 38/66, so 3.4545 and 6.909 Mbit/s.
    rates = [6] * 9 + [12]
    s = m.max_min_fair(38, demands=rates, weights=rates)
    assert s[:9] == pytest.approx([38 / 66 * 6] * 9)
    assert s[9] == pytest.approx(38 / 66 * 12)
    assert round(s[0], 2) == 3.45 and round(s[9], 1) == 6.9
    assert s.sum() == pytest.approx(38)


def test_water_filling_uncongested_and_greedy():
    assert m.max_min_fair(100, demands=[10, 20]).tolist() == pytest.approx([10, 20])
    assert m.max_min_fair(30, n=3).tolist() == pytest.approx([10, 10, 10])
    with pytest.raises(ValueError):
        m.max_min_fair(10, demands=[1, 2], weights=[1])


def test_jain_and_min_max():
    assert m.jain_index([5, 5, 5, 5]) == pytest.approx(1.0)
    assert m.jain_index([1, 0, 0, 0]) == pytest.approx(0.25)
    assert m.jain_index([1, 2]) == pytest.approx(9 / 10)
    assert m.min_max_ratio([2, 4, 8]) == pytest.approx(0.25)
    x = m.normalised_throughputs([3, 6], [3.45, 6.9])
    assert m.jain_index(x) == pytest.approx(1.0, abs=1e-3)


def test_tewma_reads_a_steady_rate():
    # 100 events/s for 5 s: the estimate converges to 100/s within a few memories.
    ev = np.arange(0, 5, 0.01)
    est = m.tewma(ev, [4.0, 4.5], memory=0.5)
    assert est == pytest.approx([100, 100], rel=0.02)
    # and decays by e after one memory without events
    after = m.tewma(ev, [5.0 - 0.01 + 0.5], memory=0.5)[0]
    assert after == pytest.approx(est[0] / math.e, rel=0.03)
    assert m.tewma([], [1.0]).tolist() == [0.0]


def test_induced_latency_ecdf_pointwise_bias():
    assert m.induced_latency([0.06, 0.07, float("nan")], 0.05) == pytest.approx(0.015)
    v, p = m.ecdf([3, 1, 2])
    assert v.tolist() == [1, 2, 3] and p.tolist() == pytest.approx([1 / 3, 2 / 3, 1])
    mean, sd = m.pointwise_mean([[1, 2, 3], [3, 4]])
    assert mean.tolist() == pytest.approx([2, 3, 3]) and sd[0] == pytest.approx(1)
    assert m.application_bias(5.0, 4.0) == pytest.approx(25.0)
