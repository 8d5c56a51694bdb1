//! Suggested fixes: text edits that resolve a finding, offered only where
//! the replacement is exactly right (the same meaning plus the missing
//! safety, nothing guessed). They travel with the finding as data: JSON
//! `fix`, SARIF `fixes`, `check --fix`, `annotate` and the language
//! server's code actions all read the same [`Fix`].
//!
//! - `missing-purpose`: a `// lock-purpose: <purpose> — TODO: why` line
//!   above the statement. The purpose is a decision only a person can
//!   make, so the finding carries the place ([`Finding::purpose_line`]) and
//!   the edit is made by [`annotation_edit`] when someone names the purpose:
//!   `annotate --purpose`, an editor's code action, or the config's
//!   `default-purpose` (then it is in JSON and SARIF too). `check --fix`
//!   never inserts it.
//! - `unowned-release` on a redis-rs `DEL` whose owner token is a local in
//!   scope: the compare-and-delete script call ([`suggest`]).
//! - `lock-without-expiry` on `SET … NX` with one TTL constant or local in
//!   scope whose unit is known: `.arg("PX").arg(ttl)` ([`suggest`]).

mod scope;
mod suggest;

pub use suggest::{attach, from_tree};

use crate::directives::lexer::Lexed;
use crate::finding::{Finding, Purpose};
use crate::source::{SourceFile, Span};
use crate::vocab::CheckId;

/// One replacement of a half-open range of a file's text (empty: an
/// insertion).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub span: Span,
    pub replacement: String,
}

/// A suggested fix for one finding: edits to the finding's own file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    pub description: String,
    pub edits: Vec<Edit>,
}

impl Fix {
    /// Whether `check --fix` applies it: every exact fix except a purpose
    /// annotation, which records a decision the tool cannot make.
    pub fn applied_by_check(&self, check: CheckId) -> bool {
        check != CheckId::MissingPurpose
    }
}

/// The annotation line for `purpose`, with `TODO: why` for the reason.
pub fn annotation_text(purpose: Purpose) -> String {
    format!("// lock-purpose: {} — TODO: why", purpose.as_str())
}

/// Inserts `comment` as its own line above `line`, with that line's
/// indentation and line ending. `None` when the line does not exist, or
/// starts inside a comment (the new line would land in it).
pub fn line_above_edit(
    src: &SourceFile,
    lexed: &Lexed,
    line: usize,
    comment: &str,
) -> Option<Edit> {
    if line == 0 || line > src.line_count() {
        return None;
    }
    let start = src.pos_of_line_col(line, 0);
    if lexed
        .comments
        .iter()
        .any(|c| c.start < start.offset && start.offset < c.end)
    {
        return None;
    }
    let text = src.line_text(line);
    let indent: String = text
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let rest = &src.text[start.offset..];
    let eol = if rest[text.len()..].starts_with("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    Some(Edit {
        span: Span { start, end: start },
        replacement: format!("{indent}{comment}{eol}"),
    })
}

/// The fix that annotates a `missing-purpose` finding with `purpose`.
pub fn annotation_fix(
    src: &SourceFile,
    lexed: &Lexed,
    f: &Finding,
    purpose: Purpose,
) -> Option<Fix> {
    let line = f.purpose_line?;
    let edit = line_above_edit(src, lexed, line, &annotation_text(purpose))?;
    Some(Fix {
        description: format!(
            "annotate the acquisition: `// lock-purpose: {} — TODO: why` (replace the TODO with the reason)",
            purpose.as_str()
        ),
        edits: vec![edit],
    })
}

/// Applies non-overlapping edits to `text` (offsets into it). Edits that
/// overlap an earlier one, or fall outside the text or off a character
/// boundary, are skipped; returns the new text and how many were applied.
pub fn apply(text: &str, edits: &[&Edit]) -> (String, usize) {
    let mut sorted: Vec<&Edit> = edits.to_vec();
    sorted.sort_by_key(|e| (e.span.start.offset, e.span.end.offset));
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0;
    let mut applied = 0;
    for e in sorted {
        let (s, t) = (e.span.start.offset, e.span.end.offset);
        let valid = s >= at
            && s <= t
            && t <= text.len()
            && text.is_char_boundary(s)
            && text.is_char_boundary(t);
        if !valid {
            continue;
        }
        out.push_str(&text[at..s]);
        out.push_str(&e.replacement);
        at = t;
        applied += 1;
    }
    out.push_str(&text[at..]);
    (out, applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::directives::Directives;

    #[test]
    fn the_annotation_keeps_indentation_and_crlf() {
        let text = "fn f() {\r\n\t  let g = lock();\r\n}\r\n";
        let src = SourceFile::new("a.rs", text);
        let d = Directives::scan(text);
        let e = line_above_edit(&src, &d.lexed, 2, "// x").unwrap();
        assert_eq!(e.replacement, "\t  // x\r\n");
        let (out, n) = apply(text, &[&e]);
        assert_eq!(n, 1);
        assert_eq!(out, "fn f() {\r\n\t  // x\r\n\t  let g = lock();\r\n}\r\n");
    }

    #[test]
    fn no_line_is_inserted_inside_a_block_comment() {
        let text = "/* a\nb */ let g = lock();\n";
        let src = SourceFile::new("a.rs", text);
        let d = Directives::scan(text);
        assert!(line_above_edit(&src, &d.lexed, 2, "// x").is_none());
        assert!(line_above_edit(&src, &d.lexed, 9, "// x").is_none());
    }

    #[test]
    fn overlapping_edits_are_skipped() {
        let src = SourceFile::new("a.rs", "abcdef");
        let e = |s: usize, t: usize, r: &str| Edit {
            span: Span {
                start: src.pos_of_offset(s),
                end: src.pos_of_offset(t),
            },
            replacement: r.into(),
        };
        let (a, b, c) = (e(1, 3, "X"), e(2, 4, "Y"), e(5, 5, "Z"));
        assert_eq!(apply(&src.text, &[&c, &a, &b]), ("aXdeZf".to_string(), 2));
    }
}
