//! `parse-error`: a file that could not be parsed (or read as UTF-8 text),
//! and so was not audited. The engine emits it; this file holds its
//! metadata and the one place its message is written.

use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Severity};
use crate::source::Span;

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::ParseError,
    severity: Severity::Error,
    summary: "a file could not be parsed, so it was not audited",
    docs: include_str!("parse_error.md"),
    precision: "very-high",
    tags: &["tooling"],
    help: "fix the syntax, or exclude the file (`exclude:` in lockaudit.yaml or `--exclude`) if it is not Rust source",
    run: None,
};

pub fn finding(span: Span, reason: &str) -> Finding {
    let reason = reason.trim_end_matches('.');
    let reason = {
        let mut c = reason.chars();
        match c.next() {
            Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
            None => String::new(),
        }
    };
    Finding::new(
        CheckId::ParseError,
        span,
        format!("file was not audited: {reason}"),
    )
    .label("the parser stopped here")
    .help("fix the syntax, or exclude the file (`exclude:` in lockaudit.yaml or `--exclude`) if it is not Rust source")
}

/// A file over the size limit: not read, reported as a note so that it is
/// never silently missing from the audit.
pub fn too_large(size: u64, limit: u64) -> Finding {
    let mut f = Finding::new(
        CheckId::ParseError,
        Span::default_at_start(),
        format!("file was not audited: larger than {limit} bytes ({size} bytes)"),
    )
    .help("raise `max-file-size` in lockaudit.yaml to audit it, or exclude it if it is generated");
    f.severity = Severity::Note;
    f
}
