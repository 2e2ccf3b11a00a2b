"""The quota headers' exact bytes, hand-computed: remaining is floored, times are rounded up,
and with several limits every one is listed while the legacy trio describes the binding one."""

import math

from targets.algorithms import Decision
from targets.headers import QuotaText, limit_headers, quota_headers

CLIENT = QuotaText.of("per-client", 100, 60)
TENANT = QuotaText.of("tenant", 1000, 3600)


def test_one_limit_with_the_legacy_trio():
    assert limit_headers(CLIENT, Decision(True, 41.7, 0.0, 12.2)) == [
        (b"ratelimit-policy", b'"per-client";q=100;w=60'),
        (b"ratelimit", b'"per-client";r=41;t=13'),
        (b"x-ratelimit-limit", b"100"),
        (b"x-ratelimit-remaining", b"41"),
        (b"x-ratelimit-reset", b"13"),
    ]


def test_one_limit_draft_only_and_a_quota_never_restored():
    assert limit_headers(CLIENT, Decision(False, -0.5, math.inf, math.inf), legacy=False) == [
        (b"ratelimit-policy", b'"per-client";q=100;w=60'),
        (b"ratelimit", b'"per-client";r=0;t=0'),
    ]


def test_two_limits_list_both_and_the_trio_describes_the_binding_one():
    client, tenant = Decision(True, 7.0, 0.0, 0.5), Decision(True, 3.0, 0.0, 1800.0)
    assert quota_headers([(CLIENT, client), (TENANT, tenant)], binding=1) == [
        (b"ratelimit-policy", b'"per-client";q=100;w=60, "tenant";q=1000;w=3600'),
        (b"ratelimit", b'"per-client";r=7;t=1, "tenant";r=3;t=1800'),
        (b"x-ratelimit-limit", b"1000"),
        (b"x-ratelimit-remaining", b"3"),
        (b"x-ratelimit-reset", b"1800"),
    ]


def test_two_limits_draft_only():
    client, tenant = Decision(True, 0.0, 0.0, 0.01), Decision(True, 999.9, 0.0, 3600.0)
    assert quota_headers([(CLIENT, client), (TENANT, tenant)], binding=0, legacy=False) == [
        (b"ratelimit-policy", b'"per-client";q=100;w=60, "tenant";q=1000;w=3600'),
        (b"ratelimit", b'"per-client";r=0;t=1, "tenant";r=999;t=3600'),
    ]


def test_a_moving_quota_is_told_as_it_is_now():
    adaptive = QuotaText.of("adaptive", 100, None).at(23.8)
    assert limit_headers(adaptive, Decision(True, 5.0, 0.0, 0.25)) == [
        (b"ratelimit-policy", b'"adaptive";q=23'),
        (b"ratelimit", b'"adaptive";r=5;t=1'),
        (b"x-ratelimit-limit", b"23"),
        (b"x-ratelimit-remaining", b"5"),
        (b"x-ratelimit-reset", b"1"),
    ]
