//! `// lockaudit: allow(check-id[, check-id]) reason` (the flagged line or the
//! line above) and `// lockaudit: allow-file(check-id) reason` (the whole file).

use std::sync::LazyLock;

use regex::Regex;

use super::lexer::Comment;

static SUPPRESSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\blockaudit\s*:\s*(allow|allow-file)\s*\(([^)]*)\)[ \t]*([^\n]*)").unwrap()
});

#[derive(Debug, Clone)]
pub struct Suppression {
    /// 1-based line of the comment.
    pub line: usize,
    /// Byte range of the directive in the file.
    pub start: usize,
    pub end: usize,
    /// The ids as written (validated later against the check registry).
    pub ids: Vec<String>,
    pub reason: Option<String>,
    /// Applies to the whole file (`allow-file`).
    pub file_level: bool,
    /// The comment stands after code on its line.
    pub trailing: bool,
}

impl Suppression {
    /// Whether this suppression covers a finding that starts on `line`.
    pub fn covers_line(&self, line: usize) -> bool {
        if self.file_level {
            return true;
        }
        line == self.line || (!self.trailing && line == self.line + 1)
    }
}

pub(super) fn parse(c: &Comment, text: &str) -> Vec<Suppression> {
    let base = std::cell::OnceCell::new();
    let base = || *base.get_or_init(|| super::purpose::comment_body_offset(c, text));
    SUPPRESSION
        .captures_iter(&c.text)
        // `lockaudit: allow(..)` in backticks is prose about suppressions.
        .filter(|caps| !super::in_backticks(&c.text, caps.get(0).unwrap().start()))
        .map(|caps| {
            let whole = caps.get(0).unwrap();
            let file_level = caps[1].eq_ignore_ascii_case("allow-file");
            let ids = caps[2]
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            let reason = caps[3]
                .trim()
                .trim_end_matches("*/")
                .trim()
                .trim_start_matches(['—', '–', '-', ':'])
                .trim();
            let line = c.line + c.text[..whole.start()].matches('\n').count();
            Suppression {
                line,
                start: base() + whole.start(),
                end: base() + whole.end(),
                ids,
                reason: (!reason.is_empty()).then(|| reason.to_string()),
                file_level,
                trailing: c.trailing,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::directives::Directives;

    #[test]
    fn parses_ids_and_reason() {
        let d = Directives::scan(
            "x(); // lockaudit: allow(unowned-release, lock-without-expiry) legacy job\n// lockaudit: allow-file(missing-purpose)\n",
        );
        assert_eq!(d.suppressions.len(), 2);
        assert_eq!(
            d.suppressions[0].ids,
            ["unowned-release", "lock-without-expiry"]
        );
        assert_eq!(d.suppressions[0].reason.as_deref(), Some("legacy job"));
        assert!(d.suppressions[0].covers_line(1) && !d.suppressions[0].covers_line(2));
        assert!(d.suppressions[1].file_level && d.suppressions[1].reason.is_none());
    }
}
