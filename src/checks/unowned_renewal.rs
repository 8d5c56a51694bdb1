//! `unowned-renewal`: a renewal that extends the lock without verifying,
//! atomically, that the caller still owns it.

use super::common::{
    call_label, completes_missing_expiry, constant_owner_finding, subject, with_pack_notes,
    CheckCtx,
};
use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Severity};
use crate::pack::Role;

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::UnownedRenewal,
    severity: Severity::Error,
    summary:
        "a renewal extends the lock without verifying, atomically, that the caller still owns it",
    docs: include_str!("unowned_renewal.md"),
    precision: "high",
    tags: &["distributed-lock", "correctness"],
    help: HELP,
    run: Some(run),
};

const HELP: &str = "extend in one step that succeeds only while the caller still holds the lock: compare the owner token (or the version read at acquisition) inside the extend itself, or use the client library's owner-checked extend";

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    for e in &ctx.model.events {
        if e.role != Role::Renew {
            continue;
        }
        // A call of a wrapper: only the constant owner value it gives the
        // wrapper is this call's own defect.
        if !ctx.lock_call(e) && !e.owner_at_call {
            continue;
        }
        let api = ctx.api(e);
        if let Some(f) = constant_owner_finding(
            ctx,
            e,
            CheckId::UnownedRenewal,
            ("extended after comparing its value with", "renewal", "extends"),
            "after a pause past the lease, another client holds the lock under the same value: this renewal keeps *its* lock alive while this holder still believes it owns it",
        ) {
            out.push(f);
            continue;
        }
        if !ctx.lock_call(e) || api.owner_checked != Some(false) {
            continue;
        }
        // A shape that also extends data (PEXPIRE on any key) counts on a
        // lock's key or beside its acquisition; a Lease renewal is one
        // wherever it is.
        if api.needs_lock_name && !e.lockish && ctx.acquisition_for(e).is_none() {
            continue;
        }
        // `SETNX` then `EXPIRE` in one function is a missing expiry, which
        // `lock-without-expiry` reports; an expiry set right after the
        // acquisition is not a renewal.
        if completes_missing_expiry(ctx, e) {
            continue;
        }
        let mut f = ctx
            .finding(
                CheckId::UnownedRenewal,
                e,
                match &e.key {
                    Some(_) => format!("{} is extended without checking that this caller still owns it", subject(ctx, e)),
                    None => format!("{} extends a lock without checking that this caller still owns it", subject(ctx, e)),
                },
            )
            .label(format!(
                "`{}` extends whoever holds the lock now",
                call_label(ctx, api, e)
            ))
            .note("after a pause past the lease, another client holds the lock: this renewal keeps *its* lock alive while this holder still believes it owns it");
        if let Some(a) = ctx.acquisition_for(e) {
            f = f.secondary(a.span, "acquired here");
        }
        out.push(with_pack_notes(ctx, f, CheckId::UnownedRenewal, e));
    }
    overwrites(ctx, out);
}

/// A plain write of a lock's own key after it was taken (a heartbeat that
/// rewrites a ZooKeeper node, a second Lease patch), with no read of the
/// key before it in its function (that is `read-then-write-acquire`): it
/// rewrites the lock record whoever holds it now.
fn overwrites(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    for e in &ctx.model.events {
        if e.role != Role::Write || !ctx.lock_call(e) {
            continue;
        }
        let Some(key) = &e.key else { continue };
        let Some(a) = ctx.acquisition_for(e) else {
            continue;
        };
        if a.key.as_ref().is_none_or(|k| k.norm != key.norm) {
            continue;
        }
        if ctx.read_before(e).is_some() {
            continue;
        }
        let api = ctx.api(e);
        let f = ctx
            .finding(
                CheckId::UnownedRenewal,
                e,
                format!(
                    "{} is written again without checking that this caller still owns it",
                    subject(ctx, e)
                ),
            )
            .label(format!(
                "`{}` rewrites the lock record whoever holds it now",
                call_label(ctx, api, e)
            ))
            .secondary(a.span, "acquired here")
            .note("after a pause past the lease, another client holds the lock: this write takes it back from them, or keeps their lock alive, while this holder still believes it owns it");
        out.push(with_pack_notes(ctx, f, CheckId::UnownedRenewal, e));
    }
}
