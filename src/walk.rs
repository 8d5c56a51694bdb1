//! File discovery with the `ignore` crate (ripgrep's walker): `.gitignore`,
//! hidden directories, `target/`, exclude globs; symlinks are not followed
//! (so no loops), FIFOs and devices are skipped. A file named on the command
//! line is audited even if ignored.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ignore::overrides::{Override, OverrideBuilder};
use ignore::WalkBuilder;

/// A problem that stops the run (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("{0}: no such file or directory")]
    Missing(String),
    #[error("invalid --exclude glob `{0}`: {1}")]
    Glob(String, String),
    #[error("the excludes could not be compiled: {0}")]
    Excludes(String),
}

/// Excludes: from the config (relative to its directory) and the command
/// line (relative to the current directory).
#[derive(Clone)]
pub struct Excludes {
    sets: Vec<Override>,
    /// The canonical paths asked so far, shared by every clone.
    canonical: Arc<Mutex<Canonical>>,
}

/// Answers about directories (or paths) that each cost the file system
/// once: a path's answer is worked out from its parent's, so a tree
/// thousands deep costs a system call or two per directory, where
/// resolving each path from the root again would cost one per component
/// (cubic). Up to the first path known, then down again: a loop, never
/// recursion.
pub struct DirMemo<T> {
    known: std::collections::HashMap<PathBuf, T>,
}

impl<T> Default for DirMemo<T> {
    fn default() -> Self {
        DirMemo {
            known: Default::default(),
        }
    }
}

impl<T> DirMemo<T> {
    /// The answer for `path`: `answer(p, parent's answer)` is asked once
    /// for `path` and each unknown path above it (from the top down); the
    /// parent's answer is `None` where the path has no parent to go by (the
    /// first component, `..`, a root).
    pub fn get(&mut self, path: &Path, mut answer: impl FnMut(&Path, Option<&T>) -> T) -> &T {
        let mut todo = Vec::new();
        let mut cur = path.to_path_buf();
        while !self.known.contains_key(&cur) {
            let parent = match (cur.parent(), cur.components().next_back()) {
                (Some(p), Some(std::path::Component::Normal(_))) if !p.as_os_str().is_empty() => {
                    Some(p.to_path_buf())
                }
                _ => None,
            };
            todo.push(cur.clone());
            match parent {
                Some(p) => cur = p,
                None => break,
            }
        }
        while let Some(p) = todo.pop() {
            let value = answer(&p, p.parent().and_then(|q| self.known.get(q)));
            self.known.insert(p, value);
        }
        &self.known[path]
    }
}

/// Canonical paths, each directory resolved once: a path that is not a
/// symbolic link is its parent's canonical path and its name (one
/// `lstat`).
#[derive(Default)]
pub struct Canonical {
    memo: DirMemo<Option<PathBuf>>,
}

impl Canonical {
    /// The canonical path of `path` (relative to the current directory or
    /// absolute), or `None` when it does not resolve.
    pub fn of(&mut self, path: &Path) -> Option<PathBuf> {
        self.memo
            .get(path, |p, parent| {
                let from_parent = match (parent.cloned().flatten(), p.file_name()) {
                    (Some(canon), Some(name))
                        if std::fs::symlink_metadata(p)
                            .is_ok_and(|m| !m.file_type().is_symlink()) =>
                    {
                        Some(canon.join(name))
                    }
                    _ => None,
                };
                from_parent.or_else(|| std::fs::canonicalize(p).ok())
            })
            .clone()
    }
}

impl Excludes {
    pub fn new(groups: &[(&Path, &[String])]) -> Result<Excludes, WalkError> {
        let mut sets = Vec::new();
        for (base, globs) in groups {
            if globs.is_empty() {
                continue;
            }
            let mut b = OverrideBuilder::new(base);
            for g in globs
                .iter()
                .filter(|g| g.as_str() != crate::config::CFG_TEST)
            {
                b.add(&format!("!{g}"))
                    .map_err(|e| WalkError::Glob(g.clone(), e.to_string()))?;
            }
            sets.push(b.build().map_err(|e| WalkError::Excludes(e.to_string()))?);
        }
        Ok(Excludes {
            sets,
            canonical: Arc::default(),
        })
    }

