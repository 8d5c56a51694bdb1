//! Settings: the config file (`lockaudit.yaml` or `.lockaudit.yaml`, the
//! nearest one in a file's directory or above it up to the repository root,
//! or `--config`), validated into the values the engine uses. Every problem
//! in the file is reported together with its line and column.

pub mod manifest;
mod raw;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::Regex;

use crate::diag::{Collector, YamlErrors};
use crate::finding::{Purpose, Severity};
use crate::vocab::CheckId;
use crate::yamlloc::Seg;
use raw::RawConfig;

pub const DEFAULT_LOCK_NAME_PATTERN: &str = "(?i)lock|mutex|leader|lease|semaphore";
/// Files larger than this many bytes are not audited (a note says so).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 8 << 20;
/// The hard ceiling on `max-file-size`: no config, discovered or named
/// with `--config`, makes lockaudit parse a larger file. Parsing costs
/// about 136 bytes of memory per byte of source, so one file at the
/// ceiling takes about 1.1 GB; a config may lower the limit, never raise
/// it past this (a larger value is used as this one, with a warning).
pub const FILE_SIZE_CEILING: u64 = DEFAULT_MAX_FILE_SIZE;
pub const CONFIG_NAMES: [&str; 2] = ["lockaudit.yaml", ".lockaudit.yaml"];

/// Validated settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The config file, if one was found.
    pub path: Option<PathBuf>,
    /// The directory that relative paths in the config are relative to.
    pub base: PathBuf,
    pub rules: Vec<PathBuf>,
    /// Per check: `None` when turned off; absent: the default severity.
    pub checks: BTreeMap<CheckId, Option<Severity>>,
    pub exclude: Vec<String>,
    /// `exclude` names [`CFG_TEST`]: code under `#[cfg(test)]` is not
    /// audited.
    pub exclude_cfg_test: bool,
    pub lock_name: Regex,
    pub default_purpose: Option<Purpose>,
    /// Larger files are reported as not audited instead of being parsed.
    pub max_file_size: u64,
    /// Not from the file: where the current directory sits inside the
    /// repository (`services/api/`), so that fingerprints name files by
    /// their repository path whichever directory lockaudit runs from.
    pub repo_prefix: String,
    /// What the config asked for that lockaudit does not do, each as
    /// `file:line:column: message`: the run goes on, and says so.
    pub warnings: Vec<String>,
    /// Facts about this deployment's backends (`backends:`), by backend.
    pub backends: BTreeMap<String, BackendFact>,
}

/// A config's word on one backend of this deployment, overriding its rule
/// pack's: whether it decides by consensus, why, and where it is said.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BackendFact {
    pub consensus: bool,
    pub reason: String,
    /// `lockaudit.yaml:7:3`: the backend's key in the config.
    pub source: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            path: None,
            base: PathBuf::from("."),
            rules: Vec::new(),
            checks: BTreeMap::new(),
            exclude: Vec::new(),
            exclude_cfg_test: false,
            lock_name: Regex::new(DEFAULT_LOCK_NAME_PATTERN).unwrap(),
            default_purpose: None,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            repo_prefix: String::new(),
            warnings: Vec::new(),
            backends: BTreeMap::new(),
        }
    }
}

impl Settings {
    /// The severity a check reports at, or `None` when it is off.
    pub fn severity(&self, id: CheckId) -> Option<Severity> {
        match self.checks.get(&id) {
            Some(s) => *s,
            None => Some(id.default_severity()),
        }
    }

    pub fn enabled(&self, id: CheckId) -> bool {
        self.severity(id).is_some()
    }
}

/// Finds the config for `start` (a file or directory): upward to the
/// directory that holds `.git`, or to the filesystem root outside a repo.
pub fn discover(start: &Path) -> Option<PathBuf> {
    let start = std::fs::canonicalize(start).ok()?;
    let dir = if start.is_file() {
        start.parent()?.to_path_buf()
    } else {
        start
    };
    Discovery::default().config_for_dir(&dir)
}

