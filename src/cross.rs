//! Wrappers across the files of a crate.
//!
//! The first round audits every file on its own and brings back each
//! file's *wrappers*: functions that take, release or renew a lock and hand
//! the outcome back (`async fn acquire_lock(&self, key, ttl) -> bool`). A
//! crate is the nearest directory above a file with a `Cargo.toml`; files
//! under none are one crate together. Then:
//!
//! 1. every other file of the crate that calls such a wrapper by name
//!    (`acquire_lock(`, `locks::acquire_lock(`, `.acquire_lock(`) is audited
//!    again, knowing the crate's wrappers: each call is a lock site there,
//!    reported where the user acts (missing annotation, ignored result, no
//!    expiry, release without owner check). A name defined by two files of
//!    the crate is ambiguous and followed nowhere; a method is followed only
//!    on a receiver whose declared type is the wrapper's own type;
//! 2. the files that define wrappers called elsewhere are audited again,
//!    so that the wrapper's inner call is not reported a second time.
//!
//! Both passes only re-read files the walk already chose; neither reads
//! outside them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::engine::{Cross, Engine, FileOutcome};
use crate::model::Wrapper;

/// One audited file, as the audit keeps it.
pub struct Audited {
    pub path: PathBuf,
    pub scope: usize,
    pub shown: String,
    pub outcome: FileOutcome,
}

/// Finds each file's crate root (nearest ancestor with a `Cargo.toml`),
/// asking the file system once per directory.
#[derive(Default)]
struct Roots {
    by_dir: HashMap<PathBuf, Option<PathBuf>>,
}

impl Roots {
    fn of(&mut self, file: &Path, cwd: &Path) -> Option<PathBuf> {
        let dir = cwd.join(file.parent().unwrap_or(Path::new(".")));
        let mut passed = Vec::new();
        let mut cur = Some(dir.as_path());
        let found = loop {
            let Some(d) = cur else { break None };
            if let Some(known) = self.by_dir.get(d) {
                break known.clone();
            }
            passed.push(d.to_path_buf());
            if std::fs::symlink_metadata(d.join("Cargo.toml")).is_ok_and(|m| m.is_file()) {
                break Some(d.to_path_buf());
            }
            cur = d.parent();
        };
        for d in passed {
            self.by_dir.insert(d, found.clone());
        }
        found
    }
}

/// The module a file is: its stem, its directory's name for `mod.rs`, and
/// `crate` for `lib.rs` and `main.rs` (called as `crate::name(..)`).
fn module_of(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let name = match stem {
        "lib" | "main" => "crate",
        "mod" => path.parent()?.file_name()?.to_str()?,
        _ => stem,
    };
    Some(name.replace('-', "_"))
}

/// Whether `word` occurs in `text` as a whole identifier.
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(ident)
            && !text[at + word.len()..].chars().next().is_some_and(ident)
    })
}

/// Whether `text` calls `name`: the name as a whole word followed by `(`
/// (after optional spaces and a turbofish), after a `.` for a method and
/// not after one for a function.
fn calls(text: &str, name: &str, method: bool) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].trim_end().chars().next_back();
        let before_ok =
            !text[..at].chars().next_back().is_some_and(ident) && (before == Some('.')) == method;
        let rest = text[at + name.len()..].trim_start();
        let rest = match rest.strip_prefix("::<") {
            Some(r) => r.find('>').map_or("", |i| r[i + 1..].trim_start()),
            None => rest,
        };
        before_ok && rest.starts_with('(')
    })
}

