//! One assembly of a run: the files chosen (walk, cargo's package
//! selection, excludes, generated and vendored files), the config of each,
//! the engines and pre-filters, and the audit itself with its crate passes.
//! `check`, `inventory`, `--fix`, `--stdin-filename` and `--new-since`
//! (through [`crate::gitref`]) assemble their runs here; the commands in
//! `app.rs` and `commands/` only read what it returns.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::cli::CommonArgs;
use crate::config;
use crate::engine::{Engine, FileOutcome};
use crate::finding::Finding;
use crate::inventory::LockRow;
use crate::model::resolve::Manifests;
use crate::prefilter::Prefilter;
use crate::report::{self};
use crate::scope::Scopes;
use crate::walk::{self, Excludes};

use crate::diag::print_yaml_errors;
use crate::exit::Failure;
use crate::source::Source;

/// Everything a run needs before it reads files.
pub struct Prepared {
    /// The configs of the run and the files each governs.
    pub scopes: std::sync::Mutex<Scopes>,
    pub files: Vec<PathBuf>,
    /// Per file (same order as `files`): its scope.
    pub file_scope: Vec<usize>,
    /// Files named on the command line: audited even when generated.
    pub named: BTreeSet<PathBuf>,
    /// Directories named on the command line, absolute: a crate under one
    /// was walked whole.
    pub walked_dirs: Vec<PathBuf>,
    pub cwd: PathBuf,
    /// Where the current directory sits in the repository root (the git top
    /// level, else the directory of the nearest config, else the current
    /// directory), with `/` separators: `services/api/`, or empty.
    pub root_prefix: String,
    /// That root, absolute.
    pub root: PathBuf,
    pub jobs: Option<usize>,
    pub prefilter: bool,
    pub include_vendored: bool,
    /// Directories the walk could not read.
    pub walk_errors: Vec<String>,
    /// The command line's excludes (each config's are its scope's).
    pub excludes: Excludes,
}

/// Most worker threads a run starts, whatever `--jobs` asks: each has a
/// large stack, and thousands would only exhaust the machine. Four per
/// core, and never more than this.
pub const MAX_JOBS: usize = 256;

fn max_jobs() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores * 4).min(MAX_JOBS)
}

/// Says what is wrong with a `--config` path that is not a readable file.
pub(crate) fn check_config_path(p: &Path) -> Result<(), Failure> {
    let shown = p.display();
    match std::fs::metadata(p) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) if m.is_dir() => Err(Failure(format!(
            "--config {shown}: is a directory; name the config file in it (`{shown}/lockaudit.yaml`)"
        ))),
        Ok(_) => Err(Failure(format!(
            "--config {shown}: not a regular file (a device, FIFO or socket); name a lockaudit.yaml"
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Failure(format!(
            "--config {shown}: no such file (`lockaudit init` writes a starter lockaudit.yaml)"
        ))),
        Err(e) => Err(Failure(format!("--config {shown}: cannot read: {e}"))),
    }
}

pub fn prepare(paths: &[PathBuf], common: &CommonArgs) -> Result<Prepared, Failure> {
    let cwd = std::env::current_dir()?;
    for p in paths {
        match std::fs::metadata(p) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Failure(format!(
                    "{}: no such file or directory",
                    crate::escape::path(p)
                )))
            }
            // A symlink loop, a directory that cannot be searched, ...
            Err(e) => {
                return Err(Failure(format!(
                    "{}: cannot read: {e}",
                    crate::escape::path(p)
                )))
            }
        }
    }
    if let Some(p) = &common.config {
        check_config_path(p)?;
    }
    let scopes = Scopes::new(common.config.as_deref(), &cwd, &repo_prefix(&cwd))
        .with_selection(common.selection.clone())
        .with_excludes(&common.exclude);
    let scopes = std::sync::Arc::new(std::sync::Mutex::new(scopes));
    let stop_on_errors = |scopes: &Scopes| -> Result<(), Failure> {
        if scopes.errors.is_empty() {
            return Ok(());
        }
        for e in &scopes.errors {
            print_yaml_errors(e);
        }
        Err(Failure(String::new()))
    };
    stop_on_errors(&lock(&scopes))?;
    // The command line's excludes; the configs' are each scope's own.
    let excludes = Excludes::new(&[(cwd.as_path(), common.exclude.as_slice())])?;
    let opts = walk::WalkOptions {
        excludes: excludes.clone(),
        config_excluded: {
            let scopes = scopes.clone();
            std::sync::Arc::new(move |path: &Path, is_dir: bool| {
                lock(&scopes).excluded(path, is_dir)
            })
        },
        force_exclude: common.force_exclude,
        include_vendored: common.include_vendored,
        threads: common.jobs.unwrap_or(0).min(max_jobs()),
    };
    let mut notes = Vec::new();
    let mut walk_errors = Vec::new();
    let files = walk::collect(paths, &opts, &mut notes, &mut walk_errors)?;
    drop(opts);
    let mut scopes = std::sync::Arc::try_unwrap(scopes)
        .map_err(|_| Failure("internal error: the walk kept the configs".into()))?
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    let file_scope: Vec<usize> = files.iter().map(|f| scopes.of_path(f)).collect();
    // A directory named on the command line has its config read too, so
    // that a broken one is an error even with nothing to audit under it.
    for p in paths.iter().filter(|p| p.is_dir()) {
        scopes.of_dir(p);
    }
    stop_on_errors(&scopes)?;
    for n in notes {
        crate::escape::eprintln(&format!("note: {n}"));
    }
    let named = paths.iter().filter(|p| p.is_file()).cloned().collect();
    let walked_dirs = paths
        .iter()
        .filter(|p| p.is_dir())
        .filter_map(|p| std::fs::canonicalize(cwd.join(p)).ok())
        .collect();
    let root_prefix = root_prefix(&cwd, &scopes);
    let mut root = std::fs::canonicalize(&cwd).unwrap_or_else(|_| cwd.clone());
    for _ in root_prefix.split('/').filter(|s| !s.is_empty()) {
        root.pop();
    }
    Ok(Prepared {
        scopes: std::sync::Mutex::new(scopes),
        files,
        file_scope,
        named,
        walked_dirs,
        cwd,
        root_prefix,
        root,
        jobs: common.jobs.map(|n| {
            let max = max_jobs();
            if n > max {
                crate::escape::eprintln(&format!(
                    "note: --jobs {n} is more than {max} (4 per core, at most {MAX_JOBS}); using {max}"
                ));
            }
            n.min(max)
        }),
        prefilter: !common.no_prefilter,
        include_vendored: common.include_vendored,
        walk_errors,
        excludes,
    })
}

