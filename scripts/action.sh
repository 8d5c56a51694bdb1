#!/usr/bin/env bash
# The logic of the GitHub Action (action.yml): install lockaudit, audit,
# put lockaudit's directory on $GITHUB_PATH for the job's later steps, and
# record the exit code in $GITHUB_OUTPUT for the action's last step.
#
# Inputs (environment): INPUT_VERSION, INPUT_CHECKSUM (the SHA-256 the
# release archive must have, or empty), INPUT_PATHS, INPUT_ARGS (one line
# separated by white space, or one item per line), INPUT_SARIF (`true`/`false`), INPUT_NEW_SINCE (a git
# revision or empty). LOCKAUDIT_BIN: use this binary instead of
# downloading one (how the test suite runs this script).
#
# This script exits non-zero only when lockaudit could not be installed or
# could not run; findings are reported through `exit-code`.
set -euo pipefail

VERSION=${INPUT_VERSION:?the version input is required}
VERSION=${VERSION#v}
REPO_URL=https://github.com/lockaudit/lockaudit
TMP=${RUNNER_TEMP:-$(mktemp -d)}
OUTPUT=${GITHUB_OUTPUT:-/dev/null}
CHECKSUM=$(printf '%s' "${INPUT_CHECKSUM:-}" | tr -d '[:space:]' | tr 'A-F' 'a-f')

output() { echo "$1=$2" >>"$OUTPUT"; }

sha256() {
    if command -v sha256sum >/dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1
}

# The release target for this runner, or nothing.
target() {
    case "${RUNNER_OS:-$(uname -s)}/${RUNNER_ARCH:-$(uname -m)}" in
    Linux/X64 | Linux/x86_64) echo x86_64-unknown-linux-musl ;;
    Linux/ARM64 | Linux/aarch64) echo aarch64-unknown-linux-musl ;;
    macOS/ARM64 | Darwin/arm64) echo aarch64-apple-darwin ;;
    macOS/X64 | Darwin/x86_64) echo x86_64-apple-darwin ;;
    Windows/X64) echo x86_64-pc-windows-msvc ;;
    esac
}

# Downloads the release archive and its checksum; prints the binary's path.
# Returns 1 when there is no archive for this runner, exits 2 when the
# archive does not have the expected checksum.
download() {
    local t name ext url dir
    t=$(target)
    [ -n "$t" ] || return 1
    name="lockaudit-v$VERSION-$t"
    ext=tar.gz
    case "$t" in *windows*) ext=zip ;; esac
    url="$REPO_URL/releases/download/v$VERSION/$name.$ext"
    dir="$TMP/lockaudit-download"
    mkdir -p "$dir"
    curl --proto '=https' --tlsv1.2 -fsSL --retry 3 -o "$dir/$name.$ext" "$url" || return 1
    curl --proto '=https' --tlsv1.2 -fsSL --retry 3 -o "$dir/$name.$ext.sha256" "$url.sha256" || return 1
    local want got
    want=$(cut -d' ' -f1 <"$dir/$name.$ext.sha256")
    got=$(sha256 "$dir/$name.$ext")
    if [ -z "$want" ] || [ "$want" != "$got" ]; then
        echo "::error::checksum mismatch for $name.$ext (expected $want, got $got)" >&2
        exit 2
    fi
    if [ -n "$CHECKSUM" ] && [ "$CHECKSUM" != "$got" ]; then
        echo "::error::$name.$ext does not have the checksum input's SHA-256 (expected $CHECKSUM, got $got)" >&2
        exit 2
    fi
    if [ "$ext" = zip ]; then
        unzip -q -o "$dir/$name.$ext" -d "$dir"
        echo "$dir/$name/lockaudit.exe"
    else
        tar -xzf "$dir/$name.$ext" -C "$dir"
        echo "$dir/$name/lockaudit"
    fi
}

install() {
    if [ -n "${LOCKAUDIT_BIN:-}" ]; then
        echo "$LOCKAUDIT_BIN"
        return
    fi
    local bin code=0
    bin=$(download) || code=$?
    if [ "$code" -eq 0 ]; then
        echo "$bin"
        return
    fi
    # 1: no archive for this runner; anything else: a download that must
    # not be replaced by a build (a checksum mismatch).
    [ "$code" -eq 1 ] || exit "$code"
    if [ -n "$CHECKSUM" ]; then
        echo "::error::no release archive of lockaudit $VERSION for this runner to verify against the checksum input" >&2
        exit 2
    fi
    # From outside the checkout: cargo reads `.cargo/config.toml` and
    # `rust-toolchain.toml` from the current directory up, and a pull
    # request could set a `rustc-wrapper` there.
    if [ -f "${GITHUB_ACTION_PATH:-}/Cargo.toml" ]; then
        # No release to download (none is published yet, or none fits this
        # runner): build the action's own source, the commit `uses:` pins,
        # with the dependency versions of its Cargo.lock.
        echo "no release binary of lockaudit $VERSION for this runner; building it from the action's source with cargo" >&2
        (cd "$TMP" && cargo install --locked --quiet --path "$GITHUB_ACTION_PATH" --root "$TMP/lockaudit-cargo") >&2
    else
        echo "no release binary of lockaudit $VERSION for this runner; building it with cargo" >&2
        (cd "$TMP" && cargo install --locked --quiet --version "$VERSION" --root "$TMP/lockaudit-cargo" lockaudit) >&2
    fi
    echo "$TMP/lockaudit-cargo/bin/lockaudit"
}