/// The config file in `dir` itself, if any: `lockaudit.yaml`, then
/// `.lockaudit.yaml`, then a `Cargo.toml` with a `[package.metadata.lockaudit]`
/// or `[workspace.metadata.lockaudit]` table.
fn config_in(dir: &Path) -> Option<PathBuf> {
    CONFIG_NAMES
        .iter()
        .map(|name| dir.join(name))
        .find(|candidate| candidate.is_file())
        .or_else(|| {
            let manifest = dir.join(manifest::MANIFEST);
            // Only a regular file is read to see whether it holds a
            // config: a manifest that is a link is not followed.
            if !std::fs::symlink_metadata(&manifest).ok()?.is_file() {
                return None;
            }
            let text = read_input(&manifest, MAX_CONFIG_BYTES).ok()?;
            manifest::config_table(&text).map(|_| manifest)
        })
}

/// Whether `path` names a Cargo manifest (its config is a table in it).
pub fn is_manifest(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == manifest::MANIFEST)
}

/// Which config governs each directory: the nearest `lockaudit.yaml` or
/// `.lockaudit.yaml` in it or above it, up to the directory holding `.git`
/// (or the filesystem root outside a repository). Answers are remembered
/// per directory, so a walk asks the filesystem once per directory.
#[derive(Debug, Default)]
pub struct Discovery {
    by_dir: std::collections::HashMap<PathBuf, Option<PathBuf>>,
}

impl Discovery {
    /// The config governing `dir`, an absolute, canonical directory.
    pub fn config_for_dir(&mut self, dir: &Path) -> Option<PathBuf> {
        // Up from `dir` to the first directory already known, or holding a
        // config or `.git`; then every directory passed gets that answer.
        // A loop, not recursion: a hostile tree may be thousands deep.
        let mut passed = Vec::new();
        let mut cur = Some(dir);
        let found = loop {
            let Some(d) = cur else { break None };
            if let Some(known) = self.by_dir.get(d) {
                break known.clone();
            }
            passed.push(d.to_path_buf());
            if let Some(c) = config_in(d) {
                break Some(c);
            }
            if d.join(".git").exists() {
                break None;
            }
            cur = d.parent();
        };
        for d in passed {
            self.by_dir.insert(d, found.clone());
        }
        found
    }
}

/// Largest config or rule pack read, in bytes.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Largest baseline read, in bytes.
pub const MAX_BASELINE_BYTES: u64 = 64 << 20;

/// Reads a file lockaudit takes settings from (config, rule pack,
/// baseline): a regular file of at most `cap` bytes of UTF-8, never a
/// FIFO, a device or a kernel file (`/proc`, `/sys`), which could block the
/// run, never end, or hold secrets.
pub fn read_input(path: &Path, cap: u64) -> Result<String, String> {
    let real = std::fs::canonicalize(path).map_err(|e| e.to_string())?;
    read_input_at(path, &real, cap)
}

