//! Per-file work: read → pre-filter → comments and nesting → parse → model →
//! checks → suppressions → owned findings. Runs on a worker thread; nothing
//! borrowed from the syntax tree leaves it.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::checks::{self, CheckCtx, CheckId, CHECKS};
use crate::config::Settings;
use crate::directives::Directives;
use crate::finding::Finding;
use crate::model::extract::{self, Options};
use crate::model::locks::Locks;
use crate::model::resolve::{Asked, FnIndex, Manifests};
use crate::pack::PackSet;
use crate::prefilter::Prefilter;
use crate::source::{SourceFile, Span};

/// What the run shares with every file.
#[derive(Clone, Copy)]
pub struct Engine<'a> {
    pub packs: &'a PackSet,
    pub settings: &'a Settings,
    pub prefilter: Option<&'a Prefilter>,
    /// Only these checks run (the fixture harness); `None`: all enabled.
    pub only: Option<&'a [CheckId]>,
    /// Names the crate of a file (a lock crate's own source is evidence).
    pub manifests: Option<&'a Manifests>,
    /// The functions of other files of the crate the fencing check follows
    /// calls into, indexed before the audit that uses them.
    pub fns: Option<&'a FnIndex>,
    /// Take each file's words ([`FileOutcome::words`]) in its first audit,
    /// for the crate passes. The
    /// editor does: its session reuses them across edits. A batch run does
    /// not: only the files of a crate whose other files offer something are
    /// asked for words, and those are read and taken then (most crates
    /// offer nothing, and taking every file's words was a tenth of a run).
    pub words: bool,
    /// Counts the files parsed, when set (tests that prove what a run
    /// parses again).
    pub parses: Option<&'a std::sync::atomic::AtomicUsize>,
    /// Counts the files judged again from their facts, when set.
    pub judged: Option<&'a std::sync::atomic::AtomicUsize>,
}

impl<'a> Engine<'a> {
    /// The engine of a run: every enabled check, no pre-filter, nothing
    /// known of other files yet. `check`, `inventory`, `--new-since`, the
    /// language server and the tests all start here.
    pub fn new(packs: &'a PackSet, settings: &'a Settings) -> Self {
        Engine {
            packs,
            settings,
            prefilter: None,
            only: None,
            manifests: None,
            fns: None,
            words: false,
            parses: None,
            judged: None,
        }
    }

    /// Counts each file parsed in `parses`.
    pub fn counting(self, parses: &'a std::sync::atomic::AtomicUsize) -> Self {
        Engine {
            parses: Some(parses),
            ..self
        }
    }

    /// Counts each file judged again from its facts in `judged`.
    pub fn counting_judged(self, judged: &'a std::sync::atomic::AtomicUsize) -> Self {
        Engine {
            judged: Some(judged),
            ..self
        }
    }

    /// Takes the words in the first audit (see [`Engine::words`]): the
    /// editor's session does.
    pub fn keeping_words(self, words: bool) -> Self {
        Engine { words, ..self }
    }

    /// Skips the files the pre-filter proves lock-free.
    pub fn with_prefilter(self, prefilter: Option<&'a Prefilter>) -> Self {
        Engine { prefilter, ..self }
    }

    /// Reads the manifest of a file's crate for its name.
    pub fn with_manifests(self, manifests: &'a Manifests) -> Self {
        Engine {
            manifests: Some(manifests),
            ..self
        }
    }

    /// Runs only `only` (and `parse-error`).
    pub fn only(self, only: &'a [CheckId]) -> Self {
        Engine {
            only: Some(only),
            ..self
        }
    }

    /// Follows calls into the functions `fns` indexed.
    pub fn with_fns(self, fns: &'a FnIndex) -> Self {
        Engine {
            fns: Some(fns),
            ..self
        }
    }
}

