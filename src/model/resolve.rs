//! The crate's functions, for the fencing check: a correctness lock whose
//! critical section calls `store::write_balance(&pool, token)` is only
//! fenced if that function's writes carry the token.
//!
//! Built between passes, never during a check. The first audit of a file
//! records the functions of other files its fencing check asked for
//! ([`crate::engine::FileOutcome::asked`]) and keeps its facts;
//! [`FnIndex::build`] then finds, per crate, the files that can hold
//! those calls' definitions (and of the calls those make, as deep as they
//! go, within a bound on the names looked up): their words say they define the name and spell the receiver's
//! type, and they are the module a call's path names. It models each
//! once, in parallel, taking the model of a file whose facts were kept;
//! the asking files are judged again from their facts with the index,
//! which answers from memory. A check does no I/O and parses nothing.
//!
//! A call resolves by its name and the module its path names
//! (`store::write`, `crate::store::write`): a name that two files of the
//! crate define, with nothing in the path to choose between them, resolves
//! to nothing rather than to the first file that has it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use regex::Regex;

use super::extract::{self, Options};
use super::{CallSite, FileModel, FnId, FnModel};
use crate::pack::PackSet;
use crate::source::SourceFile;
use crate::words::FileWords;

/// A resolved function: its file's model, its index, its display path.
pub type Found = (Arc<FileModel>, FnId, String);

/// Most calls looked up per crate: a hostile crate's thousands of calls
/// cost a bounded search. Calls are otherwise followed as deep as they go:
/// each round looks up the calls made by the functions found in the one
/// before, until a round finds no call not looked up yet.
const MAX_NAMES: usize = 512;

/// A file of a crate that may hold a call looked up in a round.
struct Candidate {
    /// Its entry in the round (a crate and the calls sought there).
    round: usize,
    shown: String,
    path: PathBuf,
    /// The module it is ([`module_of`]).
    module: Option<String>,
    /// Whether the run took no words of it, so they are taken here.
    take_words: bool,
}

/// One definition of a function name in a crate.
struct Def {
    path: String,
    /// `Type::name` for a method, `name` for a free function.
    qualified: String,
    module: Option<String>,
    model: Arc<FileModel>,
    id: FnId,
}

/// What a file's fencing check asked of its crate: calls of functions it
/// does not define.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Asked {
    pub calls: BTreeSet<Wanted>,
}

/// A call into another file of the crate, as [`FnIndex::resolve`] chooses
/// its definition: the name, and the receiver's type or the module the
/// call's path names. Only a file that can hold that definition is read
/// for it: one that defines the name, spells the type for a method, and
/// is the module for a call through a module path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Wanted {
    pub name: String,
    pub owner: Option<String>,
    pub module: Option<String>,
}

impl Wanted {
    pub fn of(call: &CallSite) -> Wanted {
        Wanted {
            name: call.name.clone(),
            owner: call.owner.clone(),
            module: call.owner.is_none().then(|| call.module.clone()).flatten(),
        }
    }

    /// Whether a file with `words`, as module `module`, may define it.
    pub(crate) fn may_be_in(&self, words: &FileWords, module: Option<&str>) -> bool {
        words.defines(&self.name)
            && self.owner.as_deref().is_none_or(|o| words.has(o))
            && self.module.as_deref().is_none_or(|m| module == Some(m))
    }

    /// Whether `f`, in module `module`, is the definition it names.
    fn is(&self, f: &FnModel, module: Option<&str>) -> bool {
        f.name == self.name
            && match (&self.owner, &self.module) {
                (Some(o), _) => {
                    f.qualified
                        .strip_suffix(self.name.as_str())
                        .and_then(|t| t.strip_suffix("::"))
                        == Some(o.as_str())
                }
                (None, Some(m)) => f.qualified == self.name && module == Some(m.as_str()),
                (None, None) => f.qualified == self.name,
            }
    }
}

/// Functions of the crates a run audits, by crate root and name.
#[derive(Default)]
pub struct FnIndex {
    /// Display path of an audited file → its crate root.
    roots: HashMap<String, PathBuf>,
    defs: HashMap<(PathBuf, String), Vec<Def>>,
}