/// [`read_input`] of a file whose path after every symbolic link is
/// known already (`real`).
fn read_input_at(path: &Path, real: &Path, cap: u64) -> Result<String, String> {
    use std::io::Read;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    let kernel = ["/proc", "/sys", "/dev"]
        .iter()
        .any(|k| real.starts_with(k));
    if !meta.is_file() || kernel {
        return Err("not a regular file".into());
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let too_big = || format!("larger than {} bytes", cap);
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err("not a regular file".into());
    }
    if meta.len() > cap {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > cap {
        return Err(too_big());
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// The repository a directory belongs to: the nearest ancestor (itself
/// included) that holds `.git`.
pub fn repo_root(dir: &Path) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(dir).ok()?;
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// Whether `path` resolves, after every symbolic link, to a file or
/// directory inside `root` (itself canonical, or resolved here) and not
/// under a `.git` directory there: git's own files are not the
/// repository's content. The one containment rule for everything read
/// from a tree a stranger controls: discovered configs, the rule packs
/// they name, baselines, and the files `mod` declarations reach.
pub fn inside_repository(path: &Path, root: &Path) -> bool {
    let (Ok(real), Ok(root)) = (std::fs::canonicalize(path), std::fs::canonicalize(root)) else {
        return false;
    };
    real.strip_prefix(&root)
        .is_ok_and(|rel| !rel.components().any(|c| c.as_os_str() == ".git"))
}

/// The root a discovered config (or what it names) must stay inside: its
/// repository, or, outside one, its own directory.
pub fn containment_root(config: &Path) -> PathBuf {
    let dir = match config.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    repo_root(&dir)
        .or_else(|| std::fs::canonicalize(&dir).ok())
        .unwrap_or(dir)
}

/// Loads a config named on the command line: trusted, so it and the rule
/// packs it names may be anywhere.
pub fn load(path: &Path, shown: &str) -> Result<Settings, YamlErrors> {
    load_within(path, shown, None, None)
}

/// Loads a config that discovery found in the audited tree, which may come
/// from a stranger; every command that discovers configs loads them here.
/// The config itself and every rule pack it names must resolve, after
/// symbolic links, inside its repository ([`inside_repository`],
/// [`containment_root`]). A config that does not is not read at all, so
/// nothing of it is ever quoted.
pub fn load_discovered(path: &Path, shown: &str) -> Result<Settings, YamlErrors> {
    let root = containment_root(path);
    let root = root.as_path();
    if !inside_repository(path, root) {
        return Err(outside(shown, root));
    }
    load_within(path, shown, Some(root), None)
}

/// [`load_discovered`] for a config in a directory that is canonical
/// already, whose repository root (canonical, or the directory itself
/// outside one) the caller knows: the same rule, without resolving the
/// whole path again, so configs down a tree thousands deep stay linear.
pub fn load_discovered_in(path: &Path, root: &Path, shown: &str) -> Result<Settings, YamlErrors> {
    let real = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).ok(),
        Ok(_) => Some(path.to_path_buf()),
        Err(_) => None,
    };
    let inside = real.as_ref().is_some_and(|r| {
        r.strip_prefix(root)
            .is_ok_and(|rel| !rel.components().any(|c| c.as_os_str() == ".git"))
    });
    match real {
        Some(real) if inside => load_within(path, shown, Some(root), Some(&real)),
        _ => Err(outside(shown, root)),
    }
}

/// A discovered config that resolves outside its repository: not read.
fn outside(shown: &str, root: &Path) -> YamlErrors {
    let mut c = Collector::new(shown, "");
    c.at(
        &[],
        format!(
            "the config resolves outside the repository ({}) or into its `.git`: not read",
            crate::escape::path(root)
        ),
        Some("a config found in the audited tree must be a file inside it; pass a config kept elsewhere with `--config`".into()),
    );
    c.finish("config").unwrap_err()
}

/// Reads and checks a config; `root`, when given, is canonical, and
/// `real` is the config's path after every link when the caller knows it.
fn load_within(
    path: &Path,
    shown: &str,
    root: Option<&Path>,
    real: Option<&Path>,
) -> Result<Settings, YamlErrors> {
    let read = match real {
        Some(real) => read_input_at(path, real, MAX_CONFIG_BYTES),
        None => read_input(path, MAX_CONFIG_BYTES),
    };
    let text = match read {
        Ok(t) => t,
        Err(e) => {
            let mut c = Collector::new(shown, "");
            c.at(&[], format!("cannot read config: {e}"), None);
            return Err(c.finish("config").unwrap_err());
        }
    };
    let base = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut settings = if is_manifest(path) {
        parse_manifest(shown, &text, &base, root)?
    } else {
        parse_within(shown, &text, &base, root)?
    };
    settings.path = Some(path.to_path_buf());
    Ok(settings)
}

/// The config in a `Cargo.toml`'s `[package.metadata.lockaudit]` (or
/// `[workspace.metadata.lockaudit]`) table, checked as `lockaudit.yaml`
/// is, its problems at their place in the manifest.
fn parse_manifest(
    shown: &str,
    text: &str,
    base: &Path,
    root: Option<&Path>,
) -> Result<Settings, YamlErrors> {
    let Some(table) = manifest::config_table(text) else {
        let mut c = Collector::new(shown, text);
        c.at(
            &[],
            "no `[package.metadata.lockaudit]` or `[workspace.metadata.lockaudit]` table",
            Some(
                "a config in Cargo.toml is one of those tables, with the keys of lockaudit.yaml"
                    .into(),
            ),
        );
        return Err(c.finish("config").unwrap_err());
    };
    let mut c = Collector::toml(shown, text, table.clone());
    let raw = match manifest::raw_config(text, &table) {
        Ok(raw) => raw,
        Err((message, span)) => {
            c.toml_error(&message, span, Some(HINT.to_string()));
            return Err(c.finish("config").unwrap_err());
        }
    };
    validate(c, raw, base, root)
}

const HINT: &str = "the keys are `rules`, `checks`, `exclude`, `lock-name-pattern`, `default-purpose` and `max-file-size` (the book's \"Configuration\" page: docs/src/configuration.md in the lockaudit repository)";

pub fn parse(shown: &str, text: &str, base: &Path) -> Result<Settings, YamlErrors> {
    parse_within(shown, text, base, None)
}

/// [`parse`], with every rule pack required to resolve inside `root`.
fn parse_within(
    shown: &str,
    text: &str,
    base: &Path,
    root: Option<&Path>,
) -> Result<Settings, YamlErrors> {
    let mut c = Collector::new(shown, text);
    if let Some((loc, msg)) = crate::yamlloc::find_expensive(text) {
        c.at_loc(loc, msg, None);
        return Err(c.finish("config").unwrap_err());
    }
    let raw: RawConfig = if text.trim().is_empty() {
        RawConfig::default()
    } else {
        match yaml_serde::from_str(text) {
            Ok(r) => r,
            Err(e) => match recover_unknown_keys(&mut c, text) {
                // Only unknown keys were wrong: they are reported, and the
                // rest of the file is still validated below.
                Some(r) => r,
                None => {
                    c.serde(&e, Some(HINT.to_string()));
                    return Err(c.finish("config").unwrap_err());
                }
            },
        }
    };
    validate(c, raw, base, root)
}

/// What a config says, as written, checked value by value: every problem
/// at its place.
fn validate(
    mut c: Collector,
    raw: RawConfig,
    base: &Path,
    root: Option<&Path>,
) -> Result<Settings, YamlErrors> {
    let mut settings = Settings {
        base: base.to_path_buf(),
        ..Settings::default()
    };
    for (i, r) in raw.rules.iter().enumerate() {
        let p = base.join(r);
        if let Some(root) = &root {
            // One answer whether the path is missing, outside, or not a
            // file: a config from the tree cannot learn what exists
            // outside the repository.
            if !(inside_repository(&p, root) && p.is_file()) {
                c.at(
                    &["rules".into(), Seg::Index(i)],
                    format!("rule pack `{r}` is not a regular file inside the repository: not read"),
                    Some("paths in `rules` are relative to the config file; a config found in the audited tree may only name packs inside the repository (not under `.git`): pass a config kept elsewhere with `--config`".into()),
                );
            }
        } else if !p.exists() {
            c.at(
                &["rules".into(), Seg::Index(i)],
                format!("rule pack `{r}` does not exist"),
                Some("paths in `rules` are relative to the config file".into()),
            );
        } else if !p.is_file() {
            c.at(
                &["rules".into(), Seg::Index(i)],
                format!("rule pack `{r}` is not a regular file"),
                None,
            );
        }
        settings.rules.push(p);
    }
    for (id, value) in &raw.checks {
        let Some(check) = CheckId::parse(id) else {
            c.at_key(
                &["checks".into(), Seg::Key(id.clone())],
                format!("unknown check id `{id}`"),
                Some(crate::checks::unknown_id_help(id)),
            );
            continue;
        };
        let sev = match value.as_str() {
            "error" => Some(Severity::Error),
            "warning" => Some(Severity::Warning),
            "note" => Some(Severity::Note),
            "off" => None,
            other => {
                c.at(
                    &["checks".into(), Seg::Key(id.clone())],
                    format!("`{other}` is not a severity"),
                    Some(format!(
                        "{}write `error`, `warning`, `note` or `off`",
                        crate::suggest::hint(other, ["error", "warning", "note", "off"])
                            .replace('?', "? ")
                    )),
                );
                continue;
            }
        };
        settings.checks.insert(check, sev);
    }
    if raw.exclude.len() > MAX_EXCLUDES {
        c.at(
            &["exclude".into(), Seg::Index(MAX_EXCLUDES)],
            format!("more than {MAX_EXCLUDES} excludes ({})", raw.exclude.len()),
            Some("exclude whole directories (`vendor/**`) instead of single files".into()),
        );
    }
    for (i, g) in raw.exclude.iter().enumerate().take(MAX_EXCLUDES + 1) {
        if g.len() > MAX_GLOB {
            c.at(
                &["exclude".into(), Seg::Index(i)],
                format!("a glob longer than {MAX_GLOB} bytes"),
                None,
            );
            continue;
        }
        if g == CFG_TEST {
            settings.exclude_cfg_test = true;
            continue;
        }
        if let Err(e) = ignore::overrides::OverrideBuilder::new(base).add(&format!("!{g}")) {
            c.at(
                &["exclude".into(), Seg::Index(i)],
                format!("invalid glob: {e}"),
                None,
            );
        }
    }
    settings.exclude = raw.exclude.clone();
    if let Some(p) = &raw.lock_name_pattern {
        match crate::pack::bounded_regex(p) {
            Ok(r) => settings.lock_name = r,
            Err(e) => c.at(
                &["lock-name-pattern".into()],
                format!(
                    "invalid regex: {}",
                    e.to_string()
                        .lines()
                        .last()
                        .unwrap_or("")
                        .trim()
                        .trim_start_matches("error: ")
                ),
                Some(format!("the default is `{DEFAULT_LOCK_NAME_PATTERN}`")),
            ),
        }
    }
    if let Some(p) = &raw.default_purpose {
        settings.default_purpose = match p.as_str() {
            "none" => None,
            "efficiency" => Some(Purpose::Efficiency),
            "correctness" => Some(Purpose::Correctness),
            other => {
                c.at(
                    &["default-purpose".into()],
                    format!("`{other}` is not a purpose"),
                    Some(format!(
                        "{}write `none`, `efficiency` or `correctness`",
                        crate::suggest::hint(other, ["none", "efficiency", "correctness"])
                            .replace('?', "? ")
                    )),
                );
                None
            }
        };
    }
    if let Some(n) = raw.max_file_size {
        if n == 0 {
            c.at(
                &["max-file-size".into()],
                format!("`{n}` is not a file size from 1 to {FILE_SIZE_CEILING} bytes"),
                Some(format!("the default is {DEFAULT_MAX_FILE_SIZE} (8 MB)")),
            );
        } else if n > FILE_SIZE_CEILING {
            let loc = c.locate(&["max-file-size".into()]).unwrap_or_default();
            settings.warnings.push(format!(
                "{}:{}:{}: `max-file-size: {n}` is above the hard ceiling of {FILE_SIZE_CEILING} bytes (8 MB), which no config can raise; files larger than {FILE_SIZE_CEILING} bytes are not audited",
                c.path,
                loc.line.max(1),
                loc.column.max(1),
            ));
            settings.max_file_size = FILE_SIZE_CEILING;
        } else {
            settings.max_file_size = n;
        }
    }
    if !raw.backends.is_empty() {
        // The user packs are read only when the config named them
        // rightly (inside the repository, existing files).
        let known = known_backends(if c.count() == 0 { &settings.rules } else { &[] });
        for (name, b) in &raw.backends {
            let at = ["backends".into(), Seg::Key(name.clone())];
            if !known.iter().any(|k| k == name) {
                c.at_key(
                    &at,
                    format!("unknown backend `{name}`"),
                    Some(format!(
                        "{}the backends are the rule packs' `backend` names: {}",
                        crate::suggest::hint(name, known.iter().map(String::as_str))
                            .replace('?', "? "),
                        known.join(", ")
                    )),
                );
                continue;
            }
            if b.reason.trim().is_empty() {
                c.at(
                    &["backends".into(), Seg::Key(name.clone()), "reason".into()],
                    format!("the fact about `{name}` gives no reason"),
                    Some("say why this deployment differs from the backend's usual one: reports carry it".into()),
                );
                continue;
            }
            let loc = c.locate(&at).unwrap_or_default();
            settings.backends.insert(
                name.clone(),
                BackendFact {
                    consensus: b.consensus,
                    reason: b.reason.trim().to_string(),
                    source: format!("{}:{}:{}", c.path, loc.line.max(1), loc.column.max(1)),
                },
            );
        }
    }
    c.finish("config")?;
    Ok(settings)
}

/// The backend names a config may speak of: the built-in packs' and those
/// of the packs its `rules` load (a pack that fails to load is reported
/// where the packs are loaded).
fn known_backends(rules: &[PathBuf]) -> Vec<String> {
    static BUILTIN: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let mut names = BUILTIN
        .get_or_init(|| {
            crate::pack::PackSet::builtin()
                .packs
                .iter()
                .map(|p| p.backend.clone())
                .collect()
        })
        .clone();
    if !rules.is_empty() {
        if let Ok(user) = crate::pack::PackSet::load(rules, Path::new(".")) {
            names.extend(user.packs.iter().map(|p| p.backend.clone()));
        }
    }
    names.sort();
    names.dedup();
    names
}

const KEYS: [&str; 7] = [
    "rules",
    "checks",
    "exclude",
    "lock-name-pattern",
    "default-purpose",
    "max-file-size",
    "backends",
];

/// The `exclude` entry that is no glob: code under `#[cfg(test)]` (a
/// module, function or `impl` with that attribute) is not audited.
pub const CFG_TEST: &str = "#[cfg(test)]";

/// Most excludes a config may list, and the longest glob.
pub const MAX_EXCLUDES: usize = 1000;
pub const MAX_GLOB: usize = 1024;

/// Where a top-level key is written (`name:` at the start of a line).
fn key_loc(text: &str, name: &str) -> Option<crate::yamlloc::Loc> {
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let bare = line
            .strip_prefix(name)
            .is_some_and(|r| r.trim_start().starts_with(':'));
        let quoted = ["\"", "'"]
            .iter()
            .any(|q| line.starts_with(&format!("{q}{name}{q}")));
        if bare || quoted {
            return Some(crate::yamlloc::Loc {
                line: i + 1,
                column: 1,
                offset,
            });
        }
        offset += line.len();
    }
    None
}

