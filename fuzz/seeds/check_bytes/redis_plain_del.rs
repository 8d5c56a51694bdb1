use redis::Commands;

fn release_lock(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<()> {
    con.del(lock_key)?; 
    Ok(())
}

fn unlock(con: &mut redis::Connection, key: &str, token: &str) -> redis::RedisResult<()> {
    let current: Option<String> = con.get(key)?;
    if current.as_deref() == Some(token) {
        con.del(key)?; 
    }
    Ok(())
}

fn raw_unlink(con: &mut redis::Connection, job: u64) -> redis::RedisResult<()> {
    redis::cmd("UNLINK").arg(format!("lock:{}", job)).query::<()>(con) 
}

struct LockGuard {
    con: redis::Connection,
    key: String,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _: redis::RedisResult<()> = self.con.del(&self.key); 
    }
}
