#!/usr/bin/env bash
# The live comparison at 50,000 requests/s on one 16-core machine with no package registry
# (docs/high-qps.md, "Live on 16 cores"). Two steps:
#
#   tools/sixteen-cores.sh pack DIR [--python 3.12] [--have FILE]
#       on a machine that reaches the registries: the project's runtime wheels for that Python
#       (manylinux x86-64) and wrk with its LuaJIT from Debian, into DIR. --have FILE names the
#       packages the 16-core machine already has (one per line, `pip list --format=freeze` works):
#       they are left out.
#   tools/sixteen-cores.sh run DIR [OUT] [--campaign FILE] [--wrk-seconds N (0: no wrk)]
#       on the 16-core machine, from the checkout's root: the wheels installed in a temporary
#       folder (nothing of the machine's own Python is changed), wrk unpacked in a temporary
#       prefix; then wrk's ceiling on one node (nothing refused), the campaign
#       campaigns/throughput-16c.yaml (its scale chosen from the machine: scale.auto), and the
#       figures in OUT (default DIR/out): the terminal output, summary.json, each run's ramp bins
#       and run.json. Under 8 minutes on 16 cores.
#
# The virtual twin needs no such machine: `run_bench.py bench twin-scale compare OUT/results` on any
# machine compares the campaign's live figures with the same campaign in virtual time.
set -euo pipefail

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

pack() {
    local dir=$1; shift
    local python=3.12 have=""
    while [ $# -gt 0 ]; do
        case $1 in
            --python) python=$2; shift 2 ;;
            --have) have=$2; shift 2 ;;
            *) echo "pack: unknown option $1" >&2; exit 2 ;;
        esac
    done
    mkdir -p "$dir/all" "$dir/wheels" "$dir/debs"
    # the runtime dependencies of pyproject.toml, resolved for that Python on manylinux x86-64
    python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' \
        > "$dir/requirements.txt"
    local platforms=()
    for n in 2_17 2_24 2_27 2_28 2_31 2_34 2_35 2_39; do platforms+=(--platform "manylinux_${n}_x86_64"); done
    python3 -m pip download -q --only-binary=:all: --python-version "$python" --implementation cp \
        "${platforms[@]}" --platform manylinux2014_x86_64 -d "$dir/all" -r "$dir/requirements.txt"
    rm -f "$dir"/wheels/*.whl
    for wheel in "$dir"/all/*.whl; do
        name=$(basename "$wheel" | cut -d- -f1 | tr 'A-Z_.' 'a-z--')
        if [ -n "$have" ] && sed 's/[=<>; ].*//' "$have" | tr 'A-Z_.' 'a-z--' | grep -qx "$name"; then continue; fi
        cp "$wheel" "$dir/wheels/"
    done
    rm -rf "$dir/all"  # only wheels/ and debs/ travel
    (cd "$dir/debs" && apt-get download -q wrk libluajit2-5.1-2 libluajit2-5.1-common >/dev/null)
    echo "packed into $dir: $(ls "$dir/wheels" | wc -l) wheels ($(du -sh "$dir/wheels" | cut -f1)), $(ls "$dir/debs" | wc -l) debs"
}

run() {
    local dir=$1; shift
    local out=$dir/out campaign=campaigns/throughput-16c.yaml wrk_seconds=8
    while [ $# -gt 0 ]; do
        case $1 in
            --campaign) campaign=$2; shift 2 ;;
            --wrk-seconds) wrk_seconds=$2; shift 2 ;;
            -*) echo "run: unknown option $1" >&2; exit 2 ;;
            *) out=$1; shift ;;
        esac
    done
    [ -f run_bench.py ] || { echo "run: start it from the checkout's root" >&2; exit 2; }
    [ -d "$dir/wheels" ] || { echo "run: $dir has no wheels/ (tools/sixteen-cores.sh pack $dir first)" >&2; exit 2; }
    mkdir -p "$out"
    tmp=$(mktemp -d)  # global: the trap runs after this function has returned
    trap 'rm -rf "$tmp"' EXIT
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$tmp/site" "$dir"/wheels/*.whl
    for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$tmp/prefix"; done
    export PATH="$tmp/prefix/usr/bin:$PATH" PYTHONPATH="$tmp/site:$PWD" PYTHONUNBUFFERED=1
    export LD_LIBRARY_PATH="$tmp/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "machine: $(nproc) cores, $(python3 --version), wrk: $(wrk --version 2>&1 | head -1)" | tee "$out/machine.txt"
    local processes
    processes=$(python3 -c 'import sys
from pathlib import Path
from harness.campaign.live import load_campaign
from harness.live import autoscale, cpus
print(autoscale.apply(load_campaign(Path(sys.argv[1])), len(cpus.available()))[1].processes)' "$campaign")
    # the node's ceiling: wrk (6 threads, 200 connections) on one node of the campaign's processes,
    # nothing refused; a wrk that cannot run here costs its figure, not the campaign's
    if [ "$wrk_seconds" != 0 ]; then
        python3 run_bench.py bench target-processes --processes "$processes" --threads 6 --connections 200 \
            --algorithm token_bucket --rounds 1 --seconds "$wrk_seconds" --warmup 2 2>&1 | tee "$out/wrk.txt" \
            || echo "wrk's ceiling failed"
    fi
    python3 run_bench.py run "$campaign" --out "$tmp/results" --wide 2>&1 | tee "$out/campaign.txt"
    python3 run_bench.py bench twin-scale export "$tmp/results" "$out/results"
    echo "figures in $out"
}

case ${1:-} in
    pack) [ $# -ge 2 ] || usage; shift; pack "$@" ;;
    run) [ $# -ge 2 ] || usage; shift; run "$@" ;;
    *) usage ;;
esac
