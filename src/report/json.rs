//! `--format json`: exactly the SPEC fields, sorted, stable bytes.

use serde::Serialize;

use super::Summary;
use crate::finding::Finding;

#[derive(Serialize)]
struct Report<'a> {
    version: &'static str,
    findings: Vec<JsonFinding<'a>>,
    summary: &'a Summary,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    check: &'static str,
    severity: &'static str,
    path: &'a str,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    message: &'a str,
    backend: Option<&'a str>,
    purpose: Option<&'static str>,
    fingerprint: &'a str,
    suppressed: bool,
    /// Only when there is an exact fix.
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<JsonFix<'a>>,
    /// Only at a lock call inside a wrapper: the call sites that reach it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related: Vec<JsonPlace<'a>>,
}

/// A place elsewhere a finding is about.
#[derive(Serialize)]
struct JsonPlace<'a> {
    path: &'a str,
    line: usize,
    column: usize,
    message: &'a str,
}

#[derive(Serialize)]
struct JsonFix<'a> {
    description: &'a str,
    edits: Vec<JsonEdit<'a>>,
}

/// Positions as in findings: 1-based lines and character columns, the end
/// exclusive; an insertion has `end == start`.
#[derive(Serialize)]
struct JsonEdit<'a> {
    path: &'a str,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    replacement: &'a str,
}

fn fix<'a>(f: &'a Finding) -> Option<JsonFix<'a>> {
    let fix = f.fix.as_ref()?;
    Some(JsonFix {
        description: &fix.description,
        edits: fix
            .edits
            .iter()
            .map(|e| JsonEdit {
                path: &f.path,
                line: e.span.start.line,
                column: e.span.start.column,
                end_line: e.span.end.line,
                end_column: e.span.end.column,
                replacement: &e.replacement,
            })
            .collect(),
    })
}

pub fn render(findings: &[Finding], summary: &Summary) -> String {
    let report = Report {
        version: env!("CARGO_PKG_VERSION"),
        findings: findings
            .iter()
            .map(|f| JsonFinding {
                check: f.check.as_str(),
                severity: f.severity.as_str(),
                path: &f.path,
                line: f.span.start.line,
                column: f.span.start.column,
                end_line: f.span.end.line,
                end_column: f.span.end.column,
                message: &f.message,
                backend: f.backend.as_deref(),
                purpose: f.purpose.map(|p| p.as_str()),
                fingerprint: &f.fingerprint,
                suppressed: f.suppressed.is_some(),
                fix: fix(f),
                related: f
                    .related
                    .iter()
                    .map(|r| JsonPlace {
                        path: &r.path,
                        line: r.span.start.line,
                        column: r.span.start.column,
                        message: &r.message,
                    })
                    .collect(),
            })
            .collect(),
        summary,
    };
    let mut s = serde_json::to_string_pretty(&report).expect("findings serialize");
    s.push('\n');
    s
}
