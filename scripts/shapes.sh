#!/usr/bin/env bash
# Cost of the shapes a hostile or unusual file can take, at three sizes
# (N, 2N, 4N). For each: wall seconds and peak RSS of `lockaudit check` on
# one generated file, and the growth from N to 4N. Linear cost grows about
# 4x over that range; quadratic cost grows 16x. Quote the ratios of one
# run: the machine is shared, absolute times are noisy.
#
#   scripts/shapes.sh            (sizes: SCALE=1)
#   SCALE=2 scripts/shapes.sh    (every size doubled)
#
# Shapes:
#   pipeline   redis::pipe() with N commands of four calls each
#   locks      N correctness locks in one function, each followed by a call
#   arguments  one call with 80*N arguments
#   tuples     N lets, each a tuple of the one before (value flow)
#   const      a 128 KB const SQL string used at N/2 query sites
#   depth      a tree N/2 directories deep next to N/2 files
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${SCALE:-1}
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (Debian package: time)" >&2; exit 2; }
cargo build --release --quiet --bin lockaudit
BIN=$PWD/target/release/lockaudit
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

gen() {
    local shape=$1 n=$2 dir=$3
    mkdir -p "$dir/.git"
    case $shape in
    pipeline)
        awk -v n="$n" 'BEGIN {
            printf "fn f(con: &mut redis::Connection) -> redis::RedisResult<()> {\n    let _: () = redis::pipe()"
            for (i = 0; i < n; i++) printf ".cmd(\"SET\").arg(\"lock:%d\").arg(\"v\").ignore()", i
            printf ".query(con)?;\n    Ok(())\n}\n" }' >"$dir/pipe.rs" ;;
    locks)
        awk -v n="$n" 'BEGIN {
            print "use etcd_client::{Client, LockOptions};"
            print "// lock-purpose: correctness - one writer"
            print "async fn f(client: &mut Client, db: &Db, lease: i64) -> Result<(), etcd_client::Error> {"
            for (i = 0; i < n; i++) {
                printf "    let l%d = client.lock(\"ledger/%d\", Some(LockOptions::new().with_lease(lease))).await?;\n", i, i
                printf "    write(&db, %d);\n", i
            }
            print "    Ok(())\n}" }' >"$dir/locks.rs" ;;
    arguments)
        awk -v n="$((n * 80))" 'BEGIN {
            printf "fn f(con: &mut redis::Connection) -> redis::RedisResult<()> {\n    con.del((\"lock\""
            for (i = 1; i < n; i++) printf ",\"lock\""
            printf "))?;\n    Ok(())\n}\n" }' >"$dir/args.rs" ;;
    tuples)
        awk -v n="$n" 'BEGIN {
            print "fn f(con: &mut redis::Connection) -> redis::RedisResult<()> {"
            print "    let a0 = \"lock\";"
            for (i = 1; i <= n; i++) printf "    let a%d = (a%d, a%d);\n", i, i - 1, i - 1
            printf "    let _: () = redis::cmd(\"SET\").arg(a%d).arg(\"v\").arg(\"NX\").query(con)?;\n    Ok(())\n}\n", n }' >"$dir/tuples.rs" ;;
    const)
        awk -v n="$((n / 2))" 'BEGIN {
            printf "const Q: &str = \"SELECT pg_advisory_lock(1) "
            for (i = 0; i < 131072; i++) printf "x"
            print "\";"
            print "async fn f(pool: &sqlx::PgPool) {"
            for (i = 0; i < n; i++) print "    let _ = sqlx::query(Q).execute(pool).await;"
            print "}" }' >"$dir/consts.rs" ;;
    depth)
        mkdir -p "$dir/many"
        for ((i = 0; i < n / 2; i++)); do echo 'fn main() {}' >"$dir/many/f$i.rs"; done
        (cd "$dir" && for ((i = 0; i < n / 2; i++)); do mkdir d && cd d; done) ;;
    esac
}

printf '%-10s %8s %10s %10s %10s %8s %8s\n' shape N "s@N" "s@2N" "s@4N" "x time" "x RSS"
for shape in pipeline locks arguments tuples const depth; do
    base=$((1000 * SCALE))
    walls=() rsss=()
    for n in $base $((base * 2)) $((base * 4)); do
        dir="$WORK/$shape-$n"
        gen "$shape" "$n" "$dir"
        (cd "$dir" && /usr/bin/time -f "%e %M" -o "$WORK/time" "$BIN" check --no-prefilter --format short --fail-on never . >/dev/null 2>&1) || true
        read -r w m <"$WORK/time"
        walls+=("$w")
        rsss+=("$m")
        rm -rf "$dir"
    done
    awk -v s="$shape" -v n="$base" -v a="${walls[0]}" -v b="${walls[1]}" -v c="${walls[2]}" \
        -v ra="${rsss[0]}" -v rc="${rsss[2]}" 'BEGIN {
        printf "%-10s %8d %10.2f %10.2f %10.2f %8.1f %8.1f\n", s, n, a, b, c, (a > 0.01 ? c / a : c / 0.01), rc / ra }'
done