    /// Whether a file, or a directory above it, is excluded.
    pub fn excludes_file(&self, path: &Path) -> bool {
        self.excluded(path, false) || ancestors_excluded(path, &|d| self.excluded(d, true))
    }

    pub fn excluded(&self, path: &Path, is_dir: bool) -> bool {
        if self.sets.is_empty() {
            return false;
        }
        let abs = self
            .canonical
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .of(path)
            .unwrap_or_else(|| path.to_path_buf());
        self.sets
            .iter()
            .any(|o| o.matched(path, is_dir).is_ignore() || o.matched(&abs, is_dir).is_ignore())
    }
}

/// Whether the config that governs a path excludes it (`is_dir`: the path
/// is a directory).
pub type ConfigExcluded = Arc<dyn Fn(&Path, bool) -> bool + Send + Sync>;

/// Directories of other people's code, skipped unless asked for.
pub const VENDORED_DIRS: [&str; 2] = ["vendor", "third_party"];

/// How to walk.
pub struct WalkOptions {
    pub excludes: Excludes,
    pub config_excluded: ConfigExcluded,
    pub force_exclude: bool,
    /// Enter `vendor/` and `third_party/` directories too.
    pub include_vendored: bool,
    /// Threads that walk a directory (0: one per core).
    pub threads: usize,
}

/// What the walk makes of one entry of a directory, with its path.
enum Entry {
    /// A directory it entered.
    Dir(PathBuf),
    File(PathBuf),
    Note(PathBuf, String),
    Error(PathBuf, String),
}

impl Entry {
    /// Its path, and its rank among entries of one path: a directory
    /// first, so that what the walk met inside a directory a config
    /// excludes (it could not be read) is dropped with it.
    fn key(&self) -> (&Path, u8) {
        match self {
            Entry::Dir(p) => (p, 0),
            Entry::File(p) => (p, 1),
            Entry::Note(p, _) => (p, 2),
            Entry::Error(p, _) => (p, 3),
        }
    }
}

