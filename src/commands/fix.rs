//! `check --fix`: applies the exact fixes of the findings of a run to the
//! audited files. A file is rewritten only when it is a regular file (never
//! through a symbolic link), lies inside a path named on the command line,
//! and still holds the text that was audited; the new text replaces it
//! through the one writer ([`crate::write`]): atomically, with the old
//! file's permissions and byte order mark, never through a linked
//! directory below the repository root, never over a read-only file, and
//! only if the file still holds what was read just before the rename.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::exit::Failure;
use crate::finding::Finding;
use crate::fix::{self, Edit};
use crate::session::{Audit, Prepared};
use crate::walk;

/// What `--fix` did.
#[derive(Debug, Default)]
pub struct Applied {
    pub fixes: usize,
    pub files: usize,
    /// Files left alone, and why.
    pub skipped: Vec<String>,
    /// The files rewritten (as the walk named them), each with the bytes
    /// now in it.
    pub written: Vec<(PathBuf, Vec<u8>)>,
}

/// The fixes `check --fix` applies: exact ones, on findings not suppressed.
fn applicable(f: &Finding) -> Option<&fix::Fix> {
    let fix = f.fix.as_ref()?;
    (f.suppressed.is_none() && fix.applied_by_check(f.check)).then_some(fix)
}

/// Fixes of one file that do not overlap each other, in text order: a fix
/// whose edits overlap one already taken waits for the next run.
pub fn non_overlapping<'a>(fixes: &[&'a fix::Fix]) -> Vec<&'a fix::Fix> {
    let mut sorted = fixes.to_vec();
    sorted.sort_by_key(|f| f.edits.iter().map(|e| e.span.start.offset).min());
    let mut taken: Vec<(usize, usize)> = Vec::new();
    let mut out = Vec::new();
    for f in sorted {
        let ranges: Vec<(usize, usize)> = f
            .edits
            .iter()
            .map(|e| (e.span.start.offset, e.span.end.offset))
            .collect();
        // Overlapping ranges, or two edits at one point (their order would
        // be a guess).
        let clash = ranges
            .iter()
            .any(|&(s, e)| taken.iter().any(|&(ts, te)| (s < te && ts < e) || s == ts));
        if !clash {
            taken.extend(ranges);
            out.push(f);
        }
    }
    out
}

/// Applies every applicable fix of `audit` to its file.
pub fn apply(prepared: &Prepared, audit: &Audit, roots: &[PathBuf]) -> Result<Applied, Failure> {
    let mut by_file: BTreeMap<&str, Vec<&fix::Fix>> = BTreeMap::new();
    for f in &audit.findings {
        if let Some(fix) = applicable(f) {
            by_file.entry(f.path.as_str()).or_default().push(fix);
        }
    }
    let mut out = Applied::default();
    if by_file.is_empty() {
        return Ok(out);
    }
    let real: BTreeMap<String, &PathBuf> = prepared
        .files
        .iter()
        .map(|p| (walk::display_path(p, &prepared.cwd), p))
        .collect();
    let roots: Vec<PathBuf> = roots
        .iter()
        .filter_map(|r| std::fs::canonicalize(r).ok())
        .collect();
    for (shown, fixes) in by_file {
        let (Some(path), Some(audited)) = (real.get(shown), audit.sources.get(shown)) else {
            continue;
        };
        let taken = non_overlapping(&fixes);
        let edits: Vec<&Edit> = taken.iter().flat_map(|f| f.edits.iter()).collect();
        match rewrite(path, &roots, &prepared.root, audited, &edits) {
            Ok(bytes) => {
                out.fixes += taken.len();
                out.files += 1;
                out.written.push(((*path).clone(), bytes));
            }
            Err(why) => out.skipped.push(format!("{shown}: {why}")),
        }
    }
    Ok(out)
}

/// Rewrites one file with `edits` applied to the text that was audited,
/// through the one writer ([`crate::write`]): `root` is the repository
/// root, below which no symbolic link is followed. Returns the bytes
/// written.
pub(crate) fn rewrite(
    path: &Path,
    roots: &[PathBuf],
    root: &Path,
    audited: &str,
    edits: &[&Edit],
) -> Result<Vec<u8>, String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if !meta.file_type().is_file() {
        return Err(
            "not a regular file (a symbolic link is never written through), not fixed".into(),
        );
    }
    let canonical = std::fs::canonicalize(path).map_err(|e| e.to_string())?;
    if !roots.iter().any(|r| canonical.starts_with(r)) {
        return Err("outside the audited paths, not fixed".into());
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let (bom, body) = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) => (true, rest),
        None => (false, &bytes[..]),
    };
    if body != audited.as_bytes() {
        return Err("changed since it was audited, not fixed".into());
    }
    let (text, _) = fix::apply(audited, edits);
    let mut new = Vec::with_capacity(text.len() + 3);
    if bom {
        new.extend_from_slice(b"\xEF\xBB\xBF");
    }
    new.extend_from_slice(text.as_bytes());
    let opts = crate::write::Options {
        root,
        read: Some(&bytes),
        keep_mode: true,
    };
    crate::write::replace(path, &new, &opts).map_err(|e| format!("cannot write: {e}"))?;
    Ok(new)
}
