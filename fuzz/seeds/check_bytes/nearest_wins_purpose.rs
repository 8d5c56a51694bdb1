//@ checks: non-consensus-correctness-lock
// The nearest annotation decides the purpose: only the acquisition held to
// correctness on a non-consensus store is reported.
use redis::Commands;

// lock-purpose: correctness — the fn-level annotation
fn fn_level(con: &mut redis::Connection, k: &str) -> redis::RedisResult<bool> {
    let won: bool = con.set_nx(k, "me")?; 
    Ok(won)
}

// lock-purpose: correctness — the fn-level annotation ...
fn nearer(con: &mut redis::Connection, k: &str) -> redis::RedisResult<bool> {
    let won: bool = con.set_nx(k, "me")?; // lock-purpose: efficiency — ... loses
    Ok(won)
}
