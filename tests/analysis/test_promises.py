"""The limit fields' promises checked per run from the client log alone, on crafted result folders:
a url peer's row (decisions inferred client-side, so no Retry-After in its decision log) gets the
same check as any; a lying endpoint is caught; a folder from before the column still loads."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.analyze import analyze_run
from analysis.loader import load_results
from analysis.promises import text
from analysis.report import build_report
from contract.schema import DECIDED_BY_CLIENT

from .synth import T0, client_table, decisions_table, write_run

POLICY_LINE = 'ratelimit-policy: "default";q=2;w=10'


def _fields(remaining: int, reset: int, retry_after: int | str | None = None) -> str:
    lines = [f'ratelimit: "default";r={remaining};t={reset}', POLICY_LINE]
    return "\n".join(lines + ([f"retry-after: {retry_after}"] if retry_after is not None else []))


def _run(root, name: str, answers: list[tuple[float, int, str | None]], with_fields: bool = True) -> None:
    """One key's answers (send offset from T0, status, limit fields), each answered 10 ms later, as
    a url peer's run: its decisions say nothing of Retry-After (inferred from the client)."""
    t = T0 + np.array([a[0] for a in answers])
    allowed = np.array([a[1] == 200 for a in answers])
    rid = [f"r{i}" for i in range(len(t))]
    d = decisions_table(t, np.array(["k1"] * len(t)), allowed, np.array(["legit"] * len(t)), rid, name,
                        retry_after=np.full(len(t), np.nan))
    client = client_table(rid, t, t, t + 0.01, [a[1] for a in answers], np.ones(len(t)), [a[2] for a in answers])
    if not with_fields:
        client = client.drop_columns(["limit_fields"])
    write_run(root, "boundary_burst", name, d, client, {"system": "url", "decided_from": DECIDED_BY_CLIENT})


# A fixed window of 2 per 10 s (from T0), its fields in whole seconds (rounded up, as the suite's
# targets send them): two admitted, a refusal, the retry when it said
TRUTHFUL = [(0.0, 200, _fields(1, 10)), (1.0, 200, _fields(0, 9)), (2.0, 429, _fields(0, 8, 8)),
            (10.5, 200, _fields(1, 10))]
# ... and one whose refusal says 3 s when the window has 8 s to go: its retry at 5.5 is refused
LYING = [(0.0, 200, _fields(1, 10)), (1.0, 200, _fields(0, 3)), (2.0, 429, _fields(0, 3, 3)),
         (5.5, 429, _fields(0, 3, 3)), (10.5, 200, _fields(1, 10))]


def _rows(root) -> dict[str, dict]:
    return {r.info.algorithm: analyze_run(r).row for r in load_results(root).runs}


def test_a_url_row_gets_header_truth_and_a_lie_is_caught(tmp_path):
    _run(tmp_path, "gw-true", TRUTHFUL)
    _run(tmp_path, "gw-lies", LYING)
    rows = _rows(tmp_path)
    true, lies = rows["gw-true"], rows["gw-lies"]
    assert true["header_truthfulness"] is None  # the older measure: a request's own retries, by the decision log
    assert (true["limit_fields_form"], true["retry_after_kept"], true["retry_after_checked"]) == ("ietf-list", 1, 1)
    assert (true["remaining_kept"], true["remaining_checked"], true["reset_kept"], true["reset_checked"]) == (1, 1, 1, 1)
    assert text(true) == "Retry-After 1/1, remaining 1/1, reset 1/1"
    # the retry at 5.5 (Retry-After 3 after the refusal at 2) refused: one of two kept
    assert (lies["retry_after_kept"], lies["retry_after_checked"], lies["reset_kept"], lies["reset_checked"]) == (1, 2, 1, 2)
    assert text(lies, short=True) == "1/2 1/1 1/2"


def test_a_retry_after_alone_is_checked_and_a_fractional_one_is_malformed_not_kept(tmp_path):
    """An endpoint that sends Retry-After and no RateLimit field (third-party limiters often do):
    its promise is checked; "1.5" breaks RFC 9110's delay-seconds and promises nothing."""
    alone = [(0.0, 200, None), (1.0, 429, "retry-after: 3"), (4.5, 200, None)]
    fraction = [(0.0, 200, None), (1.0, 429, "retry-after: 1.5"), (2.5, 429, "retry-after: 1.5"), (4.5, 200, None)]
    _run(tmp_path, "gw-alone", alone)
    _run(tmp_path, "gw-fraction", fraction)
    rows = _rows(tmp_path)
    assert text(rows["gw-alone"]) == "Retry-After 1/1, remaining -, reset -"
    assert (rows["gw-alone"]["limit_fields_form"], rows["gw-alone"]["limit_fields_malformed"]) == ("retry-after", 0)
    assert text(rows["gw-fraction"]) == ("Retry-After -, remaining -, reset -; 2 malformed: Retry-After '1.5': "
                                         "neither delay-seconds (digits only) nor an HTTP-date")
    assert text(rows["gw-fraction"], short=True) == "- - - (2 malformed)"
    assert rows["gw-fraction"]["limit_fields_form"] == "malformed"