impl FnIndex {
    /// The function `call` (made in the file `from`) names, defined in
    /// another file of the same crate; `None` when no file, or more than
    /// one the path cannot choose between, defines it.
    pub fn resolve(&self, from: &str, call: &CallSite) -> Option<Found> {
        let root = self.roots.get(from)?;
        let defs = self.defs.get(&(root.clone(), call.name.clone()))?;
        let candidates = defs.iter().filter(|d| d.path != from);
        let chosen: Vec<&Def> = match (&call.owner, &call.module) {
            // A method: its type's, in whichever file the `impl` is.
            (Some(owner), _) => {
                let qualified = format!("{owner}::{}", call.name);
                candidates.filter(|d| d.qualified == qualified).collect()
            }
            (None, Some(m)) => candidates
                .filter(|d| d.qualified == call.name)
                .filter(|d| d.module.as_deref() == Some(m.as_str()))
                .collect(),
            (None, None) => candidates.filter(|d| d.qualified == call.name).collect(),
        };
        match chosen.as_slice() {
            [d] => Some((d.model.clone(), d.id, d.path.clone())),
            _ => None,
        }
    }

    /// Builds the index for `asks` (file display path, its crate root, the
    /// calls it asked about). `files(root)` lists a crate's `.rs` files
    /// (display path, path); `words(path)` is the file's words when the
    /// run took them; `kept(path)` is the model an audit of the run kept
    /// of the file; `read(path)` reads one (within the run's limits), and
    /// `made(path, model)` is told each model made here (an editor session
    /// keeps them for its next edit). A file is read and modelled here
    /// only when no model was kept of it and its words and path say it may
    /// hold a definition sought ([`Wanted`]).
    #[allow(clippy::too_many_arguments)]
    pub fn build<'w>(
        asks: &[(String, PathBuf, Asked)],
        packs: &PackSet,
        lock_name: &Regex,
        files: &(dyn Fn(&Path) -> Vec<(String, PathBuf)> + Sync),
        words: &(dyn Fn(&Path) -> Option<&'w FileWords> + Sync),
        kept: &(dyn Fn(&Path) -> Option<Arc<FileModel>> + Sync),
        read: &(dyn Fn(&Path) -> Option<std::sync::Arc<[u8]>> + Sync),
        made: &(dyn Fn(&Path, &Arc<FileModel>) + Sync),
        pool: &rayon::ThreadPool,
    ) -> FnIndex {
        use rayon::prelude::*;
        let mut index = FnIndex::default();
        let mut pending: BTreeMap<PathBuf, BTreeSet<Wanted>> = BTreeMap::new();
        for (file, root, asked) in asks {
            index.roots.insert(file.clone(), root.clone());
            pending
                .entry(root.clone())
                .or_default()
                .extend(asked.calls.iter().cloned());
        }
        let mut looked: HashMap<PathBuf, BTreeSet<Wanted>> = HashMap::new();
        let mut models: HashMap<String, Option<Arc<FileModel>>> = HashMap::new();
        let mut listed: HashMap<PathBuf, Vec<(String, PathBuf)>> = HashMap::new();
        loop {
            // The calls not looked up yet, per crate, within the bound.
            let mut round: Vec<(PathBuf, Vec<Wanted>)> = Vec::new();
            for (root, wanted) in std::mem::take(&mut pending) {
                let seen = looked.entry(root.clone()).or_default();
                let fresh: Vec<Wanted> = wanted
                    .into_iter()
                    .filter(|w| !seen.contains(w))
                    .take(MAX_NAMES.saturating_sub(seen.len()))
                    .collect();
                seen.extend(fresh.iter().cloned());
                if !fresh.is_empty() {
                    round.push((root, fresh));
                }
            }
            if round.is_empty() {
                break;
            }
            let mut work: Vec<Candidate> = Vec::new();
            for (r, (root, wanted)) in round.iter().enumerate() {
                let list = listed
                    .entry(root.clone())
                    .or_insert_with(|| files(root))
                    .clone();
                for (shown, path) in list {
                    let module = module_of(Path::new(&shown));
                    let words = words(&path);
                    let may =
                        |w: &FileWords| wanted.iter().any(|c| c.may_be_in(w, module.as_deref()));
                    if words.is_some_and(|w| !may(w)) {
                        continue;
                    }
                    work.push(Candidate {
                        round: r,
                        shown,
                        path,
                        module,
                        take_words: words.is_none(),
                    });
                }
            }
            let known: HashMap<&str, Option<Arc<FileModel>>> = models
                .iter()
                .map(|(k, v)| (k.as_str(), v.clone()))
                .collect();
            let cache = Mutex::new(Vec::new());
            let found: Vec<(usize, String, Option<String>, Arc<FileModel>)> = pool.install(|| {
                work.par_iter()
                    .filter_map(|c| {
                        let found = |m| Some((c.round, c.shown.clone(), c.module.clone(), m));
                        if let Some(m) = known.get(c.shown.as_str()) {
                            return found(m.clone()?);
                        }
                        if let Some(m) = kept(&c.path) {
                            return found(m);
                        }
                        let bytes = read(&c.path)?;
                        if c.take_words {
                            let words = FileWords::of(&bytes);
                            let wanted = &round[c.round].1;
                            if !wanted
                                .iter()
                                .any(|w| w.may_be_in(&words, c.module.as_deref()))
                            {
                                return None;
                            }
                        }
                        let text = std::str::from_utf8(&bytes).ok()?;
                        let m = model_of(&c.shown, text, packs, lock_name);
                        if let Some(m) = &m {
                            made(&c.path, m);
                        }
                        cache.lock().unwrap().push((c.shown.clone(), m.clone()));
                        found(m?)
                    })
                    .collect()
            });
            models.extend(cache.into_inner().unwrap());
            for (r, path, module, model) in found {
                let (root, wanted) = &round[r];
                for (id, f) in model.fn_ids() {
                    if !wanted.iter().any(|c| c.is(f, module.as_deref())) {
                        continue;
                    }
                    // The functions it calls in other files, for the next
                    // round: the check follows calls as deep as they go.
                    for c in f
                        .calls
                        .iter()
                        .filter(|c| !c.local && (!c.method || c.owner.is_some()))
                    {
                        pending
                            .entry(root.clone())
                            .or_default()
                            .insert(Wanted::of(c));
                    }
                    let defs = index
                        .defs
                        .entry((root.clone(), f.name.clone()))
                        .or_default();
                    // One definition per file and qualified name (a free
                    // function, each type's method).
                    if !defs
                        .iter()
                        .any(|d| d.path == path && d.qualified == f.qualified)
                    {
                        defs.push(Def {
                            path: path.clone(),
                            qualified: f.qualified.clone(),
                            module: module.clone(),
                            model: model.clone(),
                            id,
                        });
                    }
                }
            }
        }
        // Each callee file is also a place the check follows calls from.
        let extra: Vec<(String, PathBuf)> = index
            .defs
            .iter()
            .flat_map(|((root, _), defs)| defs.iter().map(move |d| (d.path.clone(), root.clone())))
            .collect();
        for (path, root) in extra {
            index.roots.entry(path).or_insert(root);
        }
        index
    }
}

