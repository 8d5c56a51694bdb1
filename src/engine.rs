//! Per-file work: read → pre-filter → parse → comments → model → checks →
//! suppressions → owned findings. Runs on a worker thread; nothing borrowed
//! from the syntax tree leaves it.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::checks::{self, CheckCtx, CheckId, Purposes, CHECKS};
use crate::config::Settings;
use crate::directives::purpose::{lookup, Placement};
use crate::directives::Directives;
use crate::finding::Finding;
use crate::model::extract::{self, Options};
use crate::model::FileModel;
use crate::pack::PackSet;
use crate::prefilter::Prefilter;
use crate::source::{SourceFile, Span};

/// Deeper bracket nesting (or a longer run of prefix operators) than this is
/// reported as a parse error instead of risking the parser's stack.
pub const MAX_NESTING: usize = 256;

/// What the run shares with every file.
pub struct Engine<'a> {
    pub packs: &'a PackSet,
    pub settings: &'a Settings,
    pub prefilter: Option<&'a Prefilter>,
    /// Only these checks run (the fixture harness); `None`: all enabled.
    pub only: Option<&'a [CheckId]>,
    /// Follows calls into other files of the crate for the fencing check.
    pub resolver: Option<&'a dyn crate::model::resolve::FnResolver>,
}

/// One file's outcome.
#[derive(Debug, Default)]
pub struct FileOutcome {
    pub findings: Vec<Finding>,
    /// The file was parsed (not skipped by the pre-filter).
    pub parsed: bool,
    /// A panic was caught while auditing it.
    pub internal_error: bool,
    /// Inventory rows, when asked for.
    pub locks: Vec<crate::inventory::LockRow>,
}

