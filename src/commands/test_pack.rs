//! `lockaudit test-pack PACK [FIXTURES...]`: a user's rule pack tested
//! against fixture files, as `semgrep --test` and `sg test` test rules.
//! Each fixture is audited with the pack (and the built-in packs, as a
//! config naming the pack would load them), every check at its default
//! severity, and its findings are compared with the `//~` markers in it:
//!
//! - `code(); //~ unowned-release` — a finding of that check starts on this line
//! - `//~^ id` / `//~^^ id` — one / two lines above; `//~v id` — the line below
//! - `//~ id-a, id-b` — two findings on this line
//! - `//~ 17 id` — also the 1-based column
//! - `//~ id "text"` — also that the message contains `text`
//!
//! A finding no marker expects and a marker no finding meets are both
//! listed; either makes the exit code 1. A fixture without markers asserts
//! that nothing is found in it.

use std::path::{Path, PathBuf};

use crate::cli::TestPackArgs;
use crate::config::Settings;
use crate::engine::Engine;
use crate::exit::ExitStatus;
use crate::exit::Failure;
use crate::finding::Finding;
use crate::markers::{compare, parse as markers};
use crate::pack::PackSet;
use crate::walk;

/// The `.rs` files under `dir` (not in hidden directories or `target/`),
/// sorted; at most a bounded number.
fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    const MAX_FILES: usize = 10_000;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name();
            let hidden = name.to_string_lossy().starts_with('.');
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() && !hidden && name != "target" {
                stack.push(p);
            } else if ft.is_file() && p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
                if out.len() >= MAX_FILES {
                    return;
                }
            }
        }
    }
}

pub fn run(args: &TestPackArgs) -> Result<ExitStatus, Failure> {
    let cwd = std::env::current_dir()?;
    let pack = &args.pack;
    if !pack.is_file() {
        return Err(Failure(format!(
            "{}: no such rule pack file",
            crate::escape::path(pack)
        )));
    }
    let settings = Settings {
        rules: vec![pack.clone()],
        ..Settings::default()
    };
    let packs = PackSet::load(&settings.rules, &cwd).map_err(|errs| {
        for e in &errs {
            crate::diag::print_yaml_errors(e);
        }
        Failure(String::new())
    })?;
    let mut files = Vec::new();
    if args.fixtures.is_empty() {
        let dir = match pack.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        rs_files(&dir, &mut files);
    } else {
        for f in &args.fixtures {
            if f.is_dir() {
                rs_files(f, &mut files);
            } else if f.is_file() {
                files.push(f.clone());
            } else {
                return Err(Failure(format!(
                    "{}: no such file or directory",
                    crate::escape::path(f)
                )));
            }
        }
    }
    files.sort();
    files.dedup();
    if files.is_empty() {
        return Err(Failure(format!(
            "no fixtures: no `.rs` file beside {} (name fixture files or directories after the pack)",
            crate::escape::path(pack)
        )));
    }
    let engine = Engine::new(&packs, &settings);
    let mut failed = 0;
    let mut expected_total = 0;
    let mut report = String::new();
    for file in &files {
        let shown = walk::display_path(file, &cwd);
        let bytes = crate::source::read_capped(file, settings.max_file_size)
            .map_err(|e| Failure(format!("{}: cannot read: {e}", crate::escape::text(&shown))))?
            .map_err(|size| {
                Failure(format!(
                    "{}: {size} bytes, larger than the fixture limit",
                    crate::escape::text(&shown)
                ))
            })?;
        let text = String::from_utf8_lossy(&bytes);
        let expected =
            markers(&text).map_err(|e| Failure(format!("{}: {e}", crate::escape::text(&shown))))?;
        expected_total += expected.len();
        let out = engine.check_bytes(&shown, &bytes, false);
        let findings: Vec<Finding> = out
            .findings
            .into_iter()
            .filter(|f| f.suppressed.is_none())
            .collect();
        let m = compare(&expected, &findings);
        if m.missing.is_empty() && m.extra.is_empty() {
            continue;
        }
        failed += 1;
        let shown = crate::escape::text(&shown);
        for e in &m.missing {
            let col = e.column.map(|c| format!(":{c}")).unwrap_or_default();
            let text = e
                .text
                .as_ref()
                .map(|t| format!(" with \"{}\"", crate::escape::text(t)))
                .unwrap_or_default();
            report.push_str(&format!(
                "{shown}:{}{col}: missing: {}{text} (a marker expects it; no such finding)\n",
                e.line,
                e.check.as_str()
            ));
        }
        for f in &m.extra {
            report.push_str(&format!(
                "{shown}:{}:{}: extra: {}: {} (no marker expects it)\n",
                f.span.start.line,
                f.span.start.column,
                f.check.as_str(),
                crate::escape::text(&f.message)
            ));
        }
    }
    let n = files.len();
    let plural = crate::report::plural;
    if failed == 0 {
        report.push_str(&format!(
            "test-pack: {n} fixture{} passed, {expected_total} expected finding{} found\n",
            plural(n),
            plural(expected_total)
        ));
        crate::output::emit(None, &report)?;
        Ok(ExitStatus::Clean)
    } else {
        report.push_str(&format!(
            "test-pack: {failed} of {n} fixture{} failed\n",
            plural(n)
        ));
        crate::output::emit(None, &report)?;
        Ok(ExitStatus::Findings)
    }
}
