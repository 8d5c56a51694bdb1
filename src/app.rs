//! Wires the pipeline: settings → packs → walk → per-file work in parallel →
//! sort → suppressions and baseline → report → exit status.

use std::collections::{BTreeSet, HashMap};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme};
use rayon::prelude::*;

use crate::baseline::Baseline;
use crate::checks::{CheckId, CHECKS};
use crate::cli::{
    CheckArgs, Cli, Color, Command, CommonArgs, FailOn, InventoryArgs, InventoryFormat, ListFormat,
};
use crate::config::{self, Settings};
use crate::diag::YamlErrors;
use crate::engine::{Engine, FileOutcome};
use crate::exit::ExitStatus;
use crate::finding::{Finding, Severity};
use crate::inventory::LockRow;
use crate::model::resolve::CrateResolver;
use crate::pack::PackSet;
use crate::prefilter::Prefilter;
use crate::report::{self, Summary};
use crate::walk::{self, Excludes};

/// A failure that stops the run with exit code 2.
#[derive(Debug)]
pub struct Failure(pub String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(e.to_string())
    }
}

pub fn run(cli: Cli) -> ExitStatus {
    let result = match cli.command {
        None => check(&cli.check),
        Some(Command::Check(args)) => check(&args),
        Some(Command::Inventory(args)) => inventory(&args),
        Some(Command::Rules(args)) => rules(args.format),
        Some(Command::Explain(args)) => explain(&args.check),
        Some(Command::Init(args)) => init(args.force),
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

/// Prints a miette diagnostic to stderr (no colour unless stderr is a terminal).
pub fn print_diagnostic(d: &dyn Diagnostic) {
    crate::escape::eprint_block(&render_diagnostic(d, false));
}

/// Prints every problem of a YAML file as its own diagnostic, under one
/// headline, so each shows its file, line and column.
pub fn print_yaml_errors(e: &YamlErrors) {
    crate::escape::eprint_block(&render_yaml_errors(e, false));
}

pub fn render_yaml_errors(e: &YamlErrors, color: bool) -> String {
    let mut out = format!("error: {e}\n\n");
    let mut problems: Vec<_> = e.problems.iter().collect();
    problems.sort_by_key(|p| (p.line, p.column));
    for p in problems {
        out.push_str(&render_diagnostic(p, color));
        out.push('\n');
    }
    out
}

pub fn render_diagnostic(d: &dyn Diagnostic, color: bool) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let mut out = String::new();
    let _ = GraphicalReportHandler::new_themed(theme)
        .with_width(100)
        .with_links(false)
        .render_report(&mut out, d);
    out
}

/// Everything a run needs before it reads files.
pub struct Prepared {
    pub settings: Settings,
    pub packs: PackSet,
    pub files: Vec<PathBuf>,
    pub cwd: PathBuf,
    pub jobs: Option<usize>,
    pub prefilter: bool,
    /// Directories the walk could not read.
    pub walk_errors: Vec<String>,
    /// The config's and the command line's excludes.
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
    let loaded = match &common.config {
        Some(p) => {
            if !p.is_file() {
                return Err(Failure(format!(
                    "{}: config file not found",
                    crate::escape::path(p)
                )));
            }
            Some(config::load(p, &walk::display_path(p, &cwd)))
        }
        None => config::discover(
            paths
                .first()
                .map(PathBuf::as_path)
                .unwrap_or(Path::new(".")),
        )
        .map(|p| {
            // The audited tree is untrusted: its config stays inside it.
            let dir = p.parent().unwrap_or(Path::new("."));
            let root = config::repo_root(dir).unwrap_or_else(|| dir.to_path_buf());
            config::load_discovered(&p, &root, &walk::display_path(&p, &cwd))
        }),
    };
    let mut settings = match loaded {
        Some(r) => r.map_err(|e| {
            print_yaml_errors(&e);
            Failure(String::new())
        })?,
        None => Settings::default(),
    };
    settings.repo_prefix = repo_prefix(&cwd);
    let packs = PackSet::load(&settings.rules, &cwd).map_err(|errs| {
        for e in &errs {
            print_yaml_errors(e);
        }
        Failure(String::new())
    })?;
    let excludes = Excludes::new(&[
        (settings.base.as_path(), settings.exclude.as_slice()),
        (cwd.as_path(), common.exclude.as_slice()),
    ])?;
    let mut notes = Vec::new();
    let mut walk_errors = Vec::new();
    let files = walk::collect(
        paths,
        &excludes,
        common.force_exclude,
        &mut notes,
        &mut walk_errors,
    )?;
    for n in notes {
        crate::escape::eprintln(&format!("note: {n}"));
    }
    Ok(Prepared {
        settings,
        packs,
        files,
        cwd,
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
        walk_errors,
        excludes,
    })
}

/// Where `cwd` sits inside its repository (the nearest ancestor holding
/// `.git`), with `/` separators; empty outside a repository.
fn repo_prefix(cwd: &Path) -> String {
    let abs = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    abs.ancestors()
        .find(|d| d.join(".git").exists())
        .and_then(|root| abs.strip_prefix(root).ok())
        .map(|rel| rel.to_string_lossy().replace('\\', "/"))
        .unwrap_or_default()
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
}

/// One file's outcome and its text (kept only when it has findings), or why
/// it could not be read (`true`: it no longer exists).
type FileResult = Result<(FileOutcome, Option<String>), (bool, String)>;

/// Reads and audits every file, in parallel; results sorted.
pub fn audit(p: &Prepared, inventory: bool) -> Result<Audit, Failure> {
    let prefilter = p
        .prefilter
        .then(|| Prefilter::new(&p.packs, &p.settings.lock_name));
    let resolver = CrateResolver::new(&p.packs, &p.settings.lock_name, p.cwd.clone())
        .with_limits(p.excludes.clone(), p.settings.max_file_size);
    let engine = Engine {
        packs: &p.packs,
        settings: &p.settings,
        prefilter: prefilter.as_ref(),
        only: None,
        resolver: Some(&resolver),
    };
    let pool = crate::parse::pool(p.jobs)?;
    let audit_one = |path: &PathBuf| -> (String, FileResult, Vec<PathBuf>) {
        let shown = walk::display_path(path, &p.cwd);
        let mut mods = Vec::new();
        let r = match read_capped(path, p.settings.max_file_size) {
            Ok(Err(size)) => Ok((engine.too_large(&shown, size), Some(String::new()))),
            Ok(Ok(bytes)) => {
                mods = walk::declared_modules(path, &bytes);
                if !mods.is_empty() {
                    // Inside the declaring file's repository (or, outside
                    // one, its directory): never a file elsewhere.
                    let dir = path.parent().unwrap_or(Path::new("."));
                    let root =
                        crate::config::repo_root(dir).or_else(|| std::fs::canonicalize(dir).ok());
                    mods.retain(|m| {
                        root.as_ref().is_some_and(|r| {
                            std::fs::canonicalize(m).is_ok_and(|real| real.starts_with(r))
                        })
                    });
                }
                let out = engine.check_bytes(&shown, &bytes, inventory);
                let text = (!out.findings.is_empty())
                    .then(|| String::from_utf8_lossy(&bytes).into_owned());
                Ok((out, text))
            }
            Err(e) => Err((e.kind() == std::io::ErrorKind::NotFound, e.to_string())),
        };
        (shown, r, mods)
    };
    // Files that `mod` declarations and `#[path]` reach from an audited
    // file are compiled, so they are audited too, whatever their name and
    // whatever `.gitignore` or `.ignore` say: a pull request cannot hide
    // code from the gate that way. They must be regular files inside the
    // repository; lockaudit's own excludes still apply.
    let mut seen: std::collections::HashSet<PathBuf> = p
        .files
        .iter()
        .map(|f| std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()))
        .collect();
    let mut excluded_modules = 0usize;
    let mut queue = p.files.clone();
    let mut results: Vec<(String, FileResult)> = Vec::new();
    while !queue.is_empty() {
        let round: Vec<(String, FileResult, Vec<PathBuf>)> =
            pool.install(|| queue.par_iter().map(audit_one).collect());
        let mut next = Vec::new();
        for (shown, r, mods) in round {
            results.push((shown, r));
            for m in mods {
                let Ok(real) = std::fs::canonicalize(&m) else {
                    continue;
                };
                let regular = std::fs::metadata(&real).is_ok_and(|md| md.is_file());
                if !regular || !seen.insert(real) {
                    continue;
                }
                if p.excludes.excludes_file(&m) {
                    excluded_modules += 1;
                    continue;
                }
                next.push(m);
            }
        }
        next.sort();
        queue = next;
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
    };
    for (shown, r) in results {
        match r {
            Ok((out, text)) => {
                audit.files += 1;
                audit.parsed += usize::from(out.parsed);
                audit.internal_error |= out.internal_error;
                audit.findings.extend(out.findings);
                audit.locks.extend(out.locks);
                if let Some(t) = text {
                    let t = t.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(t);
                    audit.sources.insert(shown, t);
                }
            }
            // Deleted between the walk and the read: nothing to audit.
            Err((true, _)) => {
                crate::escape::eprintln(&format!("note: {shown}: removed during the run, skipped"))
            }
            Err((false, e)) => audit.unreadable.push(format!("{shown}: {e}")),
        }
    }
    audit
        .findings
        .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    audit.locks.sort();
    Ok(audit)
}

