//! Wires the pipeline: settings → packs → walk → per-file work in parallel →
//! sort → suppressions and baseline → report → exit status.

use std::collections::{BTreeSet, HashMap};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::baseline::Baseline;
use crate::checks::{CheckId, CHECKS};
use crate::cli::{
    CheckArgs, Cli, Color, Command, CommonArgs, FailOn, InventoryArgs, InventoryFormat, ListFormat,
};
use crate::config;
use crate::diag::YamlErrors;
use crate::engine::{Engine, FileOutcome};
use crate::exit::ExitStatus;
use crate::finding::{Finding, Severity};
use crate::inventory::LockRow;
use crate::model::resolve::Manifests;
use crate::prefilter::Prefilter;
use crate::report::{self, Format, Summary};
use crate::scope::Scopes;
use crate::walk::{self, Excludes};

/// A failure that stops the run with exit code 2.
#[derive(Debug)]
pub struct Failure(pub String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(e.to_string())
    }
}

/// The program: arguments from the environment, parsed, run. With
/// `cargo_subcommand`, the `lockaudit` cargo passes first is dropped.
pub fn main(cargo_subcommand: bool) -> ExitStatus {
    let args = match crate::cli::normalize(std::env::args_os().collect(), cargo_subcommand) {
        Ok(a) => a,
        Err(msg) => {
            crate::escape::eprint_block(&format!("error: {msg}\n"));
            return ExitStatus::Error;
        }
    };
    // `cargo lockaudit --help` says `Usage: cargo lockaudit …`, as cargo's
    // own subcommands do.
    let name = if cargo_subcommand {
        "cargo lockaudit"
    } else {
        "lockaudit"
    };
    let matches = <Cli as clap::CommandFactory>::command()
        .bin_name(name)
        .get_matches_from(args);
    match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => run(cli),
        Err(e) => e.exit(),
    }
}

pub fn run(cli: Cli) -> ExitStatus {
    let result = match cli.command {
        None => check(&cli.check),
        Some(Command::Check(args)) => check(&args),
        Some(Command::Inventory(args)) => inventory(&args),
        Some(Command::Rules(args)) => rules(&args),
        Some(Command::Explain(args)) => explain(&args.check),
        Some(Command::Init(args)) => init(args.force, args.exclude_tests),
        Some(Command::Annotate(args)) => crate::commands::annotate::run(&args),
        Some(Command::Lsp(args)) => crate::commands::lsp::run(&args),
        Some(Command::TestPack(args)) => crate::commands::test_pack::run(&args),
        Some(Command::Completions(args)) => completions(args.shell),
        Some(Command::Manpage) => manpage(),
    };
    match result {
        Ok(s) => s,
        Err(Failure(msg)) => {
            if !msg.is_empty() {
                crate::escape::eprintln(&format!("error: {msg}"));
            }
            ExitStatus::Error
        }
    }
}

/// Prints every problem of a YAML file, each with its file, line and
/// column, under one headline, in the findings' style.
pub fn print_yaml_errors(e: &YamlErrors) {
    // As cargo colours its errors: anstream's choice for standard error.
    let color = anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never;
    crate::escape::eprint_block(&render_yaml_errors(e, color));
}