/// Every `.rs` file under `paths`, sorted, each once. Notes about skipped
/// entries go to `notes`, entries that could not be read to `errors`.
pub fn collect(
    paths: &[PathBuf],
    opts: &WalkOptions,
    notes: &mut Vec<String>,
    errors: &mut Vec<String>,
) -> Result<Vec<PathBuf>, WalkError> {
    let excludes = &opts.excludes;
    let force_exclude = opts.force_exclude;
    let config_excluded = |p: &Path, dir: bool| (opts.config_excluded)(p, dir);
    let vendored: Arc<Mutex<Vec<PathBuf>>> = Arc::default();
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|_| WalkError::Missing(crate::escape::path(p)))?;
        if meta.is_file() {
            // A file named on the command line is audited even if excluded,
            // unless `--force-exclude` says otherwise (pre-commit passes
            // every staged file by name).
            let excluded = excludes.excluded(p, false)
                || config_excluded(p, false)
                || ancestors_excluded(p, &|d| {
                    excludes.excluded(d, true) || config_excluded(d, true)
                });
            if !(force_exclude && excluded) {
                out.push(p.clone());
            }
            continue;
        }
        if !meta.is_dir() {
            notes.push(format!(
                "{}: not a regular file or directory, skipped",
                crate::escape::path(p)
            ));
            continue;
        }
        let found: Mutex<Vec<Entry>> = Mutex::default();
        WalkBuilder::new(p)
            .threads(opts.threads)
            .hidden(true)
            .git_ignore(true)
            .git_exclude(true)
            .git_global(false)
            .require_git(false)
            .parents(true)
            .ignore(true)
            .follow_links(false)
            .filter_entry({
                // A directory the command line excludes is never entered:
                // its files are not read, and one that cannot be read is no
                // error. The configs are asked after the walk (below).
                let excludes = excludes.clone();
                let include_vendored = opts.include_vendored;
                let vendored = vendored.clone();
                move |e| {
                    let dir = e.depth() > 0 && e.file_type().is_some_and(|t| t.is_dir());
                    if !dir {
                        return true;
                    }
                    if !include_vendored && VENDORED_DIRS.iter().any(|v| e.file_name() == *v) {
                        if let Ok(mut v) = vendored.lock() {
                            v.push(e.path().to_path_buf());
                        }
                        return false;
                    }
                    !(e.file_name() == "target" || excludes.excluded(e.path(), true))
                }
            })
            .build_parallel()
            .run(|| {
                let found = &found;
                Box::new(move |entry| {
                    if let Some(e) = entry_of(entry) {
                        found.lock().unwrap_or_else(|e| e.into_inner()).push(e);
                    }
                    ignore::WalkState::Continue
                })
            });
        // The threads find entries in any order. The configs are asked in
        // the order of the paths, as one thread walking in name order
        // would (so configs are discovered, and their warnings said, in
        // one order), and what sits under a directory a config excludes
        // is dropped: its files, its notes, its unreadable directories.
        let mut found = found.into_inner().unwrap_or_else(|e| e.into_inner());
        found.sort_by(|a, b| a.key().cmp(&b.key()));
        let mut dropped: Vec<PathBuf> = Vec::new();
        let mut all_dropped: Vec<PathBuf> = Vec::new();
        let (mut said, mut failed) = (Vec::new(), Vec::new());
        for e in found {
            let path = e.key().0;
            while dropped.last().is_some_and(|d| !path.starts_with(d)) {
                dropped.pop();
            }
            if !dropped.is_empty() {
                continue;
            }
            match e {
                Entry::Dir(d) => {
                    if config_excluded(&d, true) {
                        all_dropped.push(d.clone());
                        dropped.push(d);
                    }
                }
                // Its directories were asked before it (path order).
                Entry::File(f) => {
                    if !(excludes.excluded(&f, false) || config_excluded(&f, false)) {
                        out.push(f);
                    }
                }
                Entry::Note(_, n) => said.push(n),
                Entry::Error(_, e) => failed.push(e),
            }
        }
        notes.extend(said);
        errors.extend(failed);
        // A vendored directory under one a config excludes is not said.
        if !all_dropped.is_empty() {
            let mut v = vendored.lock().unwrap_or_else(|e| e.into_inner());
            v.retain(|s| !all_dropped.iter().any(|d| s.starts_with(d)));
        }
    }
    let mut vendored: Vec<String> =
        std::mem::take(&mut *vendored.lock().unwrap_or_else(|e| e.into_inner()))
            .iter()
            .map(|v| display_path(v, Path::new(".")))
            .collect();
    if !vendored.is_empty() {
        vendored.sort();
        vendored.dedup();
        let n = vendored.len();
        let shown: Vec<String> = vendored.iter().take(5).map(|v| format!("{v}/")).collect();
        notes.push(format!(
            "skipped {n} vendored director{} ({}{}): `--include-vendored` audits {}",
            if n == 1 { "y" } else { "ies" },
            shown.join(", "),
            if n > 5 { ", …" } else { "" },
            if n == 1 { "it" } else { "them" },
        ));
    }
    out.sort();
    out.dedup();
    // One file named several ways (`a.rs`, `./a.rs`, its absolute path)
    // is audited once. One directory walked names each file once (links
    // are not followed): the canonical paths, a `readlink` per component
    // of every file, are asked only when several paths were named.
    if paths.len() > 1 {
        let mut seen = std::collections::HashSet::new();
        out.retain(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
    }
    Ok(out)
}