impl Prepared {
    /// The paths the command line names, canonical: the directories
    /// walked and the files named.
    pub fn named_places(&self) -> Vec<PathBuf> {
        let files = self
            .named
            .iter()
            .filter_map(|f| std::fs::canonicalize(self.cwd.join(f)).ok());
        self.walked_dirs.iter().cloned().chain(files).collect()
    }
}

pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where `cwd` sits inside its repository (the nearest ancestor holding
/// `.git`), with `/` separators, printed as file names are (a backslash in
/// a name is part of it); empty outside a repository.
fn repo_prefix(cwd: &Path) -> String {
    let abs = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    abs.ancestors()
        .find(|d| d.join(".git").exists())
        .and_then(|root| abs.strip_prefix(root).ok())
        .map(|rel| walk::printable(rel.as_os_str()))
        .unwrap_or_default()
}

/// Where `cwd` sits under the root that machine-readable paths are relative
/// to: the git top level, else the directory of the nearest config (the
/// `--config` file's, or the one discovered from `cwd`), else `cwd` itself.
fn root_prefix(cwd: &Path, scopes: &Scopes) -> String {
    let in_repo = repo_prefix(cwd);
    let abs = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    if abs.ancestors().any(|d| d.join(".git").exists()) {
        return in_repo;
    }
    let config_dir = scopes.list[0]
        .settings
        .path
        .clone()
        .or_else(|| config::discover(&abs))
        .and_then(|c| std::fs::canonicalize(c).ok())
        .and_then(|c| c.parent().map(Path::to_path_buf));
    config_dir
        .and_then(|dir| abs.strip_prefix(&dir).ok().map(Path::to_path_buf))
        .map(|rel| walk::printable(rel.as_os_str()))
        .unwrap_or_default()
}

/// A path as machine-readable output names it: relative to the repository
/// root (`root_prefix` + the path relative to the current directory), or
/// absolute when the file lies outside that root.
pub fn root_relative(shown: &str, root_prefix: &str, cwd: &Path) -> String {
    if Path::new(shown).is_absolute() || root_prefix.is_empty() && !shown.starts_with("../") {
        return shown.to_string();
    }
    let mut parts: Vec<&str> = root_prefix.split('/').filter(|s| !s.is_empty()).collect();
    for seg in shown.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    // Above the root: an absolute path says where it is.
                    return above_root(shown, cwd);
                }
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// The absolute path of `shown` (a printed path relative to `cwd`),
/// printed as file names are.
fn above_root(shown: &str, cwd: &Path) -> String {
    if let Ok(real) = std::fs::canonicalize(cwd.join(shown)) {
        return walk::printable(real.as_os_str());
    }
    // `shown` is printed (escaped) already: joined as text.
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let base = walk::printable(cwd.as_os_str());
    let mut parts: Vec<&str> = base.split('/').filter(|s| !s.is_empty()).collect();
    for seg in shown.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let lead = if base.starts_with('/') { "/" } else { "" };
    format!("{lead}{}", parts.join("/"))
}

/// The outcome of auditing every file.
pub struct Audit {
    pub findings: Vec<Finding>,
    pub locks: Vec<LockRow>,
    pub sources: HashMap<String, String>,
    pub files: usize,
    pub parsed: usize,
    pub internal_error: bool,
    pub unreadable: Vec<String>,
    /// Every audited file, by its path from the repository root.
    pub audited: Vec<String>,
    /// Whether each of them (in the same order) was parsed.
    pub audited_parsed: Vec<bool>,
}

/// Why a walked file was not audited.
enum Skip {
    /// It says it is generated (`@generated`, `automatically generated by`).
    Generated,
    /// Deleted between the walk and the read.
    Removed,
    Unreadable(String),
}

/// One file's outcome and its text (kept only when it has findings), or why
/// it was not audited.
type FileResult = Result<(FileOutcome, Option<String>), Skip>;

/// Whether a file says it is generated: a comment among its first five
/// lines holds `@generated` (rustfmt, prost, protobuf), or its text begins
/// (after `This file is` or `This file was`, if it says so) with
/// `automatically generated by` (bindgen), `auto-generated by` or `Code
/// generated by` (the Go convention some generators follow), in any case.
/// A comment that only mentions generated things (`//! Keys are
/// auto-generated by the caller`) is not a marker.
pub(crate) fn generated(bytes: &[u8]) -> bool {
    const PHRASES: [&str; 3] = [
        "automatically generated by",
        "auto-generated by",
        "code generated by",
    ];
    let head = &bytes[..bytes.len().min(2048)];
    String::from_utf8_lossy(head).lines().take(5).any(|l| {
        let l = l.trim_start();
        let Some(text) = ["//", "/*", "*", "#!["]
            .iter()
            .find_map(|open| l.strip_prefix(open))
        else {
            return false;
        };
        if text.contains("@generated") {
            return true;
        }
        let text = text
            .trim_start_matches(['/', '!', '*'])
            .trim_start()
            .to_ascii_lowercase();
        let text = ["this file is ", "this file was "]
            .iter()
            .find_map(|p| text.strip_prefix(p))
            .unwrap_or(&text);
        PHRASES.iter().any(|p| text.starts_with(p))
    })
}

/// The bytes of one crate's files, held from their first audit until the
/// crate passes are done with them, so that no file is read twice.
#[derive(Default)]
struct CrateHold {
    /// Its files not audited yet.
    left: AtomicUsize,
    /// Whether a file of it offers the others something or asks for their
    /// functions: then the passes audit its files again, from these bytes.
    crosses: AtomicBool,
    /// (the file's place in the results, its bytes).
    held: std::sync::Mutex<Vec<(usize, std::sync::Arc<[u8]>)>>,
    /// The walk covered it only in part (a file, or a directory inside
    /// it, was named): the passes audit its other files for what they
    /// offer, so its bytes are held to them whatever its walked files do.
    partial: bool,
}

/// What a run holds of the files it read, by crate ([`crate::cross`]'s
/// crate roots). A crate the walk covered whole where no file crosses into
/// another lets its files' bytes go once its last file is audited, so a
/// run holds the text of the crates the passes will work on and of those
/// being audited, within
/// [`crate::cross::MAX_HELD_BYTES`]: past that a file is read again
/// when the passes need it.
struct Holds {
    crates: Vec<CrateHold>,
    /// Each crate's root, by its index in `crates` (empty: no crate).
    root_of: Vec<PathBuf>,
    by_root: HashMap<PathBuf, usize>,
    roots: crate::cross::Roots,
    budget: crate::cross::Held,
    /// The directories the walk covered whole, canonical, when it may have
    /// covered some crate only in part; `None` when it covered each whole.
    walked: Option<Vec<PathBuf>>,
}

impl Holds {
    fn new(p: &Prepared) -> Holds {
        Holds {
            crates: Vec::new(),
            root_of: Vec::new(),
            by_root: HashMap::new(),
            roots: Default::default(),
            budget: crate::cross::Held::new(crate::cross::MAX_HELD_BYTES),
            walked: partial(p).then(|| p.walked_dirs.clone()),
        }
    }

    /// The crate root of `path` (empty: no crate).
    fn root(&mut self, path: &Path, cwd: &Path) -> PathBuf {
        self.roots.of(path, cwd).unwrap_or_default()
    }

    /// The crate of `path`, counting one more file of it to audit.
    fn enter(&mut self, path: &Path, cwd: &Path) -> usize {
        let root = self.root(path, cwd);
        let next = self.crates.len();
        // Covered whole: files in no crate, or a crate inside a directory
        // walked (asked once per crate).
        let partial = |walked: &Vec<PathBuf>| {
            let real = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
            !root.as_os_str().is_empty() && !walked.iter().any(|d| real.starts_with(d))
        };
        let partial =
            !self.by_root.contains_key(&root) && self.walked.as_ref().is_some_and(partial);
        let c = *self.by_root.entry(root.clone()).or_insert(next);
        if c == next {
            self.root_of.push(root);
            self.crates.push(CrateHold {
                partial,
                ..CrateHold::default()
            });
        }
        self.crates[c].left.fetch_add(1, Ordering::SeqCst);
        c
    }

    /// A file of crate `c` audited (its place `slot` in the results, its
    /// bytes if it was read, whether it crosses into other files).
    fn audited(&self, c: usize, slot: usize, bytes: Option<Vec<u8>>, crosses: bool) {
        let hold = &self.crates[c];
        if crosses {
            hold.crosses.store(true, Ordering::SeqCst);
        }
        if let Some(b) = bytes.filter(|b| self.budget.take(b.len())) {
            lock(&hold.held).push((slot, b.into()));
        }
        self.settle(c);
    }

    /// A file of crate `c` declares `n` modules the walk did not choose:
    /// the crate's bytes stay until each is entered in a later round (it
    /// may be the file that offers the others something) or turned away
    /// ([`Holds::settle`] for each).
    fn expect(&self, c: usize, n: usize) {
        self.crates[c].left.fetch_add(n, Ordering::SeqCst);
    }

    /// One file of crate `c` audited, or one module it expected settled.
    fn settle(&self, c: usize) {
        let hold = &self.crates[c];
        // The last file of a crate walked whole that nothing crosses: its
        // bytes go.
        if hold.left.fetch_sub(1, Ordering::SeqCst) == 1
            && !hold.partial
            && !hold.crosses.load(Ordering::SeqCst)
        {
            let gone = std::mem::take(&mut *lock(&hold.held));
            self.budget
                .give_back(gone.iter().map(|(_, b)| b.len()).sum());
        }
    }

    /// The bytes held, by place in the results; each crate's root; and
    /// the budget they are counted in, which the passes go on with.
    fn into_bytes(
        self,
    ) -> (
        HashMap<usize, std::sync::Arc<[u8]>>,
        Vec<PathBuf>,
        crate::cross::Held,
    ) {
        let bytes = self
            .crates
            .into_iter()
            .flat_map(|c| c.held.into_inner().unwrap_or_else(|e| e.into_inner()))
            .collect();
        (bytes, self.root_of, self.budget)
    }
}

/// A walk that may have left part of a crate unwalked (a file, or a
/// directory inside a crate, was named): the passes audit the rest.
fn partial(p: &Prepared) -> bool {
    !p.named.is_empty()
        || p.walked_dirs
            .iter()
            .any(|d| crate::model::resolve::crate_root_at_or_above(d).is_some_and(|r| r != *d))
}

/// Reads and audits every file, in parallel; results sorted. Files that
/// `mod` declarations and `#[path]` reach from an audited file are compiled,
/// so they are audited too (in further rounds), whatever their name and
/// whatever `.gitignore` or `.ignore` say: a pull request cannot hide code
/// from the gate that way. They must be regular files inside the
/// repository; lockaudit's own excludes still apply.
pub fn audit(p: &Prepared, inventory: bool) -> Result<Audit, Failure> {
    audit_from(p, inventory, &crate::source::Disk)
}

/// [`audit`], reading every file through `source`, each once: the crate
/// passes work on the bytes the first audit held ([`Holds`]).
pub fn audit_from(p: &Prepared, inventory: bool, source: &dyn Source) -> Result<Audit, Failure> {
    audit_some(p, inventory, source, None)
}

/// [`audit_from`], with `crates_of`: of the walked files only those in
/// the crates of these files (and the modules their `mod` declarations
/// reach), without the notes about files it could not follow or skipped
/// (an audit again of files whose first audit gave them).
fn audit_some(
    p: &Prepared,
    inventory: bool,
    source: &dyn Source,
    crates_of: Option<&[PathBuf]>,
) -> Result<Audit, Failure> {
    let notes = crates_of.is_none();
    let pool = crate::parse::pool(p.jobs)?;
    let mut scopes = lock(&p.scopes);
    // The files audited so far, by path as the walk spells them: most
    // declared modules are among them, and are told so without a `stat`.
    let mut known: std::collections::HashSet<PathBuf> = p.files.iter().cloned().collect();
    // And by identity (device and inode), asked only for a module not known
    // by its path: a hard link or another spelling of an audited file.
    let mut seen: Option<std::collections::HashSet<walk::Identity>> = None;
    let mut holds = Holds::new(p);
    let only: Option<std::collections::HashSet<PathBuf>> =
        crates_of.map(|files| files.iter().map(|f| holds.root(f, &p.cwd)).collect());
    let mut queue: Vec<(PathBuf, usize, usize)> = Vec::new();
    for (f, &scope) in p.files.iter().zip(&p.file_scope) {
        if only
            .as_ref()
            .is_none_or(|o| o.contains(&holds.root(f, &p.cwd)))
        {
            let c = holds.enter(f, &p.cwd);
            queue.push((f.clone(), scope, c));
        }
    }
    let mut excluded_modules = 0usize;
    let mut results: Vec<(PathBuf, usize, String, FileResult)> = Vec::new();
    // Each result's crate, by its index in `holds`.
    let mut crate_of_slot: Vec<usize> = Vec::new();
    let manifests = Manifests::new(p.cwd.clone()).with_named(p.named_places());
    let progress = crate::progress::Progress::files(queue.len());
    let mut places = ModPlaces::default();
    // Files whose macros declare modules: those cannot be followed.
    let mut macro_modules: Vec<String> = Vec::new();
    while !queue.is_empty() {
        let round: Vec<(PathBuf, usize, String, FileResult, Reached)> = {
            let list = &scopes.list;
            let prefilters = prefilters(p, list);
            // Words are taken later, of the crates that need them.
            let engines: Vec<Engine> = engines(list, &prefilters, &manifests);
            let base = results.len();
            let holds = &holds;
            let audit_one = |(k, (path, scope, c)): (usize, &(PathBuf, usize, usize))| -> (
                PathBuf,
                usize,
                String,
                FileResult,
                Reached,
            ) {
                    let shown = walk::display_path(path, &p.cwd);
                    let engine = &engines[*scope];
                    let mut mods = (Vec::new(), false);
                    let mut held = None;
                    let r = match source.read(path, engine.settings.max_file_size) {
                        Ok(Err(size)) => Ok((engine.too_large(&shown, size), Some(String::new()))),
                        Ok(Ok(bytes))
                            if !p.include_vendored
                                && !p.named.contains(path)
                                && generated(&bytes) =>
                        {
                            Err(Skip::Generated)
                        }
                        Ok(Ok(bytes)) => {
                            let declared =
                                walk::declared_modules(path, &bytes, &|m| known.contains(m));
                            // A module the walk chose under another spelling
                            // (`#[path = "../src/common.rs"]`) is turned away
                            // later: the crate is held only for the others.
                            let declared: Vec<(PathBuf, bool)> = declared
                                .into_iter()
                                .map(|m| {
                                    let other = !known.contains(&lexically(&m));
                                    (m, other)
                                })
                                .collect();
                            holds.expect(*c, declared.iter().filter(|(_, e)| *e).count());
                            mods = (declared, walk::declares_modules_in_a_macro(&bytes));
                            let out = engine.check_bytes(&shown, &bytes, inventory);
                            let text = (!out.findings.is_empty())
                                .then(|| String::from_utf8_lossy(&bytes).into_owned());
                            held = Some(bytes);
                            Ok((out, text))
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Skip::Removed),
                        Err(e) => Err(Skip::Unreadable(e.to_string())),
                    };
                    let crosses = r.as_ref().is_ok_and(|(out, _)| {
                        out.offers() || !out.asked.calls.is_empty()
                    });
                    holds.audited(*c, base + k, held, crosses);
                    progress.inc();
                    (path.clone(), *scope, shown, r, mods)
                };
            pool.install(|| queue.par_iter().enumerate().map(audit_one).collect())
        };
        let mut next = Vec::new();
        // The round is in the queue's order: each file's crate is there.
        for ((path, scope, shown, r, (mods, in_macro)), queued) in round.into_iter().zip(&queue) {
            crate_of_slot.push(queued.2);
            if in_macro {
                macro_modules.push(shown.clone());
            }
            for (m, expected) in mods {
                let entered = 'enter: {
                    if known.contains(&m) {
                        break 'enter None;
                    }
                    // Asked of every audited file at once, on the workers.
                    let seen = seen.get_or_insert_with(|| {
                        pool.install(|| known.par_iter().map(|f| walk::identity(f)).collect())
                    });
                    let id = walk::identity(&m);
                    if seen.contains(&id) {
                        break 'enter None;
                    }
                    // Inside the declaring file's repository (or, outside
                    // one, its directory): never elsewhere, nor under `.git`.
                    let inside = places.inside_declaring_repository(&m, &path);
                    let regular = std::fs::metadata(&m).is_ok_and(|md| md.is_file());
                    if !inside || !regular || !seen.insert(id) {
                        break 'enter None;
                    }
                    let scope = scopes.of_path(&m);
                    if p.excludes.excludes_file(&m) || scopes.list[scope].excludes.excludes_file(&m)
                    {
                        excluded_modules += 1;
                        break 'enter None;
                    }
                    Some(scope)
                };
                if let Some(scope) = entered {
                    known.insert(m.clone());
                    let c = holds.enter(&m, &p.cwd);
                    next.push((m, scope, c));
                }
                // Entered (its crate counts it now) or turned away.
                if expected {
                    holds.settle(queued.2);
                }
            }
            results.push((path, scope, shown, r));
        }
        next.sort();
        progress.more(next.len());
        queue = next;
    }
    progress.phase("following calls across files");
    let (held, roots, budget) = holds.into_bytes();
    let roots: Vec<PathBuf> = crate_of_slot.iter().map(|&c| roots[c].clone()).collect();
    crate_passes(
        p,
        &pool,
        &scopes,
        &manifests,
        &mut results,
        inventory,
        (held, budget),
        &roots,
        source,
    );
    drop(progress);
    drop(scopes);
    if !macro_modules.is_empty() && notes {
        macro_modules.sort();
        let n = macro_modules.len();
        crate::escape::eprintln(&format!(
            "note: {n} file{} declare{} modules inside a macro (`mod $name;`), which lockaudit cannot follow: {}",
            report::plural(n),
            if n == 1 { "s" } else { "" },
            first_names(&macro_modules),
        ));
    }
    if excluded_modules > 0 && notes {
        crate::escape::eprintln(&format!(
            "note: {excluded_modules} file{} reached by `mod` declarations {} excluded by lockaudit's excludes, not audited",
            report::plural(excluded_modules),
            if excluded_modules == 1 { "is" } else { "are" }
        ));
    }
    let mut audit = Audit {
        findings: Vec::new(),
        locks: Vec::new(),
        sources: HashMap::new(),
        files: 0,
        parsed: 0,
        internal_error: false,
        unreadable: p.walk_errors.clone(),
        audited: Vec::new(),
        audited_parsed: Vec::new(),
    };
    let mut generated_files = Vec::new();
    for (_, _, shown, r) in results {
        match r {
            Ok((out, text)) => {
                audit.files += 1;
                audit
                    .audited
                    .push(root_relative(&shown, &p.root_prefix, &p.cwd));
                audit.audited_parsed.push(out.parsed);
                audit.parsed += usize::from(out.parsed);
                audit.internal_error |= out.internal_error;
                audit.findings.extend(out.findings);
                audit.locks.extend(out.locks);
                if let Some(t) = text {
                    let t = t.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(t);
                    audit.sources.insert(shown, t);
                }
            }
            Err(Skip::Generated) => generated_files.push(shown),
            // Deleted between the walk and the read: nothing to audit.
            Err(Skip::Removed) => {
                crate::escape::eprintln(&format!("note: {shown}: removed during the run, skipped"))
            }
            Err(Skip::Unreadable(e)) => audit.unreadable.push(format!("{shown}: {e}")),
        }
    }
    if !generated_files.is_empty() && notes {
        let n = generated_files.len();
        crate::escape::eprintln(&format!(
            "note: skipped {n} generated file{} (a generated-file marker in {} header: {}): `--include-vendored` audits {}",
            report::plural(n),
            if n == 1 { "its" } else { "their" },
            first_names(&generated_files),
            if n == 1 { "it" } else { "them" },
        ));
    }
    audit
        .findings
        .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    audit.locks.sort();
    Ok(audit)
}