pub fn render_yaml_errors(e: &YamlErrors, color: bool) -> String {
    let mut out = format!("error: {}\n", crate::escape::text(&e.to_string()));
    let mut problems: Vec<_> = e.problems.iter().collect();
    problems.sort_by_key(|p| (p.line, p.column));
    for p in problems {
        out.push('\n');
        out.push_str(&p.render(color, 100));
    }
    out
}

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
fn check_config_path(p: &Path) -> Result<(), Failure> {
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

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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

/// Reads and audits every file, in parallel; results sorted. Files that
/// `mod` declarations and `#[path]` reach from an audited file are compiled,
/// so they are audited too (in further rounds), whatever their name and
/// whatever `.gitignore` or `.ignore` say: a pull request cannot hide code
/// from the gate that way. They must be regular files inside the
/// repository; lockaudit's own excludes still apply.
pub fn audit(p: &Prepared, inventory: bool) -> Result<Audit, Failure> {
    let pool = crate::parse::pool(p.jobs)?;
    let mut scopes = lock(&p.scopes);
    // The files audited so far, by path as the walk spells them: most
    // declared modules are among them, and are told so without a `stat`.
    let mut known: std::collections::HashSet<PathBuf> = p.files.iter().cloned().collect();
    // And by identity (device and inode), asked only for a module not known
    // by its path: a hard link or another spelling of an audited file.
    let mut seen: Option<std::collections::HashSet<walk::Identity>> = None;
    let mut queue: Vec<(PathBuf, usize)> = p
        .files
        .iter()
        .cloned()
        .zip(p.file_scope.iter().copied())
        .collect();
    let mut excluded_modules = 0usize;
    let mut results: Vec<(PathBuf, usize, String, FileResult)> = Vec::new();
    let manifests = Manifests::new(p.cwd.clone());
    let progress = crate::progress::Progress::files(queue.len());
    let mut places = ModPlaces::default();
    // Files whose macros declare modules: those cannot be followed.
    let mut macro_modules: Vec<String> = Vec::new();
    while !queue.is_empty() {
        let round: Vec<(PathBuf, usize, String, FileResult, Reached)> = {
            let list = &scopes.list;
            let prefilters = prefilters(p, list);
            let engines: Vec<Engine> = engines(list, &prefilters, &manifests)
                .into_iter()
                .map(|e| e.keeping(true))
                .collect();
            let audit_one = |(path, scope): &(PathBuf, usize)| -> (
                PathBuf,
                usize,
                String,
                FileResult,
                Reached,
            ) {
                    let shown = walk::display_path(path, &p.cwd);
                    let engine = &engines[*scope];
                    let mut mods = (Vec::new(), false);
                    let r = match read_capped(path, engine.settings.max_file_size) {
                        Ok(Err(size)) => Ok((engine.too_large(&shown, size), Some(String::new()))),
                        Ok(Ok(bytes))
                            if !p.include_vendored
                                && !p.named.contains(path)
                                && generated(&bytes) =>
                        {
                            Err(Skip::Generated)
                        }
                        Ok(Ok(bytes)) => {
                            mods = (
                                walk::declared_modules(path, &bytes, &|m| known.contains(m)),
                                walk::declares_modules_in_a_macro(&bytes),
                            );
                            let out = engine.check_bytes(&shown, &bytes, inventory);
                            let text = (!out.findings.is_empty())
                                .then(|| String::from_utf8_lossy(&bytes).into_owned());
                            Ok((out, text))
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Skip::Removed),
                        Err(e) => Err(Skip::Unreadable(e.to_string())),
                    };
                    progress.inc();
                    (path.clone(), *scope, shown, r, mods)
                };
            pool.install(|| queue.par_iter().map(audit_one).collect())
        };
        let mut next = Vec::new();
        for (path, scope, shown, r, (mods, in_macro)) in round {
            if in_macro {
                macro_modules.push(shown.clone());
            }
            for m in mods {
                if known.contains(&m) {
                    continue;
                }
                let seen =
                    seen.get_or_insert_with(|| known.iter().map(|f| walk::identity(f)).collect());
                let id = walk::identity(&m);
                if seen.contains(&id) {
                    continue;
                }
                // Inside the declaring file's repository (or, outside one,
                // its directory): never elsewhere, nor under `.git`.
                let inside = places.inside_declaring_repository(&m, &path);
                let regular = std::fs::metadata(&m).is_ok_and(|md| md.is_file());
                if !inside || !regular || !seen.insert(id) {
                    continue;
                }
                let scope = scopes.of_path(&m);
                if p.excludes.excludes_file(&m) || scopes.list[scope].excludes.excludes_file(&m) {
                    excluded_modules += 1;
                    continue;
                }
                known.insert(m.clone());
                next.push((m, scope));
            }
            results.push((path, scope, shown, r));
        }
        next.sort();
        progress.more(next.len());
        queue = next;
    }
    progress.phase("following calls across files");
    crate_passes(p, &pool, &scopes, &manifests, &mut results, inventory);
    drop(progress);
    drop(scopes);
    if !macro_modules.is_empty() {
        macro_modules.sort();
        let n = macro_modules.len();
        crate::escape::eprintln(&format!(
            "note: {n} file{} declare{} modules inside a macro (`mod $name;`), which lockaudit cannot follow: {}",
            report::plural(n),
            if n == 1 { "s" } else { "" },
            first_names(&macro_modules),
        ));
    }
    if excluded_modules > 0 {
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
    };
    let mut generated_files = Vec::new();
    for (_, _, shown, r) in results {
        match r {
            Ok((out, text)) => {
                audit.files += 1;
                audit
                    .audited
                    .push(root_relative(&shown, &p.root_prefix, &p.cwd));
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
    if !generated_files.is_empty() {
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
/// and `include!`s name, and whether a macro of it declares modules.
type Reached = (Vec<PathBuf>, bool);

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
/// check follows calls into other files are audited again.
fn crate_passes(
    p: &Prepared,
    pool: &rayon::ThreadPool,
    scopes: &Scopes,
    manifests: &Manifests,
    results: &mut [(PathBuf, usize, String, FileResult)],
    inventory: bool,
) {
    let list = &scopes.list;
    // No pre-filter: a caller of a wrapper need not mention any lock API.
    let no_prefilter: Vec<Option<std::sync::Arc<Prefilter>>> = list.iter().map(|_| None).collect();
    let unfiltered = engines(list, &no_prefilter, manifests);
    let prefilters = prefilters(p, list);
    let engines_first: Vec<Engine> = engines(list, &prefilters, manifests)
        .into_iter()
        .map(|e| e.keeping(true))
        .collect();
    // The files audited with an outcome; the others stay as they are.
    let mut slots = Vec::new();
    let mut files: Vec<crate::cross::Audited> = Vec::new();
    for (i, (path, scope, shown, r)) in results.iter_mut().enumerate() {
        if let Ok((out, _)) = r {
            slots.push(i);
            files.push(crate::cross::Audited::new(
                path.clone(),
                *scope,
                shown.clone(),
                std::mem::take(out),
            ));
        }
    }
    let engine = |scope: usize| unfiltered[scope];
    let read = |path: &Path, scope: usize| -> Option<std::sync::Arc<[u8]>> {
        read_capped(path, list[scope].settings.max_file_size)
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
    let partial = !p.named.is_empty()
        || p.walked_dirs.iter().any(|d| {
            !d.join("Cargo.toml").is_file()
                && crate::model::resolve::crate_root_on_disk(d).is_some()
        });
    let sources = crate::cross::Sources {
        first: &first,
        engine: &engine,
        read: &read,
        crate_files: &crate_files,
        partial,
        first_audits: None,
    };
    crate::cross::crate_passes(&mut files, &p.cwd, pool, inventory, &sources);
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

/// A file's bytes, or its size when it is larger than `limit` (then it is
/// not read: memory stays bounded whatever the tree holds).
pub(crate) fn read_capped(path: &Path, limit: u64) -> std::io::Result<Result<Vec<u8>, u64>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size > limit {
        return Ok(Err(size));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Ok(Err(bytes.len() as u64));
    }
    Ok(Ok(bytes))
}

/// Whether the human report is coloured. `auto` decides as anstream (and
/// so cargo and clap) do for standard output: `NO_COLOR` (set and not
/// empty) turns colour off, then `CLICOLOR_FORCE` (set and not empty) turns it on
/// even when standard output is not a terminal, `CLICOLOR=0` turns it off,
/// and otherwise a terminal that is not `TERM=dumb` gets colour. A report
/// written with `--output` is coloured only with `--color always`.
fn use_color(c: Color, to_stdout: bool) -> bool {
    match c {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => {
            to_stdout
                && anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
        }
    }
}

/// `check --statistics`: the number of findings of each check (not
/// counting suppressed ones), most frequent first, as ruff prints them.
fn statistics(findings: &[Finding], format: Format) -> String {
    let mut counts: std::collections::BTreeMap<CheckId, usize> = Default::default();
    for f in findings.iter().filter(|f| f.suppressed.is_none()) {
        *counts.entry(f.check).or_default() += 1;
    }
    let mut rows: Vec<(CheckId, usize)> = counts.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.as_str().cmp(b.0.as_str())));
    if matches!(format, Format::Json | Format::Sarif) {
        let list: Vec<_> = rows
            .iter()
            .map(|(id, n)| {
                serde_json::json!({
                    "check": id.as_str(),
                    "count": n,
                    "summary": id.info().summary,
                })
            })
            .collect();
        let mut s = serde_json::to_string_pretty(&list).unwrap_or_default();
        s.push('\n');
        return s;
    }
    let count_width = rows
        .iter()
        .map(|(_, n)| n.to_string().len())
        .max()
        .unwrap_or(1);
    let id_width = rows
        .iter()
        .map(|(id, _)| id.as_str().len())
        .max()
        .unwrap_or(0);
    rows.iter()
        .map(|(id, n)| {
            format!(
                "{n:>count_width$}  {:id_width$}  {}\n",
                id.as_str(),
                id.info().summary
            )
        })
        .collect()
}

/// `check --stdin-filename PATH`: standard input audited as the file
/// PATH, with the config that governs PATH and the rest of PATH's crate
/// read from disk, as the language server audits an unsaved buffer.
fn audit_stdin(p: &Prepared, name: &Path) -> Result<Audit, Failure> {
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
    let manifests = Manifests::new(p.cwd.clone());
    let pre = p
        .prefilter
        .then(|| Prefilter::new(&s.packs, &s.settings.lock_name));
    let engine = Engine::new(&s.packs, &s.settings)
        .with_prefilter(pre.as_ref())
        .with_manifests(&manifests);
    let out = if bytes.len() as u64 > limit {
        engine.too_large(&shown, bytes.len() as u64)
    } else {
        engine.check_in_crate(&shown, &bytes, &p.cwd, Some(&s.excludes), None)
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
    })
}

/// `lockaudit completions SHELL`: the completion script clap_complete
/// generates from the command line's definition.
fn completions(shell: clap_complete::Shell) -> Result<ExitStatus, Failure> {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "lockaudit", &mut out);
    emit(None, &String::from_utf8_lossy(&out))?;
    Ok(ExitStatus::Clean)
}

/// `lockaudit manpage`: the man page clap_mangen renders from the command
/// line's definition (the top level, its options and the subcommands).
fn manpage() -> Result<ExitStatus, Failure> {
    use clap::CommandFactory;
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    emit(None, &String::from_utf8_lossy(&out))?;
    Ok(ExitStatus::Clean)
}

/// The width of the terminal on stdout: `COLUMNS` when set, else what the
/// terminal says, else 100.
fn terminal_width() -> usize {
    let actual = terminal_size::terminal_size_of(std::io::stdout())
        .map(|(w, _)| usize::from(w.0))
        .filter(|w| *w >= 40)
        .unwrap_or(100);
    columns_or(actual)
}

/// `COLUMNS` when it is set to a usable width, else `default`.
fn columns_or(default: usize) -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|w: &usize| (40..=1000).contains(w))
        .unwrap_or(default)
}

fn fails(findings: &[Finding], fail_on: FailOn) -> bool {
    let threshold = match fail_on {
        FailOn::Never => return false,
        FailOn::Error => Severity::Error,
        FailOn::Warning => Severity::Warning,
        FailOn::Note => Severity::Note,
    };
    findings
        .iter()
        .any(|f| f.suppressed.is_none() && f.severity >= threshold)
}

/// Writes a report or a baseline through the one writer
/// ([`crate::write`]); `root`: the repository root, below which no
/// symbolic link is followed; `read`: what was read from the file before,
/// which it must still hold.
pub fn write_atomic(
    path: &Path,
    bytes: &[u8],
    root: &Path,
    read: Option<&[u8]>,
) -> Result<(), Failure> {
    let opts = crate::write::Options {
        root,
        read,
        keep_mode: false,
    };
    crate::write::replace(path, bytes, &opts)
        .map_err(|e| Failure(format!("{}: cannot write: {e}", crate::escape::path(path))))
}

/// The repository root of a command that prepares no run: the git top
/// level above the current directory, or the current directory.
fn cwd_root() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    config::repo_root(&cwd).unwrap_or(cwd)
}

