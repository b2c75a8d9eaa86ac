"""main() called in-process (a notebook, a test) leaves no process-wide setting behind."""

from __future__ import annotations

from pathlib import Path

from jitterlab.cli.main import main  # the function: the package attribute may be the submodule once imported
from jitterlab.store.runs import ResultsStore


def test_the_store_owner_rule_holds_for_the_command_only(tmp_path: Path) -> None:
    # a later ResultsStore of this process (a fixture making root's runs in a user's store)
    # must not inherit the refusal the command set for itself
    assert ResultsStore.refuse_others_as_root is False
    assert main(["runs", "--store", str(tmp_path / "results")]) == 0
    assert ResultsStore.refuse_others_as_root is False
