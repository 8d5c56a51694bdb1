use redis::Commands;

fn acquire_lock(con: &mut redis::Connection, key: &str, me: &str) -> redis::RedisResult<bool> {
    let held: Option<String> = con.get(key)?;
    if held.is_some() {
        return Ok(false);
    }
    con.set_ex(key, me, 30)?; 
    Ok(true)
}

fn take(con: &mut redis::Connection, job: u64, me: &str) -> redis::RedisResult<()> {
    let exists: bool = redis::cmd("EXISTS").arg(format!("lock:job:{}", job)).query(con)?;
    if !exists {
        redis::cmd("SET").arg(&format!("lock:job:{}", job)).arg(me).query::<()>(con)?; 
    }
    Ok(())
}

fn take_match(con: &mut redis::Connection, lock_key: String, me: &str) -> redis::RedisResult<()> {
    match con.get::<_, Option<String>>(lock_key.as_str())? {
        None => {
            let _: () = con.set(lock_key.clone(), me)?; 
        }
        Some(_) => {}
    }
    Ok(())
}
