//! The one way lockaudit parses Rust. syn's parser recurses once per level
//! of nesting, and a stack overflow aborts the whole process: no report,
//! no other file. So every parse goes through [`file`], which refuses code
//! that the comment lexer measured deeper than
//! [`crate::directives::lexer::MAX_NESTING`] levels, or chained longer
//! than [`crate::directives::lexer::MAX_CHAIN`] links (syn parses a chain in
//! a loop, but the tree it builds, and drops, is as deep as the chain), and
//! runs on a thread of a [`pool`] whose stacks are [`STACK`] bytes.
//!
//! Parsing and modelling a file costs about 136 bytes of memory per byte
//! of source, whichever thread does it: a [`Permit`] for the file's bytes,
//! taken from one budget of [`IN_FLIGHT`] bytes for the whole process,
//! bounds what every thread parses at once, whatever `--jobs` says.

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

/// Most bytes of source parsed and modelled at once, across every thread
/// of the process. A larger file (up to the file size ceiling) waits for
/// the whole budget and is then parsed alone.
pub const IN_FLIGHT: u64 = 2 << 20;

/// A budget of bytes that threads take from and give back.
struct Budget {
    total: u64,
    used: std::sync::Mutex<u64>,
    freed: std::sync::Condvar,
}

static BUDGET: Budget = Budget {
    total: IN_FLIGHT,
    used: std::sync::Mutex::new(0),
    freed: std::sync::Condvar::new(),
};

thread_local! {
    /// Whether this thread holds a permit already: a nested one is free,
    /// so a thread never waits for bytes it holds itself.
    static HOLDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Leave to parse and model `bytes` bytes of source, given back when
/// dropped (also while a panic unwinds).
#[must_use = "the budget is held only while the permit lives"]
pub struct Permit {
    bytes: u64,
}

/// Waits until `bytes` (at most the whole budget) are free, and takes them.
pub fn permit(bytes: usize) -> Permit {
    if HOLDING.with(|h| h.replace(true)) {
        return Permit { bytes: 0 };
    }
    let b = &BUDGET;
    let want = (bytes as u64).clamp(1, b.total);
    let mut used = b.used.lock().unwrap_or_else(|e| e.into_inner());
    while *used + want > b.total {
        used = b.freed.wait(used).unwrap_or_else(|e| e.into_inner());
    }
    *used += want;
    Permit { bytes: want }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        HOLDING.with(|h| h.set(false));
        let b = &BUDGET;
        let mut used = b.used.lock().unwrap_or_else(|e| e.into_inner());
        *used -= self.bytes;
        drop(used);
        b.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn permits_never_hold_more_than_the_budget_and_nest_for_free() {
        // Three MB each: two at once would pass the budget.
        let held = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let _p = permit(3 << 20);
                    // The same thread asks again (a nested parse): free.
                    let _q = permit(3 << 20);
                    let now = held.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    held.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 1);
        // Everything was given back: the whole budget can be taken.
        drop(permit(IN_FLIGHT as usize * 2));
    }
}
