"""Where the two objects are in each frame: regions (given, or found from the temporal
variance of the frames), a tracker per region (intensity-weighted centroid, or OpenCV's
KCF as in the thesis), and PCA of the 2-D track to one dimension.

All functions are pure over arrays except :func:`track`, which consumes frames.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from jitterlab.core.errors import JitterlabError

Region = tuple[int, int, int, int]  # x, y, width, height
MAX_SAMPLED_FRAMES = 80  # frames kept for the variance image and the backgrounds


@dataclass
class Track:
    """One object's centre per frame (NaN where it was lost)."""

    name: str
    region: Region
    x: np.ndarray
    y: np.ndarray

    @property
    def lost(self) -> np.ndarray:
        return np.asarray(~np.isfinite(self.x))


def parse_region(text: str, width: int, height: int, flag: str) -> Region:
    try:
        x, y, w, h = (int(v) for v in text.split(","))
    except ValueError:
        raise JitterlabError(f"{flag} wants x,y,w,h in pixels, got '{text}'") from None
    if w < 4 or h < 4 or x < 0 or y < 0 or x + w > width or y + h > height:
        raise JitterlabError(f"{flag} {text} does not fit in the {width}x{height} frame")
    return (x, y, w, h)


def motion_regions(stack: np.ndarray) -> tuple[list[Region], np.ndarray]:
    """The regions where something moves: the temporal standard deviation of sampled
    frames, thresholded between its median (noise) and its top (moving objects), closed,
    split into connected components; the largest by motion energy come first.

    Returns the regions (padded by a quarter of their size) and the variance image.
    """
    import cv2

    # a 320-pixel-wide view is plenty to find regions and keeps this step cheap
    scale = max(1, stack.shape[2] // 320)
    std = stack[:, ::scale, ::scale].astype(np.float32).std(axis=0)
    floor, top = float(np.median(std)), float(np.percentile(std, 99.95))
    if top - floor < 3.0:
        raise JitterlabError("no motion: the frames do not change (a still video?)")
    mask = (std > floor + 0.2 * (top - floor)).astype(np.uint8)
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((9, 9), np.uint8))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    h, w = std.shape
    found = []
    for label in range(1, count):
        x, y, bw, bh, area = (int(v) for v in stats[label])
        if area < 12:
            continue
        energy = float(std[labels == label].sum())
        px, py = bw // 4 + 4, bh // 4 + 4
        x0, y0 = max(0, x - px) * scale, max(0, y - py) * scale
        x1, y1 = min(w, x + bw + px) * scale, min(h, y + bh + py) * scale
        region = (x0, y0, min(x1, stack.shape[2]) - x0, min(y1, stack.shape[1]) - y0)
        found.append((energy, region))
    found.sort(reverse=True)
    return [r for _, r in found], std


@dataclass
class _Centroid:
    """Intensity-weighted centroid of what differs from the region's background."""

    region: Region
    background: np.ndarray
    threshold: float
    expected_weight: float

    def locate(self, luma: np.ndarray) -> tuple[float, float]:
        x, y, w, h = self.region
        diff = np.abs(luma[y : y + h, x : x + w].astype(np.float32) - self.background)
        diff -= self.threshold
        np.maximum(diff, 0, out=diff)
        total = float(diff.sum())
        if total < 0.25 * self.expected_weight:
            return np.nan, np.nan  # lost: far less contrast than the object usually has
        cx = float(diff.sum(axis=0) @ np.arange(w)) / total
        cy = float(diff.sum(axis=1) @ np.arange(h)) / total
        return x + cx, y + cy


def _centroid(region: Region, stack: np.ndarray) -> _Centroid:
    x, y, w, h = region
    crops = stack[:, y : y + h, x : x + w].astype(np.float32)
    background = np.median(crops, axis=0)
    diffs = np.abs(crops - background)
    noise = 1.4826 * float(np.median(diffs)) + 0.5
    contrast = float(np.percentile(diffs, 99.9))
    if contrast < 6 * noise:
        raise JitterlabError(f"region {region}: nothing stands out from the noise (no moving object there)")
    threshold = max(0.25 * contrast, 4 * noise)
    weights = np.maximum(diffs - threshold, 0).sum(axis=(1, 2))
    return _Centroid(region, background, threshold, float(np.median(weights[weights > 0])))


