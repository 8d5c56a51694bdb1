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
use crate::pack::PackSet;
use crate::source::SourceFile;

/// Looks up functions of the crate a file belongs to.
pub trait FnResolver: Sync {
    /// A function named `name` defined in another file of the crate `from`
    /// (a display path) belongs to: its file's model, its index, its path.
    fn resolve(&self, from: &str, name: &str) -> Option<(Arc<FileModel>, usize, String)>;
}

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
        let abs = std::fs::canonicalize(self.cwd.join(from)).ok()?;
        abs.ancestors()
            .skip(1)
            .find(|d| d.join("Cargo.toml").is_file())
            .map(Path::to_path_buf)
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
                &Options {
                    lock_name: self.lock_name,
                    detail: true,
                },
            ))
        });
        self.models
            .lock()
            .unwrap()
            .insert(path.to_string(), model.clone());
        model
    }
}

impl FnResolver for CrateResolver<'_> {
    fn resolve(&self, from: &str, name: &str) -> Option<(Arc<FileModel>, usize, String)> {
        let root = self.crate_root(from)?;
        let defines = Regex::new(&format!(r"\bfn\s+{}\b", regex::escape(name))).ok()?;
        for (path, text) in self.files(&root).iter() {
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