fn model_of(path: &str, text: &str, packs: &PackSet, lock_name: &Regex) -> Option<Arc<FileModel>> {
    let _permit = crate::parse::permit(text.len());
    let file = crate::parse::file(text).ok()?;
    let src = SourceFile::new(path, text);
    let model = extract::extract(&file, &src, packs, &Options::new(lock_name));
    // The thread-local span map grows with every parsed file.
    drop(file);
    proc_macro2::extra::invalidate_current_thread_spans();
    Some(Arc::new(model))
}

/// The module a file is: its stem, its directory's name for `mod.rs`, and
/// `crate` for `lib.rs` and `main.rs` (called as `crate::name(..)`).
pub fn module_of(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let name = match stem {
        "lib" | "main" => "crate",
        "mod" => path.parent()?.file_name()?.to_str()?,
        _ => stem,
    };
    Some(name.replace('-', "_"))
}

/// The crate of a directory: the nearest directory, `dir` itself
/// included, with a `Cargo.toml`; under none (a tree of sources copied
/// without their manifests, a Bazel or Buck monorepo), the nearest laid
/// out as a crate ([`laid_out_as_crate`]).
pub fn crate_root_at_or_above(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| std::fs::symlink_metadata(d.join("Cargo.toml")).is_ok_and(|m| m.is_file()))
        .or_else(|| dir.ancestors().find(|d| laid_out_as_crate(d)))
        .map(Path::to_path_buf)
}

