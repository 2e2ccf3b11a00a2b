"""The bounded line stream every access log reader reads through (scenarios/access_log/stream.py),
on the bad files a real log can be, each built here: a gzip cut short or failing its CRC, a user
agent with bytes that are not UTF-8, dates in 1970 and 9999, a 20 MB line, a binary file,
/dev/zero, a wrong format, too many bad lines; and Ctrl-C during a long read."""

from __future__ import annotations

import gzip
import io
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from rich.console import Console

from harness.cli.main import main
from harness.cli.read_progress import ReadProgress
from scenarios.access_log import LogError, ReadBounds, open_log
from scenarios.access_log.stream import ON_READ, LineStream
from tests.poll import until

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "campaigns" / "policies" / "bad-burst-below-page-load.yaml"


def line(i: int, date: str = "10/Oct/2026", agent: bytes = b"curl/8") -> bytes:
    return (f'1.2.3.{i % 50} - - [{date}:13:{i // 60 % 60:02d}:{i % 60:02d} +0000] "GET /api/items HTTP/1.1" 200 12 '
            f'"-" "').encode() + agent + b'"\n'


def log(n: int = 2000) -> bytes:
    return b"".join(line(i) for i in range(n))


def read(path: Path, **bounds: object) -> tuple[int, object]:
    reader = open_log(path, "combined", bounds=ReadBounds(**bounds))  # type: ignore[arg-type]
    used = sum(len(b) for b in reader.batches())
    reader.check_bad()
    return used, reader.summary()


def test_a_gzip_cut_short_stops_with_the_line_and_byte_and_is_judged_only_when_asked(tmp_path: Path) -> None:
    data = gzip.compress(log())
    path = tmp_path / "cut.log.gz"
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(LogError, match=r"cut.log.gz: the gzip ends early at line [\d,]+, byte [\d,]+ of its text; "
                                       r"--accept-truncated judges the [\d,]+ lines"):
        read(path)
    used, summary = read(path, accept_truncated=True)
    assert 0 < used == summary.lines < 2000 and summary.unreadable == 0  # the cut last line is not judged
    assert "the gzip ends early after line" in summary.line("combined")


def test_a_gzip_failing_its_crc_is_named_and_its_whole_text_judged_when_asked(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(log()))
    data[-8] ^= 0xFF  # the CRC32 of the trailer
    path = tmp_path / "crc.log.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(LogError, match=r"fails its check \(CRC or length\) at line 2,001"):
        read(path)
    used, summary = read(path, accept_truncated=True)
    assert used == 2000 and summary.truncated is not None


def test_bytes_that_are_not_utf8_are_replaced_and_counted_and_the_line_used(tmp_path: Path) -> None:
    path = tmp_path / "utf.log"
    path.write_bytes(log(10) + line(10, agent=b"curl/\xff\xfe") + log(5))
    reader = open_log(path, "combined")
    agents = [a for b in reader.batches() for a in b.columns["agent"].to_pylist()]
    assert len(agents) == 16 and agents[10] == "curl/\ufffd\ufffd"
    assert reader.summary().replaced == 1
    assert "1 with bytes that are not UTF-8 (replaced, used)" in reader.summary().line("combined")


def test_dates_in_1970_and_9999_are_bad_lines_counted_for_their_time(tmp_path: Path) -> None:
    path = tmp_path / "dates.log"
    path.write_bytes(log(500) + line(1, "01/Jan/1970") + line(2, "31/Dec/9999") + log(500))
    used, summary = read(path)
    assert used == 1000 and summary.time == 2 and summary.unreadable == 0
    assert summary.line("combined") == "1,002 lines read, 1,000 used; skipped: 2 dated outside 1995-2100"


def test_a_20_mb_line_is_skipped_without_being_held(tmp_path: Path) -> None:
    path = tmp_path / "long.log"
    with path.open("wb") as f:
        f.write(log(1000))
        f.write(b'1.2.3.4 - - [10/Oct/2026:13:55:00 +0000] "GET /' + b"a" * 20_000_000 + b' HTTP/1.1" 200 1 "-" "x"\n')
        f.write(log(1000))
    stream = LineStream(path, block_bytes=1 << 20)
    assert max(len(b.data) for b in stream.blocks()) <= 1 << 21  # blocks, never the line
    used, summary = read(path)
    assert used == 2000 and summary.long == 1 and summary.lines == 2001
    assert "skipped: 1 longer than 65,536 bytes" in summary.line("combined")
    assert read(path, max_line_bytes=30_000_000)[1].long == 0  # the bound is an option


@pytest.mark.parametrize("source", ["binary", "/dev/zero"])
def test_a_first_block_with_no_line_is_refused_at_once(source: str, tmp_path: Path) -> None:
    path = Path(source) if source.startswith("/") else tmp_path / "bin.log"
    if source == "binary":
        path.write_bytes(random.Random(1).randbytes(3_000_000).replace(b"\n", b" "))
    started = time.monotonic()
    for fmt in (None, "combined"):
        with pytest.raises(LogError, match="hold no line within 65,536 bytes: not a text log"):
            open_log(path, fmt)
    assert time.monotonic() - started < 10