/// Whether standard output was closed when the process started
/// (`lockaudit check >&-`). The Rust runtime then opens `/dev/null` in its
/// place before `main`, where a report would be lost without a word; a
/// constructor, which runs before the runtime does, remembers it.
static STDOUT_CLOSED_AT_START: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

#[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
#[used]
#[cfg_attr(
    any(target_os = "linux", target_os = "android"),
    link_section = ".init_array"
)]
#[cfg_attr(target_vendor = "apple", link_section = "__DATA,__mod_init_func")]
static RECORD_STDOUT: extern "C" fn() = record_stdout;

#[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
extern "C" fn record_stdout() {
    // SAFETY: `fcntl(F_GETFD)` only asks whether descriptor 1 is open.
    let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1;
    STDOUT_CLOSED_AT_START.store(closed, std::sync::atomic::Ordering::Relaxed);
}

fn stdout_closed_at_start() -> bool {
    // Named here, so the constructor is linked wherever this is.
    #[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
    std::hint::black_box(&RECORD_STDOUT);
    STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed)
}

pub(crate) fn emit(output: Option<&Path>, text: &str) -> Result<(), Failure> {
    emit_report(output, None, text, false)
}

/// Writes the report, made safe for a CI log ([`crate::escape::log`]),
/// keeping the workflow commands of the `--format github` report
/// (`commands`); a file gets the same bytes as standard output. `root`:
/// the run's repository root, else the current directory's.
fn emit_report(
    output: Option<&Path>,
    root: Option<&Path>,
    text: &str,
    commands: bool,
) -> Result<(), Failure> {
    let text = crate::escape::log(text, commands);
    match output {
        Some(p) => match root {
            Some(r) => write_atomic(p, text.as_bytes(), r, None),
            None => write_atomic(p, text.as_bytes(), &cwd_root(), None),
        },
        None if stdout_closed_at_start() && !text.is_empty() => Err(Failure(
            "cannot write the report to standard output: it is closed (use --output FILE)".into(),
        )),
        None => {
            let mut out = std::io::stdout().lock();
            let mut written = 0;
            let bytes = text.as_bytes();
            while written < bytes.len() {
                match out.write(&bytes[written..]) {
                    Ok(0) => break,
                    Ok(n) => written += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    // `lockaudit | head` read what it wanted: not an error.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe && written > 0 => {
                        return Ok(())
                    }
                    // Nobody read any of it: the report is lost, say so.
                    Err(e) => {
                        return Err(Failure(format!(
                            "cannot write the report to standard output: {e} (use --output FILE)"
                        )))
                    }
                }
            }
            match out.flush() {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe && written > 0 => Ok(()),
                Err(e) => Err(Failure(format!(
                    "cannot write the report to standard output: {e} (use --output FILE)"
                ))),
            }
        }
    }
}

