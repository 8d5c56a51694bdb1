//! `--format short`: `path:line:col: severity[check]: message`, one line per finding.

use super::{summary_line, Options, Summary};
use crate::finding::Finding;

pub fn render(findings: &[Finding], summary: &Summary, opts: &Options) -> String {
    let mut out = String::new();
    for f in findings.iter().filter(|f| f.suppressed.is_none()) {
        out.push_str(&line(f));
    }
    if !opts.quiet {
        out.push_str(&summary_line(summary));
        out.push('\n');
    }
    out
}

/// One finding as `path:line:col: severity[check]: message` and a newline.
pub fn line(f: &Finding) -> String {
    format!(
        "{}:{}:{}: {}[{}]: {}\n",
        crate::escape::text(&f.path),
        f.span.start.line,
        f.span.start.column,
        f.severity.as_str(),
        f.check.as_str(),
        crate::escape::text(&f.message)
    )
}
