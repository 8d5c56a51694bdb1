//! `read-then-write-acquire`: a lock taken by reading the key and then
//! writing it in a separate operation, so two clients can both win.

use super::common::{call_label, subject, with_pack_notes, CheckCtx};
use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Severity};

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::ReadThenWriteAcquire,
    severity: Severity::Error,
    summary: "a lock is taken by reading the key and then writing it in a separate operation",
    docs: include_str!("read_then_write_acquire.md"),
    precision: "high",
    tags: &["distributed-lock", "correctness", "race-condition"],
    help: HELP,
    run: Some(run),
};

const HELP: &str = "acquire in one atomic step that fails when someone else holds the lock (a create-if-absent or compare-and-set on the server), and check its reply";

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    // The locks taken by a write after a read of the same key, paired once
    // by the model (a shape that is also data access, GET or SET, only on
    // a key that names a lock, so cache-aside stays silent; a write to a
    // Kubernetes Lease whatever the Lease is called).
    for lock in &ctx.locks.locks {
        let Some(read) = lock.read_first else {
            continue;
        };
        let (write, read) = (&ctx.model.events[lock.take], &ctx.model.events[read]);
        let api = ctx.api(write);
        let finding = ctx
            .finding(
                CheckId::ReadThenWriteAcquire,
                write,
                format!(
                    "{} is taken by a read and a separate write: two clients can both see it free and both write",
                    subject(ctx, write)
                ),
            )
            .label(format!("`{}` writes the lock without checking, in this same step, that it is still free", call_label(ctx, api, write)))
            .secondary(read.span, format!("`{}` reads it here, one round trip earlier", call_label(ctx, ctx.api(read), read)));
        out.push(with_pack_notes(
            ctx,
            finding,
            CheckId::ReadThenWriteAcquire,
            write,
        ));
    }
}
