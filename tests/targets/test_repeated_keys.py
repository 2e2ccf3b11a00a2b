"""One key per request, against real target processes over real HTTP: an identity header sent
twice was keyed by its values joined, a fresh key each time (10 of 10 admitted from one client
under a limit of 5). Now it is refused 400 naming the header (or, by ``--repeated-key first``,
counted by its first value), the same whether the HTTP protocol decides the request as its head
is parsed or the middleware does (``--decide-in app``); several X-Forwarded-For lines are one
list, read from the right."""

from __future__ import annotations

import httpx
import pytest

FIXED = ["--algorithm", "fixed_window", "--limit", "5", "--window", "86400", "--service-ms", "0"]


@pytest.fixture(scope="module")
def targets(module_start):
    return module_start.many({
        "protocol": FIXED,
        "app": [*FIXED, "--decide-in", "app"],
        "protocol-first": [*FIXED, "--repeated-key", "first"],
        "app-first": [*FIXED, "--repeated-key", "first", "--decide-in", "app"],
        "proxied": [*FIXED, "--trusted-proxies", "1"],
        "proxied-app": [*FIXED, "--trusted-proxies", "1", "--decide-in", "app"],
    })


def twice(header: str, n: int) -> list[list[tuple[str, str]]]:
    """``n`` requests' headers, each naming ``header`` twice: the same first value, a fresh second."""
    return [[(header, "k"), (header, f"fresh-{i}")] for i in range(n)]


def send(target, headers: list[list[tuple[str, str]]]) -> list[httpx.Response]:
    with httpx.Client(base_url=target.url, timeout=10) as client:
        return [client.get("/api/items", headers=h) for h in headers]


def decisions(target) -> int:
    return httpx.get(f"{target.admin_url}/_bench/counters", timeout=10).json()["limits"]["per-client"]["decisions"]


@pytest.mark.parametrize("path", ["protocol", "app"])
def test_a_repeated_api_key_is_refused_400_naming_the_header_and_decides_nothing(targets, path):
    target = targets[path]
    answers = send(target, twice("x-api-key", 10))
    assert [r.status_code for r in answers] == [400] * 10
    assert {r.headers["content-type"] for r in answers} == {"application/problem+json"}
    assert answers[0].json() == {"type": "tag:ratelimit-bench,2025:repeated-key-header", "title": "Bad Request",
                                 "status": 400, "detail": "the x-api-key header is repeated: a request is counted by one key",
                                 "header": "x-api-key"}
    assert decisions(target) == 0
    # the other identity headers likewise; the connection goes on: a single key is then served
    assert [r.status_code for r in send(target, twice("x-user", 2) + twice("x-tenant", 1) + twice("x-tier", 1))] == [400] * 4
    assert send(target, [[("x-api-key", "k")]])[0].status_code == 200


@pytest.mark.parametrize("path", ["protocol-first", "app-first"])
def test_with_the_first_value_policy_a_repeated_api_key_is_counted_by_its_first_value(targets, path):
    answers = send(targets[path], twice("x-api-key", 10))
    assert [r.status_code for r in answers] == [200] * 5 + [429] * 5
    assert {r.json()["limit"] for r in answers[5:]} == {"per-client"}


@pytest.mark.parametrize("path", ["proxied", "proxied-app"])
def test_several_forwarded_for_lines_are_one_list_read_from_the_right(targets, path):
    """Behind one trusted proxy, a client's own X-Forwarded-For line (fresh each time) and the
    proxy's line after it: every request is counted by the address the proxy wrote, 5 of 10."""
    lines = [[("x-forwarded-for", f"10.9.{i}.1"), ("x-forwarded-for", "203.0.113.77")] for i in range(10)]
    assert [r.status_code for r in send(targets[path], lines)] == [200] * 5 + [429] * 5
    # a proxy that appends to the client's line instead says the same
    assert send(targets[path], [[("x-forwarded-for", "10.8.0.1, 203.0.113.77")]])[0].status_code == 429
