"""The decision log's flusher imports nothing mid-run: pyarrow's first conversion of Python
objects imports pandas (~380 modules, a long GIL hold), so ``start`` pays it up front."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys, time
from pathlib import Path
from targets.decision_log import DecisionLog
log = DecisionLog(Path(sys.argv[1]))
log.start()
before = set(sys.modules)
log.rows.append((time.time(), "node-1", "fixed_window", "memory", "per-client", "ip:127.0.0.1", 1.0, True, 4.0,
                 0.0, 1.5, None, "r-1", None, "items", 0.0, None, "memory", None, time.time()))
log._flush()
log.close()
print(sorted(set(sys.modules) - before))
"""


def test_the_first_flush_imports_nothing(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "log.parquet")], capture_output=True,
                         text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"
    assert (tmp_path / "log.parquet").exists()