/// The first three names of a list for a note, then `…` if there are more.
fn first_names(names: &[String]) -> String {
    let mut out = names.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > 3 {
        out.push_str(", …");
    }
    out
}

/// What a file brings into its crate: the files its `mod` declarations
/// and `include!`s name (each with whether its crate's bytes are held
/// for it: [`Holds::expect`]), and whether a macro of it declares modules.
type Reached = (Vec<(PathBuf, bool)>, bool);

/// Where the files `mod` declarations reach really are, and the repository
/// each declaring file belongs to: every directory asked of the file system
/// once, from its parent's answer, so a `mod` chain thousands of
/// directories deep costs a few system calls per file, not a walk of the
/// whole path per component.
#[derive(Default)]
struct ModPlaces {
    canonical: walk::Canonical,
    roots: walk::DirMemo<Option<PathBuf>>,
}

impl ModPlaces {
    /// `path` after every symbolic link.
    fn real(&mut self, path: &Path) -> Option<PathBuf> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if meta.file_type().is_symlink() {
            return std::fs::canonicalize(path).ok();
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Some(self.canonical.of(dir)?.join(path.file_name()?))
    }

    /// The nearest directory at or above canonical `dir` that holds `.git`.
    fn repo_root(&mut self, dir: &Path) -> Option<PathBuf> {
        self.roots
            .get(dir, |d, parent| {
                if d.join(".git").exists() {
                    Some(d.to_path_buf())
                } else {
                    parent.cloned().flatten()
                }
            })
            .clone()
    }

