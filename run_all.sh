#!/usr/bin/env bash
# ratelab's two entry points on a fresh Debian machine with Rust:
#   ./run_all.sh          install redis-server if missing, build, run every experiment (full
#                         profile) into results/latest/, draw the charts, write the report
#   ./run_all.sh --test   the same set-up, then the whole test suite against real redis-servers
#   ./run_all.sh --builds the quick profile on every server build scripts/builds.sh provides
#                         (Redis 7.0, Valkey 8.0, Redis 8.2) into results/builds/<build>/, and
#                         results/builds/BUILDS.md: every claim's verdict per build
#   ./run_all.sh --builds-full EXP...
#                         the full profile of the named experiments on the other builds into
#                         results/builds-full/<build>/, and results/builds-full/BUILDS.md beside
#                         results/reference (the system build's full run)
# Extra arguments after the mode go to `ratelab all` (e.g. --profile quick, --out DIR; the full profile
# unless one is named), or with --test to the test runner.
# RATELAB_BIN=PATH runs that ratelab binary instead of building the release one (the tests run this
# script's README command with the binary they were built with).
set -euo pipefail
cd "$(dirname "$0")"

ensure_redis() {
    if command -v redis-server >/dev/null 2>&1 && command -v redis-benchmark >/dev/null 2>&1; then
        return
    fi
    local install="apt-get install -y redis-server redis-tools"
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "run_all: installing redis-server and redis-tools with apt-get" >&2
        # RUNLEVEL=1 keeps the package's init script from starting a system-wide redis on 6379:
        # ratelab starts and stops its own servers.
        export DEBIAN_FRONTEND=noninteractive RUNLEVEL=1
        apt-get update -qq >/dev/null || true
        $install -qq >/dev/null
    else
        echo "run_all: redis-server is missing; install it first with:" >&2
        echo "    sudo $install" >&2
        exit 1
    fi
}

# The dataset validators the publish tests use, and the JUnit reader the check tests use, each in
# its own venv (they conflict on jsonschema).
# A test whose validator is missing fails, so a failed install is said loudly, with pip's own words.
ensure_validators() {
    local root=target/validators
    if ! python3 -m venv --help >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null 2>&1 || true
    fi
    mkdir -p "$root"
    local tool failed=0
    for tool in frictionless cffconvert junitparser; do
        [ -x "$root/$tool/bin/$tool" ] && continue
        echo "run_all: installing $tool (pip) into $root/$tool" >&2
        rm -rf "${root:?}/$tool"
        if ! { python3 -m venv "$root/$tool" && "$root/$tool/bin/pip" install -q "$tool"; } >"$root/$tool.log" 2>&1; then
            failed=1
            {
                echo "run_all: ================================================================"
                echo "run_all: COULD NOT INSTALL $tool: its test in tests/ WILL FAIL."
                echo "run_all: pip said (all of it in $root/$tool.log):"
                tail -n 15 "$root/$tool.log" | sed 's/^/run_all:   /'
                echo "run_all: ================================================================"
            } >&2
        fi
    done
    return "$failed"
}

# The limiter adapters' own packages (examples/adapters/*: npm ci, a pip venv), each into its folder.
ensure_adapters() {
    scripts/adapters.sh || {
        echo "run_all: ================================================================"
        echo "run_all: COULD NOT INSTALL THE LIMITER ADAPTERS (above): tests/adapters.rs and"
        echo "run_all: tests/libraries.rs WILL FAIL, and the libraries experiment is skipped."
        echo "run_all: ================================================================"
        return 1
    } >&2
}

# The test suite. With cargo-nextest (the machine image has it) every test is its own process, packed
# by the share of a core each keeps busy (.config/nextest.toml: eight slots on 2 cores), the longest
# first; --all-targets runs the criterion benches once each in test mode as well.
# Without it, cargo test runs the binaries one after another (slower). The validators install while
# the tests build.
run_tests() {
    local root=target/validators
    mkdir -p "$root"
    export FRICTIONLESS="$PWD/$root/frictionless/bin/frictionless" CFFCONVERT="$PWD/$root/cffconvert/bin/cffconvert"
    # `ratelab check`'s JUnit report is read by a real JUnit reader (tests/check.rs).
    export JUNITPARSER_PYTHON="$PWD/$root/junitparser/bin/python"
    ensure_validators &
    local validators=$!
    ensure_adapters &
    local adapters=$!
    local runner=(cargo test --all-targets)
    if cargo nextest --version >/dev/null 2>&1; then
        runner=(cargo nextest run --all-targets --no-fail-fast)
    else
        echo "run_all: cargo-nextest is missing (cargo install cargo-nextest): the tests run one binary at a time" >&2
    fi
    local built=0
    cargo test --all-targets --no-run || built=$?
    wait "$validators" || echo "run_all: a validator is missing (see above): its test will fail" >&2
    wait "$adapters" || echo "run_all: an adapter is not installed (see above): its test will fail" >&2
    [ "$built" -eq 0 ] || exit "$built"
    "${runner[@]}" "$@"
}

mode=run
case "${1:-}" in
    --test) mode=test; shift ;;
    --builds) mode=builds; shift ;;
    --builds-full) mode=builds-full; shift ;;
esac

ensure_redis
echo "run_all: $(redis-server --version)" >&2

if [ "$mode" = test ]; then
    # The tests start their own servers; a user's server named in the environment is not theirs.
    unset RATELAB_REDIS_URL
    run_tests "$@"
    exit 0
fi

# The libraries experiment runs the seeds' own middlewares through their adapters (and
# `--limiter examples/adapters/...` needs them); without them libraries is skipped, saying why.
ensure_adapters || true
if [ -n "${RATELAB_BIN:-}" ]; then
    ratelab=$RATELAB_BIN
else
    cargo build --release
    ratelab=./target/release/ratelab
fi
if [ "$mode" = builds ]; then
    out=results/builds
    runs=()
    while read -r build binary; do
        # A build where some experiment fails still gets its report; the comparison shows it.
        "$ratelab" all --profile quick --redis-server "$binary" --out "$out/$build" "$@" \
            || echo "run_all: $build: some experiments failed (see $out/$build/REPORT.md)" >&2
        runs+=("$out/$build")
    done < <(scripts/builds.sh)
    "$ratelab" report "${runs[@]}" --out "$out/BUILDS.md"
    exit 0
fi
if [ "$mode" = builds-full ]; then
    [ $# -gt 0 ] || { echo "run_all: --builds-full needs experiment ids (ratelab list)" >&2; exit 2; }
    out=results/builds-full
    runs=(results/reference)
    system=$(command -v redis-server)
    while read -r build binary; do
        [ "$binary" = "$system" ] && continue
        for id in "$@"; do
            "$ratelab" run "$id" --profile full --redis-server "$binary" --out "$out/$build" \
                || echo "run_all: $build: $id failed" >&2
        done
        runs+=("$out/$build")
    done < <(scripts/builds.sh)
    "$ratelab" report "${runs[@]}" --out "$out/BUILDS.md"
    exit 0
fi
# `ratelab all` takes one --profile: the one given, else the full one.
profile=full given=
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
        --profile) given=1 profile=${args[i + 1]:-} ;;
        --profile=*) given=1 profile=${args[i]#--profile=} ;;
    esac
done
[ -n "$given" ] || args=(--profile full "${args[@]}")
# The plan first (analysis/budget.toml), so whoever starts it knows how long it will take.
"$ratelab" estimate --profile "$profile"
"$ratelab" all "${args[@]}"
