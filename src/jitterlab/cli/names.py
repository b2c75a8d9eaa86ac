"""``jitterlab rename RUN NAME``: a stored run's human name changed, its id kept
(store/names.py; ``--name`` of the commands that store runs sets the first one)."""

from __future__ import annotations

import argparse
from typing import Any

from jitterlab.cli.common import load, note, store_option, writable_store


def add_parser(sub: Any) -> None:
    p = sub.add_parser("rename", help="give a stored run a name (its id stays, and still resolves)")
    p.add_argument("run", metavar="RUN", help="run id, name, unique part of an id, or run folder")
    p.add_argument("new_name", metavar="NAME", help="the new name, unique in the store")
    store_option(p)


def cmd_rename(args: argparse.Namespace) -> int:
    from jitterlab.store.names import check_free

    store = writable_store(args)
    run = load(args.run, args)
    check_free(store, args.new_name, "NAME", keep=run.path)
    old = run.name
    store.amend(run, {"name": args.new_name})
    note(f"renamed {run.id}: {old or '(no name)'} -> {args.new_name} (the id stays)")
    return 0


COMMANDS = {"rename": cmd_rename}
