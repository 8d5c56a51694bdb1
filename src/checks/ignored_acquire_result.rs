//! `ignored-acquire-result`: the code discards whether the acquire
//! succeeded and proceeds as if it held the lock.

use super::common::{call_name, key_name, CheckCtx};
use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Severity};
use crate::model::ResultUse;
use crate::pack::ResultKind;

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::IgnoredAcquireResult,
    severity: Severity::Error,
    summary: "the code discards whether the acquire succeeded and proceeds as if it held the lock",
    docs: include_str!("ignored_acquire_result.md"),
    precision: "high",
    tags: &["distributed-lock", "correctness"],
    run: Some(run),
};

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    for e in ctx.takes() {
        let api = ctx.api(e);
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
        let what = if flag {
            "whether it won the lock"
        } else {
            "whether the acquire failed"
        };
        out.push(
            ctx.finding(
                CheckId::IgnoredAcquireResult,
                e,
                format!(
                    "{how}, so the code cannot know {what} on {}",
                    key_name(e.key.as_ref())
                ),
            )
            .label(format!("`{}` reports whether the lock was taken", call_name(api, e)))
            .note("when another client holds the lock, this code carries on as if it held it: two holders")
            .help(format!(
                "bind the reply and stop when the lock was not won, e.g. `let won: bool = con.set_nx(..)?; if !won {{ return Ok(()) }}`{}",
                if flag { "" } else { "; propagate the error with `?`" }
            )),
        );
    }
}