/// What the other files of a file's crate tell its extraction.
pub struct Cross<'a> {
    /// Their wrappers, by name.
    pub imported: &'a std::collections::HashMap<String, crate::model::Wrapper>,
    /// This file's wrappers that they call.
    pub called_elsewhere: &'a crate::model::CalledElsewhere,
    /// Statement texts they keep under a name this file uses.
    pub texts: &'a std::collections::HashMap<String, Vec<String>>,
    /// Type aliases they define under a name this file uses.
    pub types: Option<&'a std::collections::HashMap<String, String>>,
    /// Their outermost calls of this file's wrappers, by the key of the
    /// wrapper whose lock call they reach.
    pub reached_from: Option<&'a std::collections::HashMap<String, Vec<crate::model::SiteReport>>>,
}

/// One file's outcome.
#[derive(Debug, Default, Clone)]
pub struct FileOutcome {
    pub findings: Vec<Finding>,
    /// The file was parsed (not skipped by the pre-filter).
    pub parsed: bool,
    /// A panic was caught while auditing it.
    pub internal_error: bool,
    /// Inventory rows, when asked for.
    pub locks: Vec<crate::inventory::LockRow>,
    /// The file's wrappers, for the other files of its crate.
    pub wrappers: Vec<(String, crate::model::Wrapper)>,
    /// The wrappers it calls, by name.
    pub wrappers_called: Vec<String>,
    /// Those of them some call holds the outcome of (not only the tail of
    /// a closure or `async` block).
    pub wrappers_held: Vec<String>,
    /// Statement texts its constants and functions hold, by name.
    pub texts: Vec<(String, Vec<String>)>,
    /// Its type aliases, by name.
    pub type_aliases: Vec<(String, String)>,
    /// Those of its type aliases that name a lock client's type (`type
    /// Api = kube::Api<LeaseObject>;`): the crate's other files learn what
    /// a receiver declared with one is.
    pub client_types: Vec<String>,
    /// What its calls of wrappers say, for the files defining the lock
    /// calls they reach.
    pub sites: Vec<crate::model::SiteReport>,
    /// Functions of other files its checks asked for and the engine's
    /// index did not have.
    pub asked: Asked,
    /// Its words, when the engine keeps them: every file read has them,
    /// parsed or not.
    pub words: Option<crate::words::FileWords>,
    /// Its facts, when the crate passes may judge it again: it offers
    /// wrappers (judged again knowing which other files call), or its
    /// checks asked for functions of other files (judged again once those
    /// are indexed). It is not read or parsed again for either.
    pub facts: Option<std::sync::Arc<FileFacts>>,
}

impl FileOutcome {
    /// Whether the file offers the other files of its crate something:
    /// wrappers, statement texts, or a type alias of a lock client's type.
    pub fn offers(&self) -> bool {
        !self.wrappers.is_empty() || !self.texts.is_empty() || !self.client_types.is_empty()
    }
}

/// What the audit of a parsed file keeps to judge it again without its
/// text or syntax tree: owned, `Send`, built once.
pub struct FileFacts {
    pub src: std::sync::Arc<SourceFile>,
    pub directives: std::sync::Arc<Directives>,
    pub model: std::sync::Arc<crate::model::FileModel>,
    pub locks: Locks,
    /// Where each function item stands (suppressions above a function).
    fn_lines: Vec<FnLines>,
    /// The lines under `#[cfg(test)]`, when the config excludes them.
    test_lines: Vec<(usize, usize)>,
    /// What its calls of wrappers say, for the files defining them.
    sites: Vec<crate::model::SiteReport>,
    /// What the syntax tree fixed in its first judgement, by check and
    /// place (a finding it had no fix for too): carried to a later one.
    fixes: Vec<(CheckId, Span, Option<crate::fix::Fix>)>,
}

impl std::fmt::Debug for FileFacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileFacts")
            .field("path", &self.src.path)
            .finish_non_exhaustive()
    }
}