/// Reports every unknown top-level key at its place, and reads the known
/// ones, so that one stray key does not hide the other problems. `None`
/// when the file is wrong in another way (then the parser's error is shown).
fn recover_unknown_keys(c: &mut Collector, text: &str) -> Option<RawConfig> {
    let map: yaml_serde::Mapping = yaml_serde::from_str(text).ok()?;
    let mut known = yaml_serde::Mapping::new();
    let mut unknown = Vec::new();
    for (k, v) in map {
        match k.as_str() {
            Some(name) if KEYS.contains(&name) => {
                known.insert(k, v);
            }
            Some(name) => unknown.push(name.to_string()),
            None => return None,
        }
    }
    let raw: RawConfig = yaml_serde::from_value(yaml_serde::Value::Mapping(known)).ok()?;
    if unknown.is_empty() {
        return None;
    }
    for name in unknown {
        let msg = format!("unknown key `{name}`");
        let help = match crate::suggest::closest(&name, KEYS) {
            Some(near) => format!("did you mean `{near}`? {HINT}"),
            None => HINT.to_string(),
        };
        // Past the problems shown, each is only counted: never looked for.
        let found = if c.is_full() {
            None
        } else {
            key_loc(text, &name)
        };
        match found {
            Some(loc) => {
                let quoted = text[loc.offset..].starts_with(['"', '\'']);
                c.at_span(
                    loc.offset,
                    name.len() + if quoted { 2 } else { 0 },
                    msg,
                    Some(help),
                )
            }
            None => c.at_key(&[Seg::Key(name.clone())], msg, Some(help)),
        }
    }
    Some(raw)
}

