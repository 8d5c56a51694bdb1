//! `--new-since REF`: the fingerprints of the findings present at a git
//! revision, computed from the revision's tree read straight out of git
//! (`git ls-tree` + `git cat-file --batch`), without touching the work tree;
//! files renamed since (git's rename detection, `git diff -M`) are judged
//! under their new names, so a rename brings no new findings. Also the lines
//! a change touched, which `--format github` annotates first.
//!
//! git runs only read-only commands (`rev-parse`, `ls-tree`, `cat-file`,
//! `diff --cached` between a revision and the index) in a fixed environment
//! that no config, tree or inherited variable can change: no system or
//! global config, no inherited `GIT_*` variable, no pager, no external diff
//! or textconv driver, no fsmonitor, no hooks, no replace refs, no lazy
//! fetch of a partial clone's missing objects and no transport at all, and
//! a time limit on each command. Nothing the audited tree or its config
//! names is executed; an object missing from the clone is an error that
//! says to fetch it, never a fetch.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::engine::Engine;
use crate::exit::Failure;
use crate::session::Prepared;
use crate::walk;

/// How long one git command may run before it is killed.
const TIME_LIMIT: Duration = Duration::from_secs(300);

/// The time limit, or `LOCKAUDIT_INTERNAL_GIT_TIME_LIMIT_MS` (how the
/// tests reach it without waiting minutes).
fn time_limit() -> Duration {
    std::env::var("LOCKAUDIT_INTERNAL_GIT_TIME_LIMIT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(TIME_LIMIT)
}

/// A file that is always empty, for settings that name a file.
const EMPTY: &str = if cfg!(windows) { "NUL" } else { "/dev/null" };

/// `git` with everything that could run a program, fetch, or read another
/// repository turned off, whatever the repository's config, the user's
/// config or the environment say.
fn git_command(cwd: &Path) -> Command {
    let mut c = Command::new("git");
    // Inherited variables could point git at another repository, index
    // or object store (`GIT_DIR`, `GIT_INDEX_FILE`, ...), add config
    // (`GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`), or name programs
    // (`GIT_EXTERNAL_DIFF`, `GIT_SSH_COMMAND`, `GIT_ASKPASS`, ...): none
    // is passed on. git finds the repository from the current directory.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            c.env_remove(key);
        }
    }
    c.current_dir(cwd)
        .args([
            "--no-pager",
            "--no-replace-objects",
            "-c",
            "core.fsmonitor=false",
            "-c",
            &format!("core.hooksPath={EMPTY}"),
            "-c",
            "protocol.allow=never",
            "-c",
            "core.quotePath=false",
            "-c",
            "diff.noprefix=false",
            "-c",
            "diff.mnemonicPrefix=false",
        ])
        // Only the repository's own config is read, and what it says
        // about programs and transports is overridden above and below.
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", EMPTY)
        // A partial clone's missing objects are not fetched: a fetch runs
        // the promisor remote's transport, which the config names.
        .env("GIT_NO_LAZY_FETCH", "1")
        // No transport is allowed, whatever `protocol.<name>.allow` says
        // in the repository's config (git before 2.44 has no
        // `GIT_NO_LAZY_FETCH`; this stops its fetch before it starts).
        .env("GIT_ALLOW_PROTOCOL", "")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .stdin(Stdio::null());
    c
}

/// What one git command printed.
struct Ran {
    success: bool,
    stdout: Vec<u8>,
    stderr: String,
}

/// Runs git with `args`, `input` on its standard input, within the time
/// limit.
fn run_git(args: &[&str], cwd: &Path, input: Option<Vec<u8>>) -> Result<Ran, Failure> {
    let mut cmd = git_command(cwd);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    if input.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| Failure(format!("--new-since needs git: {e}")))?;
    let writer = match (child.stdin.take(), input) {
        (Some(mut stdin), Some(bytes)) => Some(std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        })),
        _ => None,
    };
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let limit = time_limit();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Failure(format!(
                "--new-since: `git {}` did not finish in {} s; stopped",
                args.first().copied().unwrap_or_default(),
                limit.as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    if let Some(w) = writer {
        let _ = w.join();
    }
    let stdout = out.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&err.join().unwrap_or_default())
        .trim()
        .to_string();
    Ok(Ran {
        success: status.success(),
        stdout,
        stderr,
    })
}

