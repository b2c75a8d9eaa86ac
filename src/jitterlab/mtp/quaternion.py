"""The tracker's rotation angle from its quaternions (seed 003 §4.3), two ways.

The thesis: q0 is the sample of smallest w among those whose dot product with their
predecessor is negative (the sign jumps of a quaternion made from Euler angles); every
orientation is normalised by ``q_n = q_t · q0⁻¹`` and the angle taken as ``acos(w)``.
Since q and −q are the same rotation, acos(w) only means something after making w ≥ 0,
and then it is the *half* angle, folded into [0°, 90°]: a full revolution cannot be told
from its mirror. The exact angle about the motor axis n is ``θ = 2·atan2(v·n, w)``, where v
is the vector part of q_n; n is the principal direction of the v's (its sign chosen so
that the angle increases over time). Both are here; docs/mtp.md says which to use.

Quaternions are (w, x, y, z) rows; all functions are pure.
"""

from __future__ import annotations

import numpy as np

from jitterlab.core.errors import JitterlabError


def normalised(q: np.ndarray, source: str = "tracker") -> np.ndarray:
    norms = np.linalg.norm(q, axis=1)
    bad = np.flatnonzero(~(norms > 1e-9))
    if len(bad):
        raise JitterlabError(f"{source}: row {int(bad[0]) + 2}: a quaternion of zero norm is not a rotation")
    return np.asarray(q / norms[:, None])


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of rows (or a row broadcast against rows)."""
    aw, ax, ay, az = np.moveaxis(np.atleast_2d(a), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.atleast_2d(b), -1, 0)
    return np.stack(
        (
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ),
        axis=-1,
    )


def inverse(q: np.ndarray) -> np.ndarray:
    return np.asarray(q * np.array([1.0, -1.0, -1.0, -1.0]))


def about_axis(angle: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """Rotations by ``angle`` (radians) about the unit ``axis``."""
    half = np.asarray(angle, dtype=np.float64)[..., None] / 2
    return np.concatenate((np.cos(half), np.sin(half) * axis), axis=-1)


def thesis_q0(q: np.ndarray) -> int:
    """Index of q0: the sample of smallest w among those with ⟨q_t, q_(t−1)⟩ < 0 (the first
    sample when the signs never jump)."""
    dots = np.einsum("ij,ij->i", q[1:], q[:-1])
    candidates = np.flatnonzero(dots < 0) + 1
    if len(candidates) == 0:
        return 0
    return int(candidates[np.argmin(q[candidates, 0])])


def thesis_angle(q_n: np.ndarray) -> np.ndarray:
    """acos(w) with w made non-negative first: the half angle, in [0, π/2]."""
    return np.asarray(np.arccos(np.clip(np.abs(q_n[:, 0]), 0.0, 1.0)))


def motor_axis(q_n: np.ndarray) -> np.ndarray:
    """The rotation axis: the principal direction of the vector parts (sign: increasing angle)."""
    v = q_n[:, 1:] * np.sign(q_n[:, :1] + 1e-300)
    _, _, vt = np.linalg.svd(v, full_matrices=False)
    axis = vt[0]
    angles = np.unwrap(2 * np.arctan2(q_n[:, 1:] @ axis, q_n[:, 0]))
    return np.asarray(axis if angles[-1] >= angles[0] else -axis)


def exact_angle(q_n: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """θ = 2·atan2(v·n, w), in [0, 2π): the full signed angle about the axis."""
    return np.asarray(np.mod(2 * np.arctan2(q_n[:, 1:] @ axis, q_n[:, 0]), 2 * np.pi))
