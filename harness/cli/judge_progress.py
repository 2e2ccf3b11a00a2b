"""What `judge` shows while it works, on a terminal: one live line (rich, on stderr, gone when the
verdict prints) with the session's phase, the requests sent against their cap, admitted and
refused, and the time against ``--max-time``. Piped there is none: the verdict is the output."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.text import Text

from harness.judge.endpoint import Sent

PHASES = (("reach", "reaching the endpoint"), ("key", "finding the key"), ("probe", "learning the limit"),
          ("learn", "learning the limit"), ("check-fields", "checking its limit fields"), ("hunt", "hunting the worst case"),
          ("explore", "exploring steadier traffic"), ("check", "checking its prediction on traffic it did not fit"))
"""A request's role (by prefix, first match) -> the phase said."""
REFRESH_PER_S = 4


def phase(role: str) -> str:
    return next((said for prefix, said in PHASES if role.startswith(prefix)), role)


class JudgeProgress:
    def __init__(self, out: Console, url: str, max_requests: int, max_time_s: float) -> None:
        self.out, self.url, self.max_requests, self.max_time_s = out, url, max_requests, max_time_s
        self.t0 = time.monotonic()
        self.sent = self.refused = 0
        self.role = "key"
        self.live: Live | None = None

    def __enter__(self) -> JudgeProgress:
        if self.out.is_terminal:
            self.live = Live(console=self.out, get_renderable=self.line, refresh_per_second=REFRESH_PER_S,
                             transient=True, redirect_stdout=False, redirect_stderr=False)
            self.live.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def heard(self, sent: Sent) -> None:
        """One request answered (``HttpEndpoint.on_sent``)."""
        self.sent += 1
        self.refused += not sent.answer.allowed
        self.role = sent.role

    def line(self) -> Text:
        """The one line, cut to the terminal's width."""
        seconds = time.monotonic() - self.t0
        text = Text.assemble(("judging ", "dim"), self.url, "  ", (phase(self.role), "bold"),
                             f"  {self.sent:,} of at most {self.max_requests:,} requests ({self.sent - self.refused:,} "
                             f"admitted, {self.refused:,} refused)  {seconds:.0f} s of at most {self.max_time_s:g} s")
        text.truncate(self.out.width - 1, overflow="ellipsis")
        return text