/// A baseline is read like a config: a regular file, at most 64 MB. One
/// named inside the repository (not under `.git`) must resolve inside it
/// too: a committed symbolic link never leads the read outside or into
/// `.git`, and a link out reads as no file at all, whether its target
/// exists or not. One named elsewhere is the caller's choice. Also
/// returns the text read.
fn read_baseline(path: &Path, p: &Prepared) -> Result<(Baseline, String), Failure> {
    let shown = crate::escape::path(path);
    let cwd = std::fs::canonicalize(&p.cwd).unwrap_or_else(|_| p.cwd.clone());
    let named_inside = lexically(&cwd.join(path))
        .strip_prefix(&p.root)
        .is_ok_and(|rel| !rel.components().any(|c| c.as_os_str() == ".git"));
    if named_inside && !config::inside_repository(path, &p.root) {
        return Err(Failure(format!(
            "{shown}: cannot read baseline: not a regular file inside the repository (a \
             symbolic link out of it, or into `.git`, is not followed)"
        )));
    }
    let text = config::read_input(path, config::MAX_BASELINE_BYTES)
        .map_err(|e| Failure(format!("{shown}: cannot read baseline: {e}")))?;
    let b = Baseline::parse(&text).map_err(|e| Failure(format!("{shown}: {e}")))?;
    Ok((b, text))
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

/// The paths of the packages the cargo flags choose, in place of the
/// PATHS (which must then be left out), and `--exclude` without the
/// package names `--workspace` takes from it.
fn packages(
    cargo: &crate::cli::CargoArgs,
    paths: &mut Vec<PathBuf>,
    common: &mut CommonArgs,
) -> Result<(), Failure> {
    if !cargo.is_set() {
        return Ok(());
    }
    if paths.iter().any(|p| p != Path::new(".")) {
        return Err(Failure(
            "name PATHS or packages (--manifest-path, -p, --workspace), not both".into(),
        ));
    }
    let cwd = std::env::current_dir()?;
    *paths = crate::cargo::package_paths(cargo, &mut common.exclude, &cwd)?;
    if paths.is_empty() {
        return Err(Failure("the packages chosen have no source files".into()));
    }
    Ok(())
}

fn check(args: &CheckArgs) -> Result<ExitStatus, Failure> {
    let chosen;
    let args = if args.cargo.is_set() {
        let mut a = args.clone();
        if a.stdin_filename.is_some() {
            return Err(Failure(
                "--stdin-filename audits standard input: choose no packages".into(),
            ));
        }
        packages(&args.cargo, &mut a.paths, &mut a.common)?;
        chosen = a;
        &chosen
    } else {
        args
    };
    let mut common = args.common.clone();
    common.selection = crate::cli::Selection {
        select: args.select.clone(),
        extend_select: args.extend_select.clone(),
        ignore: args.ignore.clone(),
    };
    let paths: &[PathBuf] = match &args.stdin_filename {
        Some(_)
            if args
                .paths
                .iter()
                .all(|p| p == Path::new(".") || p == Path::new("-")) =>
        {
            &[]
        }
        Some(_) => {
            return Err(Failure(
                "--stdin-filename audits standard input: give no PATHS (or `-`)".into(),
            ))
        }
        None => &args.paths,
    };
    let prepared = prepare(paths, &common)?;
    let mut audit = match &args.stdin_filename {
        Some(name) => audit_stdin(&prepared, name)?,
        None => audit(&prepared, false)?,
    };
    if args.fix {
        audit = fix_and_audit_again(args, &prepared, audit)?;
    }
    for u in &audit.unreadable {
        crate::escape::eprintln(&format!("error: {u}"));
    }
    let tool_error = audit.internal_error || !audit.unreadable.is_empty();
    let to_root = |path: &str| root_relative(path, &prepared.root_prefix, &prepared.cwd);
    // Baselines name files from the repository root, like machine output.
    let rooted = |findings: &[Finding]| -> Vec<Finding> {
        let mut v = findings.to_vec();
        for f in &mut v {
            f.path = to_root(&f.path);
            for r in &mut f.related {
                r.path = to_root(&r.path);
            }
        }
        v
    };
    let audited: BTreeSet<&str> = audit.audited.iter().map(String::as_str).collect();
    if let Some(path) = &args.write_baseline {
        let b = Baseline::from_findings(&rooted(&audit.findings));
        write_atomic(path, b.to_json().as_bytes(), &prepared.root, None)?;
        if !args.quiet {
            crate::escape::eprintln(&format!(
                "wrote {} finding{} to {}",
                b.len(),
                report::plural(b.len()),
                crate::escape::path(path)
            ));
        }
        return Ok(if tool_error {
            ExitStatus::Error
        } else {
            ExitStatus::Clean
        });
    }
    if let Some(path) = &args.update_baseline {
        let (b, read) = read_baseline(path, &prepared)?;
        let before = b.len();
        let (pruned, dropped) = b.prune(&rooted(&audit.findings), &|p| audited.contains(p));
        write_atomic(
            path,
            pruned.to_json().as_bytes(),
            &prepared.root,
            Some(read.as_bytes()),
        )?;
        if !args.quiet {
            crate::escape::eprintln(&format!(
                "{}: dropped {} entr{} that no longer occur{}, kept {} of {before}",
                crate::escape::path(path),
                dropped.len(),
                if dropped.len() == 1 { "y" } else { "ies" },
                if dropped.len() == 1 { "s" } else { "" },
                pruned.len(),
            ));
            for e in &dropped {
                crate::escape::eprintln(&format!(
                    "  dropped: {} in {} ({})",
                    e.check, e.path, e.message
                ));
            }
        }
        return Ok(if tool_error {
            ExitStatus::Error
        } else {
            ExitStatus::Clean
        });
    }
    let mut baselined = 0;
    let mut stale = Vec::new();
    if let Some(path) = &args.baseline {
        let (b, _) = read_baseline(path, &prepared)?;
        let (kept, matched, unmatched) = b.filter(std::mem::take(&mut audit.findings));
        audit.findings = kept;
        baselined = matched;
        // An entry for a file this run did not audit is not stale: it was
        // not looked at.
        stale = unmatched
            .into_iter()
            .filter(|e| audited.contains(e.path.as_str()))
            .collect();
    }
    let mut preexisting = 0;
    if let Some(rev) = &args.new_since {
        let old = crate::gitref::fingerprints_at(rev, &args.paths, &prepared)?;
        let before = audit.findings.len();
        audit
            .findings
            .retain(|f| f.suppressed.is_some() || !old.contains(&f.fingerprint));
        preexisting = before - audit.findings.len();
    }
    let mut summary = Summary::new(audit.files, audit.parsed, &audit.findings);
    summary.baselined = baselined;
    summary.preexisting = preexisting;
    summary.stale_baseline = stale.len();
    summary.stale_baseline_entries = stale;
    summary.tool_errors = audit.unreadable.clone();
    if audit.internal_error {
        summary
            .tool_errors
            .push("internal error while auditing a file (see its parse-error finding)".into());
    }
    let machine = matches!(args.format, Format::Json | Format::Sarif | Format::Github);
    if machine {
        audit.findings = rooted(&audit.findings);
    }
    // The lines a pull request changed, so its annotations come first.
    let changed = match (args.format, &args.new_since) {
        (Format::Github, Some(rev)) => crate::gitref::changed_lines(rev, &prepared.cwd),
        (Format::Github, None) => std::env::var("GITHUB_BASE_REF")
            .ok()
            .filter(|b| !b.is_empty())
            .and_then(|b| {
                crate::gitref::changed_lines(&format!("origin/{b}"), &prepared.cwd)
                    .or_else(|| crate::gitref::changed_lines(&b, &prepared.cwd))
            }),
        _ => None,
    };
    let tty = args.output.is_none() && std::io::stdout().is_terminal();
    let opts = report::Options {
        color: use_color(args.color, args.output.is_none()),
        // Not a terminal: `COLUMNS` or 100 for diagnostics; tables keep a
        // fixed width, so logs do not depend on who ran them.
        width: match (tty, args.format) {
            (true, _) => terminal_width(),
            (false, Format::Human) => columns_or(100),
            (false, _) => 100,
        },
        sources: &audit.sources,
        quiet: args.quiet,
        tty,
        changed: changed.as_ref(),
        root: Some(&prepared.root),
    };
    let text = if args.statistics {
        statistics(&audit.findings, args.format)
    } else {
        report::render(args.format, &audit.findings, &summary, &opts)
    };
    emit_report(
        args.output.as_deref(),
        Some(&prepared.root),
        &text,
        args.format == Format::Github,
    )?;
    if args.format == Format::Github {
        if let Some(file) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|f| !f.is_empty()) {
            let md = report::github_step_summary(&audit.findings, &summary);
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&file)
                .and_then(|mut f| f.write_all(md.as_bytes()));
            if let Err(e) = appended {
                crate::escape::eprintln(&format!(
                    "warning: cannot write the step summary to {}: {e}",
                    crate::escape::path(Path::new(&file))
                ));
            }
        }
    }
    if tool_error {
        return Ok(ExitStatus::Error);
    }
    Ok(if fails(&audit.findings, args.fail_on) {
        ExitStatus::Findings
    } else {
        ExitStatus::Clean
    })
}

