//! `lock-purpose:` annotations and the placement rules that attach them to an
//! acquisition (SPEC "Purpose annotation"): a trailing comment on a line of
//! the statement, the contiguous comment block directly above the statement
//! (attributes may sit between), or the comment/doc block directly above the
//! enclosing `fn`. The nearest annotation wins.

use std::sync::LazyLock;

use regex::Regex;

use super::lexer::{Comment, Lexed};
use crate::finding::Purpose;

static ANNOTATION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\block-purpose\s*:\s*([A-Za-z_]*)").unwrap());

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnnotationValue {
    Purpose(Purpose),
    /// The word after `lock-purpose:` is not a known purpose (or is missing).
    Malformed(String),
}

#[derive(Debug, Clone)]
pub struct Annotation {
    /// Index of the comment it was found in.
    pub comment: usize,
    pub line: usize,
    pub end_line: usize,
    /// Byte range of `lock-purpose: word`.
    pub start: usize,
    pub end: usize,
    pub value: AnnotationValue,
    pub trailing: bool,
}

pub(super) fn parse(index: usize, c: &Comment, text: &str) -> Vec<Annotation> {
    // Found only for comments that hold a directive: most do not.
    let body_offset = std::cell::OnceCell::new();
    let body_offset = || *body_offset.get_or_init(|| comment_body_offset(c, text));
    ANNOTATION
        .captures_iter(&c.text)
        // `lock-purpose:` in backticks is prose about annotations, not one.
        .filter(|caps| {
            let start = caps.get(0).unwrap().start();
            !super::in_backticks(&c.text, start)
        })
        .map(|caps| {
            let whole = caps.get(0).unwrap();
            let word = caps.get(1).unwrap().as_str();
            let value = match word.to_ascii_lowercase().as_str() {
                "efficiency" => AnnotationValue::Purpose(Purpose::Efficiency),
                "correctness" => AnnotationValue::Purpose(Purpose::Correctness),
                _ => AnnotationValue::Malformed(word.to_string()),
            };
            let line = c.line + c.text[..whole.start()].matches('\n').count();
            Annotation {
                comment: index,
                line,
                end_line: line,
                start: body_offset() + whole.start(),
                end: body_offset() + whole.end(),
                value,
                trailing: c.trailing,
            }
        })
        .collect()
}

/// Byte offset in the file where the comment's text (as stored) begins.
pub(super) fn comment_body_offset(c: &Comment, text: &str) -> usize {
    let raw = &text[c.start..c.end];
    raw.find(c.text.as_str())
        .map(|i| c.start + i)
        .unwrap_or(c.start)
}

/// What the placement rules found for one acquisition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PurposeLookup {
    None,
    Found {
        purpose: Purpose,
        annotation: usize,
    },
    /// The nearest annotation is malformed.
    Malformed {
        word: String,
        annotation: usize,
    },
    /// The nearest place holds two different purposes.
    Contradictory {
        first: usize,
        second: usize,
    },
    /// Stated in another file, on the wrapper chain the call goes through
    /// (on its lock call, or above one of its `fn`s).
    Inherited {
        purpose: Purpose,
    },
}

/// Where an acquisition sits, for the placement rules.
pub struct Placement {
    /// First line of the innermost statement holding the acquisition.
    pub stmt_line: usize,
    /// Last line that counts for trailing comments (the acquisition's end).
    pub last_line: usize,
    /// First line of the enclosing `fn` (its first non-doc attribute or its
    /// signature), if the acquisition is inside one.
    pub fn_line: Option<usize>,
}

pub fn lookup(annotations: &[Annotation], lexed: &Lexed, at: &Placement) -> PurposeLookup {
    // 1. Trailing comments on the statement's own lines.
    let trailing: Vec<usize> = annotations
        .iter()
        .enumerate()
        .filter(|(_, a)| a.trailing && a.line >= at.stmt_line && a.line <= at.last_line)
        .map(|(i, _)| i)
        .collect();
    if !trailing.is_empty() {
        return resolve(annotations, &trailing);
    }
    // 2. The contiguous comment block directly above the statement.
    let above = block_above(annotations, lexed, at.stmt_line);
    if !above.is_empty() {
        return resolve(annotations, &above);
    }
    // 3. The block directly above the enclosing fn.
    if let Some(fn_line) = at.fn_line {
        let above_fn = block_above(annotations, lexed, fn_line);
        if !above_fn.is_empty() {
            return resolve(annotations, &above_fn);
        }
    }
    PurposeLookup::None
}

