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


@dataclass(frozen=True)
class Motion:
    """Where something moves: the connected parts of the thresholded temporal standard
    deviation (full-resolution pixels), each with its path's bounding box and its energy."""

    std: np.ndarray  # the temporal standard deviation, at 1/scale resolution
    labels: np.ndarray  # connected parts of the thresholded std (0: still)
    scale: int
    paths: list[tuple[float, Region]]  # (motion energy, path bounding box), largest energy first


def find_motion(stack: np.ndarray) -> Motion:
    """The temporal standard deviation of the sampled frames, thresholded between its median
    (noise) and its top (moving objects), closed, split into connected parts."""
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
    paths = []
    for label in range(1, count):
        x, y, bw, bh, area = (int(v) for v in stats[label])
        if area < 12:
            labels[labels == label] = 0
            continue
        paths.append((float(std[labels == label].sum()), (x * scale, y * scale, bw * scale, bh * scale)))
    paths.sort(reverse=True)
    return Motion(std, labels, scale, paths)


def _pad(path: Region, width: int, height: int) -> Region:
    """A path's box padded by a quarter of its size (plus 4 px): the tracked region."""
    x, y, w, h = path
    px, py = w // 4 + 4, h // 4 + 4
    x0, y0 = max(0, x - px), max(0, y - py)
    return (x0, y0, min(width, x + w + px) - x0, min(height, y + h + py) - y0)