/// A file's bytes, or its size when it is larger than `limit` (then it is
/// not read: memory stays bounded whatever the tree holds).
fn read_capped(path: &Path, limit: u64) -> std::io::Result<Result<Vec<u8>, u64>> {
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

fn use_color(c: Color, stream_is_tty: bool) -> bool {
    match c {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => stream_is_tty && std::env::var_os("NO_COLOR").is_none(),
    }
}

fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|w: &usize| *w >= 40)
        .unwrap_or(100)
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

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory, then a rename. An interrupted run leaves the old file or none.
///
/// The path may come from a checkout a stranger controls, so nothing is
/// written through a symbolic link: a link at `path` is replaced by the
/// report (the rename replaces the link itself, not its target). A device
/// or FIFO is written in place only when the path names it directly
/// (`/dev/null`, `/dev/stdout`): renaming a file over a device would
/// replace the device.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let shown = crate::escape::path(path);
    let cannot = |e: std::io::Error| Failure(format!("{shown}: cannot write: {e}"));
    let meta = std::fs::symlink_metadata(path).ok();
    let is_link = meta.as_ref().is_some_and(|m| m.file_type().is_symlink());
    if names_a_device(path)
        || meta
            .as_ref()
            .is_some_and(|m| !m.is_file() && !m.is_dir() && !is_link)
    {
        return std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| f.write_all(bytes).and_then(|_| f.flush()))
            .map_err(cannot);
    }
    if meta.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(Failure(format!("{shown}: cannot write: is a directory")));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".lockaudit-");
    // A temporary file is private (0600); the report gets the permissions
    // of the regular file it replaces, without execute bits, or the umask's
    // default. A replaced link lends nothing: its target may be a program.
    let perms = match &meta {
        Some(m) if m.is_file() => Some(without_exec(m.permissions())),
        _ => default_permissions(),
    };
    if let Some(p) = perms {
        builder.permissions(p);
    }
    let mut tmp = builder.tempfile_in(&dir).map_err(cannot)?;
    let written = tmp
        .write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(cannot);
    written?;
    tmp.persist(path).map_err(|e| cannot(e.error))?;
    Ok(())
}

