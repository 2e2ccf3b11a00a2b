"""``judge`` finds how an endpoint tells clients apart (no ``--key``): the suite's target served
keyed by its API key header (its default client key), by source address, and by one counter for
everyone (real processes on loopback); a wrong ``--key`` is named from the judgement's answers; a
``--claim`` holds the worst case. What is asserted is what the limiter decided (each change
admitted or refused), never a time."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator

import pytest

from harness.cli.judge import keyed_by
from harness.cli.main import main
from harness.judge import keys
from harness.judge.endpoint import HttpEndpoint, JudgeError, KeySpec
from harness.processes.target import TargetProcess
from tests.served import targets

pytestmark = pytest.mark.process  # every test here starts processes

L = 5
CONFIGS = {  # sliding logs: a client's quota depends on its own requests only (no clock edge, no refill),
    # and over 60 s none comes back while it is refused ("short" ones are judged whole)
    "client": "algorithm: sliding_log\nlimit: 5\nwindow_s: 60\n",
    "short": "algorithm: sliding_log\nlimit: 5\nwindow_s: 1\n",
    "short-ip": "algorithm: sliding_log\nlimit: 5\nwindow_s: 1\nlimits:\n  - {name: per-ip, scope: ip}\n",
    "ip": "algorithm: sliding_log\nlimit: 5\nwindow_s: 60\nlimits:\n  - {name: per-ip, scope: ip}\n",
    "global": "algorithm: sliding_log\nlimit: 5\nwindow_s: 60\nlimits:\n  - {name: all, scope: global}\n",
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, TargetProcess]]:
    logs = tmp_path_factory.mktemp("judge-keys")
    for name, text in CONFIGS.items():
        (logs / f"{name}.yaml").write_text(text)
    with targets({name: ["--config", str(logs / f"{name}.yaml"), "--service-ms", "0"] for name in CONFIGS}, logs) as started:
        yield started


@pytest.mark.parametrize(("served_as", "found"), [("client", ("X-API-Key",)), ("ip", ("ip",)), ("global", ())])
def test_the_key_is_found_by_changing_one_thing_after_a_refusal(served, served_as, found):
    endpoint = HttpEndpoint(f"{served[served_as].url}/api/items", KeySpec("X-API-Key"), max_requests=200, max_rate=200.0)
    try:
        f = keys.discover(endpoint)
    finally:
        endpoint.close()
    assert f.refused and f.admitted == L and f.rounds == keys.ROUNDS and f.keys == found, f.sentence()
    assert endpoint.log == [] and len(endpoint.before) >= L + 1 + 2 * len(f.tried) + 2 * len(found or f.tried)
    last = {s.answer.key.split(", ")[1].removesuffix(" fresh (2)") for s in endpoint.before if s.answer.key.endswith("(2)")}
    assert last == set(found or f.tried)  # the second round changes only what the first admitted (all, when nothing)
    assert {s.role for s in endpoint.before} == {"key"}
    if found:  # the spec the judgement then sends by
        assert f.spec() == (KeySpec() if found == ("ip",) else KeySpec("X-API-Key"))
    else:
        assert f.spec() is None and "one counter for everyone" in f.sentence()


def test_one_counter_for_everyone_is_said_and_not_judged(served, tmp_path, capsys):
    out = tmp_path / "judge.json"
    assert main(["judge", f"{served['global'].url}/api/items", "--max-rate", "200", "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert "one counter for everyone" in err and "cannot judge a limit it cannot give a fresh client" in err
    doc = json.loads(out.read_text())
    assert doc["key"]["keys"] == [] and doc["key"]["refused"] and doc["roles"] == {"key": doc["requests"]}


def test_the_command_judges_by_the_key_it_found_and_holds_the_worst_case_to_the_claim(served, tmp_path, capsys):
    """The verdict's fit is the judge's (on the client's clock: not asserted here, see
    test_judge_live.py); what is asserted is the key found and that every later probe was sent by it."""
    url = f"{served['short'].url}/api/items"
    assert main(["judge", url, "--max-rate", "200", "--max-wait", "5", "--claim", "5/1s", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    worst = next(line for line in out if line.startswith("worst case: "))
    assert "(< W = 1 s, the claimed window)" in worst and "x the claimed L = 5" in worst
    assert out[0].startswith("key: a client refused after 5 admitted; a fresh value of the X-API-Key header was admitted")
    assert out[1].startswith(f"judged {url} in ")
    with (tmp_path / "judge-client.csv").open() as f:
        rows = list(csv.DictReader(f))
    searched = next(i for i, row in enumerate(rows) if row["role"] != "key")
    assert searched >= L + 1 and all(row["role"] != "key" for row in rows[searched:])  # the search first
    judged = rows[searched:]
    assert all(re.fullmatch(r"judge-[0-9a-f]{6}-\d+", row["key"]) and row["address"] == "127.0.0.1" for row in judged)



def test_a_wrong_key_is_named_from_the_judgements_own_answers(served, tmp_path, capsys):
    """Keyed by address but judged by X-API-Key: every probe is one client to the limiter, and a
    fresh key is refused at its first request (no extra request is sent to find it)."""
    out = tmp_path / "judge.json"
    url = f"{served['short-ip'].url}/api/items"
    assert main(["judge", url, "--key", "header:X-API-Key", "--max-rate", "200", "--max-wait", "5", "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert "fresh keys were refused at their first request" in err
    assert "does not tell clients apart by the X-API-Key header (--key header:X-API-Key)" in err
    assert json.loads(out.read_text())["error"] == err.strip().removeprefix("error: ")


def test_rounds_that_all_proved_nothing_find_no_key_and_say_so():
    """A client whose quota came back between every two changes (a bucket refilling faster than a
    change is sent) is no finding of one counter for everyone: nothing is said found."""
    tried = ("ip", *keys.HEADERS)
    spoiled = keys.Found((), tried, 5, True, 0)
    assert not spoiled.settled and "the key was not found" in spoiled.sentence()
    assert keyed_by(spoiled, loopback=True) == KeySpec() and keyed_by(spoiled, loopback=False) == KeySpec("X-API-Key")
    with pytest.raises(JudgeError, match="one counter for everyone"):
        keyed_by(keys.Found((), tried, 5, True, 2), loopback=True)
