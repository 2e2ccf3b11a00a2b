"""The replay engine's HTTP/1.1: request bytes exactly, and replies split anywhere over reads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contract.limit_headers import parse_lines
from scenarios.wire import ReplyParser, encode_request, host_port

OK = b"HTTP/1.1 200 OK\r\ndate: x\r\ncontent-length: 11\r\ncontent-type: application/json\r\n\r\n{\"ok\":true}"
LIMITED = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 2\r\n\r\n{}"
EMPTY = b"HTTP/1.1 204 No Content\r\nserver: uvicorn\r\n\r\n"


def test_a_get_is_encoded_once_with_its_headers_and_no_body():
    wire = encode_request("GET", "/api/items", "127.0.0.1:8000", {"x-api-key": "k1", "x-request-id": "r7"})
    assert wire == b"GET /api/items HTTP/1.1\r\nhost: 127.0.0.1:8000\r\nx-api-key: k1\r\nx-request-id: r7\r\n\r\n"


def test_a_post_says_it_has_no_body():
    assert encode_request("POST", "/login", "h:1", {}) == b"POST /login HTTP/1.1\r\nhost: h:1\r\ncontent-length: 0\r\n\r\n"


def test_host_port_of_a_plan_url_and_refusal_of_https():
    assert host_port("http://127.0.0.1:8123") == ("127.0.0.1", 8123)
    assert host_port("http://localhost") == ("localhost", 80)
    with pytest.raises(ValueError, match="plain http"):
        host_port("https://127.0.0.1:8443")


def test_replies_in_one_read_are_split_by_content_length():
    parser = ReplyParser()
    assert parser.feed(OK + LIMITED + EMPTY) == [(200, len(OK), None), (429, len(LIMITED), "retry-after: 1"),
                                                 (204, len(EMPTY), None)]
    assert parser.buf == b"" and not parser.closing


def test_a_reply_cut_inside_its_body_waits_for_the_rest():
    parser = ReplyParser()
    assert parser.feed(OK[:-3]) == []
    assert parser.feed(OK[-3:] + LIMITED[:5]) == [(200, len(OK), None)]
    assert parser.feed(LIMITED[5:]) == [(429, len(LIMITED), "retry-after: 1")]


def test_connection_close_is_noticed_and_garbage_is_refused():
    parser = ReplyParser()
    closing = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
    assert parser.feed(closing) == [(503, len(closing), None)]
    assert parser.closing
    with pytest.raises(ValueError, match="not an HTTP reply"):
        ReplyParser().feed(b"SSH-2.0-OpenSSH\r\n\r\n")
    with pytest.raises(ValueError, match="chunked"):
        ReplyParser().feed(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")


def test_the_limit_fields_are_kept_as_they_came_in_every_form_with_the_date():
    """Only the limit fields (and the Date an HTTP-date Retry-After is relative to), names lower
    case, values as sent: the client log parses them when it is read (contract.limit_headers)."""
    head = (b"HTTP/1.1 429 Too Many Requests\r\nDate: Wed, 02 Dec 2026 16:00:00 GMT\r\nContent-Length: 0\r\n"
            b"RateLimit: \"default\";r=0;t=7\r\nRateLimit-Policy: \"default\";q=20;w=10\r\n"
            b"X-RateLimit-Remaining: 0\r\nRetry-After: 7\r\nServer: x\r\n\r\n")
    [(status, _, fields)] = ReplyParser().feed(head)
    assert status == 429 and fields == ('ratelimit: "default";r=0;t=7\nratelimit-policy: "default";q=20;w=10\n'
                                        "x-ratelimit-remaining: 0\nretry-after: 7\ndate: Wed, 02 Dec 2026 16:00:00 GMT")
    parsed = parse_lines(fields, 0.0)
    assert (parsed.retry_after_s, parsed.remaining, parsed.reset_s, parsed.limit, parsed.window_s, parsed.form) == \
        (7.0, 0.0, 7.0, 20.0, 10.0, "ietf-list")


@given(st.lists(st.sampled_from([OK, LIMITED, EMPTY]), max_size=12), st.data())
def test_any_split_of_a_reply_stream_parses_the_same(replies, data):
    stream = b"".join(replies)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    parser = ReplyParser()
    got = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)]):
        got += parser.feed(stream[a:b])
    assert [length for _, length, _ in got] == [len(r) for r in replies]
    assert [status for status, _, _ in got] == [int(r.split(b" ")[1]) for r in replies]
    assert [fields for _, _, fields in got] == [("retry-after: 1" if r is LIMITED else None) for r in replies]
