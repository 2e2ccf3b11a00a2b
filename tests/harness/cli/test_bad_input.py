"""Every command, fed the mistaken inputs users make: exit 2, exactly one line on stderr, no
traceback, nothing written. Through ``main(argv)`` (the code ``run_bench.py`` exits with: an
exception escaping it would fail the test as the traceback it would print), one case through a
real process."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.cli.main import main

ROOT = Path(__file__).resolve().parents[3]

LIVE = "name: c\npolicy: {limit: 10, window_s: 1}\nalgorithms: [fixed_window]\nscenarios: [steady]\n"
SIM = LIVE
POLICY = ("name: p\nlimits:\n  - {name: api, key: ip, algorithm: token_bucket, limit: 10, window_s: 1}\n"
          "traffic: {peak_requests_per_min: 60}\n")


def _inputs(tmp: Path) -> None:
    """The files the cases name, in ``tmp/in`` (everything else under ``tmp`` must stay absent)."""
    d = tmp / "in"
    d.mkdir()
    (d / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    (d / "folder").mkdir()
    (d / "malformed.yaml").write_text("name: [c\n  policy: }\n")
    (d / "live.yaml").write_text(LIVE)
    (d / "sim.yaml").write_text(SIM)
    (d / "seed.yaml").write_text(LIVE + "seed: -1\n")
    (d / "huge.yaml").write_text(LIVE.replace("limit: 10", "limit: 1e300"))
    (d / "no-slots.yaml").write_text(LIVE + "downstream: {concurrency: 0}\n")
    (d / "inf-sigma.yaml").write_text(LIVE + "downstream: {sigma: .inf}\n")
    (d / "nan-service.yaml").write_text(SIM + "downstream: {median_ms: .nan}\n")
    (d / "no-processes.yaml").write_text(SIM + "system: {processes: 0}\n")
    (d / "policy.yaml").write_text(POLICY)
    (d / "huge-policy.yaml").write_text(POLICY.replace("limit: 10", "limit: 1e300"))
    (d / "file").write_text("a file\n")
    (d / "blank-keys.csv").write_text("t,key\n0.1,a\n0.2,\n0.3,b\n")
    (d / "url-policy.yaml").write_text("name: p\nroutes: [{name: GET /api/items}]\n"
                                       "limits: [{name: api, key: ip, algorithm: gcra, limit: 10, window_s: 1}]\n")
    (d / "peer-port.yaml").write_text(LIVE + 'peers: [{name: gw, url: "http://127.0.0.1:99999"}]\n')
    (d / "results").mkdir()
    (d / "results" / "judge-client.csv").write_text("an earlier judge's log\n")
    (d / "t-twice.csv").write_text("t,key,t\n0.1,a,9\n0.2,b,9\n")
    pq.write_table(pa.Table.from_arrays([pa.array([0.1]), pa.array(["a"]), pa.array(["b"])], names=["t", "key", "key"]),
                   d / "key-twice.parquet")
    (d / "nginx.conf").write_bytes(b"limit_req_zone \xff;\n")
    (d / "span.csv").write_text("t,key\n0,a\n1e15,b\n")
    log = b"".join(b'1.2.3.4 - - [10/Oct/2026:13:55:%02d +0000] "GET /api/items HTTP/1.1" 200 1 "-" "x"\n' % (i % 60)
                   for i in range(500))
    (d / "span.log").write_bytes(log.replace(b"10/Oct/2026", b"01/Jan/1996", 1).replace(b"10/Oct/2026", b"01/Jan/2099", 1))
    packed = gzip.compress(log)
    (d / "cut.log.gz").write_bytes(packed[:len(packed) // 2])
    (d / "crc.log.gz").write_bytes(packed[:-8] + bytes(b ^ 0xFF for b in packed[-8:-4]) + packed[-4:])
    (d / "binary.log").write_bytes(bytes(range(256)).replace(b"\n", b"") * 4096)


CASES: dict[str, list[str]] = {
    # run: a campaign that cannot be read or used, an output that cannot be written, numbers, names
    "run: campaign not UTF-8": ["run", "in/latin1.yaml"],
    "run: campaign is a folder": ["run", "in/folder"],
    "run: campaign missing": ["run", "in/none.yaml"],
    "run: malformed YAML": ["run", "in/malformed.yaml"],
    "run: --out is a file": ["run", "in/live.yaml", "--out", "in/file"],
    "run: --out under a file": ["run", "in/live.yaml", "--out", "in/file/results"],
    "run: seed -1 in the file": ["run", "in/seed.yaml"],
    "run: limit 1e300": ["run", "in/huge.yaml"],
    "run: --workers 0": ["run", "in/live.yaml", "--workers", "0"],
    "run: --remote-timeout nan": ["run", "in/live.yaml", "--remote-workers", "1", "--remote-timeout", "nan"],
    "run: --store unknown": ["run", "in/live.yaml", "--store", "redis-sharded"],
    "run: a downstream of zero slots": ["run", "in/no-slots.yaml"],
    "run: a downstream spread of inf": ["run", "in/inf-sigma.yaml"],
    # simulate
    "simulate: campaign not UTF-8": ["simulate", "--campaign", "in/latin1.yaml"],
    "simulate: campaign is a folder": ["simulate", "--campaign", "in/folder"],
    "simulate: malformed YAML": ["simulate", "--campaign", "in/malformed.yaml"],
    "simulate: --out is a file": ["simulate", "--scenario", "steady", "--out", "in/file"],
    "simulate: --out under a file": ["simulate", "--scenario", "steady", "--out", "in/file/results"],
    "simulate: --json under a file": ["simulate", "--scenario", "steady", "--json", "in/file/summary.json"],
    "simulate: --json is a folder": ["simulate", "--scenario", "steady", "--json", "in/folder"],
    "simulate: --seed -1": ["simulate", "--scenario", "steady", "--seed", "-1"],
    "simulate: --seed text": ["simulate", "--scenario", "steady", "--seed", "one"],
    "simulate: trace with empty key cells": ["simulate", "--trace", "in/blank-keys.csv"],
    "simulate: trace is a folder": ["simulate", "--trace", "in/folder"],
    "simulate: trace CSV with a column twice": ["simulate", "--trace", "in/t-twice.csv"],
    "simulate: trace Parquet with a column twice": ["simulate", "--trace", "in/key-twice.parquet"],
    # issue 41: bounds before allocation, and logs read through the bounded stream
    "simulate: a two-row trace spanning 1e15 s": ["simulate", "--trace", "in/span.csv"],
    "simulate: a log spanning 1996-2099": ["simulate", "--trace", "in/span.log"],
    "simulate: a gzip cut short": ["simulate", "--trace", "in/cut.log.gz"],
    "simulate: a gzip failing its CRC": ["simulate", "--trace", "in/crc.log.gz"],
    "simulate: --trace /dev/zero": ["simulate", "--trace", "/dev/zero"],
    "validate: --traffic /dev/zero": ["validate", "in/url-policy.yaml", "--traffic", "/dev/zero"],
    "validate: --traffic a binary file, format given": ["validate", "in/url-policy.yaml", "--traffic", "in/binary.log",
                                                         "--format", "combined"],
    "validate: --traffic a gzip cut short": ["validate", "in/url-policy.yaml", "--traffic", "in/cut.log.gz"],
    "validate: --max-line-bytes 1e12": ["validate", "in/url-policy.yaml", "--traffic", "in/span.log", "--max-line-bytes", "1e12"],
    "simulate: --limit 1e300": ["simulate", "--scenario", "steady", "--limit", "1e300"],
    "simulate: --limit nan": ["simulate", "--scenario", "steady", "--limit", "nan"],
    "simulate: --window 0": ["simulate", "--scenario", "steady", "--window", "0"],
    "simulate: boundaries 1e9": ["simulate", "--scenario", "boundary_burst", "--scenario-param", "boundaries=1000000000"],
    "simulate: a bool that is not": ["simulate", "--scenario", "retry_storm", "--scenario-param", "honour_retry_after=maybe"],
    "simulate: beyond the memory bound": ["simulate", "--scenario", "steady", "--limit", "100000000"],
    "simulate: unknown scenario": ["simulate", "--scenario", "stedy"],
    "simulate: --system zero slots": ["simulate", "--scenario", "steady", "--system", "concurrency=0"],
    "simulate: --system negative service time": ["simulate", "--scenario", "steady", "--system", "median_ms=-1"],
    "simulate: --system service time nan": ["simulate", "--scenario", "steady", "--system", "median_ms=nan"],
    "simulate: --system spread inf": ["simulate", "--scenario", "steady", "--system", "sigma=inf"],
    "simulate: --system spread 1e6": ["simulate", "--scenario", "steady", "--system", "sigma=1e6"],
    "simulate: --system 0 processes": ["simulate", "--scenario", "steady", "--system", "processes=0"],
    "simulate: --system negative network time": ["simulate", "--scenario", "steady", "--system", "one_way_us=-5"],
    "simulate: --system cpu 1e300": ["simulate", "--scenario", "steady", "--system", "cpu_us=1e300"],
    "simulate: --system store round trip nan": ["simulate", "--scenario", "steady", "--system", "store_rtt_us=nan"],
    "simulate: --system negative slot overhead": ["simulate", "--scenario", "steady", "--system", "slot_overhead_us=-1"],
    "simulate: campaign downstream nan": ["simulate", "--campaign", "in/nan-service.yaml"],
    "simulate: campaign system of 0 processes": ["simulate", "--campaign", "in/no-processes.yaml"],
    # validate
    "validate: policy not UTF-8": ["validate", "in/latin1.yaml"],
    "validate: policy is a folder": ["validate", "in/folder"],
    "validate: malformed YAML": ["validate", "in/malformed.yaml"],
    "validate: limit 1e300": ["validate", "in/huge-policy.yaml"],
    "validate: --json under a file": ["validate", "in/policy.yaml", "--json", "in/file/v.json"],
    "validate: --junit under a file": ["validate", "in/policy.yaml", "--junit", "in/file/v.xml"],
    "validate: --junit is a folder": ["validate", "in/policy.yaml", "--junit", "in/folder"],
    "validate: --config not UTF-8": ["validate", "--config", "in/nginx.conf"],
    "validate: --config is a folder": ["validate", "--config", "in/folder"],
    # report and compare
    "report: a file": ["report", "in/file"],
    "report: missing": ["report", "in/none"],
    "report: not a results folder": ["report", "in/folder"],
    "compare: a file": ["compare", "in/file", "in/folder"],
    "compare: --threshold nan": ["compare", "in/folder", "in/folder", "--threshold", "nan"],
    # worker
    "worker: --give-up nan": ["worker", "--master", "127.0.0.1:1", "--give-up", "nan"],
    "worker: --give-up -1": ["worker", "--master", "127.0.0.1:1", "--give-up", "-1"],
    "worker: --dir is a file": ["worker", "--master", "127.0.0.1:1", "--dir", "in/file"],
    "worker: --master without a port": ["worker", "--master", "127.0.0.1"],
    # judge: the URL (its port, CR/LF) and --out checked before a request is sent
    "judge: port 99999": ["judge", "http://127.0.0.1:99999/api/items"],
    "judge: port 0": ["judge", "http://127.0.0.1:0/api/items"],
    "judge: port -1": ["judge", "http://127.0.0.1:-1/api/items"],
    "judge: a URL with CR/LF": ["judge", "http://127.0.0.1:8000/api/items\r\nX-Injected: 1"],
    "judge: --claim without a window": ["judge", "http://127.0.0.1:1/api/items", "--claim", "20"],
    "judge: --claim of no request": ["judge", "http://127.0.0.1:1/api/items", "--claim", "0/10"],
    "judge: --out is a file": ["judge", "http://127.0.0.1:1/api/items", "--out", "in/file"],
    "judge: --out under a file": ["judge", "http://127.0.0.1:1/api/items", "--out", "in/file/out"],
    "judge: --out a folder with files": ["judge", "http://127.0.0.1:1/api/items", "--out", "in/results"],
    # a url peer and validate --url: the port named as such, not "unreachable"
    "run: url peer port 99999": ["run", "in/peer-port.yaml"],
    "validate: --url port 99999": ["validate", "in/url-policy.yaml", "--url", "http://127.0.0.1:99999", "--live"],
    # bench: every argument that sizes memory bounded before anything is allocated; argparse's own one line
    "bench queue: --requests 1e12": ["bench", "queue", "--requests", "1e12"],
    "bench queue: --requests 999": ["bench", "queue", "--requests", "999"],
    "bench queue: --seeds 1e9": ["bench", "queue", "--seeds", "1e9"],
    "bench queue: --requests text": ["bench", "queue", "--requests", "many"],
    "bench queue: an unknown argument": ["bench", "queue", "--fast"],
    "bench core: --requests 1e12": ["bench", "core", "--requests", "1e12"],
    "bench core: --sim-requests 0": ["bench", "core", "--sim-requests", "0"],
    "bench adaptive: --requests 1e12": ["bench", "adaptive", "--requests", "1e12"],
    "bench analysis-10m: --rows 1e12": ["bench", "analysis-10m", "--rows", "1e12"],
    "bench traffic: --lines 1e12": ["bench", "traffic", "--lines", "1e12"],
    "bench redis: --decisions 1e12": ["bench", "redis", "--decisions", "1e12"],
    "bench distributed: --rates 1e9": ["bench", "distributed", "--rates", "1e9"],
    "bench peer-agreement: --seconds inf": ["bench", "peer-agreement", "--seconds", "inf"],
    "bench live: --seconds 1e9": ["bench", "live", "--seconds", "1e9"],
}


def _tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("argv", list(CASES.values()), ids=list(CASES))
def test_bad_input_is_one_line_exit_2_and_nothing_written(argv, tmp_path, monkeypatch, capsys):
    _inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    before = _tree(tmp_path)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
    assert "Traceback" not in err
    assert _tree(tmp_path) == before  # no results/, no --out, no --json: nothing written


def test_the_messages_name_the_value_and_the_bound(tmp_path, monkeypatch, capsys):
    _inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    expected = {
        "simulate: boundaries 1e9": "boundaries=1000000000: out of bounds, must be between 1 and 10,000",
        "simulate: --seed -1": "argument --seed: -1: out of bounds, must be between 0 and",
        "simulate: --limit 1e300": "limit=1e+300: out of bounds, must be between 0 and 1,000,000,000",
        "simulate: beyond the memory bound": "about 4,000,000,000 requests planned, beyond a simulated run's memory bound",
        "simulate: a two-row trace spanning 1e15 s": "scenario span: seconds of model time spanned 1,000,000,000,000,000 is "
                                                     "beyond the bound of 2,678,400",
        "simulate: a gzip cut short": "in/cut.log.gz: the gzip ends early at line",
        "simulate: a gzip failing its CRC": "in/crc.log.gz: the gzip fails its check (CRC or length) at line 501",
        "validate: --traffic /dev/zero": "/dev/zero: the first 1,048,576 bytes hold no line within 65,536 bytes",
        "simulate: a bool that is not": "honour_retry_after='maybe': expected true or false",
        "run: campaign not UTF-8": "in/latin1.yaml: not UTF-8 text (byte 9)",
        "run: campaign is a folder": "in/folder: is a folder, not a file",
        "run: malformed YAML": "in/malformed.yaml: not valid YAML (line 2, column 9: expected ',' or ']', but got ':')",
        "run: --out is a file": "--out in/file: is a file, not a folder",
        "simulate: --json under a file": "--json in/file/summary.json: in/file is a file, not a folder",
        "run: seed -1 in the file": "seed: Input should be greater than or equal to 0",
        "simulate: trace with empty key cells": "column key, row 3: empty",
        "simulate: trace CSV with a column twice": "--trace in/t-twice.csv: column t appears more than once",
        "simulate: trace Parquet with a column twice": "--trace in/key-twice.parquet: column key appears more than once",
        "simulate: --system zero slots": "--system: concurrency: Input should be greater than or equal to 1",
        "simulate: --system spread inf": "--system: sigma: Input should be a finite number",
        "simulate: --system spread 1e6": "--system: sigma: Input should be less than or equal to 5",
        "simulate: --system 0 processes": "--system: processes: Input should be greater than or equal to 1",
        "simulate: --system cpu 1e300": "--system: cpu_us: Input should be less than or equal to 60000000",
        "simulate: campaign downstream nan": "in/nan-service.yaml: downstream.median_ms: Input should be a finite number",
        "run: a downstream of zero slots": "in/no-slots.yaml: downstream.concurrency: Input should be greater than or equal to 1",
        "run: a downstream spread of inf": "in/inf-sigma.yaml: downstream.sigma: Input should be a finite number",
        "judge: port 99999": "URL 'http://127.0.0.1:99999/api/items': port=99999: out of bounds, must be between 1 and 65,535",
        "judge: port 0": "port=0: out of bounds, must be between 1 and 65,535",
        "judge: port -1": "port=-1: out of bounds, must be between 1 and 65,535",
        "judge: a URL with CR/LF": "contains a space or a control character (CR, LF, tab, ...): a URL has none",
        "judge: --claim without a window": "--claim '20': expected L/W, a limit of at least 1 per a window in seconds",
        "judge: --claim of no request": "--claim '0/10': expected L/W",
        "judge: --out is a file": "--out in/file: is a file, not a folder",
        "judge: --out a folder with files": "--out in/results: folder exists and is not empty",
        "run: url peer port 99999": "in/peer-port.yaml: peers[gw].endpoint.url: url 'http://127.0.0.1:99999': port=99999: out of bounds",
        "validate: --url port 99999": "--url 'http://127.0.0.1:99999': port=99999: out of bounds, must be between 1 and 65,535",
        "bench queue: --requests 1e12": "argument --requests: 1000000000000: out of bounds, must be between 1,000 and "
                                        "10,000,000 (see run_bench.py bench queue --help)",
        "bench analysis-10m: --rows 1e12": "argument --rows: 1000000000000: out of bounds, must be between 1 and 10,000,000",
        "bench queue: an unknown argument": "unrecognized arguments: --fast (see run_bench.py bench queue --help)",
    }
    for case, text in expected.items():
        assert main(CASES[case]) == 2
        err = capsys.readouterr().err
        assert text in err, (case, err)


@pytest.mark.process
def test_a_planned_simulation_beyond_its_bounds_exits_2_at_once_as_a_process(tmp_path):
    """The real process: 1e9 boundaries grew ~100 MB/s until the machine ran out; now refused
    before a single request is generated (the time is the interpreter's start-up)."""
    done = subprocess.run([sys.executable, str(ROOT / "run_bench.py"), "simulate", "--scenario", "boundary_burst",
                           "--scenario-param", "boundaries=1000000000", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr == (
        "error: boundaries=1000000000: out of bounds, must be between 1 and 10,000\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.process
def test_a_bench_argument_beyond_its_memory_bound_exits_2_at_once_as_a_process(tmp_path):
    """``bench queue --requests 1e12`` asked for 7 TiB; now one line and exit 2 before a single
    arrival is drawn."""
    done = subprocess.run([sys.executable, str(ROOT / "run_bench.py"), "bench", "queue", "--requests", "1e12"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr == (
        "error: argument --requests: 1000000000000: out of bounds, must be between 1,000 and 10,000,000 "
        "(see run_bench.py bench queue --help)\n")
    assert list(tmp_path.iterdir()) == []


def _read_only_copy(source: Path, mount: Path) -> bool:
    """``source`` copied into a tmpfs then remounted read-only (needs the right to mount)."""
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", f"ro-{uuid.uuid4().hex[:6]}", str(mount)],
                      capture_output=True).returncode != 0:
        return False
    shutil.copytree(source, mount / "results")
    return subprocess.run(["mount", "-o", "remount,ro", str(mount)], capture_output=True).returncode == 0


@pytest.mark.process
def test_outputs_on_a_read_only_filesystem_are_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    """report, --out (judge's too), --json and --junit where nothing can be written (a read-only tmpfs: as
    root, permissions never refuse a write, so a mode bit cannot show it)."""
    assert main(["simulate", "--scenario", "boundary_burst", "--algorithm", "fixed_window", "--limit", "10",
                 "--out", str(tmp_path / "made")]) == 0
    mount = tmp_path / "ro"
    if not _read_only_copy(tmp_path / "made", mount):
        pytest.skip("cannot mount a read-only tmpfs here")
    try:
        _inputs(tmp_path)
        monkeypatch.chdir(tmp_path)
        capsys.readouterr()
        for argv in (["report", "ro/results"], ["simulate", "--scenario", "steady", "--out", "ro/new"],
                     ["simulate", "--scenario", "steady", "--json", "ro/summary.json"],
                     ["validate", "in/policy.yaml", "--junit", "ro/v.xml"],
                     ["judge", "http://127.0.0.1:1/api/items", "--out", "ro/judge"]):
            before = _tree(mount)
            assert main(argv) == 2, argv
            err = capsys.readouterr().err
            assert len(err.strip().splitlines()) == 1 and "not writable" in err, (argv, err)
            assert _tree(mount) == before
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)