/// `/dev/…` or `/proc/self/fd/…`, named as such on the command line: a
/// device the caller asked for, written in place even through its links.
fn names_a_device(path: &Path) -> bool {
    path.starts_with("/dev") || path.starts_with("/proc/self/fd")
}

#[cfg(unix)]
fn without_exec(p: std::fs::Permissions) -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::Permissions::from_mode(p.mode() & 0o666)
}

#[cfg(not(unix))]
fn without_exec(p: std::fs::Permissions) -> std::fs::Permissions {
    p
}

#[cfg(unix)]
fn default_permissions() -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    // Subject to the umask, as for any newly created file.
    Some(std::fs::Permissions::from_mode(0o666))
}

#[cfg(not(unix))]
fn default_permissions() -> Option<std::fs::Permissions> {
    None
}

fn emit(output: Option<&Path>, text: &str) -> Result<(), Failure> {
    match output {
        Some(p) => write_atomic(p, text.as_bytes()),
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
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                Err(e) => Err(Failure(e.to_string())),
            }
        }
    }
}

fn check(args: &CheckArgs) -> Result<ExitStatus, Failure> {
    let prepared = prepare(&args.paths, &args.common)?;
    let mut audit = audit(&prepared, false)?;
    for u in &audit.unreadable {
        crate::escape::eprintln(&format!("error: {u}"));
    }
    if let Some(path) = &args.write_baseline {
        let b = Baseline::from_findings(&audit.findings);
        write_atomic(path, b.to_json().as_bytes())?;
        if !args.quiet {
            crate::escape::eprintln(&format!(
                "wrote {} finding{} to {}",
                b.len(),
                report::plural(b.len()),
                crate::escape::path(path)
            ));
        }
        return Ok(if audit.internal_error || !audit.unreadable.is_empty() {
            ExitStatus::Error
        } else {
            ExitStatus::Clean
        });
    }
    let mut baselined = 0;
    let mut stale = Vec::new();
    if let Some(path) = &args.baseline {
        let text = config::read_input(path, config::MAX_BASELINE_BYTES).map_err(|e| {
            Failure(format!(
                "{}: cannot read baseline: {e}",
                crate::escape::path(path)
            ))
        })?;
        let b = Baseline::parse(&text)
            .map_err(|e| Failure(format!("{}: {e}", crate::escape::path(path))))?;
        let (kept, matched, unmatched) = b.filter(std::mem::take(&mut audit.findings));
        audit.findings = kept;
        baselined = matched;
        stale = unmatched;
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
    let tty = args.output.is_none() && std::io::stdout().is_terminal();
    let opts = report::Options {
        color: args.output.is_none() && use_color(args.color, tty),
        width: if tty { terminal_width() } else { 100 },
        sources: &audit.sources,
        quiet: args.quiet,
        tty,
    };
    let text = report::render(args.format, &audit.findings, &summary, &opts);
    emit(args.output.as_deref(), &text)?;
    if audit.internal_error || !audit.unreadable.is_empty() {
        return Ok(ExitStatus::Error);
    }
    Ok(if fails(&audit.findings, args.fail_on) {
        ExitStatus::Findings
    } else {
        ExitStatus::Clean
    })
}

fn inventory(args: &InventoryArgs) -> Result<ExitStatus, Failure> {
    let prepared = prepare(&args.paths, &args.common)?;
    let audit = audit(&prepared, true)?;
    for u in &audit.unreadable {
        crate::escape::eprintln(&format!("error: {u}"));
    }
    let text = match args.format {
        InventoryFormat::Json => {
            let mut s = serde_json::to_string_pretty(&serde_json::json!({ "locks": audit.locks }))?;
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
            };
            crate::inventory::table(&audit.locks, &opts)
        }
    };
    emit(args.output.as_deref(), &text)?;
    Ok(if audit.internal_error || !audit.unreadable.is_empty() {
        ExitStatus::Error
    } else {
        ExitStatus::Clean
    })
}

fn rules(format: ListFormat) -> Result<ExitStatus, Failure> {
    let text = match format {
        ListFormat::Json => {
            let list: Vec<_> = CHECKS
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "id": c.id.as_str(),
                        "severity": c.severity.as_str(),
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
            for c in CHECKS {
                s.push_str(&format!(
                    "{:width$}  {:7}  {}\n",
                    c.id.as_str(),
                    c.severity.as_str(),
                    c.summary
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
        return Err(Failure(format!(
            "unknown check `{id}`; the checks are: {}",
            ids.into_iter().collect::<Vec<_>>().join(", ")
        )));
    };
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
    emit(None, &text)?;
    Ok(ExitStatus::Clean)
}

fn init(force: bool) -> Result<ExitStatus, Failure> {
    let path = Path::new(config::CONFIG_NAMES[0]);
    if path.exists() && !force {
        return Err(Failure(format!(
            "{} already exists (use --force to overwrite)",
            crate::escape::path(path)
        )));
    }
    write_atomic(path, config::starter().as_bytes())?;
    crate::escape::eprintln(&format!("wrote {}", crate::escape::path(path)));
    Ok(ExitStatus::Clean)
}