/// Whether `dir` is laid out as a crate without a manifest: it holds
/// `src/lib.rs` or `src/main.rs`, or `lib.rs` or `main.rs` itself unless it
/// is a `src` directory (whose parent is the crate).
pub fn laid_out_as_crate(dir: &Path) -> bool {
    let file = |p: PathBuf| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file());
    let src = dir.join("src");
    if file(src.join("lib.rs")) || file(src.join("main.rs")) {
        return true;
    }
    dir.file_name().is_some_and(|n| n != "src")
        && (file(dir.join("lib.rs")) || file(dir.join("main.rs")))
}

/// A crate's `.rs` files on disk, by display path relative to `cwd`:
/// never a symbolic link, a FIFO, an excluded file, `target/`, or a file
/// over `max_file_size` bytes.
pub fn crate_files_on_disk(
    root: &Path,
    cwd: &Path,
    excludes: Option<&crate::walk::Excludes>,
    max_file_size: u64,
) -> Vec<(String, PathBuf)> {
    let excludes = excludes.cloned();
    let walker = ignore::WalkBuilder::new(root)
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |e| {
            e.depth() == 0
                || (e.file_name() != "target"
                    && !excludes.as_ref().is_some_and(|x| x.excludes_file(e.path())))
        })
        .build();
    walker
        .flatten()
        .filter(|entry| {
            entry.file_type().is_some_and(|t| t.is_file())
                && entry.path().extension().is_some_and(|x| x == "rs")
                && entry.metadata().is_ok_and(|m| m.len() <= max_file_size)
        })
        .map(|entry| {
            (
                crate::walk::display_path(entry.path(), cwd),
                entry.path().to_path_buf(),
            )
        })
        .collect()
}

/// Finds the package name of a file's crate, for a lock crate's own source
/// (where the crate is evidence). Reads a manifest only when its crate is
/// inside a git repository, or holds or lies inside a path the command
/// line names; each once. (Outside a repository, config discovery reads
/// the directories above a walked one up to the filesystem root too.) What
/// a run finds does not depend on the directory it starts from.
pub struct Manifests {
    cwd: PathBuf,
    /// Display path of a directory → its crate root: asked once per
    /// directory.
    roots: Mutex<DirRoots>,
    /// Crate root → its package name.
    names: Mutex<HashMap<PathBuf, Option<String>>>,
    /// The command line's paths, canonical: the manifests of the crates
    /// that hold them or lie inside them are read even outside a
    /// repository.
    named: Vec<PathBuf>,
    /// Per canonical directory: whether it is inside a git repository,
    /// worked out from its parent's answer (one `stat` per directory, where
    /// asking every ancestor of every crate root is quadratic in a deep
    /// tree of nested crates).
    in_repo: Mutex<crate::walk::DirMemo<bool>>,
}

impl Manifests {
    pub fn new(cwd: PathBuf) -> Self {
        Manifests {
            cwd,
            roots: Mutex::new(DirRoots::default()),
            names: Mutex::new(HashMap::new()),
            named: Vec::new(),
            in_repo: Mutex::new(crate::walk::DirMemo::default()),
        }
    }

    /// Also reads, outside a repository, the manifests of the crates that
    /// hold `paths` (canonical: what the command line names, or the
    /// editor's workspace) or lie inside them.
    pub fn with_named(mut self, paths: Vec<PathBuf>) -> Self {
        self.named = paths;
        self
    }

