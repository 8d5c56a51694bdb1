//! `ignored-acquire-result`: the code discards whether the acquire
//! succeeded and proceeds as if it held the lock.

use super::common::{
    call_label, connection_of, key_name, subject, with_pack_notes, CheckCtx, Conn,
};
use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Severity};
use crate::model::event::DROPPED_BY_STATEMENT;
use crate::model::ResultUse;
use crate::pack::{ResultKind, Scope};
use crate::source::Span;

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::IgnoredAcquireResult,
    severity: Severity::Error,
    summary: "the code discards whether the acquire succeeded and proceeds as if it held the lock",
    docs: include_str!("ignored_acquire_result.md"),
    precision: "high",
    tags: &["distributed-lock", "correctness"],
    help: HELP,
    run: Some(run),
};

const HELP: &str = "bind the result and stop when the lock was not won (an empty or false reply, `None`, `Err`); `?` alone only catches a failed call";

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    for e in ctx.takes().filter(|e| ctx.outcome_here(e)) {
        let api = ctx.api(e);
        if api.scope == Some(Scope::Transaction) {
            if let Conn::Pool(pool) = connection_of(ctx, e) {
                out.push(ends_at_once(ctx, e, &pool));
                continue;
            }
        }
        let flag = api.result == Some(ResultKind::SuccessFlag);
        if matches!(api.result, Some(ResultKind::Unit | ResultKind::Closure)) {
            continue;
        }
        let how = match &e.result {
            ResultUse::Discarded { how, propagated } if flag || !propagated => how.clone(),
            ResultUse::Propagated if flag => {
                "the reply is dropped (`?` only checks for an error)".to_string()
            }
            ResultUse::Swallowed { how } => how.clone(),
            _ => continue,
        };
        let what = match (&e.key, flag) {
            (Some(_), true) => format!("whether it won {}", subject(ctx, e)),
            (Some(_), false) => format!("whether taking {} failed", subject(ctx, e)),
            (None, true) => format!("whether {} won", subject(ctx, e)),
            (None, false) => format!("whether {} failed", subject(ctx, e)),
        };
        let taken = format!(
            "`{}` reports whether the lock was taken",
            call_label(ctx, api, e)
        );
        let mut f = ctx.finding(
            CheckId::IgnoredAcquireResult,
            e,
            format!("{how}, so the code cannot know {what}"),
        );
        // A statement that goes on past the call (a pipeline run on a
        // later line) drops the reply where it ends: point there. A
        // `let _ =` or a discarding method is reported at the call.
        let dropped = match &e.result {
            ResultUse::Propagated => true,
            ResultUse::Discarded { how, .. } => how == DROPPED_BY_STATEMENT,
            _ => false,
        };
        if dropped && e.chain_span.end.line > e.span.end.line {
            f.span = last_line_of(ctx, e.chain_span);
            f = f
                .label("the reply is dropped here")
                .secondary(e.span, taken);
        } else {
            f = f.label(taken);
        }
        let f = f.note("when another client holds the lock, this code carries on as if it held it: two holders");
        out.push(with_pack_notes(ctx, f, CheckId::IgnoredAcquireResult, e));
    }
}

/// A transaction-scoped lock run on a pool: the statement is its own
/// transaction, so the lock is released as soon as it is granted.
/// The part of `span` on its last line, from the line's first non-blank
/// character: `.query(con)?` of a chain written over several lines.
fn last_line_of(ctx: &CheckCtx, span: Span) -> Span {
    let line = span.end.line;
    let text = ctx.src.line_text(line);
    let indent = text.chars().take_while(|c| c.is_whitespace()).count();
    Span {
        start: ctx.src.pos_of_line_col(line, indent),
        end: span.end,
    }
}

fn ends_at_once(ctx: &CheckCtx, e: &crate::model::Event, pool: &str) -> Finding {
    let api = ctx.api(e);
    let what = call_label(ctx, api, e);
    let on = match &e.key {
        Some(k) => format!("on {}", key_name(Some(k))),
        None => "on an unnamed key".to_string(),
    };
    ctx.finding(
        CheckId::IgnoredAcquireResult,
        e,
        format!("`{what}` {on} runs outside a transaction, on the pool `{pool}`: the lock ends with its own statement, so this lock protects nothing"),
    )
    .label(format!("`{what}` is released when this statement commits"))
    .note("a transaction-scoped lock lasts until the end of its transaction; on a pool, every statement is a transaction of its own")
    .help("take the lock inside the transaction that does the protected work (`let mut tx = pool.begin().await?;` then `.execute(&mut *tx)` for the lock and every write, then `tx.commit()`), or use a session lock on one connection checked out of the pool")
}
