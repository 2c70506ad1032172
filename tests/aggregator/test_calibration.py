"""Tests for the calibration metrics: hand-worked examples (derivations in the
comments) and per-model results against a naive Python loop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aggregator._calibration import (
    brier,
    calibration_by_model,
    calibration_summary,
    confidence_bins,
    expected_calibration_error,
    selective_score,
)

NAN = math.nan

# ---------------------------------------------------------------------------
# Brier


def test_brier_hand_example():
    conf = [0.9, 0.6, 0.2, NAN, 0.7]
    correct = [1, 0, 0, 1, 1]
    abstained = [False, False, False, False, True]
    # confident rows 0..2: 0.1^2 + 0.6^2 + 0.2^2 = 0.01 + 0.36 + 0.04 = 0.41, / 3
    assert brier(conf, correct, abstained) == pytest.approx(0.41 / 3)
    # without abstentions row 4 counts too: (0.41 + 0.3^2) / 4 = 0.5 / 4
    assert brier(conf, correct) == pytest.approx(0.125)


def test_brier_without_confident_rows_is_nan():
    assert math.isnan(brier([NAN, NAN], [1, 0]))
    assert math.isnan(brier([0.5], [1], [True]))
    assert math.isnan(brier([], []))


def test_brier_rejects_bad_input():
    with pytest.raises(ValueError):
        brier([1.2], [1])
    with pytest.raises(ValueError):
        brier([0.5], [2])
    with pytest.raises(ValueError):
        brier([0.5, 0.5], [1])


# ---------------------------------------------------------------------------
# ECE


def test_confidence_bins_edges():
    c = [0.0, 0.05, 0.1, 0.2999999, 0.3, 0.95, 1.0, NAN]
    np.testing.assert_array_equal(confidence_bins(c, 10), [0, 0, 1, 2, 3, 9, 9, -1])
    np.testing.assert_array_equal(confidence_bins([0.0, 0.49, 0.5, 1.0], 2), [0, 0, 1, 1])
    np.testing.assert_array_equal(confidence_bins([0.0, 1.0], 1), [0, 0])


def test_ece_hand_example():
    conf = [0.95, 1.0, 0.85, 0.3, 0.35, NAN]
    correct = [1, 0, 1, 0, 1, 1]
    # N = 5 confident rows. bin 9 {0.95, 1.0}: |0.975 - 0.5| * 2/5 = 0.19
    # bin 8 {0.85}: |0.85 - 1| * 1/5 = 0.03;  bin 3 {0.3, 0.35}: |0.325 - 0.5| * 2/5 = 0.07
    assert expected_calibration_error(conf, correct) == pytest.approx(0.29)


def test_ece_confidence_one_goes_in_last_bin():
    conf = [1.0, 0.9, 0.9]
    correct = [0, 1, 1]
    # all three in bin 9: |mean conf 2.8/3 - accuracy 2/3| = 0.8/3
    # (a separate bin for 1.0 would give 1/3 * 1 + 2/3 * 0.1 = 0.4)
    assert expected_calibration_error(conf, correct) == pytest.approx(0.8 / 3)
    # one bin: ECE = |mean confidence - accuracy|
    assert expected_calibration_error(conf, correct, n_bins=1) == pytest.approx(0.8 / 3)


def test_ece_abstained_rows_and_empty():
    conf = [0.95, 0.15]
    correct = [1, 1]
    # row 1 abstained: only |0.95 - 1| remains
    assert expected_calibration_error(conf, correct, abstained=[False, True]) == pytest.approx(0.05)
    # both: bin 9 gives 0.05/2, bin 1 gives 0.85/2
    assert expected_calibration_error(conf, correct) == pytest.approx(0.45)
    assert math.isnan(expected_calibration_error([NAN], [1]))
    with pytest.raises(ValueError):
        expected_calibration_error(conf, correct, n_bins=0)


# ---------------------------------------------------------------------------
# Selective score


@pytest.mark.parametrize(("penalty", "expected"), [(0.5, 0.3), (1.0, 0.2), (2.0, 0.0), (0.0, 0.4)])
def test_selective_score_hand_example(penalty, expected):
    correct = [1, 0, 1, 0, 1]
    abstained = [False, False, False, True, True]
    # answered: +1 (row 0), -penalty (row 1), +1 (row 2); abstained rows 3, 4 score 0
    # mean = (2 - penalty) / 5
    assert selective_score(correct, abstained, penalty) == pytest.approx(expected)


def test_selective_score_edges():
    assert math.isnan(selective_score([], [], 1.0))
    assert selective_score([0, 0], [True, True], 3.0) == 0.0
    assert selective_score([0, 0], [False, False], 2.0) == -2.0
    with pytest.raises(ValueError):
        selective_score([1], [False], -1.0)
    with pytest.raises(ValueError):
        selective_score([1], [False], math.nan)
    with pytest.raises(ValueError):
        selective_score([1, 0], [False], 1.0)


# ---------------------------------------------------------------------------
# Per model


def naive_by_model(conf, correct, abstained, model, n_models, penalty, n_bins):
    out = {k: [] for k in ("brier", "ece", "selective", "n_confident", "n_abstained", "n_rows")}
    for m in range(n_models):
        rows = [r for r in range(len(model)) if model[r] == m]
        confident = [r for r in rows if not math.isnan(conf[r]) and not abstained[r]]
        scores = [0.0 if abstained[r] else (1.0 if correct[r] else -penalty) for r in rows]
        out["selective"].append(sum(scores) / len(rows) if rows else NAN)
        out["n_rows"].append(len(rows))
        out["n_abstained"].append(sum(1 for r in rows if abstained[r]))
        out["n_confident"].append(len(confident))
        if not confident:
            out["brier"].append(NAN)
            out["ece"].append(NAN)
            continue
        out["brier"].append(sum((conf[r] - correct[r]) ** 2 for r in confident) / len(confident))
        ece = 0.0
        for b in range(n_bins):
            lo, hi = b / n_bins, (b + 1) / n_bins
            members = [
                r for r in confident if lo <= conf[r] < hi or (b == n_bins - 1 and conf[r] == 1.0)
            ]
            if members:
                mean_conf = sum(conf[r] for r in members) / len(members)
                acc = sum(correct[r] for r in members) / len(members)
                ece += len(members) / len(confident) * abs(mean_conf - acc)
        out["ece"].append(ece)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("penalty", "n_bins"), [(1.0, 10), (0.5, 5), (2.0, 15)])
def test_by_model_matches_naive_loop(seed, penalty, n_bins):
    rng = np.random.default_rng(seed)
    rows, n_models = 400, 6
    conf = rng.random(rows).round(2)  # rounding puts many values on bin edges
    conf[rng.random(rows) < 0.05] = 1.0
    conf[rng.random(rows) < 0.2] = NAN
    correct = (rng.random(rows) < conf).astype(np.int8)
    abstained = rng.random(rows) < 0.15
    model = rng.integers(0, n_models - 2, rows)  # models 4, 5 have no rows
    model[(model == 3) & ~abstained] = 2  # model 3: only abstentions, no confident rows
    got = calibration_by_model(
        conf, correct, abstained, model, n_models, penalty=penalty, n_bins=n_bins
    )
    want = naive_by_model(
        conf.tolist(), correct.tolist(), abstained.tolist(), model.tolist(), n_models, penalty, n_bins
    )
    for key in ("brier", "ece", "selective"):
        assert got[key].shape == (n_models,)
        np.testing.assert_allclose(got[key], want[key], rtol=1e-12, atol=1e-15)
    for key in ("n_confident", "n_abstained", "n_rows"):
        assert got[key].dtype == np.int64
        np.testing.assert_array_equal(got[key], want[key])
    assert np.isnan(got["brier"][3:]).all() and np.isnan(got["ece"][3:]).all()
    assert not np.isnan(got["selective"][3]) and np.isnan(got["selective"][4:]).all()
    # the single-model functions agree with the per-model results
    m = model == 0
    assert got["brier"][0] == pytest.approx(brier(conf[m], correct[m], abstained[m]))
    assert got["ece"][0] == pytest.approx(
        expected_calibration_error(conf[m], correct[m], n_bins, abstained[m])
    )
    assert got["selective"][0] == pytest.approx(selective_score(correct[m], abstained[m], penalty))


def test_by_model_rejects_bad_input():
    with pytest.raises(ValueError):
        calibration_by_model([0.5], [1], [False], [2], 2)
    with pytest.raises(ValueError):
        calibration_by_model([0.5], [1], [False], [0.0], 2)
    with pytest.raises(ValueError):
        calibration_by_model([0.5], [1], [False, True], [0], 2)
    with pytest.raises(ValueError):
        calibration_by_model([0.5], [1], [False], [0], 2, penalty=-1)


def test_calibration_summary_plain_python():
    conf = [0.9, 0.6, 0.2, NAN, 0.7, 0.8]
    correct = [1, 0, 0, 1, 1, 0]
    abstained = [False, False, False, False, True, False]
    model = [0, 0, 0, 0, 0, 2]
    out = calibration_summary(conf, correct, abstained, model, ["a", "b", "c"], penalty=0.5)
    # model a: confident rows 0..2 (Brier 0.41/3); selective (1 - 0.5 - 0.5 + 1 + 0) / 5 = 0.2
    # ECE: bins 9, 6, 2 each alone: (0.1 + 0.6 + 0.2) / 3 = 0.3
    assert out["a"] == {
        "brier": round(0.41 / 3, 6),
        "ece": 0.3,
        "selective": 0.2,
        "n_confident": 3,
        "n_abstained": 1,
        "n_rows": 5,
    }
    assert out["b"] == {
        "brier": None,
        "ece": None,
        "selective": None,
        "n_confident": 0,
        "n_abstained": 0,
        "n_rows": 0,
    }
    # model c: one wrong answer at 0.8: Brier 0.64, ECE 0.8, selective -0.5
    assert out["c"]["brier"] == 0.64 and out["c"]["ece"] == 0.8 and out["c"]["selective"] == -0.5
    for entry in out.values():
        for v in entry.values():
            assert v is None or type(v) in (int, float)
    with pytest.raises(ValueError):
        calibration_summary(conf, correct, abstained, model, ["a", "a", "c"])
