//! `--format github`: GitHub Actions workflow commands, one per finding.

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

pub fn render(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings.iter().filter(|f| f.suppressed.is_none()) {
        let level = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "notice",
        };
        // Source text in a message is shown escaped, as in every format;
        // the line break before `help:` is the format's own.
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
        out.push_str(&format!(
            "::{level} file={},line={},col={},endLine={},endColumn={},title={}::{}\n",
            escape_property(&f.path),
            start.line,
            start.column,
            end.line,
            end.column,
            escape_property(&format!("lockaudit {}", f.check.as_str())),
            escape_data(&message)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes() {
        assert_eq!(super::escape_property("a:b,c%"), "a%3Ab%2Cc%25");
        assert_eq!(super::escape_data("a\nb"), "a%0Ab");
    }
}
