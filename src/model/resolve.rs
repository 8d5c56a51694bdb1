//! Finding a function of the same crate in another file, for the fencing
//! check: a correctness lock whose critical section calls
//! `store::write_balance(&pool, token)` is only fenced if that function's
//! writes carry the token.
//!
//! Lazy and cached: nothing happens unless a correctness lock calls a
//! function this file does not define. Then the crate (the nearest
//! directory above the file with a `Cargo.toml`) is listed once, files that
//! define `fn <name>` are parsed and modelled once, and the model is shared.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use regex::Regex;

use super::extract::{self, Options};
use super::FileModel;
use super::FnId;
use crate::pack::PackSet;
use crate::source::SourceFile;

/// Looks up functions of the crate a file belongs to.
pub trait FnResolver: Sync {
    /// A function named `name` defined in another file of the crate `from`
    /// (a display path) belongs to: its file's model, its index, its path.
    fn resolve(&self, from: &str, name: &str) -> Option<(Arc<FileModel>, FnId, String)>;

    /// The name of the crate `from` belongs to, as written in `use` paths
    /// (`redis_lock` for a package named `redis-lock`).
    fn crate_name(&self, _from: &str) -> Option<String> {
        None
    }
}

/// A resolved function: its file's model, its index, its display path.
type Found = (Arc<FileModel>, FnId, String);

/// A crate's `.rs` files: (display path, text).
type CrateFiles = Vec<(String, String)>;

/// Resolves through the files on disk.
pub struct CrateResolver<'a> {
    packs: &'a PackSet,
    lock_name: &'a Regex,
    cwd: PathBuf,
    /// Crate root → its `.rs` files (display path, text).
    crates: Mutex<HashMap<PathBuf, Arc<CrateFiles>>>,
    models: Mutex<HashMap<String, Option<Arc<FileModel>>>>,
    /// Crate root → its package name.
    names: Mutex<HashMap<PathBuf, Option<String>>>,
    /// Display path → its crate root: asked once per file, not per call.
    roots: Mutex<HashMap<String, Option<PathBuf>>>,
    /// (calling file, function name) → where it is defined: a function
    /// that holds many locks asks for the same callee once per lock.
    found: Mutex<HashMap<(String, String), Option<Found>>>,
    /// The repository's top directory, found on first use.
    top: std::sync::OnceLock<PathBuf>,
    /// Files the run does not audit are not read here either.
    excludes: Option<crate::walk::Excludes>,
    max_file_size: u64,
}

impl<'a> CrateResolver<'a> {
    pub fn new(packs: &'a PackSet, lock_name: &'a Regex, cwd: PathBuf) -> Self {
        CrateResolver {
            packs,
            lock_name,
            cwd,
            crates: Mutex::new(HashMap::new()),
            models: Mutex::new(HashMap::new()),
            names: Mutex::new(HashMap::new()),
            roots: Mutex::new(HashMap::new()),
            found: Mutex::new(HashMap::new()),
            top: std::sync::OnceLock::new(),
            excludes: None,
            max_file_size: crate::config::DEFAULT_MAX_FILE_SIZE,
        }
    }

    /// Skips what the run's excludes name and files larger than
    /// `max_file_size` bytes, as the audit itself does.
    pub fn with_limits(mut self, excludes: crate::walk::Excludes, max_file_size: u64) -> Self {
        self.excludes = Some(excludes);
        self.max_file_size = max_file_size;
        self
    }

    fn crate_root(&self, from: &str) -> Option<PathBuf> {
        if let Some(r) = self.roots.lock().unwrap().get(from) {
            return r.clone();
        }
        let root = std::fs::canonicalize(self.cwd.join(from))
            .ok()
            .and_then(|abs| {
                abs.ancestors()
                    .skip(1)
                    .find(|d| d.join("Cargo.toml").is_file())
                    .map(Path::to_path_buf)
            });
        self.roots
            .lock()
            .unwrap()
            .insert(from.to_string(), root.clone());
        root
    }

