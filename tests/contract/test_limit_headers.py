"""The limit fields of an answer in every form in use, hand-computed, and never an exception."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

import http_sf
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contract.limit_headers import LimitFields, parse_limit_fields

NOW = 1_700_000_000.0


def test_retry_after_in_seconds_and_as_an_http_date_against_the_answers_date():
    assert parse_limit_fields({"Retry-After": "7"}, NOW).retry_after_s == 7
    date = datetime.fromtimestamp(NOW, UTC)
    later = datetime.fromtimestamp(NOW + 120, UTC)
    fields = {"Retry-After": format_datetime(later, usegmt=True), "Date": format_datetime(date, usegmt=True)}
    assert parse_limit_fields(fields, NOW + 5).retry_after_s == 120  # the Date, not the receipt time
    del fields["Date"]
    assert parse_limit_fields(fields, NOW + 5).retry_after_s == 115


def test_the_newest_draft_lists_the_binding_member_with_its_own_policy():
    fields = parse_limit_fields({"RateLimit": '"burst";r=40;t=1, "day";r=3;t=3600',
                                 "RateLimit-Policy": '"burst";q=50;w=1, "day";q=1000;w=86400'}, NOW)
    assert fields == LimitFields(None, 1000, 86400, 3, 3600, "ietf-list")


def test_draft_07_dictionary_and_its_policy():
    fields = parse_limit_fields({"ratelimit": "limit=100, remaining=50, reset=5", "ratelimit-policy": "100;w=60"}, NOW)
    assert fields == LimitFields(None, 100, 60, 50, 5, "ietf-dict")


def test_draft_06_separate_fields_and_an_early_drafts_policy_in_the_limit():
    fields = parse_limit_fields([("RateLimit-Limit", "10"), ("RateLimit-Remaining", "0"), ("RateLimit-Reset", "9"),
                                 ("RateLimit-Policy", "10;w=20")], NOW)
    assert fields == LimitFields(None, 10, 20, 0, 9, "ietf-fields")
    early = parse_limit_fields({"RateLimit-Limit": "100, 100;w=60", "RateLimit-Remaining": "4"}, NOW)
    assert (early.limit, early.window_s, early.remaining, early.reset_s) == (100, 60, 4, None)


def test_x_ratelimit_reset_as_seconds_epoch_seconds_and_epoch_milliseconds():
    base = {"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "59"}
    assert parse_limit_fields({**base, "X-RateLimit-Reset": "30"}, NOW).reset_s == 30
    assert parse_limit_fields({**base, "X-RateLimit-Reset": str(int(NOW + 42))}, NOW).reset_s == 42
    assert parse_limit_fields({**base, "X-RateLimit-Reset": str(int(NOW * 1000) + 2500)}, NOW).reset_s == 2.5
    assert parse_limit_fields(base, NOW).form == "x-ratelimit"


def test_malformed_values_cost_only_themselves_and_each_is_a_finding_with_its_value():
    fields = parse_limit_fields({"Retry-After": "soon", "X-RateLimit-Limit": "-3", "X-RateLimit-Remaining": "7",
                                 "X-RateLimit-Reset": "nan"}, NOW)
    assert fields == LimitFields(None, None, None, 7, None, "x-ratelimit", (
        "Retry-After 'soon': neither delay-seconds (digits only) nor an HTTP-date",
        "X-RateLimit-Limit '-3': not a non-negative integer", "X-RateLimit-Reset 'nan': not a non-negative integer"))
    assert parse_limit_fields({"RateLimit": '"a";r=x;t=1'}, NOW) == \
        LimitFields(findings=("RateLimit r 'x': not a non-negative integer",))
    assert parse_limit_fields({}, NOW) == LimitFields()


@pytest.mark.parametrize("value", ["1.5", "-1", "", " ", "0x10", "1e3", "+5", "5 s", "Wed, 32 Oct 2015 07:28:00 GMT"])
def test_retry_after_is_digits_or_an_http_date_and_anything_else_is_a_finding(value):
    """RFC 9110 10.2.3: delay-seconds is 1*DIGIT; a fraction, a sign, an empty value is neither."""
    fields = parse_limit_fields({"Retry-After": value}, NOW)
    assert fields == LimitFields(findings=(f"Retry-After {value.strip()!r}: neither delay-seconds (digits only) nor an HTTP-date",))
    assert fields.said == "malformed"
    assert parse_limit_fields({"Retry-After": "0"}, NOW) == LimitFields(retry_after_s=0)
    assert parse_limit_fields({"Retry-After": "120"}, NOW).said == "retry-after"


def test_each_drafts_item_and_each_legacy_value_must_be_a_non_negative_integer():
    state = parse_limit_fields({"RateLimit": '"a";r=1.5;t=2, "b";r=3;t=-1, "c";r=4;t=9',
                                "RateLimit-Policy": '"a";q=10;w=1, "c";q=20;w=2'}, NOW)
    # "a" unreadable, "b" binds (3 remaining, its reset unreadable), its policy unnamed: the first
    assert state == LimitFields(None, 10, 1, 3, None, "ietf-list", (
        "RateLimit r '1.5': not a non-negative integer", "RateLimit t '-1': not a non-negative integer"))
    policy = parse_limit_fields({"RateLimit": '"c";r=4;t=9', "RateLimit-Policy": '"c";q=NaN;w=0.5'}, NOW)
    assert policy == LimitFields(None, None, None, 4, 9, "ietf-list", (
        "RateLimit-Policy q 'NaN': not a non-negative integer", "RateLimit-Policy w '0.5': not a non-negative integer"))
    dictionary = parse_limit_fields({"RateLimit": "limit=100, remaining=2.5, reset=5"}, NOW)
    assert dictionary == LimitFields(None, 100, None, None, 5, "ietf-dict",
                                     ("RateLimit remaining '2.5': not a non-negative integer",))
    fields = parse_limit_fields({"RateLimit-Limit": "10", "RateLimit-Remaining": "-0", "RateLimit-Reset": "inf"}, NOW)
    assert fields == LimitFields(None, 10, None, None, None, "ietf-fields", (
        "RateLimit-Remaining '-0': not a non-negative integer", "RateLimit-Reset 'inf': not a non-negative integer"))
    legacy = parse_limit_fields({"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "NaN", "X-RateLimit-Reset": "1.25"}, NOW)
    assert legacy == LimitFields(None, 60, None, None, None, "x-ratelimit", (
        "X-RateLimit-Remaining 'NaN': not a non-negative integer", "X-RateLimit-Reset '1.25': not a non-negative integer"))


def test_a_reset_earlier_than_retry_after_is_a_finding_the_rounding_of_an_epoch_is_not():
    early = parse_limit_fields({"Retry-After": "10", "RateLimit": '"d";r=0;t=2'}, NOW)
    assert (early.retry_after_s, early.reset_s, early.findings) == (10, 2, ("reset 2 s is earlier than Retry-After 10 s",))
    assert parse_limit_fields({"Retry-After": "2", "RateLimit": '"d";r=0;t=2'}, NOW).findings == ()
    # an epoch reset 4.6 s away beside Retry-After 5: the same second, rounded by the epoch
    epoch = parse_limit_fields({"Retry-After": "5", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 5)}, NOW + 0.4)
    assert epoch.findings == () and epoch.reset_s == pytest.approx(4.6)
    # two limits spent: the one that binds is the one whose quota comes back last
    both = parse_limit_fields({"Retry-After": "3600", "RateLimit": '"burst";r=0;t=1, "day";r=0;t=3600'}, NOW)
    assert (both.reset_s, both.findings) == (3600, ())


_VALUE = st.text(st.characters(codec="latin-1"), max_size=60)
_NAMES = st.sampled_from(["Retry-After", "Date", "RateLimit", "RateLimit-Policy", "RateLimit-Limit",
                          "RateLimit-Remaining", "RateLimit-Reset", "X-RateLimit-Limit", "X-RateLimit-Remaining",
                          "X-RateLimit-Reset"])


@given(st.lists(st.tuples(_NAMES, _VALUE), max_size=8), st.floats(0, 4e9))
def test_never_raises_on_any_value(pairs, received_at):
    fields = parse_limit_fields(pairs, received_at)
    for value in (fields.retry_after_s, fields.limit, fields.remaining, fields.reset_s, fields.window_s):
        assert value is None or value >= 0


_NAME = st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True)


@given(st.lists(st.tuples(_NAME, st.integers(0, 10**9), st.integers(0, 10**6), st.integers(1, 10**9),
                          st.integers(1, 10**6)), min_size=1, max_size=4, unique_by=lambda m: m[0]))
def test_reads_what_a_strict_structured_field_serializer_writes(policies):
    state = http_sf.ser([(name, {"r": r, "t": t}) for name, r, t, _, _ in policies])
    policy = http_sf.ser([(name, {"q": q, "w": w}) for name, _, _, q, w in policies])
    _, r, t, q, w = min(policies, key=lambda m: (m[1], -m[2]))  # the tightest: fewest left, then the longest to wait
    assert parse_limit_fields({"RateLimit": state, "RateLimit-Policy": policy}, NOW) == \
        LimitFields(None, q, w, r, t, "ietf-list")