/// What the walk makes of one entry: a directory it enters, a `.rs` file
/// to audit, a note about one it skips, or a directory it could not read.
fn entry_of(entry: Result<ignore::DirEntry, ignore::Error>) -> Option<Entry> {
    let entry = match entry {
        Ok(e) => e,
        // An unreadable directory: its files would be missing from the
        // report, so the run fails (exit 2) at the end.
        Err(e) => return Some(Entry::Error(error_path(&e), format!("{e}"))),
    };
    let ft = entry.file_type()?;
    let path = entry.path();
    if ft.is_dir() && entry.depth() > 0 {
        return Some(Entry::Dir(path.to_path_buf()));
    }
    if path.extension().and_then(|e| e.to_str()) != Some("rs") {
        return None;
    }
    if !ft.is_file() {
        // Not silently: a `.rs` name that is not read is said.
        let note = if ft.is_symlink() {
            "symbolic link not followed, skipped (name its target to audit it)"
        } else if !ft.is_dir() {
            "not a regular file, skipped"
        } else {
            return None;
        };
        let shown = format!("{}: {note}", crate::escape::path(path));
        return Some(Entry::Note(path.to_path_buf(), shown));
    }
    Some(Entry::File(path.to_path_buf()))
}

/// The path an error of the walk is about (empty when it names none).
fn error_path(e: &ignore::Error) -> PathBuf {
    match e {
        ignore::Error::WithPath { path, .. } => path.clone(),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Loop { child, .. } => child.clone(),
        ignore::Error::Partial(errs) => errs.first().map(error_path).unwrap_or_default(),
        _ => PathBuf::new(),
    }
}

/// What makes two names one file, for the files `mod` declarations reach:
/// its device and inode where the system has them (one `stat`), else its
/// canonical path. A hard link of a walked file is that file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Identity {
    Inode(u64, u64),
    Path(PathBuf),
}

/// The [`Identity`] of the file at `path` (a file that cannot be asked
/// about is known by its path as written).
pub fn identity(path: &Path) -> Identity {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Ok(m) = std::fs::metadata(path) {
            return Identity::Inode(m.dev(), m.ino());
        }
    }
    Identity::Path(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
}