/// The starter config `lockaudit init` writes: every key, with its default
/// value and a comment, and every check id with its default severity.
/// The excludes `lockaudit init --exclude-tests` writes: test directories
/// and files by name, and code under `#[cfg(test)]`.
pub const TEST_EXCLUDES: &[&str] = &["**/tests/**", "**/*_test.rs", "**/tests.rs", CFG_TEST];

/// The starter config `lockaudit init` writes; with `exclude_tests`, test
/// code is left out ([`TEST_EXCLUDES`]).
pub fn starter(exclude_tests: bool) -> String {
    let width = crate::checks::CHECKS
        .iter()
        .map(|c| c.id.as_str().len())
        .max()
        .unwrap_or(0);
    let defaults: String = crate::checks::CHECKS
        .iter()
        .map(|c| {
            format!(
                "#   {:width$}  {}\n",
                format!("{}:", c.id.as_str()),
                c.severity.as_str(),
                width = width + 1
            )
        })
        .collect();
    let exclude = if exclude_tests {
        let lines: String = TEST_EXCLUDES
            .iter()
            .map(|g| format!("  - \"{g}\"\n"))
            .collect();
        format!("exclude:\n{lines}")
    } else {
        "exclude: []\n".to_string()
    };
    STARTER
        .replace("{EXCLUDE}\n", &exclude)
        .replace("{DEFAULTS}", &defaults)
        .replace("{PATTERN}", DEFAULT_LOCK_NAME_PATTERN)
}