    /// Whether `file` lies inside the repository of `declaring` (outside
    /// one, its directory), and not under `.git` there: the rule of
    /// [`config::inside_repository`], answered from the memos.
    fn inside_declaring_repository(&mut self, file: &Path, declaring: &Path) -> bool {
        let Some(dir) = self
            .real(declaring)
            .and_then(|r| r.parent().map(Path::to_path_buf))
        else {
            return false;
        };
        let root = self.repo_root(&dir).unwrap_or(dir);
        self.real(file).is_some_and(|real| {
            real.strip_prefix(&root)
                .is_ok_and(|rel| !rel.components().any(|c| c.as_os_str() == ".git"))
        })
    }
}

/// Per scope: its pre-filter, unless the run turned it off. Scopes with
/// the same packs and lock-name pattern share one.
pub(crate) fn prefilters(
    p: &Prepared,
    list: &[crate::scope::Scope],
) -> Vec<Option<std::sync::Arc<Prefilter>>> {
    let mut built: HashMap<(*const crate::pack::PackSet, String), std::sync::Arc<Prefilter>> =
        HashMap::new();
    list.iter()
        .map(|s| {
            p.prefilter.then(|| {
                let key = (
                    std::sync::Arc::as_ptr(&s.packs),
                    s.settings.lock_name.as_str().to_string(),
                );
                built
                    .entry(key)
                    .or_insert_with(|| {
                        std::sync::Arc::new(Prefilter::new(&s.packs, &s.settings.lock_name))
                    })
                    .clone()
            })
        })
        .collect()
}

