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


def granted(policy: str, priority: int | None) -> bool:
    """Whether this process may run a thread at ``policy`` (fifo/rr at its priority): tried
    on a short-lived thread of its own, which then ends, so nothing else changes. Other
    policies are taken as granted (deadline is tried by the harness, which says so)."""
    if not is_realtime(policy):
        return True
    import os
    import threading

    result: list[bool] = []

    def attempt() -> None:
        kind = os.SCHED_FIFO if policy == "fifo" else os.SCHED_RR
        try:
            os.sched_setscheduler(
                threading.get_native_id(), kind, os.sched_param(priority_for(policy, priority))
            )
        except OSError:
            result.append(False)
        else:
            result.append(True)

    thread = threading.Thread(target=attempt, name="policy-probe")
    thread.start()
    thread.join()
    return bool(result and result[0])


def id_label(policy: str, priority: int | None) -> str:
    """The policy part of a run id: ``rr90`` when the kernel will grant it, and what the
    threads will run as when it will not (``other-rr90-refused``), so that an id never
    names a policy the run did not get."""
    asked = policy_label(policy, priority)
    return asked if granted(policy, priority) else f"other-{asked}-refused"