@dataclass
class _Kcf:
    """OpenCV's KCF tracker (the thesis' choice) on the region, re-started from the
    centroid when it reports a loss."""

    finder: _Centroid
    box: int
    tracker: object | None = None
    frames: int = field(default=0)

    def locate(self, luma: np.ndarray) -> tuple[float, float]:
        import cv2

        x, y, w, h = self.finder.region
        crop = cv2.cvtColor(np.ascontiguousarray(luma[y : y + h, x : x + w]), cv2.COLOR_GRAY2BGR)
        if self.tracker is not None:
            ok, (bx, by, bw, bh) = self.tracker.update(crop)  # type: ignore[attr-defined]
            if ok:
                return x + bx + bw / 2 - 0.5, y + by + bh / 2 - 0.5
            self.tracker = None
        cx, cy = self.finder.locate(luma)
        if np.isfinite(cx):
            half = self.box // 2
            bx = round(cx - x) - half
            by = round(cy - y) - half
            bx, by = max(0, min(w - self.box, bx)), max(0, min(h - self.box, by))
            self.tracker = cv2.TrackerKCF_create()  # type: ignore[attr-defined]
            self.tracker.init(crop, (bx, by, self.box, self.box))  # type: ignore[attr-defined]
        return cx, cy


def object_size(finder: _Centroid, stack: np.ndarray) -> int:
    """The object's size in pixels, from its thresholded area in the sampled frames."""
    x, y, w, h = finder.region
    crops = np.abs(stack[:, y : y + h, x : x + w].astype(np.float32) - finder.background)
    areas = (crops > finder.threshold).sum(axis=(1, 2))
    area = float(np.median(areas[areas > 0])) if (areas > 0).any() else 16.0
    return int(min(min(w, h) - 2, max(8, 2.2 * np.sqrt(area))))


def make_trackers(regions: dict[str, Region], stack: np.ndarray, kind: str) -> dict[str, _Centroid | _Kcf]:
    trackers: dict[str, _Centroid | _Kcf] = {}
    for name, region in regions.items():
        finder = _centroid(region, stack)
        trackers[name] = _Kcf(finder, object_size(finder, stack)) if kind == "kcf" else finder
    return trackers


def track(
    frames: Iterable[tuple[float, np.ndarray]], trackers: dict[str, _Centroid | _Kcf]
) -> tuple[np.ndarray, dict[str, Track]]:
    """Run every tracker on every frame: the frame times and one :class:`Track` per region."""
    times: list[float] = []
    points: dict[str, list[tuple[float, float]]] = {name: [] for name in trackers}
    for t, luma in frames:
        times.append(t)
        for name, tracker in trackers.items():
            points[name].append(tracker.locate(luma))
    tracks = {}
    for name, tracker in trackers.items():
        xy = np.array(points[name], dtype=np.float64).reshape(-1, 2)
        region = tracker.region if isinstance(tracker, _Centroid) else tracker.finder.region
        tracks[name] = Track(name, region, xy[:, 0], xy[:, 1])
    return np.array(times), tracks


def principal_axis(track: Track) -> tuple[np.ndarray, np.ndarray]:
    """(mean, unit axis) of the track's points: PCA to the direction of largest variance.
    The axis's sign is arbitrary; :func:`jitterlab.mtp.estimate.align_signs` fixes it."""
    ok = ~track.lost
    points = np.column_stack((track.x[ok], track.y[ok]))
    mean = points.mean(axis=0)
    _, _, vt = np.linalg.svd(points - mean, full_matrices=False)
    return mean, vt[0]


def project(track: Track) -> np.ndarray:
    mean, axis = principal_axis(track)
    return np.asarray((track.x - mean[0]) * axis[0] + (track.y - mean[1]) * axis[1])