impl FileFacts {
    /// About how many bytes it holds (an editor session bounds what it
    /// keeps): its text, with the line table and model it implies.
    pub fn size(&self) -> usize {
        self.src.text.len() * 4
    }
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
        self.check_bytes_with(path, bytes, inventory, None)
    }

    /// [`Engine::check_bytes`], knowing the wrappers of the file's crate.
    pub fn check_bytes_with(
        &self,
        path: &str,
        bytes: &[u8],
        inventory: bool,
        cross: Option<&Cross>,
    ) -> FileOutcome {
        let result = catch_unwind(AssertUnwindSafe(|| {
            self.check_inner(path, bytes, inventory, cross)
        }));
        // Free the thread-local span map: it grows with every parsed file.
        proc_macro2::extra::invalidate_current_thread_spans();
        match result {
            Ok(mut o) => {
                if self.words {
                    o.words = Some(crate::words::FileWords::of(bytes));
                }
                o
            }
            Err(panic) => self.crashed(path, panic),
        }
    }

    /// The finding of a file whose audit panicked.
    fn crashed(&self, path: &str, panic: Box<dyn std::any::Any + Send>) -> FileOutcome {
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
            ..FileOutcome::default()
        }
    }

    fn check_inner(
        &self,
        path: &str,
        bytes: &[u8],
        inventory: bool,
        cross: Option<&Cross>,
    ) -> FileOutcome {
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
        // Inside a lock crate's own source the crate is evidence: the
        // pre-filter counts it as seen, since the source never names it.
        let own_crate = self
            .manifests
            .and_then(|r| r.crate_name(path))
            .filter(|c| self.packs.crate_names.contains(c));
        if let Some(pre) = self.prefilter {
            let could = match &own_crate {
                Some(c) => pre.could_match_in(text.as_bytes(), c),
                None => pre.could_match(text.as_bytes()),
            };
            if !could {
                return FileOutcome::default();
            }
        }
        // Held until the file's model and findings are dropped: what every
        // thread parses at once stays within one budget.
        let _permit = crate::parse::permit(text.len());
        if let Some(n) = self.parses {
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let src = SourceFile::new(path, text);
        // The comment pass also measures nesting: deeper code never reaches
        // the parser, whose recursion could overflow the stack.
        let directives = Directives::scan(&src.text);
        let file = match crate::parse::file_measured(&src.text, directives.lexed.too_deep) {
            Ok(f) => f,
            Err(refused) => {
                let pos = match &refused {
                    crate::parse::Refused::TooDeep(offset) => src.pos_of_offset(*offset),
                    crate::parse::Refused::Syntax { line, column, .. } => {
                        src.pos_of_line_col(*line, *column)
                    }
                };
                let f = checks::parse_error_finding(
                    Span {
                        start: pos,
                        end: pos,
                    },
                    &refused.message(),
                );
                return self.finish(&src, vec![f], None);
            }
        };
        let model = extract::extract(
            &file,
            &src,
            self.packs,
            &Options {
                own_crate: own_crate.as_deref(),
                imported: cross.map(|c| c.imported),
                called_elsewhere: cross.map(|c| c.called_elsewhere),
                imported_texts: cross.map(|c| c.texts),
                imported_types: cross.and_then(|c| c.types),
                ..Options::new(&self.settings.lock_name)
            },
        );
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
        let mut model = model;
        crate::model::chains::settle_built(&mut model);
        let locks = Locks::build(
            &model,
            self.packs,
            &directives,
            self.settings.default_purpose,
        );
        crate::model::chains::wrapper_purposes(&mut model, &directives);
        let sites = crate::model::chains::site_reports(&model, &locks, &src.path);
        crate::model::chains::attach_reached(
            &mut model,
            &locks,
            cross.and_then(|c| c.reached_from),
            &src.path,
        );
        let mut facts = FileFacts {
            fn_lines: fn_lines(&file),
            test_lines: if self.settings.exclude_cfg_test {
                cfg_test_lines(&file)
            } else {
                Vec::new()
            },
            src: std::sync::Arc::new(src),
            directives: std::sync::Arc::new(directives),
            model: std::sync::Arc::new(model),
            locks,
            sites,
            fixes: Vec::new(),
        };
        let mut out = self.judge(&facts, Some(&file), self.fns, inventory);
        drop(file);
        // A file whose fencing check asked for other files' functions is
        // judged again once they are indexed, and one that offers wrappers
        // knowing which other files call them, from these facts: it is not
        // read or parsed again.
        if !out.asked.calls.is_empty() || !out.wrappers.is_empty() {
            facts.fixes = tree_fixes(&out.findings);
            out.facts = Some(std::sync::Arc::new(facts));
        }
        out
    }

    /// Runs the checks over a file's facts, knowing the other files'
    /// functions `fns`: suppressions, severities and fingerprints applied.
    /// With the syntax tree, fixes that need it are made; without, those
    /// the facts kept from the first judgement are carried over (no check
    /// whose findings carry one reads `fns`).
    fn judge(
        &self,
        facts: &FileFacts,
        file: Option<&syn::File>,
        fns: Option<&FnIndex>,
        inventory: bool,
    ) -> FileOutcome {
        let src = &facts.src;
        let directives = &facts.directives;
        let model = &*facts.model;
        let ctx = CheckCtx {
            src,
            model,
            packs: self.packs,
            directives,
            locks: &facts.locks,
            lock_name: &self.settings.lock_name,
            fns,
            asked: Default::default(),
        };
        let mut findings = Vec::new();
        for info in CHECKS {
            if let Some(run) = info.run {
                if self.enabled(info.id) {
                    run(&ctx, &mut findings);
                }
            }
        }
        checks::merge_same_place(&mut findings);
        match file {
            Some(file) => crate::fix::attach(&ctx, file, &mut findings),
            None => {
                for f in findings.iter_mut().filter(|f| f.fix.is_none()) {
                    f.fix = facts
                        .fixes
                        .iter()
                        .find(|(c, s, _)| *c == f.check && *s == f.span)
                        .and_then(|(_, _, fix)| fix.clone());
                }
            }
        }
        if let Some(purpose) = self.settings.default_purpose {
            // The config says what an unannotated acquisition is held to:
            // writing it down is exact.
            for f in findings
                .iter_mut()
                .filter(|f| f.check == CheckId::MissingPurpose)
            {
                f.fix = crate::fix::annotation_fix(src, &directives.lexed, f, purpose);
            }
        }
        let locks = if inventory {
            crate::inventory::rows(&ctx)
        } else {
            Vec::new()
        };
        let mut out = self.finish(src, findings, Some((directives, &facts.fn_lines)));
        let mut locks = locks;
        let test_lines = &facts.test_lines;
        if !test_lines.is_empty() {
            let in_test = |line: usize| test_lines.iter().any(|(a, b)| (*a..=*b).contains(&line));
            out.findings.retain(|f| !in_test(f.span.start.line));
            locks.retain(|r| !in_test(r.line));
        }
        out.locks = locks;
        out.wrappers = model.wrappers.clone();
        out.wrappers_called = model.wrappers_called.clone();
        out.wrappers_held = model.wrappers_held.clone();
        out.texts = model.texts.clone();
        out.type_aliases = model.type_aliases.clone();
        out.client_types = model
            .type_aliases
            .iter()
            .filter(|(_, t)| names_a_client_crate(t, self.packs))
            .map(|(n, _)| n.clone())
            .collect();
        out.sites = facts.sites.clone();
        out.asked = ctx.asked.take();
        out
    }

    /// Judges a file that defines wrappers again from the facts its audit
    /// kept, knowing which of them other files call (`called_elsewhere`)
    /// and the outermost calls that reach each (`reached_from`): its
    /// wrappers' inner calls are relayed again, nothing is read, parsed or
    /// walked. `None` when the facts cannot say it all (a fix only the
    /// syntax tree could make is wanted where the first judgement had
    /// none): the caller audits the file again.
    pub fn judge_as_definer(
        &self,
        facts: &FileFacts,
        called_elsewhere: &crate::model::CalledElsewhere,
        reached_from: &std::collections::HashMap<String, Vec<crate::model::SiteReport>>,
        inventory: bool,
    ) -> Option<FileOutcome> {
        if let Some(n) = self.judged {
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut model = extract::relayed_again(&facts.model, called_elsewhere)?;
            crate::model::chains::settle_built(&mut model);
            let locks = Locks::build(
                &model,
                self.packs,
                &facts.directives,
                self.settings.default_purpose,
            );
            crate::model::chains::wrapper_purposes(&mut model, &facts.directives);
            let sites = crate::model::chains::site_reports(&model, &locks, &facts.src.path);
            crate::model::chains::attach_reached(
                &mut model,
                &locks,
                Some(reached_from),
                &facts.src.path,
            );
            let mut again = FileFacts {
                src: facts.src.clone(),
                directives: facts.directives.clone(),
                model: std::sync::Arc::new(model),
                locks,
                fn_lines: facts.fn_lines.clone(),
                test_lines: facts.test_lines.clone(),
                sites,
                fixes: facts.fixes.clone(),
            };
            let mut out = self.judge(&again, None, self.fns, inventory);
            let wants_tree = out.findings.iter().any(|f| {
                crate::fix::from_tree(f.check)
                    && !facts
                        .fixes
                        .iter()
                        .any(|(c, s, _)| *c == f.check && *s == f.span)
            });
            if wants_tree {
                return None;
            }
            if !out.asked.calls.is_empty() || !out.wrappers.is_empty() {
                again.fixes = tree_fixes(&out.findings);
                out.facts = Some(std::sync::Arc::new(again));
            }
            Some(out)
        }));
        result.unwrap_or_else(|panic| Some(self.crashed(&facts.src.path, panic)))
    }

    /// Judges a file again from the facts its audit kept, knowing the
    /// functions of other files `fns` now indexes: nothing is read or
    /// parsed.
    pub fn judge_again(&self, facts: &FileFacts, fns: &FnIndex, inventory: bool) -> FileOutcome {
        if let Some(n) = self.judged {
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let result = catch_unwind(AssertUnwindSafe(|| {
            self.judge(facts, None, Some(fns), inventory)
        }));
        result.unwrap_or_else(|panic| self.crashed(&facts.src.path, panic))
    }

    /// A file larger than `max-file-size`: one note, nothing read.
    pub fn too_large(&self, path: &str, size: u64) -> FileOutcome {
        let src = SourceFile::new(path, String::new());
        let f = checks::too_large_finding(size, self.settings.max_file_size);
        let mut out = self.finish(&src, vec![f], None);
        out.parsed = false;
        out
    }

    /// Suppressions, severities, paths and fingerprints.
    fn finish(
        &self,
        src: &SourceFile,
        mut findings: Vec<Finding>,
        directives: Option<(&Directives, &[FnLines])>,
    ) -> FileOutcome {
        findings.retain(|f| self.enabled(f.check));
        if let Some((d, fns)) = directives {
            let mut used: Vec<Vec<bool>> = d
                .suppressions
                .iter()
                .map(|s| vec![false; s.ids.len()])
                .collect();
            for f in &mut findings {
                for (i, s) in d.suppressions.iter().enumerate() {
                    let line = f.span.start.line;
                    if !s.covers_line(line) && !covers_fn(s, fns, line) {
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
                let above_fn: Vec<bool> = d
                    .suppressions
                    .iter()
                    .map(|s| fn_below(s, fns).is_some())
                    .collect();
                findings.extend(checks::unused_suppression_findings(
                    src,
                    &d.suppressions,
                    &used,
                    &above_fn,
                    &enabled,
                ));
            }
        }
        for f in &mut findings {
            f.path = src.path.clone();
            // A file over the size limit is a note unless `checks:` sets
            // the severity of `parse-error`.
            let own_note = f.check == CheckId::ParseError
                && f.severity == crate::finding::Severity::Note
                && !self.settings.checks.contains_key(&f.check);
            if let Some(sev) = self.settings.severity(f.check) {
                if !own_note {
                    f.severity = sev;
                }
            }
        }
        crate::fingerprint::assign(src, &mut findings, &self.settings.repo_prefix);
        FileOutcome {
            findings,
            parsed: true,
            ..FileOutcome::default()
        }
    }
}

/// The fixes the syntax tree made for `findings` (or could not), by check
/// and place.
fn tree_fixes(findings: &[Finding]) -> Vec<(CheckId, Span, Option<crate::fix::Fix>)> {
    findings
        .iter()
        .filter(|f| crate::fix::from_tree(f.check))
        .map(|f| (f.check, f.span, f.fix.clone()))
        .collect()
}

/// The lines (first, last) of the items under `#[cfg(test)]`: modules,
/// functions, `impl`s and the functions inside them, at any depth of
/// inline modules.
fn cfg_test_lines(file: &syn::File) -> Vec<(usize, usize)> {
    fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
        attrs.iter().any(|a| {
            a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
        })
    }
    // (first line, last line) from the item's own first and last tokens.
    fn item_lines(item: &syn::Item) -> Option<(usize, usize)> {
        match item {
            syn::Item::Mod(m) => {
                let end = match &m.content {
                    Some((brace, _)) => brace.span.close(),
                    None => m.semi?.span,
                };
                let start = m.unsafety.map_or(m.mod_token.span, |u| u.span);
                Some((first_line(&m.attrs, Some(&m.vis), start), end.end().line))
            }
            syn::Item::Fn(f) => {
                let l = FnLines::of(&f.attrs, Some(&f.vis), &f.sig, &f.block);
                Some((l.attrs, l.end))
            }
            syn::Item::Impl(i) => {
                let start = i
                    .defaultness
                    .map(|d| d.span)
                    .or(i.unsafety.map(|u| u.span))
                    .unwrap_or(i.impl_token.span);
                Some((
                    first_line(&i.attrs, None, start),
                    i.brace_token.span.close().end().line,
                ))
            }
            _ => None,
        }
    }
    fn items(list: &[syn::Item], out: &mut Vec<(usize, usize)>) {
        for item in list {
            let attrs: &[syn::Attribute] = match item {
                syn::Item::Mod(m) => &m.attrs,
                syn::Item::Fn(f) => &f.attrs,
                syn::Item::Impl(i) => &i.attrs,
                _ => &[],
            };
            if is_cfg_test(attrs) {
                out.extend(item_lines(item));
                continue;
            }
            match item {
                syn::Item::Mod(m) => {
                    if let Some((_, inner)) = &m.content {
                        items(inner, out);
                    }
                }
                syn::Item::Impl(i) => {
                    for f in &i.items {
                        if let syn::ImplItem::Fn(f) = f {
                            if is_cfg_test(&f.attrs) {
                                let l = FnLines::of_method(f);
                                out.push((l.attrs, l.end));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    items(&file.items, &mut out);
    out
}

/// Where a function item stands: the first line of its attributes and doc
/// comments, the line of its `fn`, its last line.
#[derive(Debug, Clone, Copy)]
pub struct FnLines {
    pub attrs: usize,
    pub sig: usize,
    pub end: usize,
}

/// Every function item of a file (free functions, methods, trait methods
/// with a body, in inline modules too), not those inside function bodies.
/// Lines come from the item's first and last tokens ([`first_line`], the
/// body's closing brace): asking syn for a whole item's span prints the
/// item back into tokens, once per item.
fn fn_lines(file: &syn::File) -> Vec<FnLines> {
    fn items(list: &[syn::Item], out: &mut Vec<FnLines>) {
        for item in list {
            match item {
                syn::Item::Fn(f) => out.push(FnLines::of(&f.attrs, Some(&f.vis), &f.sig, &f.block)),
                syn::Item::Impl(i) => {
                    for it in &i.items {
                        if let syn::ImplItem::Fn(f) = it {
                            out.push(FnLines::of_method(f));
                        }
                    }
                }
                syn::Item::Trait(t) => {
                    for it in &t.items {
                        if let syn::TraitItem::Fn(f) = it {
                            if let Some(body) = &f.default {
                                out.push(FnLines::of(&f.attrs, None, &f.sig, body));
                            }
                        }
                    }
                }
                syn::Item::Mod(m) => {
                    if let Some((_, inner)) = &m.content {
                        items(inner, out);
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    items(&file.items, &mut out);
    out
}

impl FnLines {
    /// A function's lines from its first and last tokens.
    fn of(
        attrs: &[syn::Attribute],
        vis: Option<&syn::Visibility>,
        sig: &syn::Signature,
        body: &syn::Block,
    ) -> FnLines {
        FnLines {
            attrs: first_line(attrs, vis, sig_start(sig)),
            sig: sig.fn_token.span.start().line,
            end: body.brace_token.span.close().end().line,
        }
    }

    /// A method's, whose first token may be `default`.
    fn of_method(f: &syn::ImplItemFn) -> FnLines {
        let mut l = FnLines::of(&f.attrs, Some(&f.vis), &f.sig, &f.block);
        if let Some(d) = f.defaultness {
            if f.attrs.is_empty() && matches!(f.vis, syn::Visibility::Inherited) {
                l.attrs = d.span.start().line;
            }
        }
        l
    }
}

/// The first token of a signature: `const`, `async`, `unsafe`, `extern`
/// or `fn`, whichever comes first.
fn sig_start(sig: &syn::Signature) -> proc_macro2::Span {
    sig.constness
        .map(|t| t.span)
        .or(sig.asyncness.map(|t| t.span))
        .or(sig.unsafety.map(|t| t.span))
        .or(sig.abi.as_ref().map(|a| a.extern_token.span))
        .unwrap_or(sig.fn_token.span)
}

/// The line an item starts on: its first attribute or doc comment, else
/// its visibility, else `after` (its first keyword).
fn first_line(
    attrs: &[syn::Attribute],
    vis: Option<&syn::Visibility>,
    after: proc_macro2::Span,
) -> usize {
    let vis = vis.and_then(|v| match v {
        syn::Visibility::Public(p) => Some(p.span),
        syn::Visibility::Restricted(r) => Some(r.pub_token.span),
        syn::Visibility::Inherited => None,
    });
    attrs
        .first()
        .map(|a| a.pound_token.span)
        .or(vis)
        .unwrap_or(after)
        .start()
        .line
}

/// The function a line suppression stands above (among or after its
/// attributes and doc comments, before its `fn`): it covers the whole
/// function, as `#[allow(..)]` on a function does.
fn fn_below<'f>(
    s: &crate::directives::suppression::Suppression,
    fns: &'f [FnLines],
) -> Option<&'f FnLines> {
    if s.file_level || s.trailing {
        return None;
    }
    let below = s.line + 1;
    fns.iter().find(|f| f.attrs <= below && below <= f.sig)
}

/// Whether `line` is in the function the suppression stands above.
fn covers_fn(
    s: &crate::directives::suppression::Suppression,
    fns: &[FnLines],
    line: usize,
) -> bool {
    fn_below(s, fns).is_some_and(|f| s.line <= line && line <= f.end)
}

/// `LOCKAUDIT_INTERNAL_PANIC_ON=<file name>` makes auditing that file
/// panic: how the tests prove that one file's crash loses no other file.
fn forced_panic(path: &str) -> bool {
    static NAME: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    NAME.get_or_init(|| std::env::var("LOCKAUDIT_INTERNAL_PANIC_ON").ok())
        .as_deref()
        .is_some_and(|n| !n.is_empty() && path.rsplit('/').next() == Some(n))
}

/// Whether a type's text names a path in one of the packs' crates
/// (`kube::Api<LeaseObject>`, `redis::aio::Connection`), as the pre-filter's
/// test of a type alias does.
fn names_a_client_crate(text: &str, packs: &PackSet) -> bool {
    use crate::words::is_ident_byte;
    packs.crate_names.iter().any(|c| {
        text.match_indices(c.as_str()).any(|(i, _)| {
            (i == 0 || !is_ident_byte(text.as_bytes()[i - 1]))
                && text[i + c.len()..].starts_with("::")
        })
    })
}

#[cfg(test)]
mod tests {
    use syn::spanned::Spanned;

    /// The wrappers a file offers its crate, by name.
    fn wrappers_of(text: &str) -> Vec<String> {
        let packs = crate::pack::PackSet::builtin();
        let settings = crate::config::Settings::default();
        let out = super::Engine::new(&packs, &settings).check_bytes(
            "src/args.rs",
            text.as_bytes(),
            false,
        );
        out.wrappers.into_iter().map(|(name, _)| name).collect()
    }

    /// A read whose key is a parameter makes its function a candidate
    /// wrapper (a caller may name a lock), unless the parameter is declared
    /// a number or a flag, or the receiver a standard collection: those
    /// are an index and a map, followed into no caller.
    #[test]
    fn an_index_or_a_map_makes_no_wrapper() {
        let head = "use redis::Commands;\npub struct Args(Vec<String>);\n";
        let by_key = format!(
            "{head}pub fn owner(con: &mut redis::Connection, key: &str) -> Option<String> {{ con.get(key).ok() }}\n"
        );
        assert_eq!(wrappers_of(&by_key), ["owner"]);
        for body in [
            "pub fn nth(args: &Args, idx: usize) -> Option<String> { args.0.get(idx).cloned() }",
            "pub fn nth(args: &Args, i: u32, flag: bool) -> Option<String> { let _ = flag; args.0.get(i).cloned() }",
            "pub fn nth(m: &std::collections::HashMap<String, String>, key: &str) -> Option<String> { m.get(key).cloned() }",
        ] {
            assert_eq!(wrappers_of(&format!("{head}{body}\n")), Vec::<String>::new(), "{body}");
        }
    }

    const ITEMS: &str = r#"
/// A doc comment.
#[inline]
pub async fn a() {
}

pub(crate)
unsafe extern "C" fn b() {}

const fn c() -> u8 { 1 }

#[cfg(test)]
mod tests {
    fn d() {
        let _ = 1;
    }
}

#[cfg(test)]
mod outside;

struct S;
#[cfg(test)]
unsafe impl Send for S {}

impl S {
    #[cfg(test)]
    pub fn e(&self) {}

    async
    fn f() {}
}

trait T {
    /// Provided.
    fn g() {
        ()
    }
    fn h();
}
"#;

    /// The lines taken from an item's first and last tokens are the lines
    /// of the span syn joins from all of its tokens.
    #[test]
    fn item_lines_agree_with_the_joined_span() {
        let file = syn::parse_file(ITEMS).unwrap();
        // (first line, `fn` line, last line) of a function, from syn.
        fn joined(span: proc_macro2::Span, sig: &syn::Signature) -> (usize, usize, usize) {
            (
                span.start().line,
                sig.fn_token.span.start().line,
                span.end().line,
            )
        }
        let mut want = Vec::new();
        let mut want_test = Vec::new();
        for item in &file.items {
            let s = item.span();
            match item {
                syn::Item::Fn(f) => want.push((
                    s.start().line,
                    f.sig.fn_token.span.start().line,
                    s.end().line,
                )),
                syn::Item::Mod(m) => {
                    want_test.push((s.start().line, s.end().line));
                    for inner in m.content.iter().flat_map(|c| &c.1) {
                        if let syn::Item::Fn(f) = inner {
                            want.push(joined(f.span(), &f.sig));
                        }
                    }
                }
                syn::Item::Impl(i) => {
                    if !i.attrs.is_empty() {
                        want_test.push((s.start().line, s.end().line));
                    }
                    for it in &i.items {
                        if let syn::ImplItem::Fn(f) = it {
                            let s = f.span();
                            want.push(joined(s, &f.sig));
                            if !f.attrs.is_empty() {
                                want_test.push((s.start().line, s.end().line));
                            }
                        }
                    }
                }
                syn::Item::Trait(t) => {
                    for it in &t.items {
                        if let syn::TraitItem::Fn(f) = it {
                            if f.default.is_some() {
                                want.push(joined(f.span(), &f.sig));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        let got: Vec<(usize, usize, usize)> = super::fn_lines(&file)
            .iter()
            .map(|f| (f.attrs, f.sig, f.end))
            .collect();
        want.sort();
        let mut got_sorted = got.clone();
        got_sorted.sort();
        assert_eq!(got_sorted, want);
        assert_eq!(got.len(), 7);
        let mut test = super::cfg_test_lines(&file);
        test.sort();
        want_test.sort();
        assert_eq!(test, want_test);
        assert_eq!(test.len(), 4);
    }
}
