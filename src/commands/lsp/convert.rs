//! Between lockaudit's positions (1-based lines, 1-based character columns,
//! byte offsets) and the protocol's (0-based lines, UTF-16 code units, the
//! encoding every client supports), and from findings to diagnostics and
//! code actions.

use std::collections::HashMap;

use lsp_types::{
    CodeAction, CodeActionKind, CodeDescription, Command, Diagnostic, DiagnosticRelatedInformation,
    DiagnosticSeverity, Location, NumberOrString, Position, Range, TextEdit, Uri, WorkspaceEdit,
};

use crate::directives::Directives;
use crate::finding::{Finding, Purpose, Severity};
use crate::fix::{self, Edit, Fix};
use crate::source::{Pos, SourceFile, Span};

/// The command that shows a check's `explain` page.
pub const EXPLAIN_COMMAND: &str = "lockaudit.explain";

/// Where a check's documentation lives on the web: its page in the book.
pub fn doc_link(id: &str) -> String {
    crate::report::sarif::help_uri(id)
}

/// A protocol position from a lockaudit one.
pub fn position(src: &SourceFile, p: Pos) -> Position {
    Position {
        line: p.line.saturating_sub(1) as u32,
        character: src.utf16_column(p) as u32,
    }
}

pub fn range(src: &SourceFile, s: Span) -> Range {
    Range {
        start: position(src, s.start),
        end: position(src, s.end),
    }
}

/// The byte offset of a protocol position (clamped to the line's end).
pub fn offset(src: &SourceFile, p: Position) -> usize {
    src.offset_of_utf16(p.line as usize + 1, p.character as usize)
}

fn severity(s: Severity) -> DiagnosticSeverity {
    match s {
        Severity::Error => DiagnosticSeverity::ERROR,
        Severity::Warning => DiagnosticSeverity::WARNING,
        Severity::Note => DiagnosticSeverity::INFORMATION,
    }
}