/// `check --fix`: applies the exact fixes, says how many, and audits the
/// files again so that the report shows what remains.
fn fix_and_audit_again(
    args: &CheckArgs,
    prepared: &Prepared,
    first: Audit,
) -> Result<Audit, Failure> {
    let applied = crate::commands::fix::apply(prepared, &first, &args.paths)?;
    for s in &applied.skipped {
        crate::escape::eprintln(&format!("warning: {s}"));
    }
    if !args.quiet {
        crate::escape::eprintln(&format!(
            "applied {} fix{} in {} file{}",
            applied.fixes,
            if applied.fixes == 1 { "" } else { "es" },
            applied.files,
            report::plural(applied.files)
        ));
    }
    if applied.fixes == 0 {
        return Ok(first);
    }
    audit(prepared, false)
}

fn inventory(args: &InventoryArgs) -> Result<ExitStatus, Failure> {
    let (mut paths, mut common) = (args.paths.clone(), args.common.clone());
    packages(&args.cargo, &mut paths, &mut common)?;
    let prepared = prepare(&paths, &common)?;
    let audit = audit(&prepared, true)?;
    for u in &audit.unreadable {
        crate::escape::eprintln(&format!("error: {u}"));
    }
    let text = match args.format {
        InventoryFormat::Json => {
            // Machine output: paths from the repository root.
            let mut locks = audit.locks.clone();
            for l in &mut locks {
                l.path = root_relative(&l.path, &prepared.root_prefix, &prepared.cwd);
            }
            let mut s = serde_json::to_string_pretty(&serde_json::json!({ "locks": locks }))?;
            s.push('\n');
            s
        }
        InventoryFormat::Table => {
            let tty = args.output.is_none() && std::io::stdout().is_terminal();
            let opts = report::Options {
                color: false,
                width: if tty { terminal_width() } else { 160 },
                sources: &audit.sources,
                quiet: false,
                tty,
                changed: None,
                root: None,
            };
            crate::inventory::table(&audit.locks, &opts)
        }
    };
    emit_report(args.output.as_deref(), Some(&prepared.root), &text, false)?;
    Ok(if audit.internal_error || !audit.unreadable.is_empty() {
        ExitStatus::Error
    } else {
        ExitStatus::Clean
    })
}