/// Per scope: the engine, with its pre-filter.
pub(crate) fn engines<'s>(
    list: &'s [crate::scope::Scope],
    prefilters: &'s [Option<std::sync::Arc<Prefilter>>],
    manifests: &'s Manifests,
) -> Vec<Engine<'s>> {
    list.iter()
        .zip(prefilters)
        .map(|(s, pre)| {
            Engine::new(&s.packs, &s.settings)
                .with_prefilter(pre.as_deref())
                .with_manifests(manifests)
        })
        .collect()
}

/// The crate passes ([`crate::cross`]): the files that call another
/// file's wrapper, the files that define them, and the files whose fencing
/// check follows calls into other files are audited again, from the bytes
/// the first audit `held` (by place in `results`), knowing each file's
/// crate root (`roots`, by the same place); a file read again is one the
/// bound on what is held let go.
#[allow(clippy::too_many_arguments)]
fn crate_passes(
    p: &Prepared,
    pool: &rayon::ThreadPool,
    scopes: &Scopes,
    manifests: &Manifests,
    results: &mut [(PathBuf, usize, String, FileResult)],
    inventory: bool,
    (mut held, budget): (HashMap<usize, std::sync::Arc<[u8]>>, crate::cross::Held),
    roots: &[PathBuf],
    source: &dyn Source,
) {
    let list = &scopes.list;
    // No pre-filter: a caller of a wrapper need not mention any lock API.
    let no_prefilter: Vec<Option<std::sync::Arc<Prefilter>>> = list.iter().map(|_| None).collect();
    let unfiltered = engines(list, &no_prefilter, manifests);
    let prefilters = prefilters(p, list);
    let engines_first: Vec<Engine> = engines(list, &prefilters, manifests);
    // The files audited with an outcome; the others stay as they are.
    let mut slots = Vec::new();
    let mut files: Vec<crate::cross::Audited> = Vec::new();
    for (i, (path, scope, shown, r)) in results.iter_mut().enumerate() {
        if let Ok((out, _)) = r {
            slots.push(i);
            let mut file = crate::cross::Audited::new(
                path.clone(),
                *scope,
                shown.clone(),
                std::mem::take(out),
            );
            file.bytes = held.remove(&i);
            file.root = roots.get(i).cloned();
            files.push(file);
        }
    }
    drop(held);
    let engine = |scope: usize| unfiltered[scope];
    let read = |path: &Path, scope: usize| -> Option<std::sync::Arc<[u8]>> {
        source
            .read(path, list[scope].settings.max_file_size)
            .ok()
            .and_then(Result::ok)
            .map(Into::into)
    };
    // A crate the walk did not cover whole (a file or a subdirectory was
    // named) is read from disk, as far as its excludes allow.
    let crate_files = |root: &Path, scope: usize| {
        let s = &list[scope];
        let real = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        // Never a crate the walk covered, nor one whose `Cargo.toml` lies
        // above the repository: nothing outside it is read.
        if p.walked_dirs.iter().any(|d| real.starts_with(d))
            || !config::inside_repository(&real, &p.root)
        {
            return Vec::new();
        }
        crate::model::resolve::crate_files_on_disk(
            root,
            &p.cwd,
            Some(&s.excludes),
            s.settings.max_file_size,
        )
    };
    let first = |scope: usize| engines_first[scope];
    // A named file, or a named directory inside a crate, may leave part
    // of its crate unwalked.
    let partial = partial(p);
    let sources = crate::cross::Sources {
        first: &first,
        engine: &engine,
        read: &read,
        crate_files: &crate_files,
        partial,
        first_audits: None,
    };
    // The file phase ends with the rest of each crate the walk covered in
    // part: the crate phase reads nothing more.
    let crates = crate::cross::gather(&mut files, &p.cwd, pool, inventory, &sources, budget);
    source.files_read();
    if let Some(crates) = crates {
        crate::cross::passes(&mut files, crates, pool, inventory, &sources);
    }
    for (slot, f) in slots.into_iter().zip(files) {
        if let Ok((out, text)) = &mut results[slot].3 {
            *out = f.outcome;
            if text.is_none() && !out.findings.is_empty() {
                *text = f
                    .bytes
                    .or_else(|| read(&f.path, f.scope))
                    .map(|b| String::from_utf8_lossy(&b).into_owned());
            }
        }
    }
}

