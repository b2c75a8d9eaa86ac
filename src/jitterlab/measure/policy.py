"""Scheduling policies: which are real-time and the priority each runs at (one place)."""

from __future__ import annotations

DEFAULT_RT_PRIORITY = 90  # the seeds' SCHED_RR priority
RT_POLICIES = ("fifo", "rr")
THREAD_POLICIES = ("other", *RT_POLICIES)  # what a single tool or the JVM can ask for
POLICIES = (*THREAD_POLICIES, "deadline")  # what the native harness can ask for


def is_realtime(policy: str) -> bool:
    return policy in RT_POLICIES


def priority_for(policy: str, priority: int | None) -> int:
    """The priority a policy runs at: the given one or the seeds' 90 for fifo/rr, else 0."""
    return (priority or DEFAULT_RT_PRIORITY) if is_realtime(policy) else 0


def policy_label(policy: str, priority: int | None) -> str:
    """``rr90`` for real-time policies, the bare name otherwise (used in run ids)."""
    return f"{policy}{priority_for(policy, priority)}" if is_realtime(policy) else policy
