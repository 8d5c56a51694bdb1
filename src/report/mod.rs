//! Reporters: pure functions of (findings, summary, options) → bytes, one
//! file per format. Findings arrive sorted by path, line, column, check.

mod github;
mod human;
mod json;
pub mod sarif;
mod short;
mod table;
pub use table::table as table_for;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::finding::Finding;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Short,
    Table,
    Json,
    Sarif,
    Github,
}

/// Counts for the end of a report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub files: usize,
    pub parsed: usize,
    pub findings: usize,
    pub suppressed: usize,
    pub baselined: usize,
    pub stale_baseline: usize,
    pub by_severity: BTreeMap<String, usize>,
    pub by_check: BTreeMap<String, usize>,
}

impl Summary {
    pub fn new(files: usize, parsed: usize, findings: &[Finding]) -> Summary {
        let mut s = Summary {
            files,
            parsed,
            ..Summary::default()
        };
        for f in findings {
            if f.suppressed.is_some() {
                s.suppressed += 1;
                continue;
            }
            s.findings += 1;
            *s.by_severity
                .entry(f.severity.as_str().to_string())
                .or_default() += 1;
            *s.by_check.entry(f.check.as_str().to_string()).or_default() += 1;
        }
        s
    }
}

pub struct Options<'a> {
    pub color: bool,
    pub width: usize,
    /// File texts by path, for rendering source snippets.
    pub sources: &'a HashMap<String, String>,
    pub quiet: bool,
    /// Whether stdout is a terminal (table layout).
    pub tty: bool,
}

pub fn render(format: Format, findings: &[Finding], summary: &Summary, opts: &Options) -> String {
    match format {
        Format::Human => human::render(findings, summary, opts),
        Format::Short => short::render(findings, summary, opts),
        Format::Table => table::render(findings, summary, opts),
        Format::Json => json::render(findings, summary),
        Format::Sarif => sarif::render(findings),
        Format::Github => github::render(findings),
    }
}

/// The summary line of the text formats.
pub(crate) fn summary_line(summary: &Summary) -> String {
    if summary.findings == 0 {
        let mut s = format!(
            "no findings in {} file{}",
            summary.files,
            plural(summary.files)
        );
        if summary.suppressed > 0 {
            s.push_str(&format!(" ({} suppressed)", summary.suppressed));
        }
        return s;
    }
    let parts: Vec<String> = ["error", "warning", "note"]
        .iter()
        .filter_map(|k| {
            summary
                .by_severity
                .get(*k)
                .map(|n| format!("{n} {k}{}", plural(*n)))
        })
        .collect();
    let mut s = format!(
        "{} finding{} ({}) in {} file{}",
        summary.findings,
        plural(summary.findings),
        parts.join(", "),
        summary.files,
        plural(summary.files)
    );
    if summary.suppressed > 0 {
        s.push_str(&format!(", {} suppressed", summary.suppressed));
    }
    if summary.baselined > 0 {
        s.push_str(&format!(", {} in the baseline", summary.baselined));
    }
    if summary.stale_baseline > 0 {
        s.push_str(&format!(
            ", {} stale baseline entr{}",
            summary.stale_baseline,
            if summary.stale_baseline == 1 {
                "y"
            } else {
                "ies"
            }
        ));
    }
    s
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