BIN=$(install)
"$BIN" --version
# Later steps of the job run `lockaudit` by name.
if [ -n "${GITHUB_PATH:-}" ]; then
    dirname "$BIN" >>"$GITHUB_PATH"
fi

# Prints the items of a multi-line input, each followed by a NUL byte.
# One line: the items are separated by white space. Several lines: one
# item per line (so a path may hold spaces), leading and trailing white
# space trimmed. Blank lines are ignored, and nothing is globbed or
# evaluated.
items() {
    local text=${1//$'\r'/} line lines=0
    local -a words
    while IFS= read -r line || [ -n "$line" ]; do
        case "$line" in *[![:space:]]*) lines=$((lines + 1)) ;; esac
    done <<<"$text"
    while IFS= read -r line || [ -n "$line" ]; do
        if [ "$lines" -le 1 ]; then
            read -r -a words <<<"$line" || true
            for line in ${words[@]+"${words[@]}"}; do printf '%s\0' "$line"; done
        else
            line=${line#"${line%%[![:space:]]*}"}
            line=${line%"${line##*[![:space:]]}"}
            [ -z "$line" ] || printf '%s\0' "$line"
        fi
    done <<<"$text"
}

PATHS=()
while IFS= read -r -d '' item; do PATHS+=("$item"); done < <(items "${INPUT_PATHS:-.}")
ARGS=()
while IFS= read -r -d '' item; do ARGS+=("$item"); done < <(items "${INPUT_ARGS:-}")
[ "${#PATHS[@]}" -gt 0 ] || PATHS=(.)

if [ "${INPUT_SARIF:-false}" = true ]; then
    SARIF="$TMP/lockaudit.sarif"
    # Every finding, for code scanning: findings do not stop the upload,
    # but a run that could not audit (exit 2) does.
    code=0
    "$BIN" check ${ARGS[@]+"${ARGS[@]}"} --format sarif --output "$SARIF" --fail-on never --quiet -- "${PATHS[@]}" || code=$?
    if [ "$code" -ne 0 ]; then
        output exit-code "$code"
        echo "::error::lockaudit could not write the SARIF report (exit $code)"
        exit 0
    fi
    output sarif-file "$SARIF"
fi

GATE=()
if [ -n "${INPUT_NEW_SINCE:-}" ]; then
    # A shallow checkout has the pull request's head only: fetch the base
    # commit so lockaudit can read its files.
    if ! git cat-file -e "$INPUT_NEW_SINCE^{commit}" 2>/dev/null; then
        git fetch --no-tags --quiet --depth=1 origin "$INPUT_NEW_SINCE" || true
    fi
    GATE=(--new-since "$INPUT_NEW_SINCE")
fi

if [ "${INPUT_INVENTORY:-false}" = true ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    # The locks of the audited paths, as a reviewer reads them in the job
    # summary: on a pull request, what it adds, removes and changes, then
    # every lock folded away. A failure to list them does not stop the
    # audit.
    {
        if [ ${#GATE[@]} -gt 0 ]; then
            echo "### Lock changes"
            echo
            "$BIN" inventory ${GATE[@]+"${GATE[@]}"} --format markdown -- "${PATHS[@]}" || echo "lockaudit could not compare the locks with the base revision."
            echo
            echo "<details><summary>Every lock</summary>"
            echo
            "$BIN" inventory --format markdown -- "${PATHS[@]}" || echo "lockaudit could not list the locks."
            echo
            echo "</details>"
        else
            echo "### Distributed locks"
            echo
            "$BIN" inventory --format markdown -- "${PATHS[@]}" || echo "lockaudit could not list the locks."
        fi
        echo
    } >>"$GITHUB_STEP_SUMMARY"
fi

code=0
"$BIN" check ${ARGS[@]+"${ARGS[@]}"} ${GATE[@]+"${GATE[@]}"} --format github -- "${PATHS[@]}" || code=$?
output exit-code "$code"
