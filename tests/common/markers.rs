//! The `//~` markers, as the suites compare them: parsing and pairing are
//! the library's ([`lockaudit::markers`], the code `test-pack` runs); this
//! only shows a mismatch with the source lines it points at.

use lockaudit::checks::CheckId;
use lockaudit::markers::{self as lib, Found};
#[allow(unused_imports)]
pub use lockaudit::markers::{parse, Expect as Marker};

/// One reported finding, as the comparison needs it: from the library's
/// findings or read back from a JSON report.
#[derive(Debug, Clone)]
pub struct Reported {
    pub line: usize,
    pub column: usize,
    pub check: CheckId,
    pub message: String,
    /// How a problem names it (`line:col: severity[check]: message`).
    pub describe: String,
}

impl Reported {
    pub fn of(f: &lockaudit::finding::Finding) -> Reported {
        Reported {
            line: f.span.start.line,
            column: f.span.start.column,
            check: f.check,
            message: f.message.clone(),
            describe: describe(f),
        }
    }
}

impl Found for Reported {
    fn at(&self) -> (usize, usize) {
        (self.line, self.column)
    }
    fn check(&self) -> CheckId {
        self.check
    }
    fn message(&self) -> &str {
        &self.message
    }
}

/// `line:col: severity[check]: message`.
pub fn describe(f: &lockaudit::finding::Finding) -> String {
    format!(
        "{}:{}: {}[{}]: {}",
        f.span.start.line,
        f.span.start.column,
        f.severity.as_str(),
        f.check.as_str(),
        f.message
    )
}

/// Every marker without its finding and every finding without its marker,
/// each with the source line it points at; empty when they agree.
pub fn compare(text: &str, expected: &[Marker], reported: &[Reported]) -> Vec<String> {
    let source_line = |n: usize| text.lines().nth(n.saturating_sub(1)).unwrap_or("").trim();
    let m = lib::compare(expected, reported);
    let mut problems = Vec::new();
    for e in &m.missing {
        problems.push(format!(
            "  expected but not found: line {}{}: {}{}\n      | {}",
            e.line,
            e.column.map(|c| format!(":{c}")).unwrap_or_default(),
            e.check.as_str(),
            e.text
                .as_ref()
                .map(|t| format!(" \"{t}\""))
                .unwrap_or_default(),
            source_line(e.line)
        ));
    }
    for f in &m.extra {
        problems.push(format!(
            "  found but not marked: {}\n      | {}",
            f.describe,
            source_line(f.line)
        ));
    }
    problems
}
