//! `unused-suppression`: a `lockaudit: allow(...)` comment that silences
//! nothing, or names a check that does not exist. The engine calls
//! [`findings`] after every other check has run.

use super::{CheckId, CheckInfo};
use crate::directives::Suppression;
use crate::finding::{Finding, Severity};
use crate::source::{SourceFile, Span};

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::UnusedSuppression,
    severity: Severity::Warning,
    summary: "a `lockaudit: allow(...)` comment suppresses nothing",
    docs: include_str!("unused_suppression.md"),
    precision: "very-high",
    tags: &["tooling"],
    help: "remove the stale suppression: it would silently hide the next real finding here",
    run: None,
};

/// `used[i][j]`: id `j` of suppression `i` silenced a finding;
/// `above_fn[i]`: suppression `i` covers the function below it. `enabled`
/// says whether a check ran at all (a suppression for a disabled check is
/// not stale, just idle).
pub fn findings(
    src: &SourceFile,
    suppressions: &[Suppression],
    used: &[Vec<bool>],
    above_fn: &[bool],
    enabled: &dyn Fn(CheckId) -> bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, s) in suppressions.iter().enumerate() {
        let span = Span {
            start: src.pos_of_offset(s.start),
            end: src.pos_of_offset(s.end),
        };
        let directive = if s.file_level { "allow-file" } else { "allow" };
        if s.ids.is_empty() {
            out.push(
                Finding::new(
                    CheckId::UnusedSuppression,
                    span,
                    format!("`lockaudit: {directive}()` names no check"),
                )
                .label("suppresses nothing")
                .help(
                    "name the check ids to silence: `lockaudit: allow(unowned-release) <reason>`",
                ),
            );
            continue;
        }
        for (j, id) in s.ids.iter().enumerate() {
            match CheckId::parse(id) {
                None => out.push(
                    Finding::new(
                        CheckId::UnusedSuppression,
                        span,
                        format!("`lockaudit: {directive}({id})` names an unknown check"),
                    )
                    .label("no check has this id")
                    .help(crate::checks::unknown_id_help(id)),
                ),
                Some(check) if enabled(check) && !used[i][j] => out.push(
                    Finding::new(
                        CheckId::UnusedSuppression,
                        span,
                        format!("`lockaudit: {directive}({id})` suppresses nothing"),
                    )
                    .label(if s.file_level {
                        "no finding of this check in the file"
                    } else if above_fn.get(i).copied().unwrap_or(false) {
                        "no finding of this check in the function below"
                    } else {
                        "no finding of this check on this line or the next"
                    })
                    .help("remove the stale suppression: it would silently hide the next real finding here"),
                ),
                Some(_) => {}
            }
        }
    }
    out
}