pub fn diagnostic(src: &SourceFile, uri: &Uri, f: &Finding) -> Diagnostic {
    let mut message = f.message.clone();
    if let Some(h) = &f.help {
        message.push_str("\nhelp: ");
        message.push_str(h);
    }
    let related: Vec<DiagnosticRelatedInformation> = f
        .labels
        .iter()
        .map(|l| DiagnosticRelatedInformation {
            location: Location {
                uri: uri.clone(),
                range: range(src, l.span),
            },
            message: l.message.clone(),
        })
        .collect();
    Diagnostic {
        range: range(src, f.span),
        severity: Some(severity(f.severity)),
        code: Some(NumberOrString::String(f.check.as_str().to_string())),
        code_description: doc_link(f.check.as_str())
            .parse()
            .ok()
            .map(|href| CodeDescription { href }),
        source: Some("lockaudit".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        tags: None,
        data: None,
    }
}

fn text_edit(src: &SourceFile, e: &Edit) -> TextEdit {
    TextEdit {
        range: range(src, e.span),
        new_text: e.replacement.clone(),
    }
}

fn quick_fix(
    src: &SourceFile,
    uri: &Uri,
    diag: &Diagnostic,
    title: String,
    fix: &Fix,
    preferred: bool,
) -> CodeAction {
    let edits = fix.edits.iter().map(|e| text_edit(src, e)).collect();
    CodeAction {
        title,
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: Some(vec![diag.clone()]),
        edit: Some(WorkspaceEdit {
            changes: Some(HashMap::from([(uri.clone(), edits)])),
            ..WorkspaceEdit::default()
        }),
        command: None,
        is_preferred: preferred.then_some(true),
        disabled: None,
        data: None,
    }
}

/// The code actions for one finding: its exact fix, the two annotations
/// (`missing-purpose`), a suppression with a reason to fill in, and the
/// check's explain page.
pub fn actions(
    src: &SourceFile,
    directives: &Directives,
    uri: &Uri,
    f: &Finding,
) -> Vec<CodeAction> {
    let diag = diagnostic(src, uri, f);
    let id = f.check.as_str();
    let mut out = Vec::new();
    if let Some(fix) = &f.fix {
        out.push(quick_fix(
            src,
            uri,
            &diag,
            format!("lockaudit: {}", fix.description),
            fix,
            true,
        ));
    }
    for purpose in [Purpose::Efficiency, Purpose::Correctness] {
        if let Some(fix) = fix::annotation_fix(src, &directives.lexed, f, purpose) {
            let title = format!(
                "Annotate as a{} {} lock: `// lock-purpose: {} — TODO: why`",
                if purpose == Purpose::Efficiency {
                    "n"
                } else {
                    ""
                },
                purpose.as_str(),
                purpose.as_str()
            );
            out.push(quick_fix(src, uri, &diag, title, &fix, false));
        }
    }
    let allow = format!("// lockaudit: allow({id}) TODO: say why this is safe");
    if let Some(edit) = fix::line_above_edit(src, &directives.lexed, f.span.start.line, &allow) {
        let fix = Fix {
            description: String::new(),
            edits: vec![edit],
        };
        let title = format!("Suppress `{id}` here (then say why after `allow({id})`)");
        out.push(quick_fix(src, uri, &diag, title, &fix, false));
    }
    out.push(CodeAction {
        title: format!("Explain `{id}`: why it matters, bad and good code"),
        kind: Some(CodeActionKind::EMPTY),
        diagnostics: Some(vec![diag]),
        edit: None,
        command: Some(Command {
            title: format!("Explain {id}"),
            command: EXPLAIN_COMMAND.into(),
            arguments: Some(vec![serde_json::Value::from(id)]),
        }),
        is_preferred: None,
        disabled: None,
        data: None,
    });
    out
}

/// Whether two protocol ranges share a position (touching counts: a
/// cursor at either end of a diagnostic asks for its actions).
pub fn touches(a: &Range, b: &Range) -> bool {
    let key = |p: &Position| (p.line, p.character);
    key(&a.start) <= key(&b.end) && key(&b.start) <= key(&a.end)
}

/// The file path of a `file:` URI, percent-decoded.
pub fn uri_path(uri: &Uri) -> Option<std::path::PathBuf> {
    let s = uri.as_str();
    let rest = s.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let path = rest.split(['?', '#']).next()?;
    let mut bytes = Vec::with_capacity(path.len());
    let raw = path.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' && i + 2 < raw.len() {
            if let Some(Ok(b)) = path.get(i + 1..i + 3).map(|h| u8::from_str_radix(h, 16)) {
                bytes.push(b);
                i += 3;
                continue;
            }
        }
        bytes.push(raw[i]);
        i += 1;
    }
    let decoded = String::from_utf8(bytes).ok()?;
    // `file:///C:/x` on Windows.
    let decoded = match decoded.as_bytes() {
        [b'/', d, b':', ..] if d.is_ascii_alphabetic() && cfg!(windows) => decoded[1..].to_string(),
        _ => decoded,
    };
    Some(std::path::PathBuf::from(decoded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units() {
        let src = SourceFile::new("a.rs", "let é𝄞 = x;\nb\n");
        let x = src.pos_of_offset(src.text.find('x').unwrap());
        let p = position(&src, x);
        // Nine characters before `x`: `é` is one unit, `𝄞` two.
        assert_eq!(x.column, 10);
        assert_eq!((p.line, p.character), (0, 10));
        assert_eq!(offset(&src, p), x.offset);
        assert_eq!(
            offset(
                &src,
                Position {
                    line: 1,
                    character: 99
                }
            ),
            src.text.len() - 1
        );
    }

    #[test]
    fn file_uris_become_paths() {
        let uri: Uri = "file:///tmp/a%20b/lib.rs".parse().unwrap();
        assert_eq!(
            uri_path(&uri).unwrap(),
            std::path::PathBuf::from("/tmp/a b/lib.rs")
        );
        let other: Uri = "untitled:Untitled-1".parse().unwrap();
        assert!(uri_path(&other).is_none());
    }
}