/// `check --stdin-filename PATH`: standard input audited as the file
/// PATH, with the config that governs PATH and the rest of PATH's crate
/// read from disk, as the language server audits an unsaved buffer.
pub(crate) fn audit_stdin(p: &Prepared, name: &Path) -> Result<Audit, Failure> {
    use std::io::Read;
    let mut scopes = lock(&p.scopes);
    let scope = scopes.of_path(name);
    if !scopes.errors.is_empty() {
        for e in &scopes.errors {
            print_yaml_errors(e);
        }
        return Err(Failure(String::new()));
    }
    let s = &scopes.list[scope];
    let limit = s.settings.max_file_size;
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure(format!("cannot read standard input: {e}")))?;
    let shown = walk::display_path(name, &p.cwd);
    let manifests = Manifests::new(p.cwd.clone()).with_named(p.named_places());
    let pre = p
        .prefilter
        .then(|| Prefilter::new(&s.packs, &s.settings.lock_name));
    let engine = Engine::new(&s.packs, &s.settings)
        .with_prefilter(pre.as_ref())
        .with_manifests(&manifests);
    let out = if bytes.len() as u64 > limit {
        engine.too_large(&shown, bytes.len() as u64)
    } else {
        audit_in_crate(&engine, &shown, &bytes, &p.cwd, Some(&s.excludes), None)
    };
    let text = String::from_utf8_lossy(&bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text).to_string();
    let mut findings = out.findings;
    findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    Ok(Audit {
        findings,
        locks: out.locks,
        sources: HashMap::from([(shown.clone(), text)]),
        files: 1,
        parsed: usize::from(out.parsed),
        internal_error: out.internal_error,
        unreadable: Vec::new(),
        audited: vec![root_relative(&shown, &p.root_prefix, &p.cwd)],
        audited_parsed: vec![out.parsed],
    })
}

