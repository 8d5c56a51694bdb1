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
    git_bytes(args, cwd).map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn git_bytes(args: &[&str], cwd: &Path) -> Result<Vec<u8>, Failure> {
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
    Ok(out.stdout)
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
    let listing = git_bytes(&["ls-tree", "-r", "-z", "-l", "--full-tree", rev], cwd)?;
    // Paths asked for, as display paths relative to the current directory.
    let wanted: Vec<String> = paths
        .iter()
        .map(|q| walk::display_path(q, cwd))
        .map(|s| if s == "." { String::new() } else { s })
        .collect();
    let mut blobs = Vec::new();
    for entry in listing.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let Some(tab) = entry.iter().position(|b| *b == b'\t') else {
            continue;
        };
        let meta = String::from_utf8_lossy(&entry[..tab]);
        let raw_path = &entry[tab + 1..];
        let mut parts = meta.split_whitespace();
        let (_mode, kind, sha) = (parts.next(), parts.next(), parts.next());
        let size: u64 = parts.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        if kind != Some("blob") || !raw_path.ends_with(b".rs") {
            continue;
        }
        // Over the size limit: not audited in this run either.
        if size > p.settings.max_file_size {
            continue;
        }
        // As the walk would see it: no hidden directory or file, no
        // `target/`, nothing the excludes name.
        let hidden = raw_path
            .split(|b| *b == b'/')
            .any(|seg| seg.starts_with(b".") || seg == b"target");
        if hidden {
            continue;
        }
        let path = printable(raw_path);
        let Some(rel) = path.strip_prefix(prefix.as_str()) else {
            continue;
        };
        if p.excludes.excludes_file(&cwd.join(rel)) {
            continue;
        }
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
    let pool = crate::parse::pool(p.jobs)?;
    let sets: Vec<Vec<String>> = pool.install(|| {
        blobs
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
            .collect()
    });
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

/// A path from git as the walk prints it (see [`walk::display_path`]).
fn printable(raw: &[u8]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .map(|&b| if b == b'\\' { b'/' } else { b })
        .collect();
    crate::escape::bytes(&bytes)
}
