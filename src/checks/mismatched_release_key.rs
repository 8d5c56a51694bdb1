//! `mismatched-release-key`: a release whose key cannot be the key its lock
//! was taken with. The release deletes nothing, and the lock stays until it
//! expires.
//!
//! Evidence, all of it required: a function takes exactly one lock that no
//! release or delete of the function names by its own key, and then
//! releases (or deletes, on a lock-named key) a key that no acquisition of
//! the file takes. Both keys are texts or formats the model resolves
//! (`format!("lock:{id}")`, a local bound to one, a literal), and they
//! differ in their constant parts (`lock:{}` against `locks:{}`), or the
//! release builds its key around the acquisition's own key variable
//! (`format!("lock:{key}")` of a `key` that already is `lock:{id}`).
//! The pairing is the model's ([`crate::model::missed_release`]); the
//! check words it.

use super::common::{call_label, key_name, CheckCtx};
use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Severity};
use crate::model::missed_release::{prefix, OpenLocks};
use crate::pack::Role;

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::MismatchedReleaseKey,
    severity: Severity::Error,
    summary: "a release's key cannot be the key its lock was taken with, so it deletes nothing",
    docs: include_str!("mismatched_release_key.md"),
    precision: "high",
    tags: &["distributed-lock", "availability"],
    help: HELP,
    run: Some(run),
};

const HELP: &str = "release the key the lock was taken with: build it once (one variable, or one function both calls use) and pass that same value to the acquisition and the release";

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    // The model pairs each release with the lock it misses.
    let Some(open) = OpenLocks::of(ctx.model) else {
        return;
    };
    for r in &ctx.model.events {
        if r.role == Role::Delete && !r.lockish {
            continue;
        }
        let Some(missed) = open.missed_by(r) else {
            continue;
        };
        let (a, a_shape, r_shape) = (missed.lock, &missed.lock_shape, &missed.release_shape);
        let (Some(ak), Some(rk)) = (&a.key, &r.key) else {
            continue;
        };
        let what = if r.role == Role::Delete {
            "delete"
        } else {
            "release"
        };
        let message = if missed.doubled {
            let p = prefix(r_shape);
            format!(
                "this {what} adds `{p}` again to the lock's own key {}: it removes `{p}{a_shape}`, not the lock on `{a_shape}`",
                key_name(Some(ak)),
            )
        } else {
            format!(
                "this {what} of `{r_shape}` misses the lock taken on `{a_shape}`: the keys differ, so the lock stays until it expires"
            )
        };
        let mut f = ctx
            .finding(CheckId::MismatchedReleaseKey, r, message)
            .label(format!(
                "{} removes nothing: no lock is held under {}",
                match call_label(ctx, ctx.api(r), r) {
                    l if l.starts_with("the ") => l,
                    l => format!("`{l}`"),
                },
                key_name(Some(rk))
            ))
            .secondary(a.span, format!("the lock is taken on `{a_shape}` here"));
        if let Some(call) = missed.passed_at {
            f = f.secondary(call, "the lock's own key is passed in here".to_string());
        }
        let f = f
            .note("a release that misses its key leaves the lock in place until it expires: every other worker waits out the whole TTL, and a lock without expiry is held by a ghost for good")
            .help(HELP);
        out.push(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::missed_release::MAX_PAIRED;

    /// A file with more acquisitions and releases than the model pairs is
    /// not judged; one within the bound is, one finding a function.
    #[test]
    fn a_file_of_thousands_of_locks_is_not_paired() {
        use crate::config::Settings;
        use crate::engine::Engine;
        use crate::pack::PackSet;
        let file = |n: usize| -> String {
            (0..n)
                .map(|i| {
                    format!(
                        "fn settle_{i}(con: &mut redis::Connection, id: u64) {{\n    \
                         let won: bool = redis::Commands::set_nx(con, format!(\"lock:s{i}:{{id}}\"), 1).unwrap();\n    \
                         if won {{ let _: () = redis::Commands::del(con, format!(\"locks:s{i}:{{id}}\")).unwrap(); }}\n}}\n"
                    )
                })
                .collect()
        };
        let packs = PackSet::builtin();
        let settings = Settings::default();
        let only = [CheckId::MismatchedReleaseKey];
        let engine = Engine::new(&packs, &settings).only(&only);
        let within = MAX_PAIRED / 2;
        let out = engine.check_bytes("t.rs", file(within).as_bytes(), false);
        assert_eq!(out.findings.len(), within);
        let out = engine.check_bytes("t.rs", file(within + 1).as_bytes(), false);
        assert!(out.findings.is_empty());
    }
}