    fn crate_root(&self, from: &str) -> Option<PathBuf> {
        let dir = Path::new(from).parent().unwrap_or(Path::new(""));
        self.roots.lock().unwrap().root(&self.cwd, dir)
    }

    /// Whether the manifest of the crate at `root` (canonical) may be read.
    fn readable(&self, root: &Path) -> bool {
        self.named
            .iter()
            .any(|p| root.starts_with(p) || p.starts_with(root))
            || *self
                .in_repo
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(root, |d, parent| {
                    parent.copied().unwrap_or(false) || d.join(".git").exists()
                })
    }

    /// The name of the crate `from` (a display path) belongs to, as written
    /// in `use` paths (`redis_lock` for a package named `redis-lock`).
    pub fn crate_name(&self, from: &str) -> Option<String> {
        let root = self.crate_root(from)?;
        if let Some(n) = self.names.lock().unwrap().get(&root) {
            return n.clone();
        }
        let manifest = root.join("Cargo.toml");
        let name = self
            .readable(&root)
            .then(|| std::fs::symlink_metadata(&manifest).ok())
            .flatten()
            .filter(|m| m.is_file() && m.len() <= 1 << 20)
            .and_then(|_| std::fs::read_to_string(&manifest).ok())
            .and_then(|text| package_name(&text));
        self.names.lock().unwrap().insert(root, name.clone());
        name
    }
}

/// Per directory as written (relative to the current directory, or
/// absolute): its canonical path and its crate root, each asked of the file
/// system once. A directory that is not a symbolic link is its parent's
/// canonical path and its name, and its crate root is itself (it holds a
/// `Cargo.toml`) or its parent's: one `lstat` and one `stat` per
/// directory, where resolving each path from the root again would cost a
/// system call per component (cubic in a tree thousands deep).
#[derive(Default)]
struct DirRoots {
    memo: crate::walk::DirMemo<(PathBuf, Option<PathBuf>)>,
}

impl DirRoots {
    fn root(&mut self, cwd: &Path, dir: &Path) -> Option<PathBuf> {
        self.memo
            .get(dir, |d, parent| {
                let full = cwd.join(d);
                let from_parent = match (parent, d.file_name()) {
                    (Some((canon, root)), Some(name))
                        if std::fs::symlink_metadata(&full)
                            .is_ok_and(|m| m.file_type().is_dir()) =>
                    {
                        Some((canon.join(name), root.clone()))
                    }
                    _ => None,
                };
                match from_parent {
                    Some((canon, parent_root)) => {
                        let own = std::fs::symlink_metadata(canon.join("Cargo.toml"))
                            .is_ok_and(|m| m.is_file());
                        let root = if own {
                            Some(canon.clone())
                        } else {
                            parent_root
                        };
                        (canon, root)
                    }
                    None => match std::fs::canonicalize(&full) {
                        Ok(canon) => {
                            let root = crate_root_at_or_above(&canon);
                            (canon, root)
                        }
                        Err(_) => (full, None),
                    },
                }
            })
            .1
            .clone()
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

#[cfg(test)]
mod tests {
    use super::Manifests;

    /// A crate's manifest is read inside a repository (at any depth below
    /// its `.git`) or inside a named path, and not elsewhere.
    #[test]
    fn manifests_are_read_inside_a_repository_or_a_named_path() {
        let tmp = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(tmp.path()).unwrap();
        let repo = top.join("repo");
        let deep = repo.join("a/b/c");
        let outside = top.join("loose/x");
        for d in [&deep, &outside] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::create_dir(repo.join(".git")).unwrap();
        let m = Manifests::new(top.clone());
        // Asked deepest first, then above: the memo answers from parents.
        assert!(m.readable(&deep));
        assert!(m.readable(&repo.join("a")));
        assert!(m.readable(&repo));
        assert!(!m.readable(&outside));
        assert!(!m.readable(&top));
        let named = Manifests::new(top.clone()).with_named(vec![outside.clone()]);
        assert!(named.readable(&outside));
        // The crate that holds a named path.
        assert!(named.readable(&top.join("loose")));
        assert!(!named.readable(&top.join("elsewhere")));
    }
}
