"""Whether a run's limit fields told the truth, from its client log alone, for any endpoint: the
suite's targets, every peer, a url the suite never saw inside (``header_truth`` does the checks).

The client log keeps each answer's limit fields as they came (``limit_fields``, parsed here, once
per answer, by ``contract.limit_headers``); the key each request was limited by is the decision
log's (the target's own: where a request met several limits, the binding one's, as its fields
are; for a url peer the one inferred from the client log). Summary fields:
``limit_fields_form`` (what most answers said: a quota's form, ``retry-after`` for a Retry-After
alone, ``malformed``), ``limit_fields_malformed`` (answers with a value that breaks the letter)
and ``limit_fields_finding`` (the one most sent, quoted), per promise ``<p>_kept`` of ``<p>_checked``
(``retry_after``: the first request sent at Retry-After admitted; ``remaining``: a promise of r
remaining kept; ``reset``: the whole quota back at the reset) and ``reset_early_s``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from contract.limit_headers import LimitFields, parse_lines
from contract.schema import CLIENT_LIMIT_FIELDS as LIMIT_FIELDS

from .header_truth import Answer, HeaderTruth, Tally, header_truth

PROMISES = ("retry_after", "remaining", "reset")
EMPTY: dict[str, Any] = {"limit_fields_form": None, "limit_fields_malformed": None, "limit_fields_finding": None,
                         **{f"{p}_{n}": None for p in PROMISES for n in ("kept", "checked")},
                         "reset_early_s": None}
COLUMNS = ("request_id", "sent_t", "done_t", "status", LIMIT_FIELDS)
DECISION_COLUMNS = ("request_id", "key", "remaining")
NONE = LimitFields()


def _key_of(decisions: pd.DataFrame) -> pd.Series:
    """Each request id's key: of its decision with the least remaining where a request met several
    limits (the binding one, whose fields the answer carries), else its one decision's."""
    d = decisions.assign(request_id=decisions["request_id"].astype(str), key=decisions["key"].astype(str))
    if "remaining" in d.columns:
        d = d.sort_values("remaining", kind="stable", na_position="last")
    d = d.drop_duplicates("request_id")
    return pd.Series(d["key"].to_numpy(), index=d["request_id"].to_numpy())


def client_answers(client: pd.DataFrame, decisions: pd.DataFrame) -> list[Answer]:
    """The answered requests of a client log (``COLUMNS``), each under its key (``_key_of`` the
    decision log's ``request_id``, ``key`` and ``remaining``); a request no decision names, or never
    answered, is left out."""
    c = client.assign(request_id=client["request_id"].astype(str))
    c = c[np.isfinite(c["done_t"].to_numpy(dtype=np.float64)) & (c["status"].to_numpy() > 0)]
    c = c.assign(key=c["request_id"].map(_key_of(decisions))).dropna(subset=["key"])
    read = _Reader()
    return [Answer(key, sent, done, int(status), read(text, done))
            for key, sent, done, status, text in zip(c["key"], c["sent_t"].to_numpy(dtype=np.float64),
                                                     c["done_t"].to_numpy(dtype=np.float64), c["status"], c[LIMIT_FIELDS])]


class _Reader:
    """``parse_lines`` once per distinct text: a limiter repeats a few hundred texts over a run (r and
    t take few values). A text read alike one second later does not depend on when it came (no
    HTTP-date, no epoch reset) and is remembered; one that does is parsed every time."""

    def __init__(self) -> None:
        self.known: dict[str, LimitFields] = {}
        self.timed: set[str] = set()

    def __call__(self, text: str | float | None, received_at: float) -> LimitFields:
        if not isinstance(text, str) or not text:  # none kept: null, or NaN where pandas filled a gap
            return NONE
        known = self.known.get(text)
        if known is not None:
            return known
        fields = parse_lines(text, received_at)
        if text not in self.timed:
            if parse_lines(text, received_at + 1.0) == fields:
                self.known[text] = fields
            else:
                self.timed.add(text)
        return fields


def _count(tally: Tally) -> tuple[int, int]:
    return tally.kept, tally.kept + tally.broken


def measures(truth: HeaderTruth) -> dict[str, Any]:
    """The summary fields of one run's header truth; all null when no answer carried a limit field."""
    forms = {form: n for form, n in truth.forms.items() if form != NONE.said}
    if not forms:
        return dict(EMPTY)
    out: dict[str, Any] = {"limit_fields_form": max(forms, key=lambda f: forms[f]), "limit_fields_malformed": truth.malformed,
                           "limit_fields_finding": next(iter(truth.findings.most_common(1)), (None,))[0]}
    for name in PROMISES:
        out[f"{name}_kept"], out[f"{name}_checked"] = _count(getattr(truth, name))
    out["reset_early_s"] = round(truth.reset_early_s, 6)
    return out


def run_measures(client: pd.DataFrame, decisions: pd.DataFrame) -> dict[str, Any]:
    """``measures`` of a client log with the ``limit_fields`` column; nothing is parsed when no
    answer has one (a virtual run's, an endpoint that sends none)."""
    if client[LIMIT_FIELDS].isna().all():
        return dict(EMPTY)
    return measures(header_truth(client_answers(client, decisions)))


def text(row: dict[str, Any], short: bool = False) -> str | None:
    """How a row's promises read: ``Retry-After 2/2, remaining 618/618, reset 9/9`` (short: ``2/2
    618/618 9/9``, a dash where one was never checkable), then the answers whose values broke the
    letter (``; 3 malformed: Retry-After '1.5': ...``; short: ``3 malformed``); None when its answers
    carried no field."""
    if not row.get("limit_fields_form"):
        return None
    parts = []
    for name, label in zip(PROMISES, ("Retry-After", "remaining", "reset")):
        kept, checked = row.get(f"{name}_kept"), row.get(f"{name}_checked")
        said = f"{kept}/{checked}" if checked else "-"
        parts.append(said if short else f"{label} {said}")
    malformed = row.get("limit_fields_malformed")
    if short:
        return " ".join(parts) + (f" ({malformed} malformed)" if malformed else "")
    return ", ".join(parts) + (f"; {malformed} malformed: {row.get('limit_fields_finding')}" if malformed else "")