/// `lockaudit rules`: every check with the severity it runs at here, the
/// ones the config changes marked with their default.
fn rules(args: &crate::cli::RulesArgs) -> Result<ExitStatus, Failure> {
    let cwd = std::env::current_dir()?;
    if let Some(p) = &args.config {
        check_config_path(p)?;
    }
    let path = args.config.clone().or_else(|| config::discover(&cwd));
    let settings = match &path {
        Some(p) => {
            let shown = walk::display_path(p, &cwd);
            // `--config` is trusted; a discovered config must stay inside
            // its repository, as in every command.
            let loaded = if args.config.is_some() {
                config::load(p, &shown)
            } else {
                config::load_discovered(p, &shown)
            };
            loaded.map_err(|e| {
                print_yaml_errors(&e);
                Failure(String::new())
            })?
        }
        None => config::Settings::default(),
    };
    let shown_config = path
        .as_deref()
        .map(|p| walk::display_path(p, &cwd))
        .unwrap_or_default();
    let severity = |id: CheckId| settings.severity(id).map_or("off", |s| s.as_str());
    let overridden = |id: CheckId| {
        settings.checks.contains_key(&id) && settings.severity(id) != Some(id.default_severity())
    };
    let text = match args.format {
        ListFormat::Json => {
            let list: Vec<_> = CHECKS
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "id": c.id.as_str(),
                        "severity": severity(c.id),
                        "default_severity": c.severity.as_str(),
                        "overridden": overridden(c.id),
                        "summary": c.summary,
                    })
                })
                .collect();
            let mut s = serde_json::to_string_pretty(&list)?;
            s.push('\n');
            s
        }
        ListFormat::Text => {
            let width = CHECKS
                .iter()
                .map(|c| c.id.as_str().len())
                .max()
                .unwrap_or(0);
            let mut s = String::new();
            let mut changed = Vec::new();
            for c in CHECKS {
                let mut sev = severity(c.id).to_string();
                if overridden(c.id) {
                    sev.push('*');
                    changed.push(format!(
                        "{} (default {})",
                        c.id.as_str(),
                        c.severity.as_str()
                    ));
                }
                s.push_str(&format!(
                    "{:width$}  {:8}  {}\n",
                    c.id.as_str(),
                    sev,
                    c.summary
                ));
            }
            if !changed.is_empty() {
                s.push_str(&format!(
                    "\n* set by {shown_config}: {}\n",
                    changed.join(", ")
                ));
            }
            s
        }
    };
    emit(None, &text)?;
    Ok(ExitStatus::Clean)
}

