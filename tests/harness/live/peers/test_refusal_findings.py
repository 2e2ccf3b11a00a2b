"""What validate --url says of an endpoint that never refuses: one that answers 500 to everything
is reported as failing, not only as "no refusal"."""

from __future__ import annotations

from harness.live.peers.response import Refusal


def test_an_endpoint_that_answers_500_to_everything_is_reported_as_failing():
    [finding] = Refusal(statuses=[500] * 30 + [503]).findings()
    assert finding.startswith("every one of its 31 answers was an error (500, 503): the endpoint fails")


def test_an_endpoint_that_admits_everything_is_reported_as_not_refusing():
    assert Refusal(statuses=[200] * 30 + [500]).findings() == [
        "no refusal within 31 sequential requests at one key: its 429 could not be read"]