def test_a_file_of_another_format_is_refused_after_its_first_block(tmp_path: Path) -> None:
    path = tmp_path / "other.log"
    path.write_bytes(b"".join(b"%d some text that is no access log\n" % i for i in range(300_000)))
    reader = open_log(path, "combined")
    with pytest.raises(LogError, match=r"none of the first [\d,]+ lines is combined .*first: line 1: "):
        for _ in reader.batches():
            pass
    assert reader.stream.counts.lines < 300_000  # stopped after one block, not at the end


def test_a_bad_share_past_the_bound_is_refused_with_the_counts(tmp_path: Path) -> None:
    path = tmp_path / "bad.log"
    path.write_bytes(log(95) + b"junk\n" * 3 + line(1, "01/Jan/1970") + b"x" * 70_000 + b"\n")
    with pytest.raises(LogError, match=r"5 of 100 lines \(5.0%\) cannot be used as combined, more than --max-bad-share "
                                       r"1.0% \(100 lines read, 95 used; skipped: 1 longer than 65,536 bytes, "
                                       r"1 dated outside 1995-2100, 3 not combined\)"):
        read(path)
    assert read(path, max_bad_share=0.05)[0] == 95


@pytest.mark.parametrize("args", [["--traffic", "/dev/zero"], ["--traffic", "{bin}", "--format", "combined"]])
def test_validate_refuses_a_binary_input_in_one_line(args: list[str], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "bin.log"
    binary.write_bytes(random.Random(2).randbytes(2_000_000).replace(b"\n", b"\0"))
    assert main(["validate", str(POLICY), *[a.format(bin=binary) for a in args]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hold no line within 65,536 bytes" in err and "Traceback" not in err


def _read_at(reading: psutil.Process, path: Path) -> tuple[float, int] | None:
    """When, and how far into ``path``, the process reads now (None: the file is not open)."""
    return next(((time.monotonic(), f.position) for f in reading.open_files() if f.path == str(path)), None)


@pytest.mark.process
def test_ctrl_c_stops_a_long_read_long_before_its_end(tmp_path: Path) -> None:
    """Ctrl-C stops the read where it is: the command says so in under half the time the read, at
    the speed it was going just before, still needed (both slow down alike on a busy machine)."""
    path = tmp_path / "big.log"
    block = log(20_000)
    with path.open("wb") as f:
        for _ in range(150):  # 300 MB: seconds of reading on any machine
            f.write(block)
    size = path.stat().st_size
    proc = subprocess.Popen([sys.executable, str(ROOT / "run_bench.py"), "validate", str(POLICY), "--traffic", str(path),
                             "--format", "combined"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        reading = psutil.Process(proc.pid)
        # the imports take seconds on a busy machine: wait for the read itself
        first = until(lambda: _read_at(reading, path) or proc.poll() is not None, 120, every_s=0.05)
        time.sleep(0.5)
        assert proc.poll() is None and isinstance(first, tuple)
        at, position = _read_at(reading, path)
        proc.send_signal(signal.SIGINT)
        left_s = (size - position) / max(1.0, position - first[1]) * (at - first[0])
        said = proc.stderr.readline()  # the read stopped and the command said so
        stopped = time.monotonic() - at
        proc.wait(timeout=30)  # then the interpreter's teardown of the suite's imports (about 1 s on a busy machine)
    finally:
        proc.kill()
        proc.wait()
    assert said == b"interrupted\n" and stopped < left_s / 2
    assert proc.returncode == 130 and b"Traceback" not in proc.stderr.read()


def test_a_csv_trace_reads_through_the_same_bounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scenarios import trace_file
    from scenarios.base import ScenarioError

    good = tmp_path / "t.csv"
    good.write_bytes(b't,key\n0.1,a\n0.2,"b,c"\n0.3,caf\xe9\n')
    assert trace_file.TraceFile(good).arrivals().key == ["a", "b,c", "caf\ufffd"]  # quoted, and replaced
    header = tmp_path / "header.csv"
    header.write_text("t,key\n")
    with pytest.raises(ScenarioError, match=r"header\.csv: no rows"):
        trace_file.TraceFile(header)
    long = tmp_path / "long.csv"
    long.write_bytes(b"t,key\n0.1,a\n0.2," + b"k" * 100_000 + b"\n")
    with pytest.raises(ScenarioError, match="1 lines longer than 65,536 bytes"):
        trace_file.TraceFile(long)
    binary = tmp_path / "bin.csv"
    binary.write_bytes(random.Random(3).randbytes(2_000_000).replace(b"\n", b" "))
    with pytest.raises(ScenarioError, match="hold no line within 65,536 bytes"):
        trace_file.TraceFile(binary)
    monkeypatch.setattr(trace_file, "MAX_ROWS", 2)
    with pytest.raises(ScenarioError, match=r"t.csv: 3 rows or more is beyond a replay's bound of 2 requests"):
        trace_file.TraceFile(good)


def test_simulate_trace_prints_what_was_read_used_and_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(log(300) + line(1, "01/Jan/1970") + line(2, agent=b"\xff"))
    out = tmp_path / "out"
    assert main(["simulate", "--trace", str(path), "--algorithm", "fixed_window", "--out", str(out), "--wide"]) == 0
    said = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert (f"{path}: 302 lines read, 301 used; skipped: 1 dated outside 1995-2100; 1 with bytes that are not "
            "UTF-8 (replaced, used)") in said
    assert (out / "runs" / "access__fixed_window__memory").is_dir() and not list(tmp_path.glob(".*partial"))


def test_concatenated_gzip_members_are_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "rotated.log.gz"
    path.write_bytes(gzip.compress(log(700)) + gzip.compress(log(300)))  # cat a.gz b.gz, as log rotation leaves
    used, summary = read(path)
    assert used == summary.lines == 1000 and summary.truncated is None


@pytest.mark.parametrize("compressed", [False, True])
def test_a_long_read_shows_its_bytes_against_the_files_size_on_a_terminal_only(tmp_path: Path, compressed: bool,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The bar follows the file's own bytes (a gzip's compressed ones) and its lines, block by
    block, and goes when the read ends; piped, nothing listens."""
    monkeypatch.setattr("harness.cli.read_progress.SHOW_AFTER_S", 0.0)
    text = "".join(f"10.0.0.{i % 250} - - line {i:08d}\n" for i in range(40_000)).encode()
    path = tmp_path / ("access.log.gz" if compressed else "access.log")
    path.write_bytes(gzip.compress(text) if compressed else text)
    shown = []
    with ReadProgress(Console(file=io.StringIO(), force_terminal=True, width=120)) as bars:
        stream = LineStream(path)
        stream.block_bytes = 1 << 17  # a few blocks of this small file
        for _ in stream.blocks():
            [task] = bars.progress.tasks
            shown.append((task.completed, task.total, task.fields["lines"], task.finished))
        assert bars.progress is None  # gone with the read
    assert shown[-1][:3] == (stream.counts.raw_bytes, path.stat().st_size, stream.counts.lines)
    assert len(shown) > 1 and [s[0] for s in shown] == sorted(s[0] for s in shown)  # block by block, never back
    assert stream.counts.raw_bytes == path.stat().st_size and stream.counts.lines == 40_000
    with ReadProgress(Console(file=io.StringIO(), width=120)) as piped:
        assert piped.heard not in ON_READ.listeners


def test_a_failing_read_listener_is_dropped_and_the_read_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "access.log"
    path.write_bytes(log(100))

    def broken(stream: LineStream, done: bool) -> None:
        raise RuntimeError("a display bug")

    ON_READ.listeners.append(broken)
    try:
        used, summary = read(path)
        dropped = broken not in ON_READ.listeners
    finally:
        if broken in ON_READ.listeners:  # never left for the other tests of this process
            ON_READ.listeners.remove(broken)
    assert dropped and used == summary.lines == 100


def test_a_trace_past_what_a_replay_holds_is_refused_before_it_is_replayed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``simulate --trace`` holds every request: a trace whose requests and keys would take more
    than ``--replay-memory`` (1 GiB by default) is refused naming them, exit 2, no results folder.
    The replay's base raised so that 300 requests of 50 keys take exactly 1 GiB: the log of 300
    (from 50 addresses) is replayed, one of 301 is not, unless given 1.5 GiB; a CSV trace's
    distinct keys count as the log's do."""
    from harness.campaign.log_traffic import trace_model
    from scenarios import trace_file
    from scenarios.base import ScenarioError

    path, out = tmp_path / "access.log", tmp_path / "out"
    monkeypatch.setattr(trace_file, "BASE_BYTES", (1 << 30) - 300 * trace_file.REQUEST_BYTES - 50 * trace_file.KEY_BYTES)
    path.write_bytes(log(301))
    simulate = ["simulate", "--trace", str(path), "--algorithm", "fixed_window", "--out", str(out)]
    assert main(simulate) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert f"--trace {path}: 301 requests of 50 keys would take about 1.0 GiB replayed" in said, said
    assert "beyond --replay-memory 1.0 GiB (the default; at most" in said
    assert "judge a log of any size with `validate --traffic` (streamed)" in said
    assert not out.exists() and not list(tmp_path.glob(".*partial"))
    assert main([*simulate, "--replay-memory", "1.5"]) == 0 and (out / "runs" / "access__fixed_window__memory").is_dir()
    path.write_bytes(log(300))
    assert main([*simulate[:-1], str(tmp_path / "again")]) == 0
    assert main(["simulate", "--scenario", "boundary_burst", "--replay-memory", "2"]) == 2
    assert "--replay-memory: only with --trace" in capsys.readouterr().err
    table = tmp_path / "t.csv"
    table.write_text("t,key\n0.1,a\n0.2,b\n0.3,c\n")
    monkeypatch.setattr(trace_file, "BASE_BYTES", (1 << 30) - 3 * trace_file.REQUEST_BYTES - 2 * trace_file.KEY_BYTES)
    with pytest.raises(ScenarioError, match=r"t.csv: 3 requests of 3 keys would take about"):
        trace_model(table)
