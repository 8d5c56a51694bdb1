//! `--new-since REF`: the fingerprints of the findings present at a git
//! revision, computed from the revision's tree read straight out of git
//! (`git ls-tree` + `git cat-file --batch`), without touching the work tree.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rayon::prelude::*;

use crate::app::{Failure, Prepared};
use crate::engine::Engine;
use crate::prefilter::Prefilter;
use crate::walk;

fn git(args: &[&str], cwd: &Path) -> Result<String, Failure> {
    let out = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .output()
        .map_err(|e| Failure(format!("--new-since needs git: {e}")))?;
    if !out.status.success() {
        return Err(Failure(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Fingerprints of every (unsuppressed) finding at `rev`, for the files
/// under `paths`, as seen from the current directory.
pub fn fingerprints_at(
    rev: &str,
    paths: &[PathBuf],
    p: &Prepared,
) -> Result<HashSet<String>, Failure> {
    let cwd = &p.cwd;
    git(
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{tree}}"),
        ],
        cwd,
    )
    .map_err(|_| Failure(format!("--new-since: `{rev}` is not a git revision here")))?;
    let prefix = git(&["rev-parse", "--show-prefix"], cwd)?
        .trim()
        .to_string();
    let listing = git(&["ls-tree", "-r", "-z", "--full-tree", rev], cwd)?;
    // Paths asked for, as display paths relative to the current directory.
    let wanted: Vec<String> = paths
        .iter()
        .map(|q| walk::display_path(q, cwd))
        .map(|s| if s == "." { String::new() } else { s })
        .collect();
    let mut blobs = Vec::new();
    for entry in listing.split('\0').filter(|e| !e.is_empty()) {
        let Some((meta, path)) = entry.split_once('\t') else {
            continue;
        };
        let mut parts = meta.split_whitespace();
        let (_mode, kind, sha) = (parts.next(), parts.next(), parts.next());
        if kind != Some("blob") || !path.ends_with(".rs") {
            continue;
        }
        let Some(rel) = path.strip_prefix(prefix.as_str()) else {
            continue;
        };
        let inside = wanted.iter().any(|w| {
            w.is_empty() || rel == w || rel.starts_with(&format!("{}/", w.trim_end_matches('/')))
        });
        if inside {
            blobs.push((rel.to_string(), sha.unwrap_or_default().to_string()));
        }
    }
    let contents = cat_blobs(&blobs, cwd)?;
    let prefilter = p
        .prefilter
        .then(|| Prefilter::new(&p.packs, &p.settings.lock_name));
    let engine = Engine {
        packs: &p.packs,
        settings: &p.settings,
        prefilter: prefilter.as_ref(),
        only: None,
        resolver: None,
    };
    let sets: Vec<Vec<String>> = blobs
        .par_iter()
        .zip(contents.par_iter())
        .map(|((path, _), bytes)| {
            engine
                .check_bytes(path, bytes, false)
                .findings
                .into_iter()
                .filter(|f| f.suppressed.is_none())
                .map(|f| f.fingerprint)
                .collect()
        })
        .collect();
    Ok(sets.into_iter().flatten().collect())
}

fn cat_blobs(blobs: &[(String, String)], cwd: &Path) -> Result<Vec<Vec<u8>>, Failure> {
    let mut child = Command::new("git")
        .args(["cat-file", "--batch"])
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let shas: Vec<String> = blobs.iter().map(|(_, s)| s.clone()).collect();
    let writer = std::thread::spawn(move || {
        for s in shas {
            if writeln!(stdin, "{s}").is_err() {
                break;
            }
        }
    });
    let mut raw = Vec::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_end(&mut raw)?;
    let _ = writer.join();
    child.wait()?;
    // Each object: "<sha> <type> <size>\n<bytes>\n".
    let mut out = Vec::with_capacity(blobs.len());
    let mut i = 0;
    while out.len() < blobs.len() && i < raw.len() {
        let nl = raw[i..]
            .iter()
            .position(|b| *b == b'\n')
            .ok_or_else(|| Failure("git cat-file: truncated output".into()))?;
        let header = String::from_utf8_lossy(&raw[i..i + nl]).into_owned();
        let size: usize = header
            .rsplit(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Failure(format!("git cat-file: unexpected `{header}`")))?;
        let start = i + nl + 1;
        out.push(raw[start..start + size].to_vec());
        i = start + size + 1;
    }
    Ok(out)
}