/// The files a source file brings into its crate, as rustc follows them:
/// the files its `mod name;` declarations name (`name.rs` and
/// `name/mod.rs` beside it or in its own module directory, or the file a
/// `#[path = "…"]` attribute names), also inside inline modules (`mod a {
/// mod b; }` is `a/b.rs` below that directory), and the files
/// `include!("…")` names (relative to the file). Found from the text alone
/// (a mention in a comment adds a candidate, never loses one); only
/// existing files are returned.
///
/// `known` says which paths are already audited: where a declaration's
/// module may live (`name.rs` or `name/mod.rs` in one directory) and one of
/// those is known, that place brings nothing more and is not asked of the
/// file system (most declarations name a walked file, and a `stat` per
/// candidate was most of the cost).
pub fn declared_modules(path: &Path, bytes: &[u8], known: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    use std::sync::OnceLock;
    static MOD: OnceLock<regex::bytes::Regex> = OnceLock::new();
    static ATTRS: OnceLock<regex::bytes::Regex> = OnceLock::new();
    static PATH: OnceLock<regex::bytes::Regex> = OnceLock::new();
    static INCLUDE: OnceLock<regex::bytes::Regex> = OnceLock::new();
    static INLINE: OnceLock<regex::bytes::Regex> = OnceLock::new();
    // Found by its literal `mod` first; the attributes before it are read
    // only where a declaration is.
    let decl = MOD.get_or_init(|| {
        regex::bytes::Regex::new(r"\bmod\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*;")
            .expect("a valid regex")
    });
    let attrs_before = ATTRS.get_or_init(|| {
        regex::bytes::Regex::new(r"((?:#\s*\[[^\]]*\]\s*)*)(?:pub\s*(?:\([^)]*\))?\s*)?\z")
            .expect("a valid regex")
    });
    let path_attr = PATH.get_or_init(|| {
        regex::bytes::Regex::new(r#"\bpath\s*=\s*"([^"]*)""#).expect("a valid regex")
    });
    let include = INCLUDE.get_or_init(|| {
        regex::bytes::Regex::new(r#"\binclude\s*!\s*[(\[{]\s*"([^"]*)"\s*[)\]}]"#)
            .expect("a valid regex")
    });
    let inline = INLINE.get_or_init(|| {
        regex::bytes::Regex::new(r"\bmod\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*\{")
            .expect("a valid regex")
    });
    /// How far before a declaration its attributes are looked for.
    const ATTRS_WINDOW: usize = 4096;
    let Some(dir) = path.parent() else {
        return Vec::new();
    };
    let stem = path.file_stem().unwrap_or_default();
    // A `mod.rs`, `lib.rs` or `main.rs` owns its directory; any other file
    // `foo.rs` owns `foo/`.
    let own_dir = match stem.to_str() {
        Some("mod" | "lib" | "main") => dir.to_path_buf(),
        _ => dir.join(stem),
    };
    // The inline modules are found on the first declaration: most files
    // declare none, and the pass over their braces is not needed.
    let mut inline_at = None;
    // The files the declarations may name, each place a module may live in
    // offered once (a name declared again adds nothing) and kept only when
    // no file of it is known.
    let mut out: Vec<PathBuf> = Vec::new();
    let mut offered: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    let mut offer = |group: Vec<PathBuf>| {
        if offered.insert(group[0].clone()) && !group.iter().any(|p| known(p)) {
            out.extend(group);
        }
    };
    // Where the previous declaration ended: a declaration's attributes are
    // read from there on, so the windows never overlap.
    let mut prev_end = 0;
    for c in decl.captures_iter(bytes) {
        let (whole, end) = c.get(0).map_or((0, 0), |m| (m.start(), m.end()));
        let window = &bytes[whole.saturating_sub(ATTRS_WINDOW).max(prev_end)..whole];
        prev_end = end;
        let attrs = attrs_before
            .captures(window)
            .and_then(|a| a.get(1))
            .map_or(&b""[..], |m| m.as_bytes());
        let name = String::from_utf8_lossy(&c[1]).into_owned();
        let at = c.get(1).map_or(0, |m| m.start());
        let nest = inline_at.get_or_insert_with(|| inline_modules(bytes, inline))(at);
        if let Some(p) = path_attr.captures(attrs) {
            let given = String::from_utf8_lossy(&p[1]).into_owned();
            offer(vec![dir.join(&given)]);
            if !nest.is_empty() {
                offer(vec![own_dir.join(nest.join("/")).join(&given)]);
                offer(vec![dir.join(nest.join("/")).join(&given)]);
            }
        } else {
            // Each place the module may live in is a group of its own: a
            // known `name.rs` says nothing of `own/name.rs`, but rustc
            // refuses `name.rs` beside `name/mod.rs`.
            for base in [dir.to_path_buf(), own_dir.clone()] {
                let base = base.join(nest.join("/"));
                offer(vec![
                    base.join(format!("{name}.rs")),
                    base.join(&name).join("mod.rs"),
                ]);
            }
        }
    }
    for c in include.captures_iter(bytes) {
        offer(vec![dir.join(String::from_utf8_lossy(&c[1]).as_ref())]);
    }
    out.sort();
    out.dedup();
    out.retain(|p| p.is_file());
    out
}

/// Whether a macro of the file declares modules (`mod $name;` in a
/// `macro_rules!` body): rustc follows those once the macro is expanded,
/// which lockaudit does not do, so the caller says so.
pub fn declares_modules_in_a_macro(bytes: &[u8]) -> bool {
    use std::sync::OnceLock;
    static MACRO_MOD: OnceLock<regex::bytes::Regex> = OnceLock::new();
    MACRO_MOD
        .get_or_init(|| {
            regex::bytes::Regex::new(r"\bmod\s+\$[A-Za-z_][A-Za-z0-9_]*\s*;")
                .expect("a valid regex")
        })
        .is_match(bytes)
}

/// For each byte offset, the inline modules (`mod a { … }`) around it,
/// outermost first, found in one pass that counts braces (strings and
/// comments are not told apart: a wrong guess only adds a candidate that
/// does not exist).
fn inline_modules(bytes: &[u8], inline: &regex::bytes::Regex) -> impl Fn(usize) -> Vec<String> {
    /// A hostile file with thousands of inline modules: the paths it could
    /// name stop growing here.
    const MAX_INLINE: usize = 256;
    // Each `mod a {`: its name and the offset of its `{`.
    let opens: Vec<(String, usize)> = inline
        .captures_iter(bytes)
        .take(MAX_INLINE)
        .filter_map(|c| {
            let brace = c.get(0)?.end().checked_sub(1)?;
            Some((String::from_utf8_lossy(&c[1]).into_owned(), brace))
        })
        .collect();
    // Each inline module: its name and body (start, end).
    let mut spans: Vec<(String, usize, usize)> = Vec::new();
    let mut open: Vec<(usize, usize)> = Vec::new(); // (depth, index in spans)
    let mut next = opens.iter().peekable();
    let mut depth = 0usize;
    if !opens.is_empty() {
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b'{' => {
                    depth += 1;
                    if next.peek().is_some_and(|(_, at)| *at == i) {
                        let (name, _) = next.next().expect("peeked");
                        spans.push((name.clone(), i + 1, bytes.len()));
                        open.push((depth, spans.len() - 1));
                    }
                }
                b'}' => {
                    if let Some(&(d, idx)) = open.last() {
                        if d == depth {
                            spans[idx].2 = i;
                            open.pop();
                        }
                    }
                    depth = depth.saturating_sub(1);
                }
                _ => {}
            }
        }
    }
    move |at| {
        spans
            .iter()
            .filter(|(_, start, end)| *start <= at && at < *end)
            .map(|(name, _, _)| name.clone())
            .collect()
    }
}

