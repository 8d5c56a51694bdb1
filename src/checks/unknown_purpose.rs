//! `unknown-purpose`: a `lock-purpose:` annotation that is malformed, or two
//! different purposes for one acquisition.

use std::collections::BTreeSet;

use super::common::CheckCtx;
use super::{CheckId, CheckInfo};
use crate::directives::{AnnotationValue, PurposeLookup};
use crate::finding::{Finding, Severity};
use crate::source::Span;

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::UnknownPurpose,
    severity: Severity::Error,
    summary: "a `lock-purpose:` annotation is malformed or contradictory",
    docs: include_str!("unknown_purpose.md"),
    precision: "very-high",
    tags: &["distributed-lock", "documentation"],
    help: "write `lock-purpose: efficiency` or `lock-purpose: correctness`, once per acquisition",
    run: Some(run),
};

fn annotation_span(ctx: &CheckCtx, i: usize) -> Span {
    let a = &ctx.directives.annotations[i];
    Span {
        start: ctx.src.pos_of_offset(a.start),
        end: ctx.src.pos_of_offset(a.end),
    }
}

fn suggestion(word: &str) -> Option<&'static str> {
    let w = word.to_ascii_lowercase();
    ["efficiency", "correctness"]
        .into_iter()
        .find(|p| !w.is_empty() && (edit_distance(&w, p) <= 3 || p.starts_with(&w)))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    // Every malformed annotation, attached to an acquisition or not.
    for (i, a) in ctx.directives.annotations.iter().enumerate() {
        let AnnotationValue::Malformed(word) = &a.value else {
            continue;
        };
        let message = if word.is_empty() {
            "`lock-purpose:` is not followed by a purpose".to_string()
        } else {
            format!("unknown lock purpose `{word}`")
        };
        let help = match suggestion(word) {
            Some(p) => format!("did you mean `lock-purpose: {p}`? The purpose is `efficiency` or `correctness`"),
            None => "write `lock-purpose: efficiency` (duplicate work is only wasteful) or `lock-purpose: correctness` (it must happen once)".to_string(),
        };
        let item = ctx
            .model
            .fns
            .iter()
            .find(|f| f.span.start.line <= a.line && a.line <= f.span.end.line)
            .map(|f| f.qualified.clone())
            .unwrap_or_default();
        out.push(
            Finding::new(CheckId::UnknownPurpose, annotation_span(ctx, i), message)
                .label("not a purpose lockaudit knows")
                .help(help)
                .item(&item),
        );
    }
    // Two different purposes for one acquisition.
    let mut reported = BTreeSet::new();
    for e in ctx.acquisitions() {
        let PurposeLookup::Contradictory { first, second } = ctx.lookup(e) else {
            continue;
        };
        if !reported.insert((*first, *second, e.id)) {
            continue;
        }
        out.push(
            ctx.finding(
                CheckId::UnknownPurpose,
                e,
                "this acquisition is annotated with two different purposes",
            )
            .label("which purpose holds for this lock?")
            .secondary(annotation_span(ctx, *first), "one purpose here")
            .secondary(annotation_span(ctx, *second), "a different purpose here")
            .help("keep one annotation: a lock is either for efficiency or for correctness, and each is held to a different mechanism"),
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn suggests_the_near_purpose() {
        assert_eq!(super::suggestion("corectness"), Some("correctness"));
        assert_eq!(super::suggestion("eff"), Some("efficiency"));
        assert_eq!(super::suggestion("speed"), None);
    }
}
