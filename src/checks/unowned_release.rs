//! `unowned-release`: a release that deletes the lock without verifying,
//! atomically, that the caller still owns it.

use super::common::{call_label, constant_owner_finding, subject, with_pack_notes, CheckCtx};
use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Severity};
use crate::model::locks::Locks;
use crate::pack::Role;

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::UnownedRelease,
    severity: Severity::Error,
    summary:
        "a release deletes the lock without verifying, atomically, that the caller still owns it",
    docs: include_str!("unowned_release.md"),
    precision: "high",
    tags: &["distributed-lock", "correctness"],
    help: HELP,
    run: Some(run),
};

const HELP: &str = "release in one step that deletes the lock only if the caller still holds it: compare the owner token (or the version read at acquisition) inside the delete itself, or use the client library's owner-checked release";

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    for e in &ctx.model.events {
        if !matches!(e.role, Role::Release | Role::Delete) {
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
            CheckId::UnownedRelease,
            ("released by comparing its value with", "release", "deletes"),
            "an owner check is only as good as the value it compares: after a pause past the lease, another client holds the lock under the same value, and this release removes its lock",
        ) {
            out.push(f);
            continue;
        }
        if !ctx.lock_call(e) || api.owner_checked != Some(false) {
            continue;
        }
        // A plain DEL is only a release when it deletes a lock.
        if e.role == Role::Delete && !e.lockish && ctx.acquisition_for(e).is_none() {
            continue;
        }
        if Locks::owned_key(ctx.model, ctx.packs, e) {
            continue;
        }
        let lock = subject(ctx, e);
        let read = Locks::owner_read(ctx.model, e);
        let message = match (read, &e.key) {
            (Some(_), _) => format!(
                "{lock} is released by a read-compare and a separate delete: it can change hands between them"
            ),
            (None, Some(_)) => format!("{lock} is deleted without checking that this caller still owns it"),
            (None, None) => format!("{lock} deletes a lock without checking that this caller still owns it"),
        };
        let mut f = ctx
            .finding(CheckId::UnownedRelease, e, message)
            .label(format!(
                "`{}` deletes whoever holds the lock now",
                call_label(ctx, api, e)
            ));
        if let Some(r) = read {
            f = f.secondary(
                r.span,
                "the owner is checked here, one round trip before the delete",
            );
        }
        if let Some(a) = ctx.acquisition_for(e) {
            f = f.secondary(a.span, "the lock this release belongs to is acquired here");
        }
        if ctx.model.fns[e.func].in_drop {
            f = f.note("this runs in `Drop`: on every drop, also long after the lease expired and another client took the lock");
        }
        f = f.note("if the lease expired while this holder worked, another client holds the lock now, and this release removes its lock");
        out.push(with_pack_notes(ctx, f, CheckId::UnownedRelease, e));
    }
}
