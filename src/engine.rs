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

/// Deeper bracket nesting than this is reported as a parse error instead of
/// risking the parser's stack.
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
                    &format!("internal error while auditing this file ({msg}); please report it"),
                );
                f.path = path.to_string();
                f.message = format!("internal error: {}", f.message);
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
                &format!("brackets nest deeper than {MAX_NESTING} levels"),
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
                detail: false,
            },
        );
        drop(file);
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

/// The offset where bracket nesting first exceeds [`MAX_NESTING`]. Counts
/// brackets outside string and char literals and comments, roughly: it may
/// over-count, which only makes it stricter near the limit.
fn too_deep(bytes: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(i);
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'\'' if bytes.get(i + 1) == Some(&b'\\') => {
                // An escaped char literal: skip to its closing quote.
                let mut j = i + 2;
                while j < bytes.len() && j < i + 12 && bytes[j] != b'\'' {
                    j += 1;
                }
                i = j;
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}
