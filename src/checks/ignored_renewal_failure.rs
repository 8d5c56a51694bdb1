//! `ignored-renewal-failure`: a renewal whose result is discarded or whose
//! error is swallowed, so the holder keeps working after losing the lock.

use super::common::{call_label, completes_missing_expiry, help_for, CheckCtx};
use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Severity};
use crate::model::ResultUse;
use crate::pack::{ResultKind, Role};

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::IgnoredRenewalFailure,
    severity: Severity::Warning,
    summary: "a renewal's result is discarded or its error swallowed, so a holder that lost the lock keeps working",
    docs: include_str!("ignored_renewal_failure.md"),
    precision: "high",
    tags: &["distributed-lock", "correctness"],
    help: HELP,
    run: Some(run),
};

const HELP: &str = "check the renewal and stop the protected work when it fails (cancel the task, return an error), then re-acquire before resuming";

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    for e in &ctx.model.events {
        if e.role != Role::Renew || !ctx.outcome_here(e) {
            continue;
        }
        let api = ctx.api(e);
        if matches!(api.result, Some(ResultKind::Unit | ResultKind::Closure))
            || completes_missing_expiry(ctx, e)
        {
            continue;
        }
        let flag = api.result == Some(ResultKind::SuccessFlag);
        let how = match &e.result {
            ResultUse::Discarded { how, propagated } if flag || !propagated => how.clone(),
            ResultUse::Propagated if flag => {
                "the reply is dropped (`?` only checks for an error)".to_string()
            }
            ResultUse::Swallowed { how } => how.clone(),
            ResultUse::IfLetNoElse => {
                "`if let` without an `else` carries on when it fails".to_string()
            }
            _ => continue,
        };
        out.push(
            ctx.finding(
                CheckId::IgnoredRenewalFailure,
                e,
                format!("{how}, so a holder whose renewal failed keeps working without the lock"),
            )
            .label(format!("`{}` renews the lease here", call_label(ctx, api, e)))
            .note("a failed renewal means the lease may expire and another client may take the lock while this one still acts")
            .help(help_for(ctx.packs, e.api, CheckId::IgnoredRenewalFailure)),
        );
    }
}
