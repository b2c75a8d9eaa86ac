"""``jitterlab sdk``: where the C/C++ SDK and the OpenXR layer are installed."""

from __future__ import annotations

import argparse
from typing import Any

from jitterlab.core.errors import JitterlabError
from jitterlab.core.programs import PACKAGE_ROOT


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("sdk", help="where the C/C++ SDK is: headers, libraries, CMake and pkg-config files")
    p.add_argument(
        "--cmakedir", action="store_true", help="print the folder for CMAKE_PREFIX_PATH/jitterlab_DIR"
    )
    p.add_argument("--pkgconfigdir", action="store_true", help="print the folder for PKG_CONFIG_PATH")


def cmd_sdk(args: argparse.Namespace) -> int:
    cmake = PACKAGE_ROOT / "lib" / "cmake" / "jitterlab"
    pkgconfig = PACKAGE_ROOT / "lib" / "pkgconfig"
    if not cmake.is_dir():
        raise JitterlabError("the SDK is not installed; reinstall jitterlab (pip install .)")
    if args.cmakedir:
        print(cmake)
    elif args.pkgconfigdir:
        print(pkgconfig)
    else:
        print(f"include   {PACKAGE_ROOT / 'include'}")
        print(f"lib       {PACKAGE_ROOT / 'lib'}")
        print(f"cmake     {cmake}   (find_package(jitterlab) → jitterlab::monitor, jitterlab::inject)")
        print(f"pkgconfig {pkgconfig}   (jitterlab-monitor, jitterlab-inject)")
        print(
            f"openxr    {PACKAGE_ROOT / 'lib' / 'openxr'}   (XR_APILAYER_JITTERLAB_latency layer: jitterlab xr env)"
        )
    return 0


COMMANDS = {"sdk": cmd_sdk}
