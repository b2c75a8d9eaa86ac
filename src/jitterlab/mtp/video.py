"""Decoding a video into grey frames with each frame's own timestamp (PyAV/FFmpeg).

Frame index ÷ fps is wrong on variable-frame-rate video, which phones record by default:
every frame carries its presentation time, and that is what the analysis uses. A
slow-motion file stored at a playback rate (for example 30 fps) but captured at 240 fps
needs ``capture_fps``: the timestamps are scaled by stored rate ÷ capture rate.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jitterlab.core.errors import JitterlabError


@dataclass(frozen=True)
class VideoInfo:
    path: Path
    width: int
    height: int
    frames: int  # as the container states it (0 when it does not)
    stored_fps: float
    codec: str


def _open(path: Path):  # type: ignore[no-untyped-def]
    import av

    if not path.is_file():
        raise JitterlabError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise JitterlabError(f"{path}: an empty file, 0 frames decoded")
    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise JitterlabError(f"{path}: not a readable video, 0 frames decoded ({reason})") from e
    if not container.streams.video:
        container.close()
        raise JitterlabError(f"{path}: holds no video stream")
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    return container, stream


def probe(path: Path) -> VideoInfo:
    container, stream = _open(path)
    with container:
        rate = stream.average_rate or stream.guessed_rate or 0
        return VideoInfo(
            path, stream.width, stream.height, int(stream.frames or 0), float(rate), stream.codec_context.name
        )


def frames(path: Path, capture_fps: float | None = None) -> Iterator[tuple[float, np.ndarray]]:
    """(time in seconds since the first frame, luma plane as uint8 H×W) for every frame.

    The luma plane is used as the grey image directly: converting to RGB or grey through
    swscale costs more than decoding. A file that stops decoding part-way raises a
    :class:`JitterlabError` that says how many frames decoded.
    """
    import av

    container, stream = _open(path)
    info_rate = float(stream.average_rate or stream.guessed_rate or 0)
    scale = info_rate / capture_fps if capture_fps and info_rate else 1.0
    decoded = 0
    first: float | None = None
    last = -np.inf
    with container:
        try:
            for frame in container.decode(stream):
                if frame.pts is None or frame.time is None:
                    raise JitterlabError(f"{path}: frame {decoded} has no timestamp")
                t = float(frame.time)
                first = t if first is None else first
                t = (t - first) * scale
                if t <= last:
                    continue  # a repeated or out-of-order timestamp: keep the first
                last = t
                plane = frame.planes[0]
                luma = np.frombuffer(plane, np.uint8).reshape(-1, plane.line_size)[
                    : frame.height, : frame.width
                ]
                decoded += 1
                yield t, luma
        except av.FFmpegError as e:
            raise JitterlabError(f"{path}: damaged or truncated video: {decoded} frames decoded ({e})") from e
    if decoded == 0:
        raise JitterlabError(f"{path}: no frame decoded (empty or truncated video)")
