//! `lockaudit annotate PATHS --purpose efficiency|correctness [--write]`:
//! writes `// lock-purpose: <purpose> — TODO: why` above every acquisition
//! that `missing-purpose` reports, for a team that adopts lockaudit by
//! deciding a default now and reviewing each lock later. Prints a unified
//! diff, or rewrites the files with `--write` (as safely as `check --fix`).
//! Running it twice changes nothing the second time: annotated
//! acquisitions are no longer reported.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::cli::AnnotateArgs;
use crate::directives::Directives;
use crate::exit::ExitStatus;
use crate::exit::Failure;
use crate::finding::Purpose;
use crate::fix::{self, Edit};
use crate::source::SourceFile;
use crate::vocab::CheckId;
use crate::walk;

pub fn run(args: &AnnotateArgs) -> Result<ExitStatus, Failure> {
    let prepared = crate::session::prepare(&args.paths, &args.common)?;
    // Annotating is how a team that turned `missing-purpose` off for now
    // catches up: the check runs whatever each config says.
    for scope in prepared
        .scopes
        .lock()
        .expect("no other thread holds the scopes yet")
        .list
        .iter_mut()
    {
        scope.settings.checks.remove(&CheckId::MissingPurpose);
    }
    let audit = crate::session::audit(&prepared, false)?;
    for u in &audit.unreadable {
        crate::escape::eprintln(&format!("error: {u}"));
    }
    let purpose: Purpose = args.purpose.into();

    // Lines to annotate, per file: one annotation per statement.
    let mut lines: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for f in &audit.findings {
        if f.check != CheckId::MissingPurpose || f.suppressed.is_some() {
            continue;
        }
        if let Some(line) = f.purpose_line {
            lines.entry(f.path.as_str()).or_default().push(line);
        }
    }
    let real: BTreeMap<String, &PathBuf> = prepared
        .files
        .iter()
        .map(|p| (walk::display_path(p, &prepared.cwd), p))
        .collect();
    let roots: Vec<PathBuf> = args
        .paths
        .iter()
        .filter_map(|r| std::fs::canonicalize(r).ok())
        .collect();
    let comment = fix::annotation_text(purpose);
    let mut diff = String::new();
    let (mut annotated, mut files, mut failed) = (0, 0, false);
    for (shown, mut at) in lines {
        let (Some(text), Some(path)) = (audit.sources.get(shown), real.get(shown)) else {
            continue;
        };
        at.sort_unstable();
        at.dedup();
        let src = SourceFile::new(shown, text.as_str());
        let lexed = Directives::scan(text).lexed;
        let mut edits: Vec<Edit> = Vec::new();
        for line in at {
            match fix::line_above_edit(&src, &lexed, line, &comment) {
                Some(e) => edits.push(e),
                None => crate::escape::eprintln(&format!(
                    "warning: {shown}:{line}: cannot annotate here (the line starts inside a comment)"
                )),
            }
        }
        if edits.is_empty() {
            continue;
        }
        let refs: Vec<&Edit> = edits.iter().collect();
        if args.write {
            if let Err(why) = super::fix::rewrite(path, &roots, &prepared.root, text, &refs) {
                crate::escape::eprintln(&format!("warning: {shown}: {why}"));
                failed = true;
                continue;
            }
        } else {
            let (new, _) = fix::apply(text, &refs);
            diff.push_str(&unified_diff(shown, text, &new));
        }
        annotated += edits.len();
        files += 1;
    }
    // Written as every report is: a context line ` ::error …` is no
    // workflow command once a runner trims its leading space, and a diff
    // nobody can read is an error.
    crate::output::emit(None, &diff)?;
    let n = |k: usize, what: &str| format!("{k} {what}{}", if k == 1 { "" } else { "s" });
    if annotated == 0 {
        crate::escape::eprintln("every acquisition already has a purpose");
    } else if args.write {
        crate::escape::eprintln(&format!(
            "annotated {} in {} as `{}`: replace each `TODO: why` with the reason",
            n(annotated, "acquisition"),
            n(files, "file"),
            purpose.as_str()
        ));
    } else {
        crate::escape::eprintln(&format!(
            "{} in {} would be annotated as `{}`; run with --write to apply",
            n(annotated, "acquisition"),
            n(files, "file"),
            purpose.as_str()
        ));
    }
    Ok(
        if failed || audit.internal_error || !audit.unreadable.is_empty() {
            ExitStatus::Error
        } else {
            ExitStatus::Clean
        },
    )
}

/// A unified diff of one file (`a/PATH`, `b/PATH`, three lines of context),
/// escaped as every source text is ([`crate::escape::source_lines`]): a
/// terminal shows control, invisible and bidirectional characters instead
/// of obeying them; tabs and CRLF line ends stay.
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let path = crate::escape::text(path);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    crate::escape::source_lines(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_escapes_terminal_controls_and_keeps_crlf() {
        let old = "a\r\n\u{1b}[31mb\r\n";
        let new = "a\r\nx\r\n\u{1b}[31mb\r\n";
        let d = unified_diff("src/e\u{1b}.rs", old, new);
        assert!(
            d.starts_with("--- a/src/e\\x1b.rs\n+++ b/src/e\\x1b.rs\n"),
            "{d}"
        );
        assert!(d.contains("+x\r\n"), "{d}");
        assert!(d.contains(" \\x1b[31mb\r\n"), "{d}");
        assert!(!d.contains('\u{1b}'));
    }
}
