"""The replay engine's HTTP/1.1: request bytes exactly, and replies split anywhere over reads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
    assert parser.feed(OK + LIMITED + EMPTY) == [(200, len(OK)), (429, len(LIMITED)), (204, len(EMPTY))]
    assert parser.buf == b"" and not parser.closing


def test_a_reply_cut_inside_its_body_waits_for_the_rest():
    parser = ReplyParser()
    assert parser.feed(OK[:-3]) == []
    assert parser.feed(OK[-3:] + LIMITED[:5]) == [(200, len(OK))]
    assert parser.feed(LIMITED[5:]) == [(429, len(LIMITED))]


def test_connection_close_is_noticed_and_garbage_is_refused():
    parser = ReplyParser()
    closing = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
    assert parser.feed(closing) == [(503, len(closing))]
    assert parser.closing
    with pytest.raises(ValueError, match="not an HTTP reply"):
        ReplyParser().feed(b"SSH-2.0-OpenSSH\r\n\r\n")
    with pytest.raises(ValueError, match="chunked"):
        ReplyParser().feed(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")


@given(st.lists(st.sampled_from([OK, LIMITED, EMPTY]), max_size=12), st.data())
def test_any_split_of_a_reply_stream_parses_the_same(replies, data):
    stream = b"".join(replies)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    parser = ReplyParser()
    got = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)]):
        got += parser.feed(stream[a:b])
    assert [length for _, length in got] == [len(r) for r in replies]
    assert [status for status, _ in got] == [int(r.split(b" ")[1]) for r in replies]
