//! `--new-since REF`: the fingerprints of the findings present at a git
//! revision, computed from the revision's tree read straight out of git
//! (`git ls-tree` + `git cat-file --batch`), without touching the work tree;
//! files renamed since (git's rename detection, `git diff -M`) are judged
//! under their new names, so a rename brings no new findings. Also the lines
//! a change touched, which `--format github` annotates first.
//!
//! git runs only read-only commands (`rev-parse`, `ls-tree`, `cat-file`,
//! `diff --cached` between a revision and the index), with no pager, no
//! external diff or textconv driver and no fsmonitor hook: nothing the
//! audited tree or its config names is executed.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rayon::prelude::*;

use crate::app::{Failure, Prepared};
use crate::engine::Engine;
use crate::walk;

/// `git` with everything that could run a program from a config or the
/// tree turned off.
fn git_command(cwd: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(cwd)
        .args([
            "--no-pager",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.quotePath=false",
            "-c",
            "diff.noprefix=false",
            "-c",
            "diff.mnemonicPrefix=false",
        ])
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_EXTERNAL_DIFF")
        .env_remove("GIT_DIFF_OPTS")
        .stdin(Stdio::null());
    c
}

fn git(args: &[&str], cwd: &Path) -> Result<String, Failure> {
    let out = git_command(cwd)
        .args(args)
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

/// Checks that `rev` names a commit here; in a shallow clone that lacks
/// it, the error says how to fetch the history.
fn verify(rev: &str, cwd: &Path) -> Result<(), Failure> {
    if git(
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{tree}}"),
        ],
        cwd,
    )
    .is_ok()
    {
        return Ok(());
    }
    let shallow = git(&["rev-parse", "--is-shallow-repository"], cwd)
        .map(|s| s.trim() == "true")
        .unwrap_or(false);
    if shallow {
        return Err(Failure(format!(
            "--new-since: `{rev}` is not in this clone, which is shallow (it holds only the \
             latest commits): fetch the history, with `fetch-depth: 0` in actions/checkout, \
             or `git fetch --deepen=<n>` (or `git fetch --unshallow`) before running lockaudit"
        )));
    }
    Err(Failure(format!(
        "--new-since: `{rev}` is not a git revision here"
    )))
}

/// Files renamed between `rev` and the index: old path → new path, both
/// from the repository root.
fn renames(rev: &str, cwd: &Path) -> HashMap<String, String> {
    let Ok(out) = git(
        &[
            "diff",
            "--cached",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "-M",
            "--name-status",
            "-z",
            rev,
            "--",
        ],
        cwd,
    ) else {
        return HashMap::new();
    };
    let mut map = HashMap::new();
    let mut fields = out.split('\0');
    while let Some(status) = fields.next() {
        if status.starts_with('R') {
            if let (Some(old), Some(new)) = (fields.next(), fields.next()) {
                map.insert(old.to_string(), new.to_string());
            }
        } else if status.starts_with('C') {
            fields.next();
            fields.next();
        } else if !status.is_empty() {
            fields.next();
        }
    }
    map
}

/// The lines of each file (by its path from the repository root) that
/// differ from `rev`, as inclusive ranges; `None` when `rev` is not a
/// revision here.
pub fn changed_lines(rev: &str, cwd: &Path) -> Option<HashMap<String, Vec<(usize, usize)>>> {
    verify(rev, cwd).ok()?;
    let out = git(
        &[
            "diff",
            "--cached",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "-M",
            "-U0",
            rev,
            "--",
        ],
        cwd,
    )
    .ok()?;
    let mut map: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in out.lines() {
        if let Some(path) = line.strip_prefix("+++ ") {
            current = path.strip_prefix("b/").map(str::to_string);
        } else if let (Some(hunk), Some(path)) = (line.strip_prefix("@@ "), &current) {
            // `@@ -a,b +c,d @@`: d lines from c on the new side.
            let Some(new) = hunk.split(' ').find_map(|w| w.strip_prefix('+')) else {
                continue;
            };
            let mut nums = new.split(',');
            let start: usize = nums.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            let count: usize = nums.next().and_then(|n| n.parse().ok()).unwrap_or(1);
            if count > 0 {
                map.entry(path.clone())
                    .or_default()
                    .push((start, start + count - 1));
            }
        }
    }
    Some(map)
}

