"""Versions and machine facts recorded beside every result, so numbers can be compared honestly."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from typing import Any

PACKAGES = ("numpy", "pandas", "pyarrow", "pydantic", "limits")


def machine_facts() -> dict[str, Any]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "packages": versions,
    }
