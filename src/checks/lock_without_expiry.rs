//! `lock-without-expiry`: an acquisition that sets no TTL or lease, so a
//! dead holder blocks everyone forever.

use super::common::{call_label, subject, with_pack_notes, CheckCtx};
use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Severity};
use crate::model::locks::Locks;
use crate::model::ExpiryState;

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::LockWithoutExpiry,
    severity: Severity::Error,
    summary: "an acquisition sets no TTL or lease, so a dead holder blocks everyone forever",
    docs: include_str!("lock_without_expiry.md"),
    precision: "high",
    tags: &["distributed-lock", "availability"],
    help: HELP,
    run: Some(run),
};

const HELP: &str = "give the lock a time to live in the same call that takes it (a TTL or a lease the holder keeps renewing), so that a dead holder's lock runs out";

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    for e in ctx.takes() {
        if e.expiry != ExpiryState::Missing || !ctx.lock_call(e) {
            continue;
        }
        let api = ctx.api(e);
        let mut f = ctx
            .finding(
                CheckId::LockWithoutExpiry,
                e,
                match &e.key {
                    Some(_) => format!("{} is acquired without an expiry", subject(ctx, e)),
                    None => format!("{} takes a lock without an expiry", subject(ctx, e)),
                },
            )
            .label(format!("`{}` sets no TTL", call_label(ctx, api, e)));
        // A separate EXPIRE on the same key after the acquisition.
        let later_expire = Locks::later_renewal(ctx.model, e);
        match later_expire {
            Some(x) if x.chain_span == e.chain_span => {
                f = f
                    .secondary(x.span, "the expiry is a separate command in the same pipeline")
                    .note("the pipeline runs the expiry even when the acquisition failed: it resets the current holder's TTL");
            }
            Some(x) => {
                f = f
                    .secondary(x.span, "the expiry is set in a separate round trip")
                    .note("a crash between the two commands leaves the lock held forever");
            }
            None => {
                f = f.note("if the holder dies, nothing ever releases this lock: every other client waits forever");
            }
        }
        out.push(with_pack_notes(ctx, f, CheckId::LockWithoutExpiry, e));
    }
}
