//! `pooled-session-lock`: a session-scoped SQL lock (Postgres
//! `pg_advisory_lock`, `pg_try_advisory_lock`, MySQL `GET_LOCK`) taken or
//! released through a connection pool instead of one pinned connection.
//!
//! The connection a statement runs on is read from its executor: the
//! argument of `.execute(..)`/`.fetch_one(..)`, or the receiver of
//! `pool.execute("…")`. A pool is recognised by the declared type of that
//! name (`PgPool`, `MySqlPool`, `Pool<Postgres>`, deadpool's and r2d2's
//! `Pool`) and else by its name (`pool`, `self.pool`, `db_pool`); a
//! transaction (`tx`, `Transaction`), a dereferenced guard (`&mut *conn`)
//! or a connection type pins one connection and is fine.

use super::common::{call_label, connection_of, help_for, key_name, CheckCtx, Conn};
use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Severity};
use crate::pack::{Role, Scope};

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::PooledSessionLock,
    severity: Severity::Error,
    summary: "a session-scoped lock is taken through a connection pool, so its release can run on another connection and leave the lock held",
    docs: include_str!("pooled_session_lock.md"),
    precision: "high",
    tags: &["distributed-lock", "availability", "correctness"],
    help: HELP,
    run: Some(run),
};

const HELP: &str = "take one connection from the pool and run the lock, the protected work and the unlock on that connection, or use a lock scoped to a transaction, which ends with it";

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    // Acquisitions on a pool, then releases on a pool whose acquisition
    // was not reported.
    let mut reported_keys = Vec::new();
    for e in &ctx.model.events {
        let api = ctx.api(e);
        if api.scope != Some(Scope::Session) || !ctx.lock_call(e) {
            continue;
        }
        let take = matches!(e.role, Role::Acquire | Role::TryAcquire);
        if !take && e.role != Role::Release {
            continue;
        }
        let Conn::Pool(pool) = connection_of(ctx, e) else {
            continue;
        };
        let what = call_label(ctx, api, e);
        let key = e.key.as_ref().map(|k| k.norm.clone());
        let f = if take {
            reported_keys.push((e.func, key));
            let subject = match &e.key {
                Some(k) => format!("session lock {}", key_name(Some(k))),
                None => format!("`{what}` on an unnamed key"),
            };
            // `&mut *pool.acquire().await?`: checked out for one statement.
            let message = if pool.contains('(') {
                format!("{subject} is taken on a connection checked out for this statement only (`{pool}`): it goes back to the pool still holding the lock")
            } else {
                format!("{subject} is taken through the pool `{pool}`: the unlock can run on another connection and leave it held")
            };
            ctx.finding(CheckId::PooledSessionLock, e, message)
            .label(format!("`{what}` holds the lock on whichever pooled connection runs it"))
            .note("the lock belongs to the database session that took it: the pool hands that connection back after this statement, the unlock goes to another one, returns false, and the lock stays held until the pooled connection closes")
        } else {
            if reported_keys.contains(&(e.func, key)) {
                continue;
            }
            let subject = match &e.key {
                Some(k) => format!("of {}", key_name(Some(k))),
                None => "on an unnamed key".to_string(),
            };
            ctx.finding(
                CheckId::PooledSessionLock,
                e,
                format!("the unlock {subject} runs through the pool `{pool}`: it can reach a connection that does not hold the lock"),
            )
            .label(format!("`{what}` runs on whichever pooled connection is free"))
            .note("a session lock can only be released by the connection that took it: on any other connection the unlock returns false and the lock stays held")
        };
        out.push(f.help(help_for(ctx.packs, e.api, CheckId::PooledSessionLock)));
    }
}
