// A DIY etcd lock: read the key, then put it, with no `create_revision == 0`
// compare in a transaction.
async fn grab_leader(client: &mut etcd_client::Client, me: &str) -> Result<bool, etcd_client::Error> {
    let resp = client.get("service/leader", None).await?;
    if !resp.kvs().is_empty() {
        return Ok(false);
    }
    client.put("service/leader", me, None).await?; 
    Ok(true)
}
