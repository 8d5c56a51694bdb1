//! The one way lockaudit parses Rust. syn's parser recurses once per level
//! of nesting, and a stack overflow aborts the whole process: no report,
//! no other file. So every parse goes through [`file`], which refuses code
//! that the comment lexer measured deeper than
//! [`crate::directives::lexer::MAX_NESTING`] levels, or chained longer
//! than [`crate::directives::lexer::MAX_CHAIN`] links (syn parses a chain in
//! a loop, but the tree it builds, and drops, is as deep as the chain), and
//! runs on a thread of a [`pool`] whose stacks are [`STACK`] bytes.

use crate::directives::lexer;

/// Stack of every thread that parses: room for the deepest code the
/// nesting guard lets through, in a debug build too.
pub const STACK: usize = 64 << 20;

/// Why a file was not parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Nested deeper than the guard allows, first at this byte offset.
    TooDeep(usize),
    /// A syntax error at a 1-based line and 0-based character column.
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
}

impl Refused {
    pub fn message(&self) -> String {
        match self {
            Refused::TooDeep(_) => format!(
                "brackets, generics, prefix operators, closures or control flow nest deeper than {} levels",
                lexer::MAX_NESTING
            ),
            Refused::Syntax { message, .. } => message.clone(),
        }
    }
}

/// Parses `text`, given the nesting the lexer measured for it (`too_deep`
/// from [`lexer::Lexed`]).
pub fn file_measured(text: &str, too_deep: Option<lexer::Deep>) -> Result<syn::File, Refused> {
    match too_deep {
        Some(lexer::Deep::Nesting(offset)) => return Err(Refused::TooDeep(offset)),
        Some(lexer::Deep::Chain(offset)) => {
            let before = &text[..offset.min(text.len())];
            let line_start = before.rfind('\n').map_or(0, |n| n + 1);
            return Err(Refused::Syntax {
                line: before.matches('\n').count() + 1,
                column: before[line_start..].chars().count(),
                message: format!(
                    "operators, calls, fields or `else if` chain more than {} links",
                    lexer::MAX_CHAIN
                ),
            });
        }
        None => {}
    }
    syn::parse_file(text).map_err(|e| {
        let s = e.span().start();
        Refused::Syntax {
            line: s.line,
            column: s.column,
            message: e.to_string(),
        }
    })
}

/// Measures and parses `text`.
pub fn file(text: &str) -> Result<syn::File, Refused> {
    file_measured(text, lexer::lex(text).too_deep)
}

/// A thread pool for parsing: `jobs` threads (all cores when `None`), each
/// with a [`STACK`]-byte stack.
/// When the system cannot start that many threads (a memory limit), fewer
/// are started, down to one.
pub fn pool(jobs: Option<usize>) -> Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    let mut n = jobs.unwrap_or(0);
    loop {
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .stack_size(STACK)
            .thread_name(|i| format!("lockaudit-{i}"))
            .build();
        match built {
            Ok(pool) => return Ok(pool),
            Err(e) => {
                let tried = if n == 0 {
                    std::thread::available_parallelism().map_or(1, |c| c.get())
                } else {
                    n
                };
                if tried <= 1 {
                    return Err(e);
                }
                n = tried / 2;
            }
        }
    }
}