fn explain(id: &str) -> Result<ExitStatus, Failure> {
    let Some(check) = CheckId::parse(id) else {
        let ids: BTreeSet<&str> = CHECKS.iter().map(|c| c.id.as_str()).collect();
        let near = crate::suggest::closest(id, ids.iter().copied())
            .map(|c| format!("did you mean `{c}`? "))
            .unwrap_or_default();
        return Err(Failure(format!(
            "unknown check `{id}`; {near}the checks are: {}",
            ids.into_iter().collect::<Vec<_>>().join(", ")
        )));
    };
    emit(None, &explain_text(check))?;
    Ok(ExitStatus::Clean)
}

/// The page `lockaudit explain` prints for a check (also shown by the
/// language server's explain command).
pub fn explain_text(check: CheckId) -> String {
    let info = check.info();
    let mut text = format!(
        "# {} [{}]\n\n{}\n\n{}",
        info.id.as_str(),
        info.severity.as_str(),
        info.summary,
        info.docs
    );
    if check == CheckId::UnfencedCorrectnessLock || check == CheckId::NonConsensusCorrectnessLock {
        text.push_str(&crate::pack::builtin::token_table());
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn init(force: bool, exclude_tests: bool) -> Result<ExitStatus, Failure> {
    let path = Path::new(config::CONFIG_NAMES[0]);
    if path.exists() && !force {
        return Err(Failure(format!(
            "{} already exists (use --force to overwrite)",
            crate::escape::path(path)
        )));
    }
    write_atomic(
        path,
        config::starter(exclude_tests).as_bytes(),
        &cwd_root(),
        None,
    )?;
    crate::escape::eprintln(&format!("wrote {}", crate::escape::path(path)));
    if !exclude_tests {
        crate::escape::eprintln(
            "note: test code is audited; `lockaudit init --force --exclude-tests` writes a config that leaves out tests/ directories, *_test.rs and tests.rs files, and code under #[cfg(test)]",
        );
    }
    Ok(ExitStatus::Clean)
}

#[cfg(test)]
mod tests {
    use super::generated;

    #[test]
    fn generated_files_are_told_by_their_header_and_look_alikes_are_not() {
        for header in [
            "// @generated by prost-build.",
            "// This file is @generated by prost-build.",
            "/* automatically generated by rust-bindgen 0.73.2 */",
            "// Code generated by protoc-gen-foo. DO NOT EDIT.",
            "//! This file was auto-generated by build.rs",
            "// THIS FILE IS AUTOMATICALLY GENERATED BY a script",
            "#![allow(unused)] // @generated",
        ] {
            let text = format!("\n{header}\npub fn f() {{}}\n");
            assert!(generated(text.as_bytes()), "{header}");
        }
        for header in [
            "//! Keys are auto-generated by the caller.",
            "/// Lock ids are automatically generated by the server.",
            "// see the code generated by the macro below",
            "let s = \"@generated\";",
            "// @generated",
        ] {
            // The last one is on the sixth line: too late to be a header.
            let text = if header == "// @generated" {
                format!("\n\n\n\n\n{header}\n")
            } else {
                format!("{header}\npub fn f() {{}}\n")
            };
            assert!(!generated(text.as_bytes()), "{header}");
        }
    }
}