/// Fingerprints of every (unsuppressed) finding at `rev`, for the files
/// under `paths`, as seen from the current directory.
pub fn fingerprints_at(
    rev: &str,
    paths: &[PathBuf],
    p: &Prepared,
) -> Result<HashSet<String>, Failure> {
    let cwd = &p.cwd;
    verify(rev, cwd)?;
    let prefix = git(&["rev-parse", "--show-prefix"], cwd)?
        .trim()
        .to_string();
    let listing = git(&["ls-tree", "-r", "-z", "-l", "--full-tree", rev], cwd)?;
    let renamed = renames(rev, cwd);
    // Paths asked for, as display paths relative to the current directory.
    let wanted: Vec<String> = paths
        .iter()
        .map(|q| walk::display_path(q, cwd))
        .map(|s| if s == "." { String::new() } else { s })
        .collect();
    // Every `.rs` blob the walk could audit, and those inside the paths
    // asked for.
    let mut all = Vec::new();
    for entry in listing.split('\0').filter(|e| !e.is_empty()) {
        let Some((meta, path)) = entry.split_once('\t') else {
            continue;
        };
        let mut parts = meta.split_whitespace();
        let (_mode, kind, sha) = (parts.next(), parts.next(), parts.next());
        let size: u64 = parts.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        // A renamed file is judged under its name now, so its findings keep
        // their fingerprints.
        let path = renamed.get(path).map(String::as_str).unwrap_or(path);
        if kind != Some("blob") || !path.ends_with(".rs") {
            continue;
        }
        let Some(rel) = path.strip_prefix(prefix.as_str()) else {
            continue;
        };
        // What the walk never audits is not judged at the base either:
        // hidden directories and files, and `target/`.
        if rel
            .split('/')
            .any(|c| (c.starts_with('.') && c != "." && c != "..") || c == "target")
        {
            continue;
        }
        all.push((rel.to_string(), sha.unwrap_or_default().to_string(), size));
    }
    let mut scopes = p.scopes.lock().unwrap_or_else(|e| e.into_inner());
    // Excluded and oversized files are not read at the base revision
    // either, as in this run.
    all.retain(|(rel, _, size)| {
        let scope = scopes.of_path(Path::new(rel));
        *size <= scopes.list[scope].settings.max_file_size
            && !scopes.excluded(Path::new(rel), false)
    });
    let all: Vec<(String, String)> = all.into_iter().map(|(r, s, _)| (r, s)).collect();
    let blobs: Vec<(String, String)> = all
        .iter()
        .filter(|(rel, _)| {
            wanted.iter().any(|w| {
                w.is_empty()
                    || rel == w
                    || rel.starts_with(&format!("{}/", w.trim_end_matches('/')))
            })
        })
        .cloned()
        .collect();
    let contents = cat_blobs(&blobs, cwd)?;
    let blob_scope: Vec<usize> = blobs
        .iter()
        .map(|(rel, _)| scopes.of_path(Path::new(rel)))
        .collect();
    let prefilters = crate::app::prefilters(p, &scopes.list);
    // The engines of the run, built the same way.
    let manifests = crate::model::resolve::Manifests::new(cwd.clone());
    let engines: Vec<Engine> = crate::app::engines(&scopes.list, &prefilters, &manifests)
        .into_iter()
        .map(|e| e.keeping(true))
        .collect();
    // The same workers as the run: large stacks for the parser.
    let pool = crate::parse::pool(p.jobs)?;
    let outcomes: Vec<crate::engine::FileOutcome> = pool.install(|| {
        blobs
            .par_iter()
            .zip(contents.par_iter())
            .zip(blob_scope.par_iter())
            .map(|(((path, _), bytes), &scope)| engines[scope].check_bytes(path, bytes, false))
            .collect()
    });
    // The crate passes, as in the run: a call site reported now was
    // reported at the base too.
    let mut files: Vec<crate::cross::Audited> = blobs
        .iter()
        .zip(&blob_scope)
        .zip(outcomes)
        .map(|(((rel, _), &scope), outcome)| {
            crate::cross::Audited::new(PathBuf::from(rel), scope, rel.clone(), outcome)
        })
        .collect();
    let unfiltered: Vec<Engine> = engines
        .iter()
        .map(|e| e.with_prefilter(None).keeping(false))
        .collect();
    let by_path: HashMap<&str, &Vec<u8>> = blobs
        .iter()
        .map(|(rel, _)| rel.as_str())
        .zip(&contents)
        .collect();
    // Files of a crate outside the paths asked for, read from the
    // revision when a crate pass needs them.
    let more: std::sync::Mutex<HashMap<String, Vec<u8>>> = Default::default();
    let engine = |scope: usize| unfiltered[scope];
    let first = |scope: usize| engines[scope];
    let read = |path: &Path, _scope: usize| -> Option<std::sync::Arc<[u8]>> {
        let p = path.to_str()?;
        match by_path.get(p) {
            Some(b) => Some(b.as_slice().into()),
            None => more.lock().ok()?.get(p).map(|b| b.as_slice().into()),
        }
    };
    let crate_files = |root: &Path, _scope: usize| -> Vec<(String, PathBuf)> {
        let inside: Vec<(String, String)> = all
            .iter()
            .filter(|(rel, _)| {
                !by_path.contains_key(rel.as_str()) && cwd.join(rel).starts_with(root)
            })
            .cloned()
            .collect();
        let missing: Vec<(String, String)> = {
            let have = more.lock().unwrap_or_else(|e| e.into_inner());
            inside
                .iter()
                .filter(|(rel, _)| !have.contains_key(rel))
                .cloned()
                .collect()
        };
        if let Ok(texts) = cat_blobs(&missing, cwd) {
            let mut have = more.lock().unwrap_or_else(|e| e.into_inner());
            for ((rel, _), text) in missing.into_iter().zip(texts) {
                have.insert(rel, text);
            }
        }
        inside
            .into_iter()
            .map(|(rel, _)| (rel.clone(), PathBuf::from(rel)))
            .collect()
    };
    let sources = crate::cross::Sources {
        first: &first,
        engine: &engine,
        read: &read,
        crate_files: &crate_files,
        // Paths inside the tree may cover a crate in part.
        partial: wanted.iter().any(|w| !w.is_empty()),
        first_audits: None,
    };
    crate::cross::crate_passes(&mut files, cwd, &pool, false, &sources);
    Ok(files
        .into_iter()
        .flat_map(|f| f.outcome.findings)
        .filter(|f| f.suppressed.is_none())
        .map(|f| f.fingerprint)
        .collect())
}

fn cat_blobs(blobs: &[(String, String)], cwd: &Path) -> Result<Vec<Vec<u8>>, Failure> {
    let mut child = git_command(cwd)
        .args(["cat-file", "--batch"])
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
