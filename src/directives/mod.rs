//! Things syn throws away: comments. One lexical pass per file yields the
//! purpose annotations (`lock-purpose: …`) and suppressions
//! (`lockaudit: allow(…)`) that the checks and the engine need.

pub mod lexer;
pub mod purpose;
pub mod suppression;

pub use lexer::{Comment, LineInfo};
pub use purpose::{Annotation, AnnotationValue, PurposeLookup};
pub use suppression::Suppression;

/// Everything the comment pass found in one file.
pub struct Directives {
    pub lexed: lexer::Lexed,
    pub annotations: Vec<Annotation>,
    pub suppressions: Vec<Suppression>,
}

impl Directives {
    pub fn scan(text: &str) -> Directives {
        let lexed = lexer::lex(text);
        let mut annotations = Vec::new();
        let mut suppressions = Vec::new();
        for (index, c) in lexed.comments.iter().enumerate() {
            annotations.extend(purpose::parse(index, c, text));
            suppressions.extend(suppression::parse(c, text));
        }
        Directives {
            lexed,
            annotations,
            suppressions,
        }
    }
}

/// Whether a directive starting at `start` is quoted in backticks (possibly
/// with its `//` inside them): prose about directives, not a directive.
pub(crate) fn in_backticks(text: &str, start: usize) -> bool {
    text[..start]
        .trim_end_matches(|c: char| c == '/' || c == '*' || c.is_whitespace())
        .ends_with('`')
}
