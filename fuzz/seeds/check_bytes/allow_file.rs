//@ checks: missing-purpose, unused-suppression
// lockaudit: allow-file(missing-purpose) generated client, audited upstream
use redis::Commands;

fn a(con: &mut redis::Connection, lock: &str) -> redis::RedisResult<bool> {
    con.set_nx(lock, "a")
}

fn b(con: &mut redis::Connection, lock: &str) -> redis::RedisResult<bool> {
    con.set_nx(lock, "b")
}
