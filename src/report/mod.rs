//! Reporters: pure functions of (findings, summary, options) → bytes, one
//! file per format. Findings arrive sorted by path, line, column, check.

pub(crate) mod github;
pub mod human;
mod json;
pub mod sarif;
mod short;
mod table;
pub use github::step_summary as github_step_summary;
pub use table::table as table_for;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::baseline::Entry;
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
    /// Files audited.
    pub files: usize,
    /// Files with at least one reported finding.
    #[serde(skip)]
    pub files_with_findings: usize,
    pub parsed: usize,
    /// Findings reported (not suppressed, not in the baseline).
    pub findings: usize,
    pub suppressed: usize,
    /// Findings hidden because the baseline records them.
    pub baselined: usize,
    /// Findings hidden because they were already present at `--new-since REF`.
    pub preexisting: usize,
    /// Baseline entries that match no finding any more.
    pub stale_baseline: usize,
    pub by_severity: BTreeMap<String, usize>,
    pub by_check: BTreeMap<String, usize>,
    /// The stale baseline entries themselves, so they can be pruned.
    pub stale_baseline_entries: Vec<Entry>,
    /// Why the run could not audit everything (unreadable files, internal
    /// errors); the run exits 2 when this is not empty.
    #[serde(skip)]
    pub tool_errors: Vec<String>,
}

impl Summary {
    pub fn new(files: usize, parsed: usize, findings: &[Finding]) -> Summary {
        let mut s = Summary {
            files,
            parsed,
            ..Summary::default()
        };
        let mut paths = std::collections::BTreeSet::new();
        for f in findings {
            if f.suppressed.is_some() {
                s.suppressed += 1;
                continue;
            }
            paths.insert(f.path.as_str());
            s.findings += 1;
            *s.by_severity
                .entry(f.severity.as_str().to_string())
                .or_default() += 1;
            *s.by_check.entry(f.check.as_str().to_string()).or_default() += 1;
        }
        s.files_with_findings = paths.len();
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
    /// The lines each file changed since the base revision (`--format
    /// github` annotates findings on them first); paths from the root.
    pub changed: Option<&'a HashMap<String, Vec<(usize, usize)>>>,
    /// The repository root, which machine-readable paths are relative to
    /// (SARIF's `%SRCROOT%`).
    pub root: Option<&'a std::path::Path>,
}

pub fn render(format: Format, findings: &[Finding], summary: &Summary, opts: &Options) -> String {
    match format {
        Format::Human => human::render(findings, summary, opts),
        Format::Short => short::render(findings, summary, opts),
        Format::Table => table::render(findings, summary, opts),
        Format::Json => json::render(findings, summary),
        Format::Sarif => sarif::render(findings, summary, opts.root),
        Format::Github => github::render(findings, opts.changed),
    }
}

/// The summary line of the text formats: "9 findings (7 errors, 2
/// warnings) in 4 files; 82 files audited; …".
pub(crate) fn summary_line(summary: &Summary) -> String {
    let mut s = if summary.findings == 0 {
        "no findings".to_string()
    } else {
        let parts: Vec<String> = ["error", "warning", "note"]
            .iter()
            .filter_map(|k| {
                summary
                    .by_severity
                    .get(*k)
                    .map(|n| format!("{n} {k}{}", plural(*n)))
            })
            .collect();
        format!(
            "{} finding{} ({}) in {} file{}",
            summary.findings,
            plural(summary.findings),
            parts.join(", "),
            summary.files_with_findings,
            plural(summary.files_with_findings)
        )
    };
    s.push_str(&format!(
        "; {} file{} audited",
        summary.files,
        plural(summary.files)
    ));
    let mut extra = Vec::new();
    if summary.suppressed > 0 {
        extra.push(format!("{} suppressed", summary.suppressed));
    }
    if summary.baselined > 0 {
        extra.push(format!("{} in the baseline", summary.baselined));
    }
    if summary.preexisting > 0 {
        extra.push(format!(
            "{} already present at the base revision",
            summary.preexisting
        ));
    }
    if summary.stale_baseline > 0 {
        extra.push(format!(
            "{} stale baseline entr{}",
            summary.stale_baseline,
            if summary.stale_baseline == 1 {
                "y"
            } else {
                "ies"
            }
        ));
    }
    if !extra.is_empty() {
        s.push_str("; ");
        s.push_str(&extra.join(", "));
    }
    s
}

/// One line per stale baseline entry, for the human format.
pub(crate) fn stale_lines(summary: &Summary) -> String {
    let mut out = String::new();
    for e in &summary.stale_baseline_entries {
        out.push_str(&format!(
            "note: stale baseline entry: {} in {} no longer occurs ({})\n",
            crate::escape::text(&e.check),
            crate::escape::text(&e.path),
            crate::escape::text(&e.message)
        ));
    }
    if !out.is_empty() {
        out.push_str(
            "help: rewrite the baseline with `--write-baseline FILE` to drop stale entries\n",
        );
    }
    out
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
