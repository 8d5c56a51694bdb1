//! Scopes: the files one config governs. With `--config FILE` there is one
//! scope; otherwise each file belongs to the nearest config in its directory
//! or above it (or to the built-in defaults when there is none), and each
//! scope has its own settings, packs and excludes. A file's scope depends on
//! where the file is, never on the order of the paths on the command line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::config::{self, Discovery, Settings};
use crate::diag::YamlErrors;
use crate::pack::PackSet;
use crate::walk::{self, Excludes};

/// One config and what it loads.
pub struct Scope {
    pub settings: Settings,
    /// Shared by every scope whose config names the same rule packs (most
    /// name none: they all share the built-in packs).
    pub packs: std::sync::Arc<PackSet>,
    pub excludes: Excludes,
}

/// Every scope of a run, and which directory belongs to which.
pub struct Scopes {
    /// `--config`: scope 0 governs everything.
    fixed: bool,
    /// Scope 0: the `--config` file, or the defaults for files no config
    /// governs. The others: discovered configs, in the order first met.
    pub list: Vec<Scope>,
    by_config: HashMap<PathBuf, usize>,
    by_dir: HashMap<PathBuf, usize>,
    by_written_dir: HashMap<PathBuf, usize>,
    /// A directory as written → its canonical path. A child that is not a
    /// symbolic link is its parent's canonical path and its name: one
    /// `lstat`, where resolving the whole path again would cost a system
    /// call per component (cubic in a hostile tree thousands deep).
    canonical: HashMap<PathBuf, PathBuf>,
    discovery: Discovery,
    cwd: PathBuf,
    repo_prefix: String,
    /// Configs or packs that could not be loaded; the run stops (exit 2).
    pub errors: Vec<YamlErrors>,
    /// The packs loaded so far, by the rule packs a config names: a
    /// thousand configs cost one set of packs, not a thousand.
    packs_by_rules: HashMap<Vec<PathBuf>, std::sync::Arc<PackSet>>,
    /// The packs of a `rules` list with a config's `backends` facts.
    #[allow(clippy::type_complexity)]
    packs_by_facts: std::collections::BTreeMap<
        (
            Vec<PathBuf>,
            std::collections::BTreeMap<String, crate::config::BackendFact>,
        ),
        std::sync::Arc<PackSet>,
    >,
    /// The repository root of each canonical directory a config was found
    /// in, from its parent's answer.
    repo_roots: crate::walk::DirMemo<Option<PathBuf>>,
    /// `--select`, `--extend-select`, `--ignore`: applied to every config.
    selection: crate::cli::Selection,
    /// `--exclude "#[cfg(test)]"`: applied to every config.
    exclude_cfg_test: bool,
}

impl Scopes {
    /// `config`: the file named with `--config`, if any.
    /// `repo_prefix`: where `cwd` sits in its repository, for fingerprints.
    pub fn new(config: Option<&Path>, cwd: &Path, repo_prefix: &str) -> Scopes {
        let mut scopes = Scopes {
            fixed: config.is_some(),
            list: Vec::new(),
            by_config: HashMap::new(),
            by_dir: HashMap::new(),
            by_written_dir: HashMap::new(),
            canonical: HashMap::new(),
            discovery: Discovery::default(),
            cwd: cwd.to_path_buf(),
            repo_prefix: repo_prefix.to_string(),
            errors: Vec::new(),
            packs_by_rules: HashMap::new(),
            packs_by_facts: std::collections::BTreeMap::new(),
            repo_roots: Default::default(),
            selection: crate::cli::Selection::default(),
            exclude_cfg_test: false,
        };
        let first = match config {
            Some(p) => config::load(p, &walk::display_path(p, cwd)),
            None => Ok(Settings::default()),
        };
        scopes.push(first);
        scopes
    }

    /// The command line's choice of checks, applied to every config of
    /// the run (those loaded already and those discovered later).
    pub fn with_selection(mut self, selection: crate::cli::Selection) -> Scopes {
        for s in &mut self.list {
            selection.apply(&mut s.settings.checks);
        }
        self.selection = selection;
        self
    }

    /// The command line's `--exclude "#[cfg(test)]"` (any of `excludes`),
    /// applied to every config of the run like an entry of its own.
    pub fn with_excludes(mut self, excludes: &[String]) -> Scopes {
        self.exclude_cfg_test = excludes.iter().any(|g| g == crate::config::CFG_TEST);
        for s in &mut self.list {
            s.settings.exclude_cfg_test |= self.exclude_cfg_test;
        }
        self
    }

