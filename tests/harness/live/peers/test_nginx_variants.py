"""The nginx peer's variants on a real nginx: ``nginx-problem`` refuses as the suite's targets do
(and its refusals still reach the decision log), ``nginx-realip`` keys by the address the trusted
proxy wrote in X-Forwarded-For, so a forged leftmost entry does not evade it; and the refusal probe
a campaign runs on every peer."""

from __future__ import annotations

import os
import shutil

import httpx
import pytest

from harness.live.peers.nginx import ACCESS_LOG, access_log_decisions
from harness.live.peers.response import PROBE_PREFIX, Refusal, refusal, without_probe
from harness.live.peers.standalone import mapped_decisions, peer_before_none
from targets.algorithms import Policy
from tests.recorded import all_logged, peer_model_agrees

pytestmark = [pytest.mark.process,  # every test here starts nginx
              pytest.mark.skipif(shutil.which("nginx") is None and os.environ.get("CI", "").lower() != "true",
                                 reason="nginx not on PATH: install Debian's nginx package (CI never skips this)")]


def sent(probe: Refusal) -> int:
    """Requests the refusal probe sent: its burst and the retry at Retry-After, if any."""
    return len(probe.statuses) + (probe.retry_status is not None)


def test_plain_nginx_refuses_with_an_html_page_and_nginx_problem_as_the_suite_does(tmp_path):
    policy = Policy(10, 1, 3)  # burst=2: 3 at once on a fresh key, then one back every 100 ms
    with peer_before_none("nginx", policy, tmp_path / "plain") as (url, logs):
        plain = refusal(url, 20)
        table = all_logged(lambda: access_log_decisions(logs / ACCESS_LOG, store="zone"), sent(plain))
        peer_model_agrees("nginx", policy, table.to_pandas())
    # 3 at once always; a busy machine that takes 100 ms for a request earns one more
    assert (plain.statuses[:3], plain.statuses[-1], plain.content_type, plain.retry_after) == (
        [200] * 3, 429, "text/html", None)
    assert plain.findings() == [
        "its 429 is text/html, not application/problem+json: a client cannot read why",
        "no Retry-After: a client cannot tell when to retry",
        "no Cache-Control: no-store: a shared cache may serve one client's refusal to others"]
    with peer_before_none("nginx-problem", policy, tmp_path / "problem") as (url, logs):
        problem = refusal(url, 20)
        table = all_logged(lambda: access_log_decisions(logs / ACCESS_LOG, store="zone"), sent(problem))
    admitted = len(problem.statuses) - 1
    assert problem.statuses == [200] * admitted + [429] and admitted >= 3 and problem.findings() == []
    assert (problem.content_type, problem.retry_after, problem.cache_control, problem.retry_status) == \
        ("application/problem+json", "1", "no-store", 200)  # 1 s after the refusal, 10 requests are back
    # refusals go to the named location, which logs too: every request is a decision, probe ids left out
    assert table.column("allowed").to_pylist() == [True] * admitted + [False, True]
    peer_model_agrees("nginx", policy, table.to_pandas())
    assert without_probe(table).num_rows == 0 and all(r.startswith(PROBE_PREFIX) for r in table.column("request_id").to_pylist())


def _forged(http: httpx.Client, url: str, xff: str) -> int:
    return http.get(f"{url}/api/items", headers={"x-forwarded-for": xff, "x-request-id": xff}).status_code


@pytest.mark.parametrize(("peer", "statuses", "keys"), [
    # behind the trusted proxy 127.0.0.1: the forger is 192.0.2.66 whatever it writes in front; the user its own
    ("nginx-realip", [200, 200, 429, 429, 200], {"192.0.2.66", "203.0.113.5"}),
    # without real_ip every request is the proxy's: the forger's burst costs the user its request
    ("nginx", [200, 200, 429, 429, 429], {"127.0.0.1"}),
])
def test_real_ip_keys_by_the_address_the_trusted_proxy_wrote(tmp_path, peer, statuses, keys):
    with peer_before_none(peer, Policy(1, 1, 2), tmp_path) as (url, logs), httpx.Client(timeout=5) as http:
        got = [_forged(http, url, f"10.9.8.{i}, 192.0.2.66") for i in range(4)] + [_forged(http, url, "203.0.113.5")]
        table = all_logged(lambda: access_log_decisions(logs / ACCESS_LOG, store="zone"), len(got))
    df = table.to_pandas()
    assert df["allowed"].tolist() == [s == 200 for s in got]  # one request at a time: logged in the order sent
    assert set(df["key"]) == keys
    peer_model_agrees("nginx", Policy(1, 1, 2), df)  # on NGINX's own times
    # hand-computed, back to back (1 ms apart): the model on the times meant
    assert mapped_decisions("nginx", Policy(1, 1, 2), [i / 1000 for i in range(5)], list(df["key"])) == \
        [s == 200 for s in statuses]
