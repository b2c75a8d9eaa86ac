"""``jitterlab xr``: the OpenXR API layer that delays tracking by a model (docs/xr.md)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from jitterlab.cli.common import Parser, note, store_option, writable_store


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("xr", help="OpenXR layer: delay an unchanged VR application's tracking by a model")
    xr = p.add_subparsers(dest="xr_command", required=True, parser_class=Parser)
    q = xr.add_parser("env", help="print the environment that enables the layer (sh syntax)")
    q.add_argument(
        "--config", type=Path, help="the layer's config (TOML); checked, then named by JITTERLAB_XR_CONFIG"
    )
    q = xr.add_parser(
        "run", help="run APP with the layer and a monitor serve per channel; store the runs when it exits"
    )
    q.add_argument("--config", type=Path, required=True, help="the layer's config (TOML, docs/xr.md)")
    q.add_argument(
        "--listen",
        default="127.0.0.1:9464",
        help="metrics endpoint of the first channel; the others take the next ports (127.0.0.1:9464)",
    )
    q.add_argument(
        "--baseline",
        help="reference run whose stacked-z thresholds screen the poses' trials live (as monitor serve --baseline)",
    )
    q.add_argument(
        "--trial",
        help="tag of the trial each session of APP marks on the poses' channels (default session-N; <= 32 bytes)",
    )
    q.add_argument("app", nargs=argparse.REMAINDER, help="-- APP ARGS...")
    store_option(q)


def cmd_xr(args: argparse.Namespace) -> int:
    from jitterlab import xr

    if args.xr_command == "env":
        config = xr.read_config(args.config).path if args.config else None
        for key, value in xr.environment(config).items():
            print(f"export {key}={shlex.quote(value)}")
        return 0
    config_ = xr.read_config(args.config)
    argv = list(args.app[1:] if args.app[:1] == ["--"] else args.app)
    store = writable_store(args)
    code, stored = xr.run_app(
        config_, argv, store.root, args.listen, baseline=args.baseline, trial=args.trial, warn=note
    )
    for channel, run_id in stored:
        print(f"{channel}\t{run_id}")
    if code != 0:
        note(f"{argv[0]} exited with code {code}")
    return 0


COMMANDS = {"xr": cmd_xr}