def test_both_retry_after_columns_read_the_same_answer_on_a_url_row(tmp_path):
    """A url peer's decisions keep no Retry-After (inferred from the client): the older "Retry-After
    truthful" (a request's own retry) reads the answer's, as the promises do, so the two agree."""
    t = T0 + np.array([0.0, 1.0, 2.0, 10.5])
    rid = ["r0", "r1", "r2", "r2"]  # r2 refused (Retry-After 8), retried 8.5 s later: attempt 2, admitted
    d = decisions_table(t, np.array(["k1"] * 4), np.array([True, True, False, True]), np.array(["legit"] * 4), rid,
                        "gw", retry_after=np.full(4, np.nan))
    fields = [_fields(1, 10), _fields(0, 9), _fields(0, 8, 8), _fields(1, 10)]
    write_run(tmp_path, "retry_storm", "gw", d, client_table(rid, t, t, t + 0.01, [200, 200, 429, 200], [1, 1, 1, 2], fields),
              {"system": "url", "decided_from": DECIDED_BY_CLIENT})
    row = _rows(tmp_path)["gw"]
    assert (row["header_truthfulness"], row["retries_at_retry_after"]) == (1.0, 1)
    assert text(row) == "Retry-After 1/1, remaining 1/1, reset 1/1"


def test_the_report_shows_each_runs_promises_and_old_folders_load(tmp_path):
    _run(tmp_path, "gw-lies", LYING)
    _run(tmp_path, "gw-old", TRUTHFUL, with_fields=False)  # a client log from before the column
    _run(tmp_path, "gw-silent", [(a, s, None) for a, s, _ in TRUTHFUL])  # an endpoint that sends no field
    report = build_report(tmp_path, charts=False)  # its rows and text: no chart read
    rows = {r["algorithm"]: r for r in report.rows}
    assert rows["gw-old"]["limit_fields_form"] is None and rows["gw-silent"]["limit_fields_form"] is None
    assert rows["gw-old"]["requests"] == 4  # loaded and analysed, not left out
    md = (tmp_path / "report.md").read_text()
    assert "limit fields kept" in md and "Retry-After 1/2, remaining 1/1, reset 1/2" in md


def test_each_answer_is_keyed_by_its_binding_limit_and_unknown_or_unanswered_ones_are_left_out():
    from analysis.promises import client_answers

    client = client_table(["a", "b", "c"], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.1, np.nan, 3.1], [200, 0, 429], [1, 1, 1],
                          [_fields(1, 1), None, _fields(0, 1, 1)]).to_pandas()
    decisions = pd.DataFrame({"request_id": ["a", "a", "b"], "key": ["127.0.0.1", "k1", "k1"], "remaining": [7.0, 1.0, 0.0]})
    got = client_answers(client, decisions)  # "a" met two limits: the binding one (least remaining) is its key
    assert [(a.key, a.sent, a.status, a.fields.remaining) for a in got] == [("k1", 1.0, 200, 1.0)]


def test_a_text_that_depends_on_when_it_came_is_read_every_time():
    """The same Retry-After as an HTTP-date means less wait the later it came; a delta does not."""
    from analysis.promises import _Reader

    read = _Reader()
    date = "retry-after: Wed, 02 Dec 2026 16:00:10 GMT"
    at = 1_796_227_200.0  # 2026-12-02 16:00:00 UTC
    assert (read(date, at).retry_after_s, read(date, at + 4).retry_after_s) == (10.0, 6.0)
    assert read(_fields(1, 1, 2), at) is read(_fields(1, 1, 2), at + 4)  # read once, remembered


def test_an_answer_without_fields_reads_as_none_however_pandas_filled_the_gap():
    """A client log whose rows of one run kept no fields may reach the reader as NaN, not None
    (a peer's run in a live campaign did, and the summary stopped on it)."""
    from analysis.promises import NONE, _Reader

    read = _Reader()
    assert read(float("nan"), 0.0) is NONE and read(None, 0.0) is NONE and read("", 0.0) is NONE