impl Engine<'_> {
    pub fn enabled(&self, id: CheckId) -> bool {
        match self.only {
            Some(only) => only.contains(&id) || id == CheckId::ParseError,
            None => self.settings.enabled(id),
        }
    }

    /// Audits one file given its bytes. Never panics: a panic inside is
    /// caught and reported as a finding.
    pub fn check_bytes(&self, path: &str, bytes: &[u8], inventory: bool) -> FileOutcome {
        let result = catch_unwind(AssertUnwindSafe(|| {
            self.check_inner(path, bytes, inventory)
        }));
        // Free the thread-local span map: it grows with every parsed file.
        proc_macro2::extra::invalidate_current_thread_spans();
        match result {
            Ok(o) => o,
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                let mut f = checks::parse_error_finding(
                    Span::default_at_start(),
                    &format!("lockaudit crashed on it ({msg})"),
                );
                f.path = path.to_string();
                f.message = format!("internal error: {}", f.message);
                f.labels.clear();
                f.help = Some(
                    "this is a bug in lockaudit: please report it with the file, or a \
                     reduced copy of it; the other files were audited"
                        .into(),
                );
                FileOutcome {
                    findings: vec![f],
                    parsed: true,
                    internal_error: true,
                    locks: Vec::new(),
                }
            }
        }
    }

    fn check_inner(&self, path: &str, bytes: &[u8], inventory: bool) -> FileOutcome {
        if forced_panic(path) {
            panic!("forced by LOCKAUDIT_INTERNAL_PANIC_ON");
        }
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                let src = SourceFile::new(path, String::from_utf8_lossy(bytes).into_owned());
                let pos = src.pos_of_offset(e.valid_up_to());
                let mut f = checks::parse_error_finding(
                    Span {
                        start: pos,
                        end: pos,
                    },
                    &format!(
                        "not UTF-8 text (invalid byte at offset {})",
                        e.valid_up_to()
                    ),
                );
                f.path = path.to_string();
                return self.finish(&src, vec![f], None);
            }
        };
        if let Some(pre) = self.prefilter {
            if !pre.could_match(text.as_bytes()) {
                return FileOutcome::default();
            }
        }
        let src = SourceFile::new(path, text);
        if let Some(offset) = too_deep(text.as_bytes()) {
            let pos = src.pos_of_offset(offset);
            let f = checks::parse_error_finding(
                Span {
                    start: pos,
                    end: pos,
                },
                &format!(
                    "brackets, generics or prefix operators nest deeper than {MAX_NESTING} levels"
                ),
            );
            return self.finish(&src, vec![f], None);
        }
        let file = match syn::parse_file(&src.text) {
            Ok(f) => f,
            Err(e) => {
                let s = e.span().start();
                let pos = src.pos_of_line_col(s.line, s.column);
                let f = checks::parse_error_finding(
                    Span {
                        start: pos,
                        end: pos,
                    },
                    &e.to_string(),
                );
                return self.finish(&src, vec![f], None);
            }
        };
        let directives = Directives::scan(&src.text);
        let model = extract::extract(
            &file,
            &src,
            self.packs,
            &Options {
                lock_name: &self.settings.lock_name,
                // A file the pre-filter let through is nearly always lock
                // code: model it in detail at once rather than twice.
                detail: self.prefilter.is_some(),
            },
        );
        drop(file);
        if let Some(line) = model.too_deep {
            let pos = src.pos_of_line_col(line, 0);
            let f = checks::parse_error_finding(
                Span {
                    start: pos,
                    end: pos,
                },
                &format!(
                    "an expression here nests deeper than {} levels",
                    extract::MAX_EXPR_DEPTH
                ),
            );
            return self.finish(&src, vec![f], None);
        }
        let purposes = resolve_purposes(&model, &directives);
        let ctx = CheckCtx {
            src: &src,
            model: &model,
            packs: self.packs,
            directives: &directives,
            purposes: &purposes,
            default_purpose: self.settings.default_purpose,
            lock_name: &self.settings.lock_name,
            resolver: self.resolver,
        };
        let mut findings = Vec::new();
        for info in CHECKS {
            if let Some(run) = info.run {
                if self.enabled(info.id) {
                    run(&ctx, &mut findings);
                }
            }
        }
        let locks = if inventory {
            crate::inventory::rows(&ctx)
        } else {
            Vec::new()
        };
        let mut out = self.finish(&src, findings, Some(&directives));
        out.locks = locks;
        out
    }

    /// Suppressions, severities, paths and fingerprints.
    fn finish(
        &self,
        src: &SourceFile,
        mut findings: Vec<Finding>,
        directives: Option<&Directives>,
    ) -> FileOutcome {
        findings.retain(|f| self.enabled(f.check));
        if let Some(d) = directives {
            let mut used: Vec<Vec<bool>> = d
                .suppressions
                .iter()
                .map(|s| vec![false; s.ids.len()])
                .collect();
            for f in &mut findings {
                for (i, s) in d.suppressions.iter().enumerate() {
                    if !s.covers_line(f.span.start.line) {
                        continue;
                    }
                    if let Some(j) = s.ids.iter().position(|id| id == f.check.as_str()) {
                        used[i][j] = true;
                        if f.suppressed.is_none() {
                            f.suppressed = Some(s.reason.clone().unwrap_or_default());
                            if s.reason.is_none() {
                                f.notes.push(
                                    "suppressed without a reason: say why after the `allow(...)`"
                                        .into(),
                                );
                            }
                        }
                    }
                }
            }
            if self.enabled(CheckId::UnusedSuppression) {
                let enabled = |id: CheckId| self.enabled(id);
                findings.extend(checks::unused_suppression_findings(
                    src,
                    &d.suppressions,
                    &used,
                    &enabled,
                ));
            }
        }
        for f in &mut findings {
            f.path = src.path.clone();
            if let Some(sev) = self.settings.severity(f.check) {
                f.severity = sev;
            }
        }
        crate::fingerprint::assign(src, &mut findings, &self.settings.repo_prefix);
        FileOutcome {
            findings,
            parsed: true,
            internal_error: false,
            locks: Vec::new(),
        }
    }
}

/// `LOCKAUDIT_INTERNAL_PANIC_ON=<file name>` makes auditing that file
/// panic: how the tests prove that one file's crash loses no other file.
fn forced_panic(path: &str) -> bool {
    static NAME: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    NAME.get_or_init(|| std::env::var("LOCKAUDIT_INTERNAL_PANIC_ON").ok())
        .as_deref()
        .is_some_and(|n| !n.is_empty() && path.rsplit('/').next() == Some(n))
}

fn resolve_purposes(model: &FileModel, d: &Directives) -> Purposes {
    let mut lookups = vec![None; model.events.len()];
    for e in model.takes() {
        let f = &model.fns[e.func];
        let placement = Placement {
            // The statement that holds the call; a builder continued from an
            // earlier `let` starts before it, but is annotated here.
            stmt_line: e.stmt_line,
            last_line: e.span.end.line.max(e.stmt_line),
            fn_line: Some(f.first_line),
        };
        lookups[e.id] = Some(lookup(&d.annotations, &d.lexed, &placement));
    }
    Purposes { lookups }
}

