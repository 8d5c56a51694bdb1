//! `--format table`: one row per finding, then counts per check and
//! severity (comfy-table). On a terminal the table fits the terminal;
//! otherwise it is laid out at a fixed width, so the bytes do not depend on
//! where the output goes.

use std::collections::BTreeMap;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, ColumnConstraint, ContentArrangement, Table};

use super::{summary_line, Options, Summary};
use crate::finding::{Finding, Severity};

/// A table laid out for `opts`: the terminal's width on a terminal, a fixed
/// width otherwise.
pub fn table(opts: &Options) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_content_arrangement(ContentArrangement::Dynamic);
    if !opts.tty {
        // Not a terminal: no width detection, no styling, a fixed width.
        t.force_no_tty();
        t.set_width(u16::try_from(opts.width).unwrap_or(u16::MAX));
    }
    t
}

/// The message column never gets narrower than this.
const MIN_MESSAGE: usize = 30;

/// Keeps columns at their content width (no break inside a path or a check
/// id) as long as that leaves the message [`MIN_MESSAGE`] characters: first
/// all three leading columns, else severity and check only.
fn keep_width(t: &mut Table, widths: &[usize; 3]) {
    let Some(total) = t.width() else {
        return;
    };
    let total = usize::from(total);
    // Every column has one space of padding on each side and one border.
    let cost = |cols: &[usize]| cols.iter().map(|&i| widths[i] + 3).sum::<usize>();
    let keep: &[usize] = if cost(&[0, 1, 2]) + MIN_MESSAGE + 4 <= total {
        &[0, 1, 2]
    } else if cost(&[1, 2]) + 2 * MIN_MESSAGE + 7 <= total {
        &[1, 2]
    } else {
        &[]
    };
    for &i in keep {
        if let Some(c) = t.column_mut(i) {
            c.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
}

fn align_right(t: &mut Table, from: usize) {
    for c in t.column_iter_mut().skip(from) {
        c.set_cell_alignment(CellAlignment::Right);
    }
}

fn slot(s: Severity) -> usize {
    match s {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Note => 2,
    }
}

pub fn render(findings: &[Finding], summary: &Summary, opts: &Options) -> String {
    let mut out = String::new();
    let shown: Vec<&Finding> = findings.iter().filter(|f| f.suppressed.is_none()).collect();
    if !shown.is_empty() {
        let mut t = table(opts);
        let header = ["location", "severity", "check", "message"];
        t.set_header(header);
        let mut widths = [0usize; 3];
        for (w, h) in widths.iter_mut().zip(&header) {
            *w = h.chars().count();
        }
        for f in &shown {
            let row = [
                format!(
                    "{}:{}:{}",
                    crate::escape::text(&f.path),
                    f.span.start.line,
                    f.span.start.column
                ),
                f.severity.as_str().to_string(),
                f.check.as_str().to_string(),
                crate::escape::text(&f.message).into_owned(),
            ];
            for (w, cell) in widths.iter_mut().zip(&row) {
                *w = (*w).max(cell.chars().count());
            }
            t.add_row(row);
        }
        keep_width(&mut t, &widths);
        out.push_str(&t.to_string());
        out.push('\n');

        let mut by: BTreeMap<&str, [usize; 3]> = BTreeMap::new();
        for f in &shown {
            by.entry(f.check.as_str()).or_default()[slot(f.severity)] += 1;
        }
        let mut counts = table(opts);
        counts.set_header(vec!["check", "error", "warning", "note", "total"]);
        let mut total = [0usize; 3];
        for (check, n) in by {
            for i in 0..3 {
                total[i] += n[i];
            }
            counts.add_row(count_row(check, n));
        }
        counts.add_row(count_row("total", total));
        align_right(&mut counts, 1);
        out.push_str(&counts.to_string());
        out.push('\n');
    }
    if !opts.quiet {
        out.push_str(&summary_line(summary));
        out.push('\n');
    }
    out
}

fn count_row(label: &str, n: [usize; 3]) -> Vec<String> {
    vec![
        label.to_string(),
        n[0].to_string(),
        n[1].to_string(),
        n[2].to_string(),
        (n[0] + n[1] + n[2]).to_string(),
    ]
}