    fn push(&mut self, settings: Result<Settings, YamlErrors>) -> usize {
        let mut settings = settings.unwrap_or_else(|e| {
            self.errors.push(e);
            Settings::default()
        });
        settings.repo_prefix = self.repo_prefix.clone();
        for w in &settings.warnings {
            crate::escape::eprintln(&format!("warning: {w}"));
        }
        self.selection.apply(&mut settings.checks);
        settings.exclude_cfg_test |= self.exclude_cfg_test;
        let packs = match self.packs_by_rules.get(&settings.rules) {
            Some(p) => p.clone(),
            None => {
                let loaded = PackSet::load(&settings.rules, &self.cwd).unwrap_or_else(|errs| {
                    self.errors.extend(errs);
                    PackSet::load(&[], &self.cwd).expect("the built-in packs load")
                });
                let loaded = std::sync::Arc::new(loaded);
                self.packs_by_rules
                    .insert(settings.rules.clone(), loaded.clone());
                loaded
            }
        };
        // A config's facts about its deployment's backends: the packs as
        // that config sees them.
        let packs = if settings.backends.is_empty() {
            packs
        } else {
            let key = (settings.rules.clone(), settings.backends.clone());
            self.packs_by_facts
                .entry(key)
                .or_insert_with(|| std::sync::Arc::new(packs.with_facts(&settings.backends)))
                .clone()
        };
        let excludes = Excludes::new(&[(settings.base.as_path(), settings.exclude.as_slice())])
            .unwrap_or_else(|_| Excludes::new(&[]).expect("no globs"));
        self.list.push(Scope {
            settings,
            packs,
            excludes,
        });
        self.list.len() - 1
    }

    /// The scope of the files directly in `dir`.
    pub fn of_dir(&mut self, dir: &Path) -> usize {
        if self.fixed {
            return 0;
        }
        // Asked once per file: the directory as written answers without a
        // system call after its first file.
        if let Some(&i) = self.by_written_dir.get(dir) {
            return i;
        }
        let abs = self.canonical_dir(dir);
        let i = self.of_canonical_dir(abs);
        self.by_written_dir.insert(dir.to_path_buf(), i);
        i
    }

    /// The canonical path of `dir` (as written, relative to `cwd` or
    /// absolute).
    fn canonical_dir(&mut self, dir: &Path) -> PathBuf {
        let full = self.cwd.join(dir);
        let from_parent = match (dir.parent(), dir.components().next_back()) {
            (Some(parent), Some(std::path::Component::Normal(name))) => self
                .canonical
                .get(parent)
                .filter(|_| std::fs::symlink_metadata(&full).is_ok_and(|m| m.file_type().is_dir()))
                .map(|p| p.join(name)),
            _ => None,
        };
        let abs = from_parent
            .unwrap_or_else(|| std::fs::canonicalize(&full).unwrap_or_else(|_| full.clone()));
        self.canonical.insert(dir.to_path_buf(), abs.clone());
        abs
    }

    fn of_canonical_dir(&mut self, abs: PathBuf) -> usize {
        if let Some(&i) = self.by_dir.get(&abs) {
            return i;
        }
        let i = match self.discovery.config_for_dir(&abs) {
            None => 0,
            Some(cfg) => match self.by_config.get(&cfg) {
                Some(&i) => i,
                None => {
                    let shown = walk::display_path(&cfg, &self.cwd);
                    // A config found in the tree, and the packs it names,
                    // must resolve inside the repository it sits in.
                    // Its directory is canonical (discovery walks canonical
                    // directories); its repository comes from the memo.
                    let dir = cfg.parent().unwrap_or(Path::new("/")).to_path_buf();
                    let root = self
                        .repo_roots
                        .get(&dir, |d, parent| {
                            if d.join(".git").exists() {
                                Some(d.to_path_buf())
                            } else {
                                parent.cloned().flatten()
                            }
                        })
                        .clone()
                        .unwrap_or(dir);
                    let i = self.push(config::load_discovered_in(&cfg, &root, &shown));
                    self.by_config.insert(cfg, i);
                    i
                }
            },
        };
        self.by_dir.insert(abs, i);
        i
    }

    /// The scope of a file (or of a directory entry seen by the walk): the
    /// scope of the directory holding it. For a path that no longer exists,
    /// its nearest existing ancestor decides.
    pub fn of_path(&mut self, path: &Path) -> usize {
        let mut dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if let Some(&i) = self.by_written_dir.get(&dir) {
            return i;
        }
        while !self.cwd.join(&dir).is_dir() {
            match dir.parent() {
                Some(d) if !d.as_os_str().is_empty() => dir = d.to_path_buf(),
                _ => {
                    dir = PathBuf::from(".");
                    break;
                }
            }
        }
        self.of_dir(&dir)
    }

    /// Whether the config governing `path` excludes it.
    /// A directory the walk enters has its own config read (and a broken
    /// one reported) even when no file in it is audited.
    pub fn excluded(&mut self, path: &Path, is_dir: bool) -> bool {
        let i = self.of_path(path);
        let excluded = self.list[i].excludes.excluded(path, is_dir);
        if is_dir && !excluded {
            self.of_dir(path);
        }
        excluded
    }
}
