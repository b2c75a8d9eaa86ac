"""Motion-to-photon latency: synthetic videos with known latency through the real decoder,
the estimators on arrays with known answers, sensor logs, and every bad input."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from conftest import assert_one_line_error, run_main
from jitterlab.mtp import analyze, estimate, framelog, synth
from jitterlab.mtp import quaternion as quat

SMALL = synth.SynthSpec(fps=60.0, latency_s=0.0333, duration_s=4.0, width=320, height=240, noise=2.0, seed=1)


def _video(tmp_path: Path, name: str = "v.mp4", **changes: object) -> tuple[Path, dict]:
    path = tmp_path / name
    truth = synth.write_video(path, dataclasses.replace(SMALL, **changes))
    return path, truth


def _error_ms(path: Path, truth: dict, **options: object) -> dict[str, float]:
    result = analyze.analyze(path, analyze.AnalyzeOptions(**options))  # type: ignore[arg-type]
    return {k: v * 1e3 - truth["expected_ms"] for k, v in result.estimates.latency_s.items()}


# --- videos end to end -------------------------------------------------------------


def test_analyze_finds_the_latency_and_stores_a_run_that_describe_and_report_read(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, truth = _video(tmp_path)
    assert json.loads((tmp_path / "v.mp4.truth.json").read_text())["expected_ms"] == pytest.approx(33.3)
    page = tmp_path / "mtp.html"
    code, out, err = run_main(
        ["mtp", "analyze", str(path), "--json", "--report", str(page), "--store", str(store)], capsys
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["latency_ms"] == pytest.approx(truth["expected_ms"], abs=0.25)
    for value in result["estimators_ms"].values():
        assert value == pytest.approx(truth["expected_ms"], abs=0.5)
    assert result["regions_found"] == "auto"
    assert result["windows"]["count"] >= 3
    html = page.read_text()
    for part in ("Regions", "Traces, fits and residuals", "correlation against lag", "data:image/png"):
        assert part in html
    code, out, err = run_main(["describe", result["run"], "--store", str(store)], capsys)
    assert code == 0, err
    assert "33.3 ms" in out
    code, _, err = run_main(["report", "-o", str(tmp_path / "r.html"), "--store", str(store)], capsys)
    assert code == 0, err


def test_given_regions_and_kcf_agree_with_the_truth(tmp_path: Path) -> None:
    path, truth = _video(tmp_path)
    regions = truth["regions"]
    roi = {k: ",".join(map(str, v)) for k, v in regions.items()}
    errors = _error_ms(path, truth, roi_physical=roi["physical"], roi_rendered=roi["rendered"], tracker="kcf")
    assert abs(errors[estimate.HEADLINE]) < 1.0


@pytest.mark.parametrize(
    ("changes", "limit_ms"),
    [
        ({"vfr": 0.3}, 0.5),  # variable frame rate: each frame's own timestamp
        ({"harmonic": 0.15, "latency_s": 0.1}, 0.5),  # not a pure sine: xcorr is the headline
        ({"display_hz": 90.0}, 0.25),  # sample-and-hold: the hold is part of the latency
        ({"latency_s": 0.0}, 0.25),
    ],
)
def test_hard_cases_stay_within_their_target(tmp_path: Path, changes: dict, limit_ms: float) -> None:
    path, truth = _video(tmp_path, **changes)
    assert abs(_error_ms(path, truth)[estimate.HEADLINE]) < limit_ms


def test_display_hold_is_reported_as_part_of_the_latency(tmp_path: Path) -> None:
    _, truth = _video(tmp_path, display_hz=60.0)
    assert 0 < truth["display_hold_ms"] < 1000 / 60
    assert truth["expected_ms"] == pytest.approx(33.3 + truth["display_hold_ms"])


def test_rolling_shutter_shifts_the_latency_and_its_correction_removes_the_shift(tmp_path: Path) -> None:
    path, truth = _video(tmp_path, rolling_shutter_s=0.02)
    shift = truth["rolling_shutter_row_offset_ms"]
    assert shift > 5  # the rendered object sits lower in the frame: read out later
    uncorrected = _error_ms(path, truth)[estimate.HEADLINE]
    corrected = _error_ms(path, truth, rolling_shutter_s=0.02)[estimate.HEADLINE]
    assert uncorrected == pytest.approx(-shift, abs=1.0)
    assert abs(corrected) < 0.5


def test_slow_motion_file_needs_its_capture_rate(tmp_path: Path) -> None:
    path, truth = _video(tmp_path, fps=120.0, stored_fps=30.0, duration_s=4.0)
    assert abs(_error_ms(path, truth, capture_fps=120.0)[estimate.HEADLINE]) < 0.5
    # read at the stored rate, time runs four times slower: the latency looks four times longer
    slow = analyze.analyze(path, analyze.AnalyzeOptions(window_s=8.0))
    assert slow.estimates.headline_s * 1e3 == pytest.approx(4 * truth["expected_ms"], rel=0.01)


def test_object_lost_for_a_while_is_left_out_with_a_warning(tmp_path: Path) -> None:
    path, truth = _video(tmp_path, duration_s=8.0, lose=(3.0, 3.8))
    warnings: list[str] = []
    result = analyze.analyze(path, analyze.AnalyzeOptions(), warn=warnings.append)
    assert any("lost in 10" in w for w in warnings)
    assert abs(result.estimates.headline_s * 1e3 - truth["expected_ms"]) < 0.5


# --- estimators on arrays ----------------------------------------------------------


def _signals(latency: float, harmonic: float = 0.0, noise: float = 0.0, seed: int = 0):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    t = np.arange(0, 8, 1 / 60)

    def s(u: np.ndarray) -> np.ndarray:
        w = 2 * np.pi * 0.8 * u + 0.4
        return 30 * np.exp(-0.1 * u) * (np.cos(w) + harmonic * np.cos(3 * w)) + 5

    return t, s(t) + rng.normal(0, noise, t.size), t, 0.7 * s(t - latency) - 3 + rng.normal(0, noise, t.size)


@pytest.mark.parametrize("latency", [0.0, 0.0083, 0.05, 0.2])
def test_three_estimators_recover_a_known_delay(latency: float) -> None:
    e = estimate.estimate(*_signals(latency, noise=0.05), max_lag_s=0.3)
    for name in estimate.ESTIMATORS:
        assert e.latency_s[name] == pytest.approx(latency, abs=2e-4), name
    assert e.freq_hz == pytest.approx(0.8, rel=1e-3)


def test_xcorr_is_exact_on_a_non_sinusoidal_motion_where_the_fits_are_not() -> None:
    e = estimate.estimate(*_signals(0.1, harmonic=0.4), max_lag_s=0.3)
    assert e.latency_s["xcorr"] == pytest.approx(0.1, abs=1e-5)
    assert abs(e.latency_s["separate"] - 0.1) > abs(e.latency_s["xcorr"] - 0.1)


def test_xcorr_at_whole_frames_matches_numpy_correlate() -> None:
    # an independent check: a delay of exactly 3 frames on uniform samples is numpy's peak
    tp, xp, tr, _ = _signals(0.0, noise=0.0)
    xr = np.interp(tr - 3 / 60, tp, xp)
    lag, _, _ = estimate.xcorr(tr[10:], xr[10:], estimate.Interpolated(tp, xp), 0.2, 1 / 120)
    c = np.correlate(xr[10:] - xr[10:].mean(), xp[10:] - xp[10:].mean(), "full")
    assert int(np.argmax(c)) - (len(xp[10:]) - 1) == 3
    assert lag == pytest.approx(3 / 60, abs=1e-4)


def test_signs_are_aligned_so_a_mirrored_axis_is_not_half_a_period() -> None:
    tp, xp, tr, xr = _signals(0.03)
    assert estimate.align_signs(tp, xp, tr, xr, 0.3) == 1
    assert estimate.align_signs(tp, xp, tr, -xr, 0.3) == -1


def test_dominant_frequency_matches_scipy_periodogram() -> None:
    from scipy.signal import periodogram

    t = np.arange(0, 20, 1 / 60)
    x = np.cos(2 * np.pi * 1.37 * t)
    f, p = periodogram(x, fs=60, nfft=1 << 16)
    assert estimate.dominant_frequency(t, x) == pytest.approx(f[np.argmax(p)], abs=2e-3)


# --- bad input: one line, exit 2 -----------------------------------------------------


def _refused(args: list[str], capsys: pytest.CaptureFixture[str], needle: str) -> None:
    code, _, err = run_main(args, capsys)
    assert code == 2, err
    assert_one_line_error(err)
    assert needle in err, err


def test_unreadable_empty_and_truncated_videos_are_refused(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "notes.mp4"
    text.write_text("not a video\n")
    _refused(["mtp", "analyze", str(text), "--store", str(store)], capsys, "not a readable video")
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    _refused(["mtp", "analyze", str(empty), "--store", str(store)], capsys, "0 frames decoded")
    path, _ = _video(tmp_path)
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    _refused(["mtp", "analyze", str(cut), "--store", str(store)], capsys, "frames decoded")
    _refused(["mtp", "analyze", str(tmp_path / "none.mp4"), "--store", str(store)], capsys, "no such file")


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"freq_hz": 1e-6, "decay": 0.0}, "no motion"),
        ({"lose": (0.0, 10.0)}, "only one moving object"),
        ({"lose": (1.0, 2.2)}, "lost in 30%"),
        ({"rendered_freq_ratio": 1.05}, "different frequencies"),
        ({"freq_hz": 2.0, "latency_s": 0.26}, "half a period"),
    ],
)
def test_unusable_videos_are_refused(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str], changes: dict, needle: str
) -> None:
    path, _ = _video(tmp_path, **changes)
    _refused(["mtp", "analyze", str(path), "--store", str(store)], capsys, needle)


def test_bad_options_are_refused(tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = _video(tmp_path)
    _refused(
        [
            "mtp",
            "analyze",
            str(path),
            "--roi-physical",
            "1,2,3",
            "--roi-rendered",
            "0,0,10,10",
            "--store",
            str(store),
        ],
        capsys,
        "x,y,w,h",
    )
    _refused(
        ["mtp", "analyze", str(path), "--roi-physical", "0,0,900,10", "--store", str(store)], capsys, "both"
    )
    _refused(["mtp", "synth", str(tmp_path / "x.mp4"), "--size", "100x100"], capsys, "--size")


# --- per-frame sensor logs -----------------------------------------------------------


def test_frame_log_of_a_known_latency_is_ingested_as_a_run(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_main(
        ["mtp", "synth-log", str(tmp_path / "base"), "--duration", "20s", "--raw"], capsys
    )
    assert code == 0, err
    truth = json.loads((tmp_path / "base" / "truth.json").read_text())
    code, out, err = run_main(
        [
            "mtp",
            "ingest",
            str(tmp_path / "base" / "frames.csv"),
            "--condition",
            "baseline",
            "--json",
            "--store",
            str(store),
        ],
        capsys,
    )
    assert code == 0, err
    base = json.loads(out)
    assert base["frames"] == truth["frames"]
    assert base["mean_ms"] == pytest.approx(truth["quantised_mean_ms"], abs=1e-6)
    assert base["mean_ms"] == pytest.approx(truth["latency_mean_ms"], abs=1.25)
    # the raw logs on one clock give the same frames
    folder = tmp_path / "base"
    code, out, err = run_main(
        [
            "mtp",
            "ingest",
            "--motor",
            str(folder / "motor.csv"),
            "--photo",
            str(folder / "photo.csv"),
            "--tracker",
            str(folder / "tracker.csv"),
            "--json",
            "--store",
            str(store),
        ],
        capsys,
    )
    assert code == 0, err
    raw = json.loads(out)
    assert raw["mean_ms"] == pytest.approx(base["mean_ms"], abs=1e-6)
    assert raw["tracker"]["rev_per_s_seen"] == pytest.approx(2.0, rel=1e-3)
    assert raw["tracker"]["thesis_half_angle_max_error_deg"] < 1e-6
    assert raw["tracker"]["thesis_uncorrected_max_error_deg"] > 45
    # a condition with frames held every 16th frame: compare puts them side by side
    run_main(["mtp", "synth-log", str(tmp_path / "drop"), "--duration", "20s", "--drop-every", "16"], capsys)
    code, out, err = run_main(
        [
            "mtp",
            "ingest",
            str(tmp_path / "drop" / "frames.csv"),
            "--condition",
            "jitter",
            "--json",
            "--store",
            str(store),
        ],
        capsys,
    )
    drop = json.loads(out)
    assert drop["mean_ms"] == pytest.approx(base["mean_ms"] + 3 / 16 * 1000 / 90, abs=1.0)
    assert drop["sd_ms"] > 3 * base["sd_ms"]
    code, out, err = run_main(["compare", base["run"], drop["run"], "--store", str(store)], capsys)
    assert code == 0, err


def test_frame_log_options_wrap_warmup_and_aliasing(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rig = framelog.Rig()
    spec = framelog.LogSpec(latency_s=0.22, duration_s=10.0)
    framelog.write_synth_logs(tmp_path, spec, rig, raw=False)
    frames = tmp_path / "frames.csv"
    result = framelog.from_frames_csv(frames, dataclasses.replace(rig, warmup_s=4.0))
    assert result.dropped_warmup == 360
    assert any(w["code"] == "latency-aliasing" for w in result.warnings)
    lines = frames.read_text().splitlines()
    wrapped = [lines[0]] + [
        f"{int(row.split(',')[0]) % 5_000_000},{row.split(',', 1)[1]}" for row in lines[1:]
    ]
    frames.write_text("\n".join(wrapped) + "\n")
    _refused(["mtp", "ingest", str(frames), "--store", str(store)], capsys, "--tick-wrap")
    wrapped_result = framelog.from_frames_csv(frames, dataclasses.replace(rig, tick_wrap=5_000_000))
    assert np.array_equal(
        wrapped_result.latency_ns,
        framelog.from_frames_csv(frames, dataclasses.replace(rig, tick_wrap=5_000_000)).latency_ns,
    )
    assert len(wrapped_result.latency_ns) == spec.duration_s * spec.fps


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("frames.csv", "t_us,motor_step\n1,2\n", "missing column(s) code"),
        ("frames.csv", "t_us,motor_step,code\n1,2,3\n2,x,4\n", "row 3, column motor_step"),
        ("frames.csv", "t_us,motor_step,code\n5,2,3\n4,3,4\n", "timestamps do not increase"),
        ("frames.csv", "t_us,motor_step,code\n", "no rows"),
    ],
)
def test_bad_logs_are_refused(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, needle: str
) -> None:
    (tmp_path / name).write_text(text)
    _refused(["mtp", "ingest", str(tmp_path / name), "--store", str(store)], capsys, needle)


def test_zero_norm_quaternion_is_refused(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    framelog.write_synth_logs(tmp_path, framelog.LogSpec(duration_s=2.0), framelog.Rig(), raw=True)
    tracker = tmp_path / "tracker.csv"
    lines = tracker.read_text().splitlines()
    lines[5] = lines[5].split(",")[0] + ",0,0,0,0"
    tracker.write_text("\n".join(lines) + "\n")
    _refused(
        [
            "mtp",
            "ingest",
            "--motor",
            str(tmp_path / "motor.csv"),
            "--photo",
            str(tmp_path / "photo.csv"),
            "--tracker",
            str(tracker),
            "--store",
            str(store),
        ],
        capsys,
        "row 6: a quaternion of zero norm",
    )


# --- quaternions against scipy's Rotation (an independent implementation) -------------


def test_quaternion_product_and_angles_match_scipy() -> None:
    rng = np.random.default_rng(3)
    a, b = Rotation.random(50, random_state=rng), Rotation.random(50, random_state=rng)
    wxyz = lambda r: np.roll(r.as_quat(), 1, axis=1)  # noqa: E731  scipy stores (x, y, z, w)
    product = quat.multiply(wxyz(a), wxyz(b))
    expected = wxyz(a * b)
    assert np.allclose(np.abs(np.einsum("ij,ij->i", product, expected)), 1.0)
    axis = np.array([0.0, math.sin(0.2), math.cos(0.2)])
    angles = np.linspace(0.1, 2 * np.pi - 0.1, 40)
    q = quat.about_axis(angles, axis)
    assert np.allclose(
        Rotation.from_quat(np.roll(q, -1, axis=1)).magnitude(), np.minimum(angles, 2 * np.pi - angles)
    )
    assert np.allclose(quat.exact_angle(q, axis), angles)
    assert np.allclose(quat.thesis_angle(q), np.minimum(angles, 2 * np.pi - angles) / 2)  # the half angle