/// The offset where bracket nesting, generic nesting or a run of prefix
/// operators first exceeds [`MAX_NESTING`]. A rough lexer: it skips comments (nested block
/// comments too), string, raw string and char literals; where it misreads,
/// it can only over-count, which makes it stricter near the limit.
fn too_deep(bytes: &[u8]) -> Option<usize> {
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut depth = 0usize;
    // Prefix operators in a row (`!!!!x`, `- - -x`, `&&&&x`, `|| || ||`)
    // nest like brackets in the parser.
    let mut ops = 0usize;
    let mut angles = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        match b {
            b'!' | b'-' | b'*' | b'&' | b'|' if !(b == b'*' && next == Some(b'/')) => {
                ops += 1;
                if ops > MAX_NESTING {
                    return Some(i);
                }
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            _ => {}
        }
        if !(b == b'/' && matches!(next, Some(b'/' | b'*'))) {
            ops = 0;
        }
        match b {
            // Generic arguments: `Vec<`, `::<`. A comparison written `a<b`
            // also counts, but only until the statement or block ends.
            b'<' if i > 0 && (ident(bytes[i - 1]) || bytes[i - 1] == b':') => {
                angles += 1;
                if angles > MAX_NESTING {
                    return Some(i);
                }
            }
            b'>' => angles = angles.saturating_sub(1),
            b';' => angles = 0,
            b'(' | b'[' | b'{' => {
                if b == b'{' {
                    angles = 0;
                }
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(i);
                }
            }
            b')' | b']' | b'}' => {
                if b == b'}' {
                    angles = 0;
                }
                depth = depth.saturating_sub(1);
            }
            b'"' => i = skip_string(bytes, i + 1),
            b'r' if (i == 0
                || !ident(bytes[i - 1])
                || (bytes[i - 1] == b'b' && (i < 2 || !ident(bytes[i - 2])))) =>
            {
                let mut j = i + 1;
                while bytes.get(j) == Some(&b'#') {
                    j += 1;
                }
                if bytes.get(j) == Some(&b'"') {
                    let hashes = j - i - 1;
                    i = skip_raw_string(bytes, j + 1, hashes);
                }
            }
            b'\'' if next == Some(b'\\') => {
                // An escaped char literal: skip to its closing quote.
                let mut j = i + 2;
                while j < bytes.len() && j < i + 12 && bytes[j] != b'\'' {
                    j += 1;
                }
                i = j;
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'/' if next == Some(b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if next == Some(b'*') => {
                let mut level = 1;
                i += 2;
                while i < bytes.len() && level > 0 {
                    if bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'*') {
                        level += 1;
                        i += 1;
                    } else if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                        level -= 1;
                        i += 1;
                    }
                    i += 1;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The offset of the closing quote of a string whose text starts at `i`.
fn skip_string(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i] != b'"' {
        if bytes[i] == b'\\' {
            i += 1;
        }
        i += 1;
    }
    i
}

/// The offset of the last `#` closing a raw string (`"` followed by
/// `hashes` of them) whose text starts at `i`.
fn skip_raw_string(bytes: &[u8], mut i: usize, hashes: usize) -> usize {
    while i < bytes.len() {
        if bytes[i] == b'"'
            && bytes.len() >= i + 1 + hashes
            && bytes[i + 1..i + 1 + hashes].iter().all(|&h| h == b'#')
        {
            return i + hashes;
        }
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_outside_literals_and_comments() {
        let deep = |n: usize, open: &str| format!("fn f() {{ {} }}", open.repeat(n));
        assert!(too_deep(deep(MAX_NESTING + 1, "(").as_bytes()).is_some());
        assert!(too_deep(deep(MAX_NESTING - 5, "(").as_bytes()).is_none());
        assert!(too_deep(deep(MAX_NESTING + 1, "!").as_bytes()).is_some());
        assert!(too_deep(deep(MAX_NESTING + 1, "- ").as_bytes()).is_some());
        assert!(too_deep(deep(MAX_NESTING + 1, "Vec<").as_bytes()).is_some());
        // Inside literals and comments nothing counts.
        let quiet = [
            format!("const S: &str = \"{}\";", "(".repeat(1000)),
            format!("const S: &str = r#\"\"{}\"#;", "(".repeat(1000)),
            format!("const S: &[u8] = br\"{}\";", "[".repeat(1000)),
            format!("// {}\nfn f() {{}}", "-".repeat(1000)),
            format!(
                "/* /* {} */ {} */ fn f() {{}}",
                "*".repeat(1000),
                "(".repeat(1000)
            ),
            format!("fn f() {{ {} }}", "'('".repeat(1000)),
            format!("fn f() {{ {} }}", "a && b ".repeat(1000)),
            format!("fn f() {{ {} }}", "let x = a<b; ".repeat(1000)),
        ];
        for q in quiet {
            assert_eq!(too_deep(q.as_bytes()), None, "{}", &q[..40]);
        }
    }
}
