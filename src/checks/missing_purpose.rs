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
    for e in ctx.takes() {
        if *ctx.lookup(e) != PurposeLookup::None {
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
        f.purpose_line = Some(e.stmt_line);
        out.push(f);
    }
}