    fn files(&self, root: &Path) -> Arc<CrateFiles> {
        if let Some(f) = self.crates.lock().unwrap().get(root) {
            return f.clone();
        }
        let mut files = Vec::new();
        let excludes = self.excludes.clone();
        let walker = ignore::WalkBuilder::new(root)
            .require_git(false)
            .sort_by_file_name(|a, b| a.cmp(b))
            .filter_entry(move |e| {
                e.depth() == 0
                    || (e.file_name() != "target"
                        && !excludes.as_ref().is_some_and(|x| x.excludes_file(e.path())))
            })
            .build();
        for entry in walker.flatten() {
            let p = entry.path();
            // Never parsed: an excluded file (above), a symbolic link, a
            // FIFO, or a file over the size limit.
            if entry.file_type().is_some_and(|t| t.is_file())
                && p.extension().is_some_and(|x| x == "rs")
                && entry
                    .metadata()
                    .is_ok_and(|m| m.len() <= self.max_file_size)
            {
                if let Ok(text) = std::fs::read_to_string(p) {
                    files.push((crate::walk::display_path(p, &self.cwd), text));
                }
            }
        }
        let files = Arc::new(files);
        self.crates
            .lock()
            .unwrap()
            .insert(root.to_path_buf(), files.clone());
        files
    }

    fn model(&self, path: &str, text: &str) -> Option<Arc<FileModel>> {
        if let Some(m) = self.models.lock().unwrap().get(path) {
            return m.clone();
        }
        let model = crate::parse::file(text).ok().map(|file| {
            let src = SourceFile::new(path, text);
            Arc::new(extract::extract(
                &file,
                &src,
                self.packs,
                &Options::new(self.lock_name),
            ))
        });
        self.models
            .lock()
            .unwrap()
            .insert(path.to_string(), model.clone());
        model
    }
}

/// `name = "…"` of the `[package]` table of a `Cargo.toml`, read line by
/// line (no TOML parser: only this one key is wanted).
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().take(10_000) {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if !in_package {
            continue;
        }
        let Some(rest) = line.strip_prefix("name") else {
            continue;
        };
        let value = rest.trim_start().strip_prefix('=')?.trim();
        let value = value.strip_prefix('"')?;
        let name = &value[..value.find('"')?];
        if !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Some(name.replace('-', "_"));
        }
        return None;
    }
    None
}

impl FnResolver for CrateResolver<'_> {
    fn crate_name(&self, from: &str) -> Option<String> {
        let root = self.crate_root(from)?;
        // Only manifests inside the repository (the git top level above the
        // current directory, else the current directory) are read.
        let top = self.top.get_or_init(|| {
            let cwd = std::fs::canonicalize(&self.cwd).unwrap_or_else(|_| self.cwd.clone());
            cwd.ancestors()
                .find(|d| d.join(".git").exists())
                .map(Path::to_path_buf)
                .unwrap_or(cwd)
        });
        if !root.starts_with(top) {
            return None;
        }
        if let Some(n) = self.names.lock().unwrap().get(&root) {
            return n.clone();
        }
        let manifest = root.join("Cargo.toml");
        let name = std::fs::symlink_metadata(&manifest)
            .ok()
            .filter(|m| m.is_file() && m.len() <= 1 << 20)
            .and_then(|_| std::fs::read_to_string(&manifest).ok())
            .and_then(|text| package_name(&text));
        self.names.lock().unwrap().insert(root, name.clone());
        name
    }

    fn resolve(&self, from: &str, name: &str) -> Option<Found> {
        let root = self.crate_root(from)?;
        let key = (from.to_string(), name.to_string());
        if let Some(f) = self.found.lock().unwrap().get(&key) {
            return f.clone();
        }
        let found = self.search(&root, from, name);
        self.found.lock().unwrap().insert(key, found.clone());
        found
    }
}

impl CrateResolver<'_> {
    fn search(&self, root: &Path, from: &str, name: &str) -> Option<Found> {
        let defines = Regex::new(&format!(r"\bfn\s+{}\b", regex::escape(name))).ok()?;
        for (path, text) in self.files(root).iter() {
            if path == from || !defines.is_match(text) {
                continue;
            }
            if let Some(model) = self.model(path, text) {
                if let Some(i) = model.find_fn(name) {
                    return Some((model.clone(), i, path.clone()));
                }
            }
        }
        None
    }
}
