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
            })
            .collect(),
        summary,
    };
    let mut s = serde_json::to_string_pretty(&report).expect("findings serialize");
    s.push('\n');
    s
}
