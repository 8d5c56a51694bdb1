//! `missing-purpose`: an acquisition without a `lock-purpose:` annotation.

use super::common::{call_label, key_name, CheckCtx};
use super::{CheckId, CheckInfo};
use crate::directives::PurposeLookup;
use crate::finding::{Finding, Severity};

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::MissingPurpose,
    severity: Severity::Error,
    summary: "an acquisition has no `lock-purpose:` annotation",
    docs: include_str!("missing_purpose.md"),
    precision: "very-high",
    tags: &["distributed-lock", "documentation"],
    help: HELP,
    run: Some(run),
};

const HELP: &str = "say why the lock exists, above this statement: `// lock-purpose: efficiency — <what duplicate work it avoids>` or `// lock-purpose: correctness — <what must happen once>`";

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    for e in ctx.acquisitions().filter(|e| ctx.lock_call(e)) {
        if *ctx.lookup(e) != PurposeLookup::None {
            continue;
        }
        // Inside a wrapper: an annotation at every call site that reaches
        // it (or above the callers' `fn`s) states the purpose.
        let uncovered = e
            .reached
            .as_ref()
            .map(|r| (r.uncovered.clone(), r.sites.len()));
        if uncovered.as_ref().is_some_and(|(u, _)| u.is_empty()) {
            continue;
        }
        let api = ctx.api(e);
        let mut f = ctx
            .finding(
                CheckId::MissingPurpose,
                e,
                match &e.key {
                    Some(k) => format!(
                        "lock acquisition of {} has no `lock-purpose:` annotation",
                        key_name(Some(k))
                    ),
                    None => format!(
                        "lock acquisition `{}` on an unnamed key has no `lock-purpose:` annotation",
                        call_label(ctx, api, e)
                    ),
                },
            )
            .label(format!(
                "`{}` takes a {} lock here",
                call_label(ctx, api, e),
                e.backend
            ))
            .help(HELP);
        // The annotation goes above the statement the finding is on.
        f.purpose_line = Some(
            e.built_in
                .as_ref()
                .filter(|b| b.fn_line > 0)
                .map_or(e.stmt_line, |b| b.stmt_line),
        );
        if let Some((uncovered, all)) = uncovered {
            // Name only the call sites whose chain states no purpose.
            f.notes.clear();
            f = super::common::reached_from(f, e, &uncovered, "no annotation on the way from");
            if uncovered.len() < all {
                f = f.note(format!(
                    "the other {} call sites that reach it are annotated",
                    all - uncovered.len()
                ));
            }
            f = f.note("an annotation on this statement or above this `fn` covers every call that reaches it; one at a call site covers that call");
        }
        out.push(f);
    }
}