fn ancestors_excluded(path: &Path, excluded: &dyn Fn(&Path) -> bool) -> bool {
    let mut cur = path.parent();
    while let Some(dir) = cur {
        if dir.as_os_str().is_empty() {
            break;
        }
        if excluded(dir) {
            return true;
        }
        cur = dir.parent();
    }
    false
}

/// A path as printed: relative to `base` (the current directory) when it is
/// under it, with `/` separators, without a leading `./`.
pub fn display_path(path: &Path, base: &Path) -> String {
    let rel = if path.is_absolute() {
        let base_abs = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
        path.strip_prefix(&base_abs)
            .or_else(|_| path.strip_prefix(base))
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| path.to_path_buf())
    } else {
        path.to_path_buf()
    };
    // Lossless and printable: a name may hold any byte but `/` and NUL.
    let s = printable(rel.as_os_str());
    let mut s = s.as_str();
    while let Some(rest) = s.strip_prefix("./") {
        s = rest;
    }
    s.to_string()
}

/// A path's printed form: `\\` separators as `/`, then escaped (see
/// [`crate::escape::os_str`]), so the escapes are never ambiguous.
pub(crate) fn printable(os: &std::ffi::OsStr) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        // A backslash is part of the name here, not a separator: shown
        // doubled, so `a\\b.rs` is never taken for `a/b.rs`.
        crate::escape::bytes(os.as_bytes())
    }
    #[cfg(not(unix))]
    {
        crate::escape::text(&os.to_string_lossy().replace('\\', "/")).into_owned()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn inline_modules_are_found_in_one_pass_and_bounded() {
        let re = regex::bytes::Regex::new(r"\bmod\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*\{").unwrap();
        let text = b"mod a { mod b { x } fn f() { { } } mod c { } }\nmod d { }";
        let at = super::inline_modules(text, &re);
        let pos = |needle: &str| {
            text.windows(needle.len())
                .position(|w| w == needle.as_bytes())
                .unwrap()
        };
        assert_eq!(at(pos("x")), ["a", "b"]);
        assert_eq!(at(pos("fn f")), ["a"]);
        assert_eq!(at(pos("\nmod d")), Vec::<String>::new());
        assert_eq!(at(pos("d {") + 3), ["d"]);
        // Thousands of nested modules: at most 256 are kept.
        let deep = "mod a { ".repeat(20_000) + "x";
        let at = super::inline_modules(deep.as_bytes(), &re);
        assert_eq!(at(deep.len() - 1).len(), 256);
    }
}
