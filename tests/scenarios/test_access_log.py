"""The access log readers: every format, plain and gzipped, read into the same columns; bad
lines counted and shown; a wrong format, an unknown variable, a missing field or an empty file
refused in one line."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from scenarios.access_log import LogError, open_log
from scenarios.access_log.render import CUSTOM, JSON_FIELDS, PIPED, LoggedRequest, render

T0 = 1_760_000_040.0
REQUESTS = [
    LoggedRequest(T0 + 0.25, "1.1.1.1", agent='Mozilla/5.0 "quoted"'),
    LoggedRequest(T0 + 1.5, "10.0.0.1", "POST", "/api/reports", xff="6.6.6.6, 9.9.9.9", user="ann", api_key="k1"),
    LoggedRequest(T0 + 2.0, "2001:db8::1", path="/api/search?q=a b", agent="Googlebot/2.1"),
]
FORMATS = {"combined": {}, "common": {}, "main": {}, "custom": {"log_format": "custom"}, "piped": {"log_format": PIPED},
           "json": {"fields": [JSON_FIELDS]}, "alb": {}, "cloudfront": {}}
HAS = {"xff": ("main", "custom", "piped", "json", "cloudfront"), "user": ("combined", "common", "main", "custom", "piped", "json"),
       "exact": ("custom", "piped", "json", "alb")}


def write(tmp_path: Path, fmt: str, requests: list[LoggedRequest], gz: bool = False) -> Path:
    text = render(requests, fmt).encode()
    path = tmp_path / f"access-{fmt}.log{'.gz' if gz else ''}"
    path.write_bytes(gzip.compress(text) if gz else text)
    return path


def read(path: Path, fmt: str, **options: object) -> tuple[np.ndarray, dict[str, list]]:
    kwargs = dict(FORMATS[fmt])
    if kwargs.get("log_format") == "custom":
        kwargs["log_format"] = CUSTOM
    reader = open_log(path, **kwargs, **options)  # type: ignore[arg-type]
    batches = list(reader.batches())
    t = np.concatenate([b.t for b in batches])
    columns: dict[str, list] = {}
    for b in batches:
        for name, values in b.columns.items():
            columns.setdefault(name, []).extend(values.to_pylist())
    return t, columns


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_format_reads_the_same_requests(fmt: str, gz: bool, tmp_path: Path) -> None:
    t, columns = read(write(tmp_path, fmt, REQUESTS, gz), fmt)
    expected = [r.t for r in REQUESTS] if fmt in HAS["exact"] else [np.floor(r.t) for r in REQUESTS]
    assert t.tolist() == pytest.approx(expected, abs=1e-3)
    assert columns["addr"] == ["1.1.1.1", "10.0.0.1", "2001:db8::1"]
    assert columns["method"] == ["GET", "POST", "GET"]
    assert columns["path"] == ["/api/items", "/api/reports", "/api/search"]
    if fmt in HAS["xff"]:
        assert columns["xff"] == [None, "6.6.6.6, 9.9.9.9", None]
    if fmt in HAS["user"]:
        assert columns["user"] == [None, "ann", None]
    if fmt != "common":
        assert columns["agent"][:3:2] == ['Mozilla/5.0 "quoted"', "Googlebot/2.1"]


@pytest.mark.parametrize("fmt", ["combined", "common", "main", "json", "alb", "cloudfront"])
def test_the_format_is_detected(fmt: str, tmp_path: Path) -> None:
    path = write(tmp_path, fmt, REQUESTS)
    if fmt == "json":
        with pytest.raises(LogError, match="--field t=FIELD"):
            open_log(path)
        return
    assert open_log(path).name == fmt


def test_bad_lines_are_counted_and_the_first_three_shown_with_line_numbers(tmp_path: Path) -> None:
    good = render([LoggedRequest(T0 + i, "1.1.1.1") for i in range(400)], "combined").splitlines()
    for n in (10, 50, 90, 300):  # 4 of 404 lines: under 1%
        good.insert(n - 1, f"junk {n}")
    path = tmp_path / "a.log"
    path.write_text("\n".join(good) + "\n")
    reader = open_log(path)
    rows = sum(len(b) for b in reader.batches())
    reader.check_bad()
    assert (rows, reader.lines, reader.bad.count) == (400, 404, 4)
    assert reader.bad.located(path) == [(10, "junk 10"), (50, "junk 50"), (90, "junk 90")]


def test_more_than_one_percent_bad_lines_names_the_count_and_the_format(tmp_path: Path) -> None:
    lines = render([LoggedRequest(T0 + i, "1.1.1.1") for i in range(97)], "combined") + "x\ny\nz\n"
    path = tmp_path / "a.log"
    path.write_text(lines)
    reader = open_log(path, fmt="combined")
    list(reader.batches())
    with pytest.raises(LogError, match=r"3 of 100 lines \(3\.0%\) cannot be used as combined.*line 98: 'x'.*--log-format"):
        reader.check_bad()


def test_a_regex_read_format_numbers_its_bad_lines_too(tmp_path: Path) -> None:
    text = render([LoggedRequest(T0 + i, "1.1.1.1") for i in range(3)], "piped").splitlines()
    text.insert(1, "nope")
    path = tmp_path / "p.log"
    path.write_text("\n".join(text) + "\n")
    reader = open_log(path, log_format=PIPED)
    assert sum(len(b) for b in reader.batches()) == 3
    assert reader.bad.located(path) == [(2, "nope")]


@pytest.mark.parametrize(("options", "message"), [
    ({"log_format": "$remote_addr $msec $weird"}, r"log_format variable \$weird is not known"),
    ({"log_format": "$remote_addr $status"}, r"no time"),
    ({"fields": ["t=start_time,addr=nowhere"]}, r"--field addr=nowhere: no such field in the first 3 records"),
    ({"fields": ["addr=downstream.address"]}, r"map the request time"),
    ({"fmt": "nginx"}, r"unknown format 'nginx'"),
])
def test_bad_options_are_one_line_naming_the_problem(options: dict, message: str, tmp_path: Path) -> None:
    path = write(tmp_path, "json" if "fields" in options else "combined", REQUESTS)
    with pytest.raises(LogError, match=message):
        open_log(path, **options)


def test_an_empty_file_and_an_unknown_format_are_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("\n\n")
    with pytest.raises(LogError, match="empty file"):
        open_log(empty)
    other = tmp_path / "other.log"
    other.write_text("hello world\n")
    with pytest.raises(LogError, match="format not recognised"):
        open_log(other)
