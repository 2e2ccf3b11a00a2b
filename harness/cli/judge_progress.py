"""What `judge` shows while it works, on a terminal: one live line (rich, on stderr, gone when the
verdict prints) with the session's phase, the requests sent against their cap, admitted and
refused, and the time against ``--max-time``. Piped there is none: the verdict is the output."""

from __future__ import annotations

import time

from rich.console import Console
from rich.text import Text

from harness.judge.endpoint import Sent

from .live_line import LiveLine

PHASES = (("reach", "reaching the endpoint"), ("key", "finding the key"), ("probe", "learning the limit"),
          ("learn", "learning the limit"), ("check-fields", "checking its limit fields"), ("hunt", "hunting the worst case"),
          ("explore", "exploring steadier traffic"), ("check", "checking its prediction on traffic it did not fit"))
"""A request's role (by prefix, first match) -> the phase said."""


def phase(role: str) -> str:
    return next((said for prefix, said in PHASES if role.startswith(prefix)), role)


class JudgeProgress(LiveLine):
    def __init__(self, out: Console, url: str, max_requests: int, max_time_s: float) -> None:
        super().__init__(out)
        self.url, self.max_requests, self.max_time_s = url, max_requests, max_time_s
        self.t0 = time.monotonic()
        self.sent = self.refused = 0
        self.role = "key"

    def __enter__(self) -> JudgeProgress:
        super().__enter__()
        return self

    def heard(self, sent: Sent) -> None:
        """One request answered (``HttpEndpoint.on_sent``)."""
        self.sent += 1
        self.refused += not sent.answer.allowed
        self.role = sent.role

    def line(self) -> Text:
        seconds = time.monotonic() - self.t0
        return Text.assemble(("judging ", "dim"), self.url, "  ", (phase(self.role), "bold"),
                             f"  {self.sent:,} of at most {self.max_requests:,} requests ({self.sent - self.refused:,} "
                             f"admitted, {self.refused:,} refused)  {seconds:.0f} s of at most {self.max_time_s:g} s")
