//! `--format table`: one row per finding, then counts per check and
//! severity (comfy-table; fixed width when not a terminal).

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{ContentArrangement, Table};

use super::{summary_line, Options, Summary};
use crate::finding::Finding;

pub fn table(opts: &Options) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    if opts.tty {
        t.set_content_arrangement(ContentArrangement::Dynamic);
    } else {
        t.set_content_arrangement(ContentArrangement::Dynamic);
        t.set_width(opts.width as u16);
    }
    if !opts.color {
        t.force_no_tty();
    }
    t
}

pub fn render(findings: &[Finding], summary: &Summary, opts: &Options) -> String {
    let mut out = String::new();
    let shown: Vec<&Finding> = findings.iter().filter(|f| f.suppressed.is_none()).collect();
    if !shown.is_empty() {
        let mut t = table(opts);
        t.set_header(vec!["location", "severity", "check", "message"]);
        for f in &shown {
            t.add_row(vec![
                format!("{}:{}:{}", f.path, f.span.start.line, f.span.start.column),
                f.severity.as_str().to_string(),
                f.check.as_str().to_string(),
                f.message.clone(),
            ]);
        }
        out.push_str(&t.to_string());
        out.push('\n');
        let mut counts = table(opts);
        counts.set_header(vec!["check", "error", "warning", "note", "total"]);
        let mut by: std::collections::BTreeMap<&str, [usize; 3]> = Default::default();
        for f in &shown {
            let row = by.entry(f.check.as_str()).or_default();
            row[match f.severity {
                crate::finding::Severity::Error => 0,
                crate::finding::Severity::Warning => 1,
                crate::finding::Severity::Note => 2,
            }] += 1;
        }
        for (check, n) in by {
            counts.add_row(vec![
                check.to_string(),
                n[0].to_string(),
                n[1].to_string(),
                n[2].to_string(),
                (n[0] + n[1] + n[2]).to_string(),
            ]);
        }
        out.push_str(&counts.to_string());
        out.push('\n');
    }
    if !opts.quiet {
        out.push_str(&summary_line(summary));
        out.push('\n');
    }
    out
}
