//! `--format github`: GitHub Actions workflow commands, one per finding, as
//! many as GitHub shows (findings on a pull request's changed lines first),
//! and the Markdown for the step summary.

use std::collections::HashMap;

use super::Summary;
use crate::finding::{Finding, Severity};

/// Workflow-command property values escape `%`, CR, LF, `:` and `,`.
fn escape_property(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
        .replace(':', "%3A")
        .replace(',', "%2C")
}

/// Messages escape `%`, CR and LF.
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// GitHub shows at most this many annotations of each level per step.
pub const PER_LEVEL: usize = 10;

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "notice",
    }
}

fn on_changed_line(f: &Finding, changed: &HashMap<String, Vec<(usize, usize)>>) -> bool {
    changed.get(&f.path).is_some_and(|ranges| {
        ranges
            .iter()
            .any(|(a, b)| f.span.start.line <= *b && f.span.end.line.max(f.span.start.line) >= *a)
    })
}

/// One workflow command per unsuppressed finding, at most [`PER_LEVEL`] per
/// level (GitHub drops the rest): those on the lines a change touched first
/// when `changed` is known, then the others in order; then a line saying
/// how many were left out.
pub fn render(
    findings: &[Finding],
    changed: Option<&HashMap<String, Vec<(usize, usize)>>>,
) -> String {
    let mut shown: Vec<&Finding> = findings.iter().filter(|f| f.suppressed.is_none()).collect();
    if let Some(changed) = changed {
        // A stable sort: findings stay in path, line order within each group.
        shown.sort_by_key(|f| !on_changed_line(f, changed));
    }
    let mut out = String::new();
    let mut used: HashMap<&str, usize> = HashMap::new();
    let mut left_out = 0;
    for f in shown {
        let level = level(f.severity);
        let n = used.entry(level).or_default();
        if *n >= PER_LEVEL {
            left_out += 1;
            continue;
        }
        *n += 1;
        out.push_str(&command(f, level));
    }
    if left_out > 0 {
        out.push_str(&format!(
            "lockaudit: {left_out} more finding{} not annotated (GitHub shows {PER_LEVEL} errors, {PER_LEVEL} warnings and {PER_LEVEL} notices per step{}): every finding is in the step summary and the SARIF report\n",
            if left_out == 1 { "" } else { "s" },
            if changed.is_some() { "; findings on changed lines came first" } else { "" },
        ));
    }
    out
}

fn command(f: &Finding, level: &str) -> String {
    // Source text in a message is shown escaped, as in every format; the
    // line break before `help:` is the format's own.
    let mut message = crate::escape::text(&f.message).into_owned();
    if let Some(h) = &f.help {
        message.push_str("\nhelp: ");
        message.push_str(&crate::escape::text(h));
    }
    let (start, mut end) = (f.span.start, f.span.end);
    // An empty span (a parse error's position) still marks one character.
    if end.line < start.line || (end.line == start.line && end.column <= start.column) {
        end.line = start.line;
        end.column = start.column + 1;
    }
    format!(
        "::{level} file={},line={},col={},endLine={},endColumn={},title={}::{}\n",
        escape_property(&f.path),
        start.line,
        start.column,
        end.line,
        end.column,
        escape_property(&format!("lockaudit {}", f.check.as_str())),
        escape_data(&message)
    )
}

/// A table cell of the step summary: plain text. HTML, a `|`, and the
/// Markdown of links and images (`[…](…)`, `![…]`, `<https://…>`) are
/// shown as their characters, and so are emphasis and code marks. GitHub's
/// Markdown also links bare addresses (`https://…`, `www.…`, `a@b.c`): a
/// `:`, and the `.` of `www.`, are written as character references, which
/// its autolinker does not read through, and an `@` follows an empty
/// `<wbr>` (a word-break opportunity, which shows nothing), which it does
/// not link across.
pub(crate) fn cell(s: &str) -> String {
    // A cell shows at most MAX_CELL characters of its text, then `…`.
    let s = match s.char_indices().nth(MAX_CELL) {
        Some((at, _)) => std::borrow::Cow::Owned(format!("{}…", &s[..at])),
        None => std::borrow::Cow::Borrowed(s),
    };
    let escaped = crate::escape::text(&s);
    let mut out = String::with_capacity(escaped.len() + 8);
    for (i, c) in escaped.char_indices() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' => out.push_str("\\|"),
            '@' => out.push_str("<wbr>@"),
            '.' if i >= 3 && escaped.as_bytes()[i - 3..i].eq_ignore_ascii_case(b"www") => {
                out.push_str("&#46;")
            }
            '[' | ']' | '(' | ')' | '!' | '*' | '_' | '`' | '~' | '\\' | '#' | ':' => {
                out.push_str(&format!("&#{};", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// At most this many rows in the step summary (GitHub caps it at 1 MiB).
pub(crate) const SUMMARY_ROWS: usize = 500;

/// Rows stop once a table is this long: the findings' table and the
/// Action's two inventory tables stay within GitHub's 1 MiB together.
pub(crate) const SUMMARY_BYTES: usize = 256 * 1024;

/// The most characters of one cell's text.
const MAX_CELL: usize = 300;

/// The Markdown appended to `$GITHUB_STEP_SUMMARY`: the summary line and a
/// table of every unsuppressed finding.
pub fn step_summary(findings: &[Finding], summary: &Summary) -> String {
    let mut out = format!("### lockaudit\n\n{}\n\n", super::summary_line(summary));
    let shown: Vec<&Finding> = findings.iter().filter(|f| f.suppressed.is_none()).collect();
    if shown.is_empty() {
        return out;
    }
    out.push_str("| location | severity | check | message |\n|---|---|---|---|\n");
    let mut rows = 0;
    for f in shown.iter().take(SUMMARY_ROWS) {
        if out.len() > SUMMARY_BYTES {
            break;
        }
        rows += 1;
        out.push_str(&format!(
            "| {}:{}:{} | {} | {} | {} |\n",
            cell(&f.path),
            f.span.start.line,
            f.span.start.column,
            f.severity.as_str(),
            f.check.as_str(),
            cell(&f.message)
        ));
    }
    if shown.len() > rows {
        out.push_str(&format!(
            "\n{} more findings are in the SARIF report (`--format sarif`).\n",
            shown.len() - rows
        ));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes() {
        assert_eq!(super::escape_property("a:b,c%"), "a%3Ab%2Cc%25");
        assert_eq!(super::escape_data("a\nb"), "a%0Ab");
        assert_eq!(
            super::cell("[x](https://e.com) ![i](u) |"),
            "&#91;x&#93;&#40;https&#58;//e.com&#41; &#33;&#91;i&#93;&#40;u&#41; \\|"
        );
        assert_eq!(
            super::cell("www.e.com WWW.e.com a@e.com src/lib.rs"),
            "www&#46;e.com WWW&#46;e.com a<wbr>@e.com src/lib.rs"
        );
    }
}