def _overlaps(a: Region, b: Region) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def exclude_path(region: Region, own: Region, other: Region) -> Region | None:
    """``region`` cut along one side so that it no longer takes in ``other`` (the other
    object's path, with a margin of a quarter of its size) while it still holds ``own`` (its
    object's path) whole; the cut that keeps the most area. None when no cut can: the two
    paths' boxes overlap."""
    if _overlaps(own, other):
        return None
    for margin in (min(other[2], other[3]) // 4 + 4, 0):
        ox0, oy0 = other[0] - margin, other[1] - margin
        ox1, oy1 = other[0] + other[2] + margin, other[1] + other[3] + margin
        if not _overlaps(region, (ox0, oy0, ox1 - ox0, oy1 - oy0)):
            return region
        x0, y0, x1, y1 = region[0], region[1], region[0] + region[2], region[1] + region[3]
        cuts = [
            (x0, y0, min(x1, ox0), y1),  # keep what lies left of the other path
            (max(x0, ox1), y0, x1, y1),  # ... right of it
            (x0, y0, x1, min(y1, oy0)),  # ... above it
            (x0, max(y0, oy1), x1, y1),  # ... below it
        ]
        holds_own = [
            c
            for c in cuts
            if c[0] <= own[0] and c[1] <= own[1] and c[2] >= own[0] + own[2] and c[3] >= own[1] + own[3]
        ]
        if holds_own:
            best = max(holds_own, key=lambda c: (c[2] - c[0]) * (c[3] - c[1]))
            return (best[0], best[1], best[2] - best[0], best[3] - best[1])
    return None


def motion_regions(motion: Motion, width: int, height: int) -> tuple[list[Region], bool]:
    """The two objects' regions: the two paths with the most motion energy, each padded by a
    quarter of its size and cut back where the padding would take in the other object's path
    (its tracked centre would be pulled towards the other object whenever that one swings
    near). Returns the regions and whether any was cut; refuses paths whose boxes overlap."""
    if len(motion.paths) < 2:
        raise JitterlabError(
            "only one moving object found; the video must show the physical object and its rendered "
            "counterpart (or give --roi-physical and --roi-rendered)"
        )
    (_, first), (_, second) = motion.paths[0], motion.paths[1]
    regions, cut = [], False
    for own, other in ((first, second), (second, first)):
        padded = _pad(own, width, height)
        region = exclude_path(padded, own, other)
        if region is None:
            raise JitterlabError(
                f"the paths of the two moving objects overlap in the frame ({_box(first)} and {_box(second)}), "
                "so automatic regions cannot keep them apart; give --roi-physical and --roi-rendered"
            )
        cut |= region != padded
        regions.append(region)
    return regions, cut


def _box(region: Region) -> str:
    return ",".join(str(v) for v in region)


def check_given_regions(motion: Motion, regions: dict[str, Region]) -> None:
    """Refuse given regions that overlap each other or take in part of the path that moves
    mostly inside the other region (that object would pull the tracked centre)."""
    (name_a, a), (name_b, b) = regions.items()
    if _overlaps(a, b):
        raise JitterlabError(
            f"--roi-{name_a} {_box(a)} and --roi-{name_b} {_box(b)} overlap; each must hold only its own object"
        )
    s = motion.scale

    def inside(region: Region) -> np.ndarray:
        x, y, w, h = region
        box = np.zeros(motion.labels.shape, bool)
        box[y // s : -(-(y + h) // s), x // s : -(-(x + w) // s)] = True
        return box

    in_a, in_b = inside(a), inside(b)
    for label in np.unique(motion.labels[motion.labels > 0]):
        part = motion.labels == label
        share_a, share_b = int((part & in_a).sum()), int((part & in_b).sum())
        for (name, own, mine), (other, theirs) in (
            ((name_a, a, share_a), (name_b, share_b)),
            ((name_b, b, share_b), (name_a, share_a)),
        ):
            if theirs > mine and mine > max(3, 0.02 * part.sum()):
                raise JitterlabError(
                    f"--roi-{name} {_box(own)} takes in part of the {other} object's path; "
                    "give a region that holds only its own object's path"
                )


@dataclass
class _Centroid:
    """Intensity-weighted centroid of what differs from the region's background.

    The pixels that count are the object's core (contrast above ``threshold``) widened by
    ``spread`` pixels; inside, each counts with its full contrast (linear weights). A
    picture that a sample-and-hold display changed while the shutter was open is captured
    as a blend of two pictures; linear weights keep the fainter one's share, where
    subtracting a threshold would drop it and pull the centre towards the brighter one."""

    region: Region
    background: np.ndarray
    threshold: float
    expected_weight: float
    spread: int
    core_area: float = 0.0  # the object's usual area above the threshold, in pixels

    def weights(self, crop: np.ndarray) -> np.ndarray:
        import cv2

        diff = np.abs(crop.astype(np.float32) - self.background)
        core = (diff > self.threshold).astype(np.uint8)
        if self.spread:
            core = cv2.dilate(core, np.ones((2 * self.spread + 1, 2 * self.spread + 1), np.uint8))
        diff *= core
        return np.asarray(diff)

    def locate(self, luma: np.ndarray) -> tuple[float, float]:
        x, y, w, h = self.region
        diff = self.weights(luma[y : y + h, x : x + w])
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
    areas = (diffs > threshold).sum(axis=(1, 2))
    radius = float(np.sqrt(np.median(areas[areas > 0]) / np.pi)) if (areas > 0).any() else 0.0
    # widen the core by a third of the object's radius: far enough for the fainter of two
    # blended pictures, not so far that the encoder's wake behind a moving object counts
    finder = _Centroid(region, background, threshold, 1.0, max(1, round(radius / 3)), np.pi * radius**2)
    weights = np.array([finder.weights(c).sum() for c in crops])
    finder.expected_weight = float(np.median(weights[weights > 0])) if (weights > 0).any() else 1.0
    return finder


def backgrounds_hold(trackers: dict[str, _Centroid | _Kcf], stack: np.ndarray) -> bool:
    """Whether the backgrounds the trackers were built with (from the first seconds) are the
    ones a sample of the whole video gives: not when an object rested in its region during
    those seconds (held before it was let go), so that the background holds the object."""
    for tracker in trackers.values():
        finder = tracker if isinstance(tracker, _Centroid) else tracker.finder
        x, y, w, h = finder.region
        background = np.median(stack[:, y : y + h, x : x + w].astype(np.float32), axis=0)
        changed = int((np.abs(background - finder.background) > finder.threshold).sum())
        if changed > max(4, 0.05 * finder.core_area):
            return False
    return True


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