/// A source that gives the text `--fix` wrote for the files it rewrote,
/// and reads the others through `base`.
struct Written<'a> {
    texts: HashMap<&'a Path, &'a [u8]>,
    base: &'a dyn Source,
}

impl Source for Written<'_> {
    fn read(&self, path: &Path, limit: u64) -> std::io::Result<Result<Vec<u8>, u64>> {
        match self.texts.get(path) {
            Some(b) if b.len() as u64 > limit => Ok(Err(b.len() as u64)),
            Some(b) => Ok(Ok(b.to_vec())),
            None => self.base.read(path, limit),
        }
    }

    fn files_read(&self) {
        self.base.files_read();
    }
}

/// The audit after `check --fix` rewrote the files `written` (each with
/// the bytes now in it), from the audit before (`first`): only the crates
/// holding a rewritten file are audited again, since what the crate
/// passes find never crosses a crate; every other file's findings stand
/// as they were, and its file is not read again. A rewritten file's text
/// is the one written, not read back.
pub fn audit_after_fix(
    p: &Prepared,
    first: Audit,
    written: &[(PathBuf, Vec<u8>)],
    source: &dyn Source,
) -> Result<Audit, Failure> {
    let rewritten: Vec<PathBuf> = written.iter().map(|(f, _)| f.clone()).collect();
    let source = Written {
        texts: written
            .iter()
            .map(|(f, b)| (f.as_path(), b.as_slice()))
            .collect(),
        base: source,
    };
    let again = audit_some(p, false, &source, Some(&rewritten))?;
    Ok(merged(p, first, again))
}