/// Annotations in the run of comment-only and attribute lines that ends
/// directly above `line`.
fn block_above(annotations: &[Annotation], lexed: &Lexed, line: usize) -> Vec<usize> {
    let mut top = line;
    while top > 1 {
        let info = lexed.line(top - 1);
        let comment_only = info.comment && !info.code;
        if comment_only || info.attribute {
            top -= 1;
        } else {
            break;
        }
    }
    if top == line {
        return Vec::new();
    }
    annotations
        .iter()
        .enumerate()
        .filter(|(_, a)| !a.trailing && a.line >= top && a.line < line)
        .map(|(i, _)| i)
        .collect()
}

fn resolve(annotations: &[Annotation], found: &[usize]) -> PurposeLookup {
    if let Some(&bad) = found
        .iter()
        .find(|&&i| matches!(annotations[i].value, AnnotationValue::Malformed(_)))
    {
        if let AnnotationValue::Malformed(word) = &annotations[bad].value {
            return PurposeLookup::Malformed {
                word: word.clone(),
                annotation: bad,
            };
        }
    }
    let first = found[0];
    let AnnotationValue::Purpose(purpose) = annotations[first].value.clone() else {
        unreachable!("malformed annotations are handled above")
    };
    for &other in &found[1..] {
        if annotations[other].value != annotations[first].value {
            return PurposeLookup::Contradictory {
                first,
                second: other,
            };
        }
    }
    PurposeLookup::Found {
        purpose,
        annotation: first,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::directives::Directives;

    fn find(src: &str, stmt_line: usize, fn_line: Option<usize>) -> PurposeLookup {
        let d = Directives::scan(src);
        lookup(
            &d.annotations,
            &d.lexed,
            &Placement {
                stmt_line,
                last_line: stmt_line,
                fn_line,
            },
        )
    }

    #[test]
    fn trailing_beats_block_beats_fn() {
        let src = "// lock-purpose: correctness\nfn f() {\n    // lock-purpose: EFFICIENCY - why\n    acquire(); // lock-purpose: correctness\n}\n";
        assert!(matches!(
            find(src, 4, Some(2)),
            PurposeLookup::Found {
                purpose: Purpose::Correctness,
                annotation: 2
            }
        ));
        let src = "// lock-purpose: correctness\nfn f() {\n    // lock-purpose: EFFICIENCY - why\n    #[allow(x)]\n    acquire();\n}\n";
        assert!(matches!(
            find(src, 5, Some(2)),
            PurposeLookup::Found {
                purpose: Purpose::Efficiency,
                ..
            }
        ));
        let src =
            "/// lock-purpose: correctness — ids\nfn f() {\n    let a = 1;\n    acquire();\n}\n";
        assert!(matches!(
            find(src, 4, Some(2)),
            PurposeLookup::Found {
                purpose: Purpose::Correctness,
                ..
            }
        ));
    }

    #[test]
    fn blank_line_breaks_the_block() {
        let src = "fn f() {\n    // lock-purpose: efficiency\n\n    acquire();\n}\n";
        assert_eq!(find(src, 4, Some(1)), PurposeLookup::None);
    }

    #[test]
    fn malformed_and_contradictory() {
        let src = "fn f() {\n    // lock-purpose: corectness\n    acquire();\n}\n";
        assert!(matches!(
            find(src, 3, Some(1)),
            PurposeLookup::Malformed { .. }
        ));
        let src = "fn f() {\n    // lock-purpose: efficiency\n    /* lock-purpose: correctness */\n    acquire();\n}\n";
        assert!(matches!(
            find(src, 4, Some(1)),
            PurposeLookup::Contradictory { .. }
        ));
    }
}
