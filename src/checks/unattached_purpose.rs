//! `unattached-purpose`: a `lock-purpose:` annotation that covers no
//! acquisition lockaudit can see.

use std::collections::BTreeSet;

use super::common::CheckCtx;
use super::{CheckId, CheckInfo};
use crate::directives::{AnnotationValue, PurposeLookup};
use crate::finding::{Finding, Severity};
use crate::source::Span;

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::UnattachedPurpose,
    severity: Severity::Warning,
    summary: "a `lock-purpose:` annotation covers no lock acquisition lockaudit can see",
    docs: include_str!("unattached_purpose.md"),
    precision: "high",
    tags: &["distributed-lock", "documentation"],
    help: HELP,
    run: Some(run),
};

const HELP: &str = "if the code below takes a lock through your own wrapper or a client lockaudit does not know, describe that call in a rule pack (the book's \"Writing a rule pack\" page, docs/src/writing-packs.md in the lockaudit repository); otherwise keep the annotation directly above the statement that takes the lock, or delete it";

/// The first line of code after the annotation's comment block, as a hint
/// of what the annotation sits on.
fn code_below(ctx: &CheckCtx, line: usize) -> Option<String> {
    let text = &ctx.src.text;
    text.lines()
        .skip(line)
        .map(str::trim)
        .find(|l| {
            !l.is_empty() && !l.starts_with("//") && !l.starts_with("#[") && !l.starts_with('*')
        })
        .map(|l| {
            let l: String = l.chars().filter(|c| !c.is_control()).collect();
            if l.chars().count() > 60 {
                format!("{}…", l.chars().take(57).collect::<String>())
            } else {
                l
            }
        })
}

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    let mut attached = BTreeSet::new();
    for lock in &ctx.locks.locks {
        match &lock.lookup {
            PurposeLookup::Found { annotation, .. }
            | PurposeLookup::Malformed { annotation, .. } => {
                attached.insert(*annotation);
            }
            PurposeLookup::Contradictory { first, second } => {
                attached.insert(*first);
                attached.insert(*second);
            }
            PurposeLookup::None | PurposeLookup::Inherited { .. } => {}
        }
    }
    for (i, a) in ctx.directives.annotations.iter().enumerate() {
        // A malformed annotation is `unknown-purpose`'s.
        if attached.contains(&i) || !matches!(a.value, AnnotationValue::Purpose(_)) {
            continue;
        }
        let span = Span {
            start: ctx.src.pos_of_offset(a.start),
            end: ctx.src.pos_of_offset(a.end),
        };
        let item = ctx
            .model
            .fns
            .iter()
            .find(|f| f.span.start.line <= a.line && a.line <= f.span.end.line)
            .map(|f| f.qualified.clone())
            .unwrap_or_default();
        let mut f = Finding::new(
            CheckId::UnattachedPurpose,
            span,
            "this `lock-purpose:` annotation covers no lock acquisition",
        )
        .label("no acquisition lockaudit can see is annotated by this")
        .help(HELP)
        .item(&item);
        if let Some(code) = code_below(ctx, a.end_line) {
            f = f.note(format!(
                "the code below it is `{code}`: if that takes a lock, lockaudit does not know its API"
            ));
        }
        out.push(f);
    }
}