/// `first` with every file `again` audited taken from `again`.
fn merged(p: &Prepared, first: Audit, again: Audit) -> Audit {
    let redone: std::collections::HashSet<&str> =
        again.audited.iter().map(String::as_str).collect();
    let kept =
        |shown: &str| !redone.contains(root_relative(shown, &p.root_prefix, &p.cwd).as_str());
    let mut out = Audit {
        findings: first
            .findings
            .into_iter()
            .filter(|f| kept(&f.path))
            .chain(again.findings)
            .collect(),
        locks: first
            .locks
            .into_iter()
            .filter(|l| kept(&l.path))
            .chain(again.locks)
            .collect(),
        sources: first
            .sources
            .into_iter()
            .filter(|(shown, _)| kept(shown))
            .chain(again.sources)
            .collect(),
        files: 0,
        parsed: 0,
        internal_error: first.internal_error || again.internal_error,
        unreadable: first.unreadable,
        audited: Vec::new(),
        audited_parsed: Vec::new(),
    };
    for u in again.unreadable {
        if !out.unreadable.contains(&u) {
            out.unreadable.push(u);
        }
    }
    let before = first
        .audited
        .into_iter()
        .zip(first.audited_parsed)
        .filter(|(f, _)| !redone.contains(f.as_str()));
    let after = again
        .audited
        .iter()
        .cloned()
        .zip(again.audited_parsed.iter().copied());
    for (f, parsed) in before.chain(after) {
        out.files += 1;
        out.parsed += usize::from(parsed);
        out.audited.push(f);
        out.audited_parsed.push(parsed);
    }
    out.findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    out.locks.sort();
    out
}

/// `path` with `.` and `..` taken as written, before any link is followed.
pub(crate) fn lexically(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c.as_os_str()),
        }
    }
    out
}

/// Audits one file alone (the language server, an unsaved buffer), as
/// a run naming only that file would: its crate's other files on disk
/// are read for the wrappers, texts and functions they offer
/// ([`crate::cross::crate_passes`]), within `excludes` and the size
/// limit. With `first_audits` (an editor session's), a crate file that
/// has not changed on disk since an earlier call is neither read nor
/// audited again for what it offers.
pub fn audit_in_crate(
    engine: &Engine<'_>,
    shown: &str,
    bytes: &[u8],
    cwd: &std::path::Path,
    excludes: Option<&crate::walk::Excludes>,
    first_audits: Option<&crate::cross::FirstAudits>,
) -> FileOutcome {
    let path = cwd.join(shown);
    let mut edited =
        crate::cross::Audited::edited(engine, path.clone(), shown, bytes, first_audits);
    // The buffer is the file's text for every pass.
    edited.bytes = Some(bytes.into());
    let Ok(pool) = crate::parse::pool(None) else {
        return edited.outcome;
    };
    let max = engine.settings.max_file_size;
    let unfiltered = engine.with_prefilter(None);
    let engine_of = |_: usize| unfiltered;
    let kept = engine.keeping_words(true);
    let first_engine = |_: usize| kept;
    let read = |p: &std::path::Path, _: usize| -> Option<std::sync::Arc<[u8]>> {
        if p == path {
            return Some(bytes.into());
        }
        crate::source::read_capped(p, max)
            .ok()
            .and_then(Result::ok)
            .map(Into::into)
    };
    // Only a crate inside the file's repository (the git top level
    // above it) is read; a file in no repository is on its own machine
    // and its crate is read wherever it is.
    let top = std::fs::canonicalize(&path).ok().and_then(|real| {
        real.ancestors()
            .find(|d| d.join(".git").exists())
            .map(std::path::Path::to_path_buf)
    });
    let crate_files = |root: &std::path::Path, _: usize| {
        let real = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        if top.as_ref().is_some_and(|t| !real.starts_with(t)) {
            return Vec::new();
        }
        crate::model::resolve::crate_files_on_disk(root, cwd, excludes, max)
    };
    let sources = crate::cross::Sources {
        first: &first_engine,
        engine: &engine_of,
        read: &read,
        crate_files: &crate_files,
        partial: true,
        first_audits,
    };
    let mut files = vec![edited];
    crate::cross::crate_passes(&mut files, cwd, &pool, false, &sources);
    files.pop().map(|f| f.outcome).unwrap_or_default()
}