const STARTER: &str = r##"# lockaudit configuration. Every key is optional, and the values below are
# the defaults. Unknown keys and bad values are errors.

# Extra rule packs (your own lock wrapper, say), relative to this file:
#   rules:
#     - tools/lockaudit/acme-locks.yaml
rules: []

# Severity per check: error | warning | note | off. The checks and their
# default severities:
{DEFAULTS}# For example:
#   checks:
#     ignored-renewal-failure: error
#     missing-purpose: warning
checks: {}

# Files not to audit (globs, relative to this file). .gitignore, hidden
# directories and target/ are skipped already. The entry "#[cfg(test)]" is
# no glob: it leaves out code under #[cfg(test)] in every file. For example:
#   exclude:
#     - "vendor/**"
{EXCLUDE}

# Keys, names and functions whose words match this regex are about locks
# (`lock_key`, `LockGuard`, "lock:{}"; not `block` or `release`). Plain
# reads, writes and deletes of other keys (caches) are never flagged.
lock-name-pattern: "{PATTERN}"

# What an unannotated acquisition is held to: none | efficiency | correctness.
# With correctness, the fencing and consensus checks apply to it too.
default-purpose: none

# Files larger than this many bytes are not audited; each is reported as a
# `parse-error` note instead. This is also the most it can be.
max-file-size: 8388608
"##;
