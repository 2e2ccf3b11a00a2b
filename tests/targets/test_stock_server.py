"""``--server stock``: the same app on uvicorn's own Server and protocol, the middleware deciding
every request, answers and logs as the tuned server does (what ``bench targets`` compares them on);
it serves one process, and says so."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmarks.raw_http import connect, read_answers, request
from targets.__main__ import main

LIMIT = ["--algorithm", "fixed_window", "--limit", "2", "--window", "86400", "--service-ms", "0"]
"""Two items a day per client."""
SAME = ["node", "algorithm", "store", "limit_name", "key", "cost", "allowed", "remaining", "route", "source"]


def _exchange(target, source: str) -> tuple[list[int], list[set[str]]]:
    """Four requests on one connection, the last two pipelined: statuses and each answer's header names."""
    with connect(target.port, timeout_s=5, source=source) as sock:
        sock.sendall(request(x_request_id="a1"))
        first = read_answers(sock, 1)
        sock.sendall(request(x_request_id="a2"))
        second = read_answers(sock, 1)
        sock.sendall(request(x_request_id="r1") + request(x_request_id="r2"))
        refused = read_answers(sock, 2)
    answers = [first, second, refused]
    statuses = [s for a in answers for s in a.statuses]
    names = [{line.split(b":", 1)[0].lower().decode() for line in head.split(b"\r\n")[1:] if b":" in line}
             for a in answers for head in a.heads]
    return statuses, names


def test_stock_and_tuned_servers_decide_answer_and_log_alike(start, tmp_path: Path):
    logs = {name: tmp_path / f"{name}.parquet" for name in ("tuned", "stock")}
    targets = start.many({"tuned": [*LIMIT, "--decision-log", str(logs["tuned"])],
                          "stock": [*LIMIT, "--server", "stock", "--decision-log", str(logs["stock"])]})
    seen = {name: _exchange(target, "127.0.0.7") for name, target in targets.items()}
    for target in targets.values():
        target.stop()
    assert seen["stock"][0] == seen["tuned"][0] == [200, 200, 429, 429]
    assert seen["stock"][1] == seen["tuned"][1]  # the same fields on every answer, the 429s' quota headers too
    rows = {name: pd.read_parquet(path).set_index("request_id") for name, path in logs.items()}
    assert list(rows["stock"].index) == list(rows["tuned"].index) == ["a1", "a2", "r1", "r2"]
    assert rows["stock"][SAME].values.tolist() == rows["tuned"][SAME].values.tolist()
    assert rows["stock"]["allowed"].tolist() == [True, True, False, False]
    assert rows["stock"]["arrived_t"].isna().all() and rows["tuned"]["arrived_t"].notna().all()  # no arrival stamp on stock


def test_stock_serves_one_process_and_says_so(capsys):
    assert main([*LIMIT, "--server", "stock", "--processes", "2", "--port", "1"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: --server stock: serves one process (uvicorn's own Server), got --processes 2"]
