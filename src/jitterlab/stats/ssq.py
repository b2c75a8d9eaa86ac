"""Simulator Sickness Questionnaire scoring (Kennedy, Lane, Berbaum & Lilienthal 1993).

16 symptoms, each rated 0 (none), 1 (slight), 2 (moderate) or 3 (severe). Each belongs to
one or two of three clusters; the raw sum of a cluster's items is weighted:

    N = 9.54 × Σ nausea items        O = 7.58 × Σ oculomotor items
    D = 13.92 × Σ disorientation items    TS = 3.74 × (Σ N items + Σ O items + Σ D items)

Item → clusters (Kennedy et al. 1993, Table 5): general discomfort N O; fatigue O; headache
O; eye strain O; difficulty focusing O D; increased salivation N; sweating N; nausea N D;
difficulty concentrating N O; fullness of head D; blurred vision O D; dizzy (eyes open) D;
dizzy (eyes closed) D; vertigo D; stomach awareness N; burping N. Known answers: every item
3 gives N 200.34, O 159.18, D 292.32, TS 235.62; every item 0 gives 0.
"""

from __future__ import annotations

import numpy as np

ITEMS: tuple[tuple[str, str], ...] = (
    ("general_discomfort", "NO"),
    ("fatigue", "O"),
    ("headache", "O"),
    ("eye_strain", "O"),
    ("difficulty_focusing", "OD"),
    ("increased_salivation", "N"),
    ("sweating", "N"),
    ("nausea", "ND"),
    ("difficulty_concentrating", "NO"),
    ("fullness_of_head", "D"),
    ("blurred_vision", "OD"),
    ("dizzy_eyes_open", "D"),
    ("dizzy_eyes_closed", "D"),
    ("vertigo", "D"),
    ("stomach_awareness", "N"),
    ("burping", "N"),
)
WEIGHTS = {"N": 9.54, "O": 7.58, "D": 13.92}
TOTAL_WEIGHT = 3.74
SCALES = ("total", "nausea", "oculomotor", "disorientation")


def score(items: np.ndarray) -> dict[str, np.ndarray]:
    """Scores of rows of 16 item ratings (columns in the order of ``ITEMS``)."""
    ratings = np.asarray(items, dtype=np.float64).reshape(-1, len(ITEMS))
    raw = {c: ratings[:, [i for i, (_, cs) in enumerate(ITEMS) if c in cs]].sum(axis=1) for c in "NOD"}
    return {
        "nausea": raw["N"] * WEIGHTS["N"],
        "oculomotor": raw["O"] * WEIGHTS["O"],
        "disorientation": raw["D"] * WEIGHTS["D"],
        "total": (raw["N"] + raw["O"] + raw["D"]) * TOTAL_WEIGHT,
    }