/// Runs the two passes over `files`, replacing the outcomes of the files
/// audited again. `engine(scope)` is the engine of a scope, without a
/// pre-filter (a caller of a wrapper need not mention any lock API);
/// `read(path, scope)` reads a file within that scope's size limit.
pub fn follow_wrappers<'e>(
    files: &mut [Audited],
    cwd: &Path,
    pool: &rayon::ThreadPool,
    inventory: bool,
    engine: &(dyn Fn(usize) -> &'e Engine<'e> + Sync),
    read: &(dyn Fn(&Path, usize) -> Option<Vec<u8>> + Sync),
) {
    use rayon::prelude::*;
    if files.iter().all(|f| f.outcome.wrappers.is_empty()) {
        return;
    }
    let mut roots = Roots::default();
    // Files under no `Cargo.toml` are one crate: the walked tree.
    let crate_of: Vec<Option<PathBuf>> = files
        .iter()
        .map(|f| Some(roots.of(&f.path, cwd).unwrap_or_default()))
        .collect();
    // (crate, name) → the files defining it, and the wrapper.
    let mut defs: BTreeMap<(PathBuf, String), Vec<(usize, Wrapper)>> = BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        let Some(root) = &crate_of[i] else { continue };
        for (name, w) in &f.outcome.wrappers {
            defs.entry((root.clone(), name.clone()))
                .or_default()
                .push((i, w.clone()));
        }
    }
    // Per crate: the wrappers only one file defines.
    let mut by_crate: HashMap<PathBuf, HashMap<String, (usize, Wrapper)>> = HashMap::new();
    for ((root, name), mut list) in defs {
        if list.len() == 1 {
            let (i, mut w) = list.pop().expect("one");
            w.imported = true;
            w.module = module_of(&files[i].path);
            by_crate.entry(root).or_default().insert(name, (i, w));
        }
    }
    if by_crate.is_empty() {
        return;
    }
    // Pass 1: the callers.
    let imported_for = |i: usize| -> Option<HashMap<String, Wrapper>> {
        let crate_wrappers = by_crate.get(crate_of[i].as_ref()?)?;
        let m: HashMap<String, Wrapper> = crate_wrappers
            .iter()
            .filter(|(_, (def, _))| *def != i)
            .map(|(n, (_, w))| (n.clone(), w.clone()))
            .collect();
        (!m.is_empty()).then_some(m)
    };
    let callers: Vec<(usize, HashMap<String, Wrapper>, Vec<u8>)> = pool.install(|| {
        (0..files.len())
            .into_par_iter()
            .filter_map(|i| {
                let imported = imported_for(i)?;
                let bytes = read(&files[i].path, files[i].scope)?;
                let text = String::from_utf8_lossy(&bytes);
                // A method is followed only on a receiver of its type, so
                // the file must name that type; a function is reached by a
                // `use` of its module or a path through it, so the file
                // must name that module.
                let named = |w: &Wrapper| {
                    let word = if w.method { &w.owner } else { &w.module };
                    word.as_deref().is_some_and(|o| has_word(&text, o))
                };
                imported
                    .iter()
                    .any(|(n, w)| calls(&text, n, w.method) && named(w))
                    .then_some((i, imported, bytes))
            })
            .collect()
    });
    let none = HashSet::new();
    let redone: Vec<(usize, FileOutcome)> = pool.install(|| {
        callers
            .par_iter()
            .map(|(i, imported, bytes)| {
                let f = &files[*i];
                let cross = Cross {
                    imported,
                    called_elsewhere: &none,
                };
                let out =
                    engine(f.scope).check_bytes_with(&f.shown, bytes, inventory, Some(&cross));
                (*i, out)
            })
            .collect()
    });
    // Which wrappers the callers used, per defining file.
    let mut called: HashMap<usize, HashSet<String>> = HashMap::new();
    for (i, out) in &redone {
        let Some(crate_wrappers) = crate_of[*i].as_ref().and_then(|r| by_crate.get(r)) else {
            continue;
        };
        for name in &out.wrappers_called {
            if let Some((def, _)) = crate_wrappers.get(name) {
                if def != i {
                    called.entry(*def).or_default().insert(name.clone());
                }
            }
        }
    }
    let imported: HashMap<usize, HashMap<String, Wrapper>> = callers
        .into_iter()
        .map(|(i, imported, _)| (i, imported))
        .collect();
    for (i, out) in redone {
        files[i].outcome = out;
    }
    // Pass 2: the defining files, without their wrappers' inner calls.
    let mut defining: Vec<(usize, HashSet<String>)> = called.into_iter().collect();
    defining.sort_by_key(|(i, _)| *i);
    let redone: Vec<(usize, FileOutcome)> = pool.install(|| {
        defining
            .par_iter()
            .filter_map(|(i, names)| {
                let f = &files[*i];
                let bytes = read(&f.path, f.scope)?;
                let empty = HashMap::new();
                let cross = Cross {
                    imported: imported.get(i).unwrap_or(&empty),
                    called_elsewhere: names,
                };
                Some((
                    *i,
                    engine(f.scope).check_bytes_with(&f.shown, &bytes, inventory, Some(&cross)),
                ))
            })
            .collect()
    });
    for (i, out) in redone {
        files[i].outcome = out;
    }
}

#[cfg(test)]
mod tests {
    use super::calls;

    #[test]
    fn a_call_is_the_whole_name_then_a_parenthesis() {
        assert!(calls(
            "let ok = acquire_lock(&key).await;",
            "acquire_lock",
            false
        ));
        assert!(calls("locks::acquire_lock (&key)", "acquire_lock", false));
        assert!(calls(
            "self.locker.acquire_lock::<u8>(k)",
            "acquire_lock",
            true
        ));
        assert!(calls(
            "self.locker\n    .acquire_lock(k)",
            "acquire_lock",
            true
        ));
        assert!(!calls("self.locker.acquire_lock(k)", "acquire_lock", false));
        assert!(!calls("acquire_lock(k)", "acquire_lock", true));
        assert!(!calls("try_acquire_lock(&key)", "acquire_lock", false));
        assert!(!calls("acquire_locks(&key)", "acquire_lock", false));
        assert!(!calls(
            "use crate::locks::acquire_lock;",
            "acquire_lock",
            false
        ));
    }

    #[test]
    fn modules_are_named_as_paths_name_them() {
        use std::path::Path;
        assert_eq!(
            super::module_of(Path::new("src/locks.rs")).as_deref(),
            Some("locks")
        );
        assert_eq!(
            super::module_of(Path::new("src/locks/mod.rs")).as_deref(),
            Some("locks")
        );
        assert_eq!(
            super::module_of(Path::new("src/lib.rs")).as_deref(),
            Some("crate")
        );
        assert_eq!(
            super::module_of(Path::new("src/job-queue.rs")).as_deref(),
            Some("job_queue")
        );
    }

    #[test]
    fn a_word_is_a_whole_identifier() {
        assert!(super::has_word("fn f(l: &mut Locker)", "Locker"));
        assert!(!super::has_word("fn f(l: &mut LockerPool)", "Locker"));
        assert!(!super::has_word("fn f(l: &mut MyLocker)", "Locker"));
    }
}
