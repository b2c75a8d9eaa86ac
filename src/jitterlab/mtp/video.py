"""Decoding a video into grey frames with each frame's own timestamp (PyAV/FFmpeg).

Frame index ÷ fps is wrong on variable-frame-rate video, which phones record by default:
every frame carries its presentation time, and that is what the analysis uses. A
slow-motion file stored at a playback rate (for example 30 fps) but captured at 240 fps
needs ``capture_fps``: the timestamps are scaled by stored rate ÷ capture rate.

A file that ends early (cut off while it was copied or recorded) decodes as far as it can;
:class:`Decoded` says how far that was against what the container states, so the analysis
can say the result covers part of the video.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jitterlab.core.errors import JitterlabError

MAX_CAPTURE_FPS = 1e6  # no camera that films a display does more


@dataclass(frozen=True)
class VideoInfo:
    path: Path
    width: int
    height: int
    frames: int  # as the container states it (0 when it does not)
    stored_fps: float
    codec: str
    duration_s: float  # as the container states it, in the file's own time (0 when it does not)


@dataclass
class Decoded:
    """How far decoding got: frames, the last frame's time in the file's own time, and why
    it stopped early ("" when it reached the end of the stream)."""

    frames: int = 0
    last_s: float = 0.0
    stopped: str = ""


def _open(path: Path):  # type: ignore[no-untyped-def]
    import av

    if not path.is_file():
        import stat

        try:
            mode = path.stat().st_mode
        except OSError:
            raise JitterlabError(f"{path}: no such file") from None
        what = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        raise JitterlabError(f"{path}: {what}, not a video file")
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
        if stream.duration and stream.time_base:
            duration = float(stream.duration * stream.time_base)
        else:
            duration = container.duration / 1e6 if container.duration else 0.0
        return VideoInfo(
            path,
            stream.width,
            stream.height,
            int(stream.frames or 0),
            float(rate),
            stream.codec_context.name,
            duration,
        )


def time_scale(info: VideoInfo, capture_fps: float | None) -> float:
    """The factor from the file's timestamps to real time: stored rate ÷ capture rate for a
    slow-motion file, 1 otherwise. A capture rate below the stored rate is refused (a file
    that plays faster than it was filmed is not slow motion), as is one no camera has."""
    if capture_fps is None:
        return 1.0
    if not 0 < capture_fps <= MAX_CAPTURE_FPS:
        raise JitterlabError(
            f"--capture-fps {capture_fps:g} is not a camera's frame rate (more than 0, at most {MAX_CAPTURE_FPS:,.0f})"
        )
    if not info.stored_fps:
        raise JitterlabError(
            f"{info.path}: the file states no frame rate, so --capture-fps cannot rescale its timestamps"
        )
    if capture_fps < info.stored_fps * (1 - 1e-3):
        raise JitterlabError(
            f"--capture-fps {capture_fps:g} is below the rate the file plays at ({info.stored_fps:g} fps): "
            "slow motion is filmed faster than it plays; leave --capture-fps out for a file that plays in real time"
        )
    return info.stored_fps / capture_fps


def frames(
    path: Path, scale: float = 1.0, decoded: Decoded | None = None
) -> Iterator[tuple[float, np.ndarray]]:
    """(time in seconds since the first frame, luma plane as uint8 H×W) for every frame; the
    luma plane is a view that the next frame may overwrite (copy what you keep).

    The luma plane is used as the grey image directly: converting to RGB or grey through
    swscale costs more than decoding. A file that stops decoding part-way ends the frames
    there; ``decoded`` says how far it got and why it stopped.
    """
    import av

    decoded = decoded if decoded is not None else Decoded()
    container, stream = _open(path)
    first: float | None = None
    last = -np.inf
    with container:
        try:
            for frame in container.decode(stream):
                if frame.pts is None or frame.time is None:
                    raise JitterlabError(f"{path}: frame {decoded.frames} has no timestamp")
                t = float(frame.time)
                first = t if first is None else first
                if t - first <= last:
                    continue  # a repeated or out-of-order timestamp: keep the first
                last = t - first
                plane = frame.planes[0]
                luma = np.frombuffer(plane, np.uint8).reshape(-1, plane.line_size)[
                    : frame.height, : frame.width
                ]
                decoded.frames += 1
                decoded.last_s = last
                yield last * scale, luma
        except av.FFmpegError as e:
            decoded.stopped = f"decoding stopped: {e}"
    if decoded.frames == 0:
        why = f" ({decoded.stopped})" if decoded.stopped else ""
        raise JitterlabError(f"{path}: no frame decoded (empty or truncated video){why}")


def truncation(info: VideoInfo, decoded: Decoded) -> str:
    """Why the decoded frames fall short of what the container states ("" when they do
    not): more than two frames missing, by count or by duration."""
    interval = 1 / info.stored_fps if info.stored_fps else 0.0
    short_frames = info.frames and decoded.frames < info.frames - 2
    short_time = info.duration_s and interval and decoded.last_s + interval < info.duration_s - 2 * interval
    if not (short_frames or short_time or decoded.stopped):
        return ""
    stated = f"{info.duration_s:.2f} s" if info.duration_s else "more"
    if info.frames:
        stated += f" ({info.frames} frames)"
    got = f"{decoded.last_s + interval:.2f} s ({decoded.frames} frames)"
    why = f"; {decoded.stopped}" if decoded.stopped else ""
    return f"the container states {stated}, {got} decoded: the file is cut short{why}"
