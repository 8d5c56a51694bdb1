use redis::Commands;

// lock-purpose: correctness — invoices must be numbered once
fn number(con: &mut redis::Connection, pool: &mut postgres::Client, lock_key: &str, token: &str) -> Result<(), Box<dyn std::error::Error>> {
    let won: Option<String> = redis::cmd("SET").arg(lock_key).arg(token).arg("NX").arg("PX").arg(30_000).query(con)?; 
    if won.is_none() {
        return Ok(());
    }
    pool.execute("UPDATE invoices SET number = number + 1 WHERE id = 1", &[])?;
    Ok(())
}

// lock-purpose: correctness — a counter minted after the grant is not a fence
fn minted_later(con: &mut redis::Connection, pool: &mut postgres::Client, lock_key: &str) -> Result<(), Box<dyn std::error::Error>> {
    let won: Option<String> = redis::cmd("SET").arg(lock_key).arg("me").arg("NX").arg("PX").arg(30_000).query(con)?; 
    if won.is_none() {
        return Ok(());
    }
    let fence: i64 = con.incr("fence:invoices", 1)?;
    pool.execute("UPDATE invoices SET owner = 'me' WHERE id = 1 AND fence < $1", &[&fence])?;
    Ok(())
}

// lock-purpose: correctness — "is it still mine?" right before the write does not fence it
fn verify_then_act(con: &mut redis::Connection, pool: &mut postgres::Client, lock_key: &str, me: &str) -> Result<(), Box<dyn std::error::Error>> {
    let won: Option<String> = redis::cmd("SET").arg(lock_key).arg(me).arg("NX").arg("PX").arg(30_000).query(con)?; 
    if won.is_none() {
        return Ok(());
    }
    let holder: Option<String> = con.get(lock_key)?;
    if holder.as_deref() == Some(me) {
        pool.execute("UPDATE invoices SET owner = $1 WHERE id = 1", &[&me])?;
    }
    Ok(())
}