fn git(args: &[&str], cwd: &Path) -> Result<String, Failure> {
    let ran = run_git(args, cwd, None)?;
    if !ran.success {
        if missing_objects(&ran.stderr) {
            return Err(Failure(missing_message(None)));
        }
        return Err(Failure(format!(
            "git {}: {}",
            args.join(" "),
            crate::escape::text(&ran.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&ran.stdout).into_owned())
}

/// Whether git failed because objects are missing from the clone.
fn missing_objects(stderr: &str) -> bool {
    stderr.contains("lazy fetching disabled")
        || stderr.contains("unable to read")
        || stderr.contains("missing blob")
        || stderr.contains("missing tree")
}

/// The error for objects a partial clone left out: lockaudit never fetches.
fn missing_message(object: Option<(&str, &str)>) -> String {
    let what = match object {
        Some((sha, path)) => format!(
            "the base revision's `{}` (object {sha}) is",
            crate::escape::text(path)
        ),
        None => "objects of the base revision are".to_string(),
    };
    format!(
        "--new-since: {what} not in this clone (a partial clone leaves objects out), and \
         lockaudit never fetches: fetch them first with `git fetch` (in a partial clone, \
         `git fetch --refetch --no-filter origin`), or clone without `--filter`"
    )
}

/// Checks that `rev` names a commit here; in a shallow clone that lacks
/// it, the error says how to fetch the history.
fn verify(rev: &str, cwd: &Path) -> Result<(), Failure> {
    // Never an option to git, whatever follows.
    if rev.starts_with('-') || rev.contains('\0') {
        return Err(Failure(format!(
            "--new-since: `{}` is not a git revision",
            crate::escape::text(rev)
        )));
    }
    // A git that cannot run, or runs out of time, says so.
    let found = run_git(
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{tree}}"),
        ],
        cwd,
        None,
    )?;
    if found.success {
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
        "--new-since: `{}` is not a git revision here",
        crate::escape::text(rev)
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
    Ok(audit_at(rev, paths, p, false)?
        .into_iter()
        .flat_map(|o| o.findings)
        .filter(|f| f.suppressed.is_none())
        .map(|f| f.fingerprint)
        .collect())
}

/// The inventory at `rev` of the files under `paths`: one row per call
/// site, as `lockaudit inventory` lists them now, with paths relative to
/// the current directory (a file renamed since under its new name).
pub fn locks_at(
    rev: &str,
    paths: &[PathBuf],
    p: &Prepared,
) -> Result<Vec<crate::inventory::LockRow>, Failure> {
    let mut rows: Vec<_> = audit_at(rev, paths, p, true)?
        .into_iter()
        .flat_map(|o| o.locks)
        .collect();
    rows.sort();
    Ok(rows)
}

/// Every file under `paths` audited as it is at `rev`, by the engines and
/// crate passes of this run, its outcome with inventory rows when asked.
fn audit_at(
    rev: &str,
    paths: &[PathBuf],
    p: &Prepared,
    inventory: bool,
) -> Result<Vec<crate::engine::FileOutcome>, Failure> {
    let cwd = &p.cwd;
    verify(rev, cwd)?;
    // A path as the run prints it (a backslash in a name doubled, as the
    // walk shows it), so the base's findings and locks carry the same path.
    let shown_of = |rel: &str| walk::printable(std::ffi::OsStr::new(rel));
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
        // their fingerprints; where it was decides whether it was audited.
        let was = path;
        let path = renamed.get(path).map(String::as_str).unwrap_or(path);
        if kind != Some("blob") || !path.ends_with(".rs") {
            continue;
        }
        let Some(rel) = path.strip_prefix(prefix.as_str()) else {
            continue;
        };
        // What the walk never audits is not judged at the base either:
        // hidden directories and files, and `target/`. Code moved out of
        // such a place was not audited there: what it brings is new.
        let unwalked = |p: &str| {
            p.split('/')
                .any(|c| (c.starts_with('.') && c != "." && c != "..") || c == "target")
        };
        // Nor are `vendor/` and `third_party/` directories (unless the run
        // includes them): code moved out of one is new too.
        let vendored = |path: &str| {
            !p.include_vendored && path.split('/').any(|c| walk::VENDORED_DIRS.contains(&c))
        };
        if unwalked(rel) || unwalked(was) || (was != path && vendored(was)) {
            continue;
        }
        let was_rel = (was != path).then(|| was.strip_prefix(prefix.as_str()).map(str::to_string));
        all.push((
            rel.to_string(),
            sha.unwrap_or_default().to_string(),
            size,
            was_rel,
        ));
    }
    let mut scopes = p.scopes.lock().unwrap_or_else(|e| e.into_inner());
    // Excluded and oversized files are not read at the base revision
    // either, as in this run; nor a file moved here from an excluded place
    // or from outside the current directory.
    all.retain(|(rel, _, size, was)| {
        let scope = scopes.of_path(Path::new(rel));
        let moved_in = match was {
            None => false,
            Some(None) => true,
            Some(Some(w)) => scopes.excluded(Path::new(w), false),
        };
        *size <= scopes.list[scope].settings.max_file_size
            && !scopes.excluded(Path::new(rel), false)
            && !moved_in
    });
    let all: Vec<(String, String)> = all.into_iter().map(|(r, s, _, _)| (r, s)).collect();
    let blobs: Vec<(String, String)> = all
        .iter()
        .filter(|(rel, _)| {
            let rel = shown_of(rel);
            wanted.iter().any(|w| {
                let below = if w.is_empty() {
                    Some(rel.as_str())
                } else if rel == *w {
                    Some("")
                } else {
                    rel.strip_prefix(&format!("{}/", w.trim_end_matches('/')))
                };
                // As the walk: a vendored directory below a named path is
                // skipped, a named one is audited.
                below.is_some_and(|b| {
                    p.include_vendored
                        || !b
                            .split('/')
                            .rev()
                            .skip(1)
                            .any(|c| walk::VENDORED_DIRS.contains(&c))
                })
            })
        })
        .cloned()
        .collect();
    let contents = cat_blobs(&blobs, cwd)?;
    let blob_scope: Vec<usize> = blobs
        .iter()
        .map(|(rel, _)| scopes.of_path(Path::new(rel)))
        .collect();
    let prefilters = crate::session::prefilters(p, &scopes.list);
    // The engines of the run, built the same way.
    let manifests = crate::model::resolve::Manifests::new(cwd.clone()).with_named(p.named_places());
    let engines: Vec<Engine> = crate::session::engines(&scopes.list, &prefilters, &manifests);
    // The same workers as the run: large stacks for the parser.
    let pool = crate::parse::pool(p.jobs)?;
    let named: HashSet<String> = p.named.iter().map(|n| walk::display_path(n, cwd)).collect();
    let outcomes: Vec<crate::engine::FileOutcome> = pool.install(|| {
        blobs
            .par_iter()
            .zip(contents.par_iter())
            .zip(blob_scope.par_iter())
            .map(|(((path, _), bytes), &scope)| {
                let shown = shown_of(path);
                // A generated file is skipped at the base as in the run: code
                // that loses its generated-file header since is new.
                if !p.include_vendored
                    && !named.contains(&shown)
                    && crate::session::generated(bytes)
                {
                    return crate::engine::FileOutcome::default();
                }
                engines[scope].check_bytes(&shown, bytes, inventory)
            })
            .collect()
    });
    // The crate passes, as in the run: a call site reported now was
    // reported at the base too.
    let mut files: Vec<crate::cross::Audited> = blobs
        .iter()
        .zip(&blob_scope)
        .zip(outcomes)
        .map(|(((rel, _), &scope), outcome)| {
            crate::cross::Audited::new(PathBuf::from(rel), scope, shown_of(rel), outcome)
        })
        .collect();
    let unfiltered: Vec<Engine> = engines.iter().map(|e| e.with_prefilter(None)).collect();
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
            .map(|(rel, _)| (shown_of(&rel), PathBuf::from(rel)))
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
    crate::cross::crate_passes(&mut files, cwd, &pool, inventory, &sources);
    Ok(files.into_iter().map(|f| f.outcome).collect())
}

fn cat_blobs(blobs: &[(String, String)], cwd: &Path) -> Result<Vec<Vec<u8>>, Failure> {
    if blobs.is_empty() {
        return Ok(Vec::new());
    }
    let mut input = Vec::new();
    for (_, sha) in blobs {
        input.extend_from_slice(sha.as_bytes());
        input.push(b'\n');
    }
    let ran = run_git(&["cat-file", "--batch"], cwd, Some(input))?;
    let raw = ran.stdout;
    // Each object: "<sha> <type> <size>\n<bytes>\n", or "<sha> missing\n".
    let mut out = Vec::with_capacity(blobs.len());
    let mut i = 0;
    while out.len() < blobs.len() && i < raw.len() {
        let nl = raw[i..]
            .iter()
            .position(|b| *b == b'\n')
            .ok_or_else(|| Failure("git cat-file: truncated output".into()))?;
        let header = String::from_utf8_lossy(&raw[i..i + nl]).into_owned();
        if header.ends_with(" missing") {
            let (path, sha) = &blobs[out.len()];
            return Err(Failure(missing_message(Some((sha, path)))));
        }
        let size: usize = header
            .rsplit(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                Failure(format!(
                    "git cat-file: unexpected `{}`",
                    crate::escape::text(&header)
                ))
            })?;
        let start = i + nl + 1;
        let body = raw
            .get(start..start + size)
            .ok_or_else(|| Failure("git cat-file: truncated output".into()))?;
        out.push(body.to_vec());
        i = start + size + 1;
    }
    if out.len() < blobs.len() {
        if missing_objects(&ran.stderr) {
            return Err(Failure(missing_message(None)));
        }
        return Err(Failure(format!(
            "git cat-file: {}",
            crate::escape::text(if ran.stderr.is_empty() {
                "truncated output"
            } else {
                &ran.stderr
            })
        )));
    }
    Ok(out)
}
