"""What a killed tree left behind is read while it dies: a process that ends between being seen
alive and being described is gone, not an error (CI caught ``psutil.ZombieProcess`` there)."""

from __future__ import annotations

import psutil

from harness.processes.leftovers import left_behind


class Dying:
    """A recorded process as psutil shows it: running when asked, its command line then read as
    ``cmdline`` says (a list, or the error of a process that ended meanwhile)."""

    def __init__(self, pid: int, cmdline: list[str] | psutil.Error) -> None:
        self.pid, self._cmdline = pid, cmdline

    def is_running(self) -> bool:
        return True

    def status(self) -> str:
        return psutil.STATUS_RUNNING

    def cmdline(self) -> list[str]:
        if isinstance(self._cmdline, psutil.Error):
            raise self._cmdline
        return self._cmdline


def test_a_process_that_dies_while_it_is_read_is_not_left_and_the_rest_are() -> None:
    tree = [Dying(1_000_001, psutil.ZombieProcess(1_000_001)), Dying(1_000_002, psutil.NoSuchProcess(1_000_002)),
            Dying(1_000_003, ["python", "run_bench.py", "run"]), Dying(1_000_004, [])]
    left = left_behind(tree, set(), "no process names this marker 6f1d")  # type: ignore[arg-type]
    assert left == ["1000003 recorded: python run_bench.py run", "1000004 recorded: "]
