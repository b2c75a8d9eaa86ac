"""Latency models: recovery of known spikes, validation, seeded sampling, queue semantics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_one_line_error, make_run, run_cli, run_main
from jitterlab.simulate.model import (
    LatencyModel,
    QuantileFunction,
    SpikeCategory,
    build_model,
    load_model,
    model_to_json,
    parametric_model,
    simulate_delays,
)
from jitterlab.store import load_run


def spiky_run(store: Path, seconds: int = 120, rate_hz: float = 2.0, seed: int = 3):
    """1 kHz samples near 100 µs, plus Poisson spikes at rate_hz lasting 2-3 ms."""
    rng = np.random.default_rng(seed)
    n = seconds * 1000
    t_send = 1_000_000_000 + np.arange(n, dtype=np.int64) * 1_000_000
    latency = rng.normal(100_000, 3_000, n)
    spike_times = np.cumsum(rng.exponential(1e9 / rate_hz, int(seconds * rate_hz * 2)))
    spike_times = spike_times[spike_times < seconds * 1e9]
    index = np.unique((spike_times // 1_000_000).astype(np.int64))
    latency[index] = rng.uniform(2_000_000, 3_000_000, index.size)
    return make_run(store, latency.astype(np.int64), t_send=t_send), index.size / seconds


def test_build_recovers_spike_rate_and_duration(tmp_path: Path) -> None:
    run, true_rate = spiky_run(tmp_path / "s")
    model = build_model(run)
    spikes = [c for c in model.categories if np.median(c.duration.values) > 1_000_000]
    assert len(spikes) == 1, [np.median(c.duration.values) for c in model.categories]
    spike = spikes[0]
    assert spike.rate_hz == pytest.approx(true_rate, rel=0.15)
    # duration = excess over the main cluster's median: uniform(2, 3) ms - 100 µs
    assert np.median(spike.duration.values) == pytest.approx(2_400_000, rel=0.10)
    assert np.median(spike.interarrival.values) == pytest.approx(np.log(2) * 1e9 / true_rate, rel=0.25)
    assert model.base is not None and np.median(model.base.values) == pytest.approx(100_000, rel=0.02)


def test_scale_and_kde_keep_values_positive(tmp_path: Path) -> None:
    run, _ = spiky_run(tmp_path / "s", seconds=30)
    plain = build_model(run)
    scaled = build_model(run, scale=3.0)
    for a, b in zip(plain.categories, scaled.categories, strict=True):
        assert np.allclose(b.duration.values, 3 * a.duration.values)
    smooth = build_model(run, kde=True, points=64)
    for c in smooth.categories:
        assert (c.duration.values > 0).all() and (np.diff(c.duration.values) >= 0).all()


def test_json_round_trip(tmp_path: Path) -> None:
    run, _ = spiky_run(tmp_path / "s", seconds=20)
    model = build_model(run, points=32)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model_to_json(model)))
    again = load_model(path)
    assert len(again.categories) == len(model.categories)
    assert np.allclose(again.base.values, model.base.values, atol=0.001)  # type: ignore[union-attr]


def test_sampling_is_seeded() -> None:
    model = parametric_model(normal=(20e6, 2e6), spikes=[(40e6, 0.5)])
    arrivals = np.arange(2000) * 1e6
    a = simulate_delays(model, arrivals, seed=7)
    assert np.array_equal(a, simulate_delays(model, arrivals, seed=7))
    assert not np.array_equal(a, simulate_delays(model, arrivals, seed=8))


def test_constant_model_without_spikes_adds_exactly_the_constant() -> None:
    model = parametric_model(constant_ns=5e6)
    assert np.all(simulate_delays(model, np.arange(100) * 1e7) == 5e6)


def test_a_spike_holds_back_the_items_behind_it_unless_reordering() -> None:
    # no base delay; one spike of 10 ms, due one second after the first item
    spike = SpikeCategory(
        1, QuantileFunction(np.array([10e6])), QuantileFunction(np.array([1e9])), 1.0, 0, 0.0
    )
    model = LatencyModel(QuantileFunction(np.array([0.0])), None, (spike,), {})
    arrivals = np.arange(0, 1_100) * 1e6  # one item a millisecond; the spike is due at 1 s
    ordered = simulate_delays(model, arrivals)
    assert ordered[999] == 0 and ordered[1000] == 10e6
    assert ordered[1001:1010].tolist() == [9e6, 8e6, 7e6, 6e6, 5e6, 4e6, 3e6, 2e6, 1e6]
    assert ordered[1010] == 0
    independent = simulate_delays(model, arrivals, reorder=True)
    assert independent[1000] == 10e6 and independent[1001] == 0


def test_sine_base_follows_its_period() -> None:
    model = parametric_model(sine=(50e6, 20e6, 1e9))
    delays = simulate_delays(model, np.array([0.0, 0.25e9, 0.75e9]), reorder=True)
    assert delays.tolist() == pytest.approx([50e6, 70e6, 30e6])


BAD_MODELS = {
    "not json": "{",
    "wrong kind": json.dumps({"kind": "other", "schema_version": 1}),
    "newer schema": json.dumps({"kind": "jitterlab.model", "schema_version": 9}),
    "negative": json.dumps(
        {
            "kind": "jitterlab.model",
            "schema_version": 1,
            "base": {"kind": "quantiles", "quantiles_ns": [-1, 2]},
        }
    ),
    "not monotone": json.dumps(
        {
            "kind": "jitterlab.model",
            "schema_version": 1,
            "base": {"kind": "quantiles", "quantiles_ns": [3, 2]},
        }
    ),
    "not finite": '{"kind": "jitterlab.model", "schema_version": 1, "base": {"kind": "quantiles", "quantiles_ns": [1, NaN]}}',
    "bad sine": json.dumps(
        {"kind": "jitterlab.model", "schema_version": 1, "base": {"kind": "sine", "mean_ns": 1}}
    ),
    "bad category": json.dumps(
        {
            "kind": "jitterlab.model",
            "schema_version": 1,
            "base": {"kind": "quantiles", "quantiles_ns": [1]},
            "categories": [{"rate_hz": 1, "duration_quantiles_ns": [5, 1], "interarrival_quantiles_ns": [1]}],
        }
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_MODELS))
def test_bad_model_files_give_one_line(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.json"
    path.write_text(BAD_MODELS[name])
    code, _, err = run_main(["model", "show", str(path)], capsys)
    assert code == 2
    assert_one_line_error(err)
    assert str(path) in err


def test_model_cli_build_show_sample(tmp_path: Path) -> None:
    run, _ = spiky_run(tmp_path / "s", seconds=20)
    out = tmp_path / "m.json"
    built = run_cli("model", "build", run.id, "-o", str(out), "--store", str(tmp_path / "s"))
    assert built.returncode == 0, built.stderr
    shown = run_cli("model", "show", str(out))
    assert shown.returncode == 0 and "inter-arrival p50" in shown.stdout
    sampled = run_cli("model", "sample", str(out), "-n", "500", "--rate", "250", "--seed", "3")
    values = [int(v) for v in sampled.stdout.split()]
    assert len(values) == 500 and min(values) > 0
    assert (
        sampled.stdout
        == run_cli("model", "sample", str(out), "-n", "500", "--rate", "250", "--seed", "3").stdout
    )
    made = run_cli(
        "model", "make", "-o", str(tmp_path / "p.json"), "--uniform", "10ms,30ms", "--spikes", "40ms@2"
    )
    assert made.returncode == 0, made.stderr
    assert (
        run_cli(
            "model", "make", "-o", str(tmp_path / "q.json"), "--constant", "1ms", "--normal", "1ms,1ms"
        ).returncode
        == 2
    )


def test_python_and_the_native_engine_give_one_answer(tmp_path: Path) -> None:
    from jitterlab import Injector
    from jitterlab.core.errors import JitterlabError
    from jitterlab.simulate.model import load_model

    base = {
        "kind": "jitterlab.model",
        "schema_version": 1,
        "base": {"kind": "quantiles", "quantiles_ns": [1, 2, 3]},
    }
    category = {"rate_hz": 1, "duration_quantiles_ns": [10], "interarrival_quantiles_ns": [1e9]}
    cases = {
        "valid": base,
        "string quantile": base | {"base": {"kind": "quantiles", "quantiles_ns": [1, "2", 3]}},
        "bool quantile": base | {"base": {"kind": "quantiles", "quantiles_ns": [1, True, 3]}},
        "categories a number": base | {"categories": 5},
        "category a number": base | {"categories": [5]},
        "category index a float": base | {"categories": [category | {"category": 1.5}]},
        "spikes closer than a microsecond": base
        | {"categories": [category | {"interarrival_quantiles_ns": [0, 0, 0, 1]}]},
        "schema_version a string": base | {"schema_version": "1"},
        "source a number": base | {"source": 1},
    }
    for name, doc in cases.items():
        path = tmp_path / "m.json"
        path.write_text(json.dumps(doc))
        answers = []
        for read in (load_model, Injector):
            try:
                read(path)
                answers.append("accepts")
            except JitterlabError:
                answers.append("refuses")
        assert answers[0] == answers[1], f"{name}: python {answers[0]}, native {answers[1]}"
        assert answers[0] == ("accepts" if name in ("valid", "source a number") else "refuses"), name


def test_build_warns_when_a_model_rests_on_too_few_samples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s"
    rng = np.random.default_rng(2)
    few = np.concatenate([rng.normal(1_000_000, 20_000, 40), [5_000_000, 5_100_000, 4_900_000]]).astype(
        np.int64
    )
    run = make_run(store, few, t_send=np.arange(few.size, dtype=np.int64) * 10_000_000)
    code, _, err = run_main(
        ["model", "build", run.id, "-o", str(tmp_path / "m.json"), "--store", str(store)], capsys
    )
    assert code == 0, err
    assert "main cluster has 40 samples for a quantile function of 256 points" in err
    assert "rests on 3 spikes (fewer than 30)" in err
    # a long run gives no such warning
    long_run, _ = spiky_run(store, seconds=20)
    code, _, err = run_main(
        ["model", "build", long_run.id, "-o", str(tmp_path / "n.json"), "--store", str(store)], capsys
    )
    assert code == 0 and "warning" not in err, err


@pytest.mark.parametrize("scale", [1.0, 2.5])
def test_model_build_streamed_equals_in_memory(tmp_path: Path, scale: float) -> None:
    """A run of 1.1 M samples (two row groups, 3 pairs) read in row groups gives the same
    model as read whole (issue 25 item 1): thresholds, median, every quantile function."""
    rng = np.random.default_rng(11)
    n = 1_100_000
    x = rng.lognormal(9.5, 0.2, n).astype(np.int64)
    cluster = rng.random(n) < 0.03
    x[cluster] += rng.integers(20_000, 80_000, int(cluster.sum()))
    spike = rng.random(n) < 0.0005
    x[spike] += rng.integers(500_000, 10_000_000, int(spike.sum()))
    stored = make_run(tmp_path, x, pairs=3)
    streamed_run = load_run(stored.path)
    streamed = build_model(streamed_run, points=300, scale=scale)
    assert not streamed_run.loaded
    whole = load_run(stored.path)
    whole.table  # noqa: B018 - read the samples: the in-memory build
    expected = build_model(whole, points=300, scale=scale)
    assert len(expected.categories) >= 2
    assert streamed.source == expected.source
    assert expected.base is not None and streamed.base is not None
    assert np.array_equal(streamed.base.values, expected.base.values)
    for a, b in zip(streamed.categories, expected.categories, strict=True):
        assert (a.index, a.count, a.share, a.rate_hz) == (b.index, b.count, b.share, b.rate_hz)
        assert np.array_equal(a.duration.values, b.duration.values)
        assert np.array_equal(a.interarrival.values, b.interarrival.values)
