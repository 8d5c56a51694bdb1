//@ config: default.yaml
// With `default-purpose: correctness`, an unannotated lock is held to fencing.
fn take(con: &mut redis::Connection, fs_path: &std::path::Path, lock_key: &str) -> Result<(), Box<dyn std::error::Error>> {
    let won: Option<String> = redis::cmd("SET").arg(lock_key).arg("me").arg("NX").arg("PX").arg(30_000).query(con)?; 
    if won.is_some() {
        std::fs::write(fs_path, b"report")?;
    }
    Ok(())
}
