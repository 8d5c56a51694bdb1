//! The crate passes: what the files of a crate tell each other.
//!
//! The first round audits every file on its own and brings back each
//! file's *wrappers*: functions that take, release or renew a lock and hand
//! the outcome back (`async fn acquire_lock(&self, key, ttl) -> bool`). A
//! crate is the nearest directory above a file with a `Cargo.toml`, else
//! the nearest laid out as a crate (`src/lib.rs`, `src/main.rs`, `lib.rs`
//! or `main.rs`); files in neither are one crate together. Then:
//!
//! 1. every other file of the crate that calls such a wrapper by name
//!    (`acquire_lock(`, `locks::acquire_lock(`, `.acquire_lock(`) is audited
//!    again, knowing the crate's wrappers: each call is a lock site there,
//!    where what it does with the outcome is judged (an ignored result, a
//!    missing fencing token) and where an annotation covers it. A name
//!    defined by two files of the crate is ambiguous and followed nowhere;
//!    a method is followed only on a receiver whose declared type is the
//!    wrapper's own type, or a trait object, `impl Trait` or generic
//!    bounded by the trait it implements. A file that turns out to define
//!    a wrapper of another file's wrapper brings its callers into a further
//!    round, until no round finds a new name: a chain is followed to its
//!    end, however many files it crosses, within a bound on the work
//!    ([`MAX_FOLLOWED`]). Statement texts (SQL, Lua) a file keeps in a
//!    constant or returns from a function are offered the same way, to the
//!    files that reach them by their module path; text a constructor
//!    stores in a struct field is offered as `Type.field`, to the files
//!    that name both;
//! 2. the files that define wrappers called elsewhere are audited again,
//!    knowing which of their wrappers are called and the outermost calls
//!    of other files that reach each lock call ([`SiteReport`]s): the lock
//!    call's own defects and a missing purpose are reported there, once,
//!    naming those calls ([`crate::model::chains`]);
//! 3. the files whose fencing check asked for functions of other files
//!    ([`crate::model::resolve::FnIndex`]) are judged again, knowing them,
//!    from the facts their audit kept ([`crate::engine::FileFacts`]):
//!    neither read nor parsed again.
//!
//! The passes work on the files the walk chose and, for a crate the walk
//! did not cover whole (a file or a subdirectory was named), the crate's
//! other files, within the same excludes and size limit; those are audited
//! for what they offer and their own findings are dropped. [`gather`] reads
//! them and finds every file's crate root (asking whether a `Cargo.toml`
//! exists in each ancestor directory) before [`passes`] start, so the
//! passes themselves read nothing but a file past the bound on the bytes
//! they hold, and list no directory.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::engine::{Cross, Engine, FileOutcome};
use crate::model::{CalledElsewhere, SiteReport, Wrapper};
use crate::words::FileWords;

/// One audited file, as the audit keeps it.
#[derive(Clone)]
pub struct Audited {
    pub path: PathBuf,
    pub scope: usize,
    pub shown: String,
    pub outcome: FileOutcome,
    /// Its words, from the first audit: whether it could reach another
    /// file's offer is asked of them, not of its text.
    pub words: Option<FileWords>,
    /// Its bytes: those its first read gave, when the run held them for
    /// the passes (a batch run holds them for every file of a crate whose
    /// files cross into each other, so no file is read twice); kept when
    /// the passes took its words and saw that they will read it again (it
    /// reaches another file's offer, or may define a function a fencing
    /// check asked for), or once a round of the passes audited it again (a
    /// later round may do so again). Otherwise its text is in the facts its
    /// audit kept, if any, or read when needed.
    pub bytes: Option<Arc<[u8]>>,
    /// Its crate root ([`Roots`]), when the run found it already (a batch
    /// run does, to hold the crate's bytes): not asked of the disk again.
    pub root: Option<PathBuf>,
    /// What its first audit already knew of its crate (an editor
    /// session's file, audited knowing what the crate gave it at the
    /// previous edit): the passes audit it again only when the crate now
    /// gives it anything else.
    pub assumed: Option<Assumed>,
}

/// What a file was given by its crate at an earlier run of an editor
/// session ([`FirstAudits::assumed`]), to audit it knowing that at once.
#[derive(Clone)]
pub struct Assumed(Given);

impl Assumed {
    /// What an engine's audit is told of the crate.
    pub fn cross(&self) -> Cross<'_> {
        Cross {
            imported: &self.0.wrappers,
            called_elsewhere: empty_called(),
            texts: &self.0.texts,
            types: Some(&self.0.types),
            reached_from: None,
        }
    }
}

/// No wrapper called elsewhere.
fn empty_called() -> &'static CalledElsewhere {
    static NONE: std::sync::OnceLock<CalledElsewhere> = std::sync::OnceLock::new();
    NONE.get_or_init(CalledElsewhere::default)
}

impl Audited {
    /// A file after its first audit, taking what the engine kept of it.
    pub fn new(path: PathBuf, scope: usize, shown: String, mut outcome: FileOutcome) -> Audited {
        Audited {
            path,
            scope,
            shown,
            words: outcome.words.take(),
            bytes: None,
            assumed: None,
            root: None,
            outcome,
        }
    }

    /// An editor's buffer `bytes` of the file at `path`, audited first:
    /// knowing what its crate gave it at the previous edit, when the
    /// session kept that ([`FirstAudits::assumed`]), so that the passes
    /// audit it again only when the crate now gives it something else.
    /// Its words are taken, as the session reuses them across edits.
    pub fn edited(
        engine: &Engine<'_>,
        path: PathBuf,
        shown: &str,
        bytes: &[u8],
        first_audits: Option<&FirstAudits>,
    ) -> Audited {
        let assumed = first_audits.and_then(|c| c.assumed(&path, 0));
        let outcome = match &assumed {
            Some(a) => engine
                .with_prefilter(None)
                .keeping_words(true)
                .check_bytes_with(shown, bytes, false, Some(&a.cross())),
            None => engine.keeping_words(true).check_bytes(shown, bytes, false),
        };
        let mut file = Audited::new(path, 0, shown.to_string(), outcome);
        file.assumed = assumed;
        file
    }

    /// Its bytes: kept, or in the facts its audit kept, or read.
    fn text(&self, sources: &Sources) -> Option<Arc<[u8]>> {
        match (&self.bytes, &self.outcome.facts) {
            (Some(b), _) => Some(b.clone()),
            (None, Some(facts)) => Some(facts.src.text.as_bytes().into()),
            (None, None) => (sources.read)(&self.path, self.scope),
        }
    }
}

/// Finds each file's crate ([`crate::model::resolve::crate_root_at_or_above`]):
/// the nearest ancestor with a `Cargo.toml`, else the nearest laid out as a
/// crate, asking the file system once per directory.
#[derive(Default)]
pub(crate) struct Roots {
    by_dir: HashMap<PathBuf, Option<PathBuf>>,
    by_layout: HashMap<PathBuf, Option<PathBuf>>,
}

impl Roots {
    pub(crate) fn of(&mut self, file: &Path, cwd: &Path) -> Option<PathBuf> {
        let dir = cwd.join(file.parent().unwrap_or(Path::new(".")));
        let is_manifest =
            |d: &Path| std::fs::symlink_metadata(d.join("Cargo.toml")).is_ok_and(|m| m.is_file());
        Self::nearest(&mut self.by_dir, &dir, is_manifest).or_else(|| {
            Self::nearest(
                &mut self.by_layout,
                &dir,
                crate::model::resolve::laid_out_as_crate,
            )
        })
    }

    /// The nearest directory at or above `dir` that `is_root`, each
    /// directory passed remembered in `memo`.
    fn nearest(
        memo: &mut HashMap<PathBuf, Option<PathBuf>>,
        dir: &Path,
        is_root: impl Fn(&Path) -> bool,
    ) -> Option<PathBuf> {
        let mut passed = Vec::new();
        let mut cur = Some(dir);
        let found = loop {
            let Some(d) = cur else { break None };
            if let Some(known) = memo.get(d) {
                break known.clone();
            }
            passed.push(d.to_path_buf());
            if is_root(d) {
                break Some(d.to_path_buf());
            }
            cur = d.parent();
        };
        for d in passed {
            memo.insert(d, found.clone());
        }
        found
    }
}

use crate::model::extract::field_text_parts;
use crate::model::resolve::{module_of, Wanted};

/// What one pass over a file's text finds: every identifier, those that
/// are called (followed by `(`, after spaces and a turbofish), each with
/// whether a `.` comes before it (a method call), and every name written
/// after a path (`locks::acquire_lock`, and each name of `use
/// locks::{acquire_lock, release}`; `*` for a glob) with the identifier
/// before its `::`. Linear in the text, whatever the number of wrappers: a
/// hostile crate with thousands of them and thousands of files costs one
/// scan per file.
#[derive(Default)]
struct Scan<'t> {
    words: HashSet<&'t str>,
    calls: HashSet<(&'t str, bool)>,
    qualified: HashSet<(&'t str, &'t str)>,
    /// `use locks::acquire_lock as take;`: `take` → `acquire_lock`.
    renames: HashMap<&'t str, &'t str>,
}

/// Deepest `{` nesting followed for `use` lists.
const MAX_BRACES: usize = 256;

/// Longest turbofish (`::<..>`) read between a name and its `(`, in bytes.
const MAX_TURBOFISH: usize = 256;

fn scan(text: &str) -> Scan<'_> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Scan::default();
    let mut rest = text;
    let mut offset = 0;
    // The last identifier, and the qualifier of each open `{` (`Some` for
    // `path::{`, `None` for any other brace).
    let mut last: Option<&str> = None;
    let mut braces: Vec<Option<&str>> = Vec::new();
    // A name written after a path, then `as`: the next word renames it.
    let mut last_qualified = false;
    let mut renaming: Option<&str> = None;
    while let Some(start) = rest.find(|c: char| ident(c)) {
        let from = offset + start;
        let between = &text[offset..from];
        // Braces between the last identifier and this one.
        for (i, c) in between.char_indices() {
            match c {
                '{' => {
                    let before = between[..i].trim_end();
                    let q = before.ends_with("::").then_some(last).flatten();
                    if braces.len() < MAX_BRACES {
                        braces.push(q);
                    }
                }
                '}' => {
                    braces.pop();
                }
                _ => {}
            }
        }
        if let Some(q) = last {
            if between.trim_start().starts_with("::*") {
                out.qualified.insert((q, "*"));
            }
        }
        let len = text[from..]
            .find(|c: char| !ident(c))
            .unwrap_or(text.len() - from);
        let word = &text[from..from + len];
        offset = from + len;
        rest = &text[offset..];
        // A number is not a name.
        if word.starts_with(|c: char| c.is_ascii_digit()) {
            last = None;
            continue;
        }
        out.words.insert(word);
        if let Some(orig) = renaming.take() {
            out.renames.insert(word, orig);
        }
        if word == "as" {
            renaming = last.filter(|_| last_qualified);
        }
        let qualifier = if between.trim() == "::" {
            last
        } else if between.contains(',') || between.trim_end().ends_with('{') {
            braces.last().copied().flatten()
        } else {
            None
        };
        last_qualified = qualifier.is_some();
        if let Some(q) = qualifier {
            out.qualified.insert((q, word));
        }
        let after = rest.trim_start();
        // A turbofish is short: its `>` is looked for in a bounded window,
        // so that `a::<a::<a::<…` without one stays linear.
        let after = match after.strip_prefix("::<") {
            Some(r) => r.as_bytes()[..r.len().min(MAX_TURBOFISH)]
                .iter()
                .position(|&b| b == b'>')
                .map_or("", |i| r[i + 1..].trim_start()),
            None => after,
        };
        if after.starts_with('(') {
            let dotted = text[..from].trim_end().ends_with('.');
            out.calls.insert((word, dotted));
        }
        last = Some(word);
    }
    out
}

/// What [`given_to`] asks of a file's [`Scan`], kept or not.
trait Found {
    fn words(&self) -> Vec<&str>;
    fn has_word(&self, w: &str) -> bool;
    fn calls(&self) -> Vec<(&str, bool)>;
    fn qualified(&self, q: &str, name: &str) -> bool;
    fn renamed(&self, name: &str) -> Option<&str>;
}

impl Found for Scan<'_> {
    fn words(&self) -> Vec<&str> {
        self.words.iter().copied().collect()
    }
    fn has_word(&self, w: &str) -> bool {
        self.words.contains(w)
    }
    fn calls(&self) -> Vec<(&str, bool)> {
        self.calls.iter().copied().collect()
    }
    fn qualified(&self, q: &str, name: &str) -> bool {
        self.qualified.contains(&(q, name))
    }
    fn renamed(&self, name: &str) -> Option<&str> {
        self.renames.get(name).copied()
    }
}

/// A [`Scan`] that owns its names: an editor session keeps one per file
/// while the file is unchanged, so an edit elsewhere neither reads nor
/// scans it again.
struct KeptScan {
    words: HashSet<Box<str>>,
    calls: Vec<(Box<str>, bool)>,
    qualified: HashMap<Box<str>, HashSet<Box<str>>>,
    renames: HashMap<Box<str>, Box<str>>,
}

impl KeptScan {
    fn of(s: &Scan) -> KeptScan {
        let mut qualified: HashMap<Box<str>, HashSet<Box<str>>> = HashMap::new();
        for (q, n) in &s.qualified {
            qualified
                .entry((*q).into())
                .or_default()
                .insert((*n).into());
        }
        KeptScan {
            words: s.words.iter().map(|w| (*w).into()).collect(),
            calls: s.calls.iter().map(|(c, d)| ((*c).into(), *d)).collect(),
            qualified,
            renames: s
                .renames
                .iter()
                .map(|(a, b)| ((*a).into(), (*b).into()))
                .collect(),
        }
    }
}

impl KeptScan {
    /// What it holds, by estimate.
    fn size(&self) -> usize {
        let names = self.words.iter().map(|w| w.len()).sum::<usize>()
            + self.calls.iter().map(|(c, _)| c.len()).sum::<usize>()
            + self
                .qualified
                .iter()
                .map(|(q, n)| q.len() + n.iter().map(|x| x.len()).sum::<usize>())
                .sum::<usize>()
            + self
                .renames
                .iter()
                .map(|(a, b)| a.len() + b.len())
                .sum::<usize>();
        let entries =
            self.words.len() + self.calls.len() + self.qualified.len() + self.renames.len();
        ENTRY_COST + names + entries * 32
    }
}

impl Found for KeptScan {
    fn words(&self) -> Vec<&str> {
        self.words.iter().map(|w| &**w).collect()
    }
    fn has_word(&self, w: &str) -> bool {
        self.words.contains(w)
    }
    fn calls(&self) -> Vec<(&str, bool)> {
        self.calls.iter().map(|(c, d)| (&**c, *d)).collect()
    }
    fn qualified(&self, q: &str, name: &str) -> bool {
        self.qualified.get(q).is_some_and(|n| n.contains(name))
    }
    fn renamed(&self, name: &str) -> Option<&str> {
        self.renames.get(name).map(|n| &**n)
    }
}

/// Words a file must spell (one of them) before its text is scanned.
struct Needles(Vec<u32>);

impl Needles {
    fn new<'a>(words: impl Iterator<Item = &'a str>) -> Needles {
        Needles(crate::words::hashes(words.filter(|w| !w.is_empty())))
    }

    fn in_words(&self, words: &FileWords) -> bool {
        words.meets(&self.0)
    }
}

/// The words a file's text must hold (one of each set) to reach any of
/// `names` among a crate's `offers`: a name, and a type or module that
/// reaches an offer.
fn needles_for(offers: &Offers, names: &[&str]) -> (Needles, Needles) {
    let reach = Needles::new(
        offers
            .wrappers
            .values()
            .flat_map(|(_, w)| {
                if w.method {
                    [w.owner.as_deref(), w.via_trait.as_deref()]
                } else {
                    [w.module.as_deref(), None]
                }
            })
            .flatten()
            .chain(offers.texts.values().filter_map(|(_, m, _)| m.as_deref()))
            // A type alias of another file stands for its type.
            .chain(offers.types.keys().map(String::as_str))
            .chain(
                offers
                    .texts
                    .keys()
                    .filter_map(|n| field_text_parts(n).map(|(ty, _)| ty)),
            ),
    );
    // A method is found by its name (not `Type::name`), a field's text by
    // the field's.
    let words = names.iter().map(|n| match offers.wrappers.get(*n) {
        Some((_, w)) => w.name.as_str(),
        None => field_text_parts(n).map_or(*n, |(_, f)| f),
    });
    (Needles::new(words), reach)
}

/// What the rounds of pass 1 may cost in all, counted in files looked at:
/// each round, the files of the crates that offer new names and the files
/// whose offers are gathered again. A wrapper of a wrapper defined in
/// another file is found when its own file is audited knowing the inner
/// one, and its callers are audited in the next round, so a chain takes
/// as many rounds as it has files; the rounds end when no name is new,
/// which every chain reaches (names are finite, and each is new once).
/// The bound is on work, not depth: a chain a hundred files deep in a
/// crate of a thousand costs a tenth of it, and only a hostile crate (a
/// chain thousands of files deep) is stopped by it.
const MAX_FOLLOWED: usize = 1 << 20;

/// What the files of one crate offer each other, by name: wrappers, and
/// statement texts (SQL, Lua) kept in a constant or returned by a function.
#[derive(Default)]
struct Offers {
    /// By [`Wrapper::key`]: a function by name, a method as `Type::name`.
    wrappers: HashMap<String, (usize, Wrapper)>,
    /// The keys of the wrappers that are methods, by method name.
    methods: HashMap<String, Vec<String>>,
    /// The names of the struct-field texts (`LockSql.try_lock`), by field
    /// name (`try_lock`), at most [`MAX_FIELD_OWNERS`] each.
    fields: HashMap<String, Vec<String>>,
    /// (defining file, its module, the texts).
    texts: HashMap<String, (usize, Option<String>, Vec<String>)>,
    /// Type aliases, by name: (defining file, the type text, whether it
    /// is offered only as a lock client's type, not a wrapper's).
    types: HashMap<String, (usize, String, bool)>,
}

type ByCrate = HashMap<PathBuf, Offers>;

/// What one file is audited knowing.
#[derive(Default, Clone)]
struct Given {
    wrappers: HashMap<String, Wrapper>,
    texts: HashMap<String, Vec<String>>,
    /// Names the file calls a wrapper by that are not its own (`use
    /// locks::acquire_lock as take;`): alias → the wrapper's name.
    aliases: HashMap<String, String>,
    /// Type aliases of other files it names (`ElectionRef`).
    types: HashMap<String, String>,
}

impl Given {
    fn same_names(&self, other: &Given) -> bool {
        self.wrappers.len() == other.wrappers.len()
            && self.texts.len() == other.texts.len()
            && self.types.len() == other.types.len()
            && self.wrappers.keys().all(|k| other.wrappers.contains_key(k))
            && self.texts.keys().all(|k| other.texts.contains_key(k))
    }

    fn is_empty(&self) -> bool {
        self.wrappers.is_empty() && self.texts.is_empty() && self.types.is_empty()
    }

    /// Whether it gives exactly what `other` gives: the names and what
    /// stands behind them (a wrapper whose purpose or key changed, a text
    /// edited). Names alone tell rounds of one run apart; an earlier run's
    /// gift may differ behind the same names.
    fn same_as(&self, other: &Given) -> bool {
        fn sorted<V: std::fmt::Debug>(m: &HashMap<String, V>) -> String {
            let mut v: Vec<(&String, &V)> = m.iter().collect();
            v.sort_by(|a, b| a.0.cmp(b.0));
            format!("{v:?}")
        }
        self.same_names(other)
            && sorted(&self.wrappers) == sorted(&other.wrappers)
            && sorted(&self.texts) == sorted(&other.texts)
            && sorted(&self.types) == sorted(&other.types)
            && sorted(&self.aliases) == sorted(&other.aliases)
    }
}

/// (crate, name) → each file offering it, with what it offers.
type Defs<T> = BTreeMap<(PathBuf, String), Vec<(usize, T)>>;

/// Per crate, what exactly one file offers under each name (a name two
/// files offer is ambiguous and followed nowhere).
fn unambiguous(files: &[Audited], crate_of: &[PathBuf]) -> ByCrate {
    let mut wrappers: Defs<Wrapper> = BTreeMap::new();
    let mut texts: Defs<Vec<String>> = BTreeMap::new();
    let mut types: Defs<String> = BTreeMap::new();
    let mut client_types: HashSet<(PathBuf, &str)> = HashSet::new();
    for (i, f) in files.iter().enumerate() {
        let root = &crate_of[i];
        for (name, t) in &f.outcome.type_aliases {
            types
                .entry((root.clone(), name.clone()))
                .or_default()
                .push((i, t.clone()));
        }
        for name in &f.outcome.client_types {
            client_types.insert((root.clone(), name));
        }
        for (name, w) in &f.outcome.wrappers {
            // A wrapper the file was given is the defining file's own.
            if w.imported {
                continue;
            }
            wrappers
                .entry((root.clone(), name.clone()))
                .or_default()
                .push((i, w.clone()));
        }
        for (name, t) in &f.outcome.texts {
            texts
                .entry((root.clone(), name.clone()))
                .or_default()
                .push((i, t.clone()));
        }
    }
    let mut by_crate: ByCrate = HashMap::new();
    for ((root, name), mut list) in wrappers {
        if list.len() == 1 {
            let (i, mut w) = list.pop().expect("one");
            w.imported = true;
            w.module = module_of(&files[i].path);
            // Named from anywhere: by the file that defines it.
            let here = &files[i].shown;
            w.file = Some(here.clone());
            w.targets = w.targets.iter().map(|t| t.resolved(here)).collect();
            let offers = by_crate.entry(root).or_default();
            if w.method {
                offers
                    .methods
                    .entry(w.name.clone())
                    .or_default()
                    .push(name.clone());
            }
            offers.wrappers.insert(name, (i, w));
        }
    }
    // Only an alias that names a wrapper's type or trait is worth offering
    // (`type ElectionRef = Arc<dyn Election>`), or a lock client's type
    // (`type Api = kube::Api<LeaseObject>`): `type Result<T> = ..`, which
    // every file names, would send every file to be audited again.
    let wrapper_types: HashMap<PathBuf, HashSet<String>> = by_crate
        .iter()
        .map(|(root, offers)| {
            let names = offers
                .wrappers
                .values()
                .flat_map(|(_, w)| [w.owner.clone(), w.via_trait.clone()])
                .flatten()
                .collect();
            (root.clone(), names)
        })
        .collect();
    for ((root, name), mut list) in types {
        if list.len() != 1 {
            continue;
        }
        let (i, t) = list.pop().expect("one");
        let names_a_client = client_types.contains(&(root.clone(), name.as_str()));
        let names_a_wrapper = wrapper_types.get(&root).is_some_and(|named| {
            t.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| named.contains(w))
        });
        if names_a_client || names_a_wrapper {
            let only_client = !names_a_wrapper;
            by_crate
                .entry(root)
                .or_default()
                .types
                .insert(name, (i, t, only_client));
        }
    }
    for ((root, name), mut list) in texts {
        if list.len() == 1 {
            let (i, t) = list.pop().expect("one");
            let module = module_of(&files[i].path);
            let offers = by_crate.entry(root).or_default();
            if let Some((_, field)) = field_text_parts(&name) {
                let owners = offers.fields.entry(field.to_string()).or_default();
                if owners.len() < MAX_FIELD_OWNERS {
                    owners.push(name.clone());
                }
            }
            offers.texts.insert(name, (i, module, t));
        }
    }
    by_crate
}

/// Most types whose field of one name offers text: a name shared by more
/// (a hostile crate's 10,000 structs with a `sql` field) reaches no more.
const MAX_FIELD_OWNERS: usize = 256;

/// Most statement text one file is given by the others, in bytes.
const MAX_GIVEN_TEXT: usize = 256 * 1024;

/// What file `i` reaches of its crate's offers, by what its text says;
/// `api_names` are the names the packs match calls by.
fn given_to(i: usize, found: &impl Found, offers: &Offers, api_names: &HashSet<String>) -> Given {
    let by_path = |m: &Option<String>, name: &str| {
        m.as_deref()
            .is_some_and(|m| found.qualified(m, name) || found.qualified(m, "*"))
    };
    let words = found.words();
    let mut aliases = HashMap::new();
    let mut wrappers = HashMap::new();
    // Another file's type aliases the file names (`election: ElectionRef`
    // with `type ElectionRef = Arc<dyn Election>` elsewhere): the types and
    // traits they name count as named here.
    // A lock client's alias only matters to a file that calls a method a
    // pack knows (`api.create(..)` on `api: Api`).
    let calls_an_api = || {
        found
            .calls()
            .iter()
            .any(|(c, dotted)| *dotted && api_names.contains(*c))
    };
    let mut calls_api: Option<bool> = None;
    let mut types = HashMap::new();
    for w in &words {
        if let Some((def, t, only_client)) = offers.types.get(*w) {
            if *def != i && (!only_client || *calls_api.get_or_insert_with(calls_an_api)) {
                types.insert(w.to_string(), t.clone());
            }
        }
    }
    let through_alias: HashSet<&str> = types
        .values()
        .flat_map(|t| t.split(|c: char| !(c.is_alphanumeric() || c == '_')))
        .filter(|w| !w.is_empty())
        .collect();
    let named = |t: &Option<String>| {
        t.as_deref()
            .is_some_and(|t| found.has_word(t) || through_alias.contains(t))
    };
    for (called, dotted) in found.calls() {
        if dotted {
            // A method is followed only on a receiver of its type (or of
            // a trait it implements), so the file must name that type or
            // trait; each type's method of the name is a wrapper of its
            // own, and the receiver chooses.
            for key in offers.methods.get(called).into_iter().flatten() {
                let (def, w) = &offers.wrappers[key];
                if *def != i && (named(&w.owner) || named(&w.via_trait)) {
                    wrappers.insert(key.clone(), w.clone());
                }
            }
            continue;
        }
        // An associated function, or a method called by its path, is
        // reached through its type: `Locks::take(..)`.
        for key in offers.methods.get(called).into_iter().flatten() {
            let (def, w) = &offers.wrappers[key];
            if *def != i && by_path(&w.owner, called) {
                wrappers.insert(key.clone(), w.clone());
            }
        }
        // A function is reached through its module's path
        // (`locks::acquire_lock`, a `use` of it), maybe under another name.
        let name = found.renamed(called).unwrap_or(called);
        let Some((def, w)) = offers.wrappers.get(name) else {
            continue;
        };
        if w.method || *def == i || !by_path(&w.module, name) {
            continue;
        }
        if called != name {
            aliases.insert(called.to_string(), name.to_string());
        }
        wrappers.insert(called.to_string(), w.clone());
    }
    // Texts by the names the file spells (bounded by the file, not by what
    // the crate offers), and at most MAX_GIVEN_TEXT bytes of them.
    let mut texts = HashMap::new();
    let mut size = 0;
    let mut names = words;
    names.sort_unstable();
    // A struct field's text (`LockSql.try_lock`) is reached by a file
    // that names both the type and the field.
    let mut fields: Vec<&str> = names
        .iter()
        .filter_map(|w| offers.fields.get(*w))
        .flatten()
        .map(String::as_str)
        .filter(|n| field_text_parts(n).is_some_and(|(ty, _)| found.has_word(ty)))
        .collect();
    fields.sort_unstable();
    for name in names.into_iter().chain(fields) {
        let Some((def, module, t)) = offers.texts.get(name) else {
            continue;
        };
        let field = field_text_parts(name).is_some();
        if *def == i || !(field || by_path(module, name)) {
            continue;
        }
        size += t.iter().map(String::len).sum::<usize>();
        if size > MAX_GIVEN_TEXT {
            break;
        }
        texts.insert(name.to_string(), t.clone());
    }
    Given {
        wrappers,
        texts,
        aliases,
        types,
    }
}

/// Where the crate passes get what they need, per scope.
pub struct Sources<'e> {
    /// The scope's engine of the first audit, with its pre-filter.
    pub first: &'e (dyn Fn(usize) -> Engine<'e> + Sync),
    /// The scope's engine, without a pre-filter (a caller of a wrapper need
    /// not mention any lock API).
    pub engine: &'e (dyn Fn(usize) -> Engine<'e> + Sync),
    /// A file's bytes, within the scope's size limit.
    pub read: &'e ReadFn<'e>,
    /// The `.rs` files (display path, path) of the crate rooted at a
    /// directory that the walk did not cover whole: on disk for a run, at
    /// the revision for `--new-since`; never a file the scope excludes.
    /// Empty for a crate the walk covered.
    pub crate_files: &'e (dyn Fn(&Path, usize) -> Listing + Sync),
    /// The walk may have covered some crate only in part (a file, or a
    /// directory inside a crate, was named): `crate_files` is asked.
    pub partial: bool,
    /// First audits of those other files kept from an earlier run (an
    /// editor session's), used while a file is unchanged on disk.
    pub first_audits: Option<&'e FirstAudits>,
}

/// The first audits of crate files the walk did not name, kept between the
/// runs of an editor session: each with the size and modification time its
/// file had, and used only while the file on disk still has them. A file
/// that changed, or cannot be asked, is read and audited again.
pub struct FirstAudits {
    kept: std::sync::Mutex<Bounded<PathBuf, (Stamp, Audited)>>,
    /// The later audits of those files, one per file and pass (as a
    /// caller, as a definer), with a hash of what each was given (see
    /// [`given_key`]): while a file and what its crate gives it stay the
    /// same, an edit elsewhere does not audit it again.
    again: std::sync::Mutex<Bounded<(PathBuf, Pass), KeptAudit>>,
    /// What each of those files names (its scan), under the stamp the file
    /// had before it was read.
    scans: std::sync::Mutex<Bounded<PathBuf, KeptScanOf>>,
    /// What the crate gave each file the session edits, by path and scope,
    /// at its last run: the next edit's first audit knows it at once.
    assumed: std::sync::Mutex<Bounded<(PathBuf, usize), Given>>,
    /// The models the function index made of crate files (those defining
    /// a function the fencing check follows), by path and scope, each
    /// under the stamp its file had before it was read.
    models: std::sync::Mutex<Bounded<(PathBuf, usize), KeptModel>>,
    /// Most bytes each of the five keeps (an estimate of what its entries
    /// hold): a session in a crate of many large files forgets and starts
    /// again rather than grow without end.
    max_bytes: usize,
}

impl Default for FirstAudits {
    fn default() -> Self {
        FirstAudits::with_max_bytes(MAX_KEPT_BYTES)
    }
}

/// Entries kept up to [`MAX_KEPT`] of them and a number of bytes; past
/// either, all are forgotten at once.
struct Bounded<K, V> {
    map: HashMap<K, (V, usize)>,
    bytes: usize,
}

impl<K, V> Default for Bounded<K, V> {
    fn default() -> Self {
        Bounded {
            map: HashMap::new(),
            bytes: 0,
        }
    }
}

impl<K: std::hash::Hash + Eq, V> Bounded<K, V> {
    fn get<Q>(&self, k: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ?Sized,
    {
        self.map.get(k).map(|(v, _)| v)
    }

    fn insert(&mut self, k: K, v: V, size: usize, max_bytes: usize) {
        if let Some((_, old)) = self.map.remove(&k) {
            self.bytes -= old;
        }
        if self.map.len() >= MAX_KEPT || self.bytes.saturating_add(size) > max_bytes {
            self.map.clear();
            self.bytes = 0;
        }
        self.bytes += size;
        self.map.insert(k, (v, size));
    }
}

/// A file audited again as a caller: its index, what it was given, the
/// outcome, and its bytes when they were read for it.
type Redone = (usize, Given, FileOutcome, Option<Arc<[u8]>>);

/// A model kept: the stamp its file had before it was read, the model.
type KeptModel = (Stamp, Arc<crate::model::FileModel>);

/// A scan kept: the stamp its file had before it was read, the scan.
type KeptScanOf = (Stamp, Arc<KeptScan>);

/// A later audit kept: the hash of what the file was given, the file's
/// stamp before it was read, the outcome.
type KeptAudit = (u64, Stamp, FileOutcome);

/// Which later audit of a file is kept: as a caller of other files'
/// wrappers, or as the definer of wrappers they call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Pass {
    Caller,
    Definer,
}

/// What tells a file unchanged: its length and modification time.
type Stamp = (u64, std::time::SystemTime);

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?))
}

/// Most first audits kept: a session that walks through more crate files
/// forgets them all and starts again, so memory stays bounded.
const MAX_KEPT: usize = 20_000;

/// Most bytes each keep of [`FirstAudits`] holds, by estimate.
const MAX_KEPT_BYTES: usize = 256 << 20;

/// What a kept entry costs beyond the sizes counted: paths, maps, small
/// fields.
const ENTRY_COST: usize = 512;

impl FirstAudits {
    /// Keeps at most `max_bytes` (by estimate) in each of its keeps.
    pub fn with_max_bytes(max_bytes: usize) -> FirstAudits {
        FirstAudits {
            kept: Default::default(),
            again: Default::default(),
            scans: Default::default(),
            assumed: Default::default(),
            models: Default::default(),
            max_bytes,
        }
    }

    fn get(&self, path: &Path, scope: usize, shown: &str) -> Option<Audited> {
        let now = stamp(path)?;
        let kept = self.kept.lock().ok()?;
        let (was, a) = kept.get(path)?;
        (*was == now && a.scope == scope && a.shown == shown).then(|| a.clone())
    }

    /// The later audit of `file` kept for what it is given (the hash
    /// `given`), while the file is unchanged on disk.
    fn kept_again(&self, file: &Audited, pass: Pass, given: u64) -> Option<FileOutcome> {
        let now = stamp(&file.path)?;
        let kept = self.again.lock().ok()?;
        let (was_given, was, out) = kept.get(&(file.path.clone(), pass))?;
        (*was_given == given && *was == now).then(|| out.clone())
    }

    /// Keeps `out`, the later audit of `file` for what it was given, under
    /// the stamp the file had `before` it was read.
    fn keep_again(
        &self,
        file: &Audited,
        pass: Pass,
        given: u64,
        before: Option<Stamp>,
        out: &FileOutcome,
    ) {
        if let (Some(at), Ok(mut kept)) = (before, self.again.lock()) {
            let size = outcome_size(out);
            kept.insert(
                (file.path.clone(), pass),
                (given, at, out.clone()),
                size,
                self.max_bytes,
            );
        }
    }

    /// The scan of `path` kept while its stamp is still `now`.
    fn scan(&self, path: &Path, now: Stamp) -> Option<Arc<KeptScan>> {
        let kept = self.scans.lock().ok()?;
        let (was, s) = kept.get(path)?;
        (*was == now).then(|| s.clone())
    }

    fn put_scan(&self, path: &Path, before: Stamp, s: Arc<KeptScan>) {
        let Ok(mut kept) = self.scans.lock() else {
            return;
        };
        let size = s.size();
        kept.insert(path.to_path_buf(), (before, s), size, self.max_bytes);
    }

    /// What the crate gave the file at `path` (in `scope`) at its last
    /// run, if anything.
    pub fn assumed(&self, path: &Path, scope: usize) -> Option<Assumed> {
        let kept = self.assumed.lock().ok()?;
        let given = kept.get(&(path.to_path_buf(), scope))?;
        (!given.is_empty()).then(|| Assumed(given.clone()))
    }

    fn put_assumed(&self, path: &Path, scope: usize, given: &Given) {
        let Ok(mut kept) = self.assumed.lock() else {
            return;
        };
        let size = ENTRY_COST
            + given.wrappers.len() * 4 * ENTRY_COST
            + given
                .texts
                .values()
                .flatten()
                .map(|t| t.len() + ENTRY_COST)
                .sum::<usize>()
            + (given.types.len() + given.aliases.len()) * ENTRY_COST;
        kept.insert(
            (path.to_path_buf(), scope),
            given.clone(),
            size,
            self.max_bytes,
        );
    }

    /// The model the function index made of `path` (in `scope`), while the
    /// file is unchanged on disk.
    fn model(&self, path: &Path, scope: usize) -> Option<Arc<crate::model::FileModel>> {
        let now = stamp(path)?;
        let kept = self.models.lock().ok()?;
        let (was, m) = kept.get(&(path.to_path_buf(), scope))?;
        (*was == now).then(|| m.clone())
    }

    fn put_model(
        &self,
        path: &Path,
        scope: usize,
        before: Stamp,
        model: &Arc<crate::model::FileModel>,
    ) {
        let Ok(mut kept) = self.models.lock() else {
            return;
        };
        let size =
            ENTRY_COST + model.events.len() * 4 * ENTRY_COST + model.fns.len() * 2 * ENTRY_COST;
        kept.insert(
            (path.to_path_buf(), scope),
            (before, model.clone()),
            size,
            self.max_bytes,
        );
    }

    fn put(&self, stamp: Stamp, a: &Audited) {
        let Ok(mut kept) = self.kept.lock() else {
            return;
        };
        let size = a.bytes.as_ref().map_or(0, |b| b.len())
            + a.words.as_ref().map_or(0, FileWords::size)
            + outcome_size(&a.outcome);
        kept.insert(a.path.clone(), (stamp, a.clone()), size, self.max_bytes);
    }
}

/// What a kept outcome holds, by estimate: its findings and rows, each
/// with its message and names.
fn outcome_size(out: &FileOutcome) -> usize {
    ENTRY_COST
        + out
            .findings
            .iter()
            .map(|f| ENTRY_COST + f.message.len())
            .sum::<usize>()
        + out.locks.len() * ENTRY_COST
        + (out.wrappers.len() + out.sites.len()) * 4 * ENTRY_COST
        + out.facts.as_ref().map_or(0, |k| k.size())
}

/// A hash of everything a file is audited again knowing: its scope and
/// name, the wrappers,
/// texts and type aliases given, its wrappers called elsewhere and the
/// calls reaching them (each sorted, so the hash does not depend on the
/// order of a map).
fn given_key(
    file: &Audited,
    given: &Given,
    called: &CalledElsewhere,
    reaching: Option<&Reaching>,
) -> u64 {
    use std::hash::{Hash, Hasher};
    fn sorted<K: Ord + std::fmt::Debug, V: std::fmt::Debug>(m: &HashMap<K, V>) -> String {
        let mut v: Vec<(&K, &V)> = m.iter().collect();
        v.sort_by(|a, b| a.0.cmp(b.0));
        format!("{v:?}")
    }
    let sorted_set = |s: &HashSet<String>| {
        let mut v: Vec<&String> = s.iter().collect();
        v.sort();
        format!("{v:?}")
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    // The scope (its config) and the name the file is shown by, too.
    (file.scope, &file.shown).hash(&mut h);
    sorted(&given.wrappers).hash(&mut h);
    sorted(&given.texts).hash(&mut h);
    sorted(&given.types).hash(&mut h);
    sorted(&given.aliases).hash(&mut h);
    sorted_set(&called.called).hash(&mut h);
    sorted_set(&called.held).hash(&mut h);
    reaching.map(sorted).hash(&mut h);
    h.finish()
}

/// A file's bytes by path and scope, `None` when it cannot be read.
pub type ReadFn<'e> = dyn Fn(&Path, usize) -> Option<Arc<[u8]>> + Sync + 'e;

/// Files by (display path, path).
pub type Listing = Vec<(String, PathBuf)>;

/// Outermost call sites of other files, by the key of the wrapper (of the
/// file they are given to) whose lock call they reach.
type Reaching = HashMap<String, Vec<SiteReport>>;

/// Runs the crate passes over `files`, replacing the outcomes of the files
/// audited again: the wrappers and statement texts files offer each other
/// ([`follow_wrappers`]), then the functions the fencing check follows into
/// other files ([`follow_calls`]).
///
/// When the walk named only part of a crate (`check src/jobs.rs`), the
/// crate's other files are audited too, for what they offer: their own
/// findings are not reported, so a file's findings do not depend on which
/// of its crate's files the command line named.
pub fn crate_passes(
    files: &mut Vec<Audited>,
    cwd: &Path,
    pool: &rayon::ThreadPool,
    inventory: bool,
    sources: &Sources,
) {
    crate_passes_within(files, cwd, pool, inventory, sources, MAX_FOLLOWED);
}

/// [`crate_passes`], its wrapper rounds within `max_followed` files looked
/// at ([`MAX_FOLLOWED`]).
fn crate_passes_within(
    files: &mut Vec<Audited>,
    cwd: &Path,
    pool: &rayon::ThreadPool,
    inventory: bool,
    sources: &Sources,
    max_followed: usize,
) {
    let held = Held::new(MAX_HELD_BYTES);
    if let Some(crates) = gather(files, cwd, pool, inventory, sources, held) {
        passes_within(files, crates, pool, inventory, sources, max_followed);
    }
}

/// What the passes know of the files [`gather`] gave them: how many came
/// from the walk (the rest are other files of a crate it covered in part,
/// audited for what they offer), each file's crate root, and the bytes
/// held so far.
pub struct Crates {
    walked: usize,
    crate_of: Vec<PathBuf>,
    held: Held,
}

/// Everything the passes need from the disk, before they start: each
/// file's crate root (a file the run found none for is asked here), and
/// the other files of each crate the walk did not cover whole, read and
/// audited for what they offer (appended to `files`). `None` when no
/// file offers or asks anything and the walk covered every crate whole:
/// there is nothing to pass. After this the passes read nothing, except
/// a file whose bytes the bound on what they hold let go
/// ([`MAX_HELD_BYTES`]), or an editor session's crate file that its kept
/// audits stand for. `held` counts the bytes the files already hold (a
/// batch run's, from their first read): one bound for all.
pub fn gather(
    files: &mut Vec<Audited>,
    cwd: &Path,
    pool: &rayon::ThreadPool,
    inventory: bool,
    sources: &Sources,
    held: Held,
) -> Option<Crates> {
    use rayon::prelude::*;
    if !sources.partial && !needed(files) {
        return None;
    }
    let walked = files.len();
    let mut roots = Roots::default();
    // Files under no `Cargo.toml` and in no crate layout are one crate:
    // the walked tree.
    let mut crate_of: Vec<PathBuf> = files
        .iter()
        .map(|f| {
            f.root
                .clone()
                .unwrap_or_else(|| roots.of(&f.path, cwd).unwrap_or_default())
        })
        .collect();
    // The rest of each crate the walk did not cover whole.
    let mut first_scope: BTreeMap<&PathBuf, usize> = BTreeMap::new();
    for (f, root) in files.iter().zip(&crate_of) {
        if !root.as_os_str().is_empty() {
            first_scope.entry(root).or_insert(f.scope);
        }
    }
    let shown: HashSet<&str> = files.iter().map(|f| f.shown.as_str()).collect();
    let mut context: Vec<(PathBuf, usize, String, PathBuf)> = Vec::new();
    for (root, scope) in first_scope {
        for (name, path) in (sources.crate_files)(root, scope) {
            if !shown.contains(name.as_str()) {
                context.push((root.clone(), scope, name, path));
            }
        }
    }
    let context: Vec<(PathBuf, Audited)> = pool.install(|| {
        context
            .into_par_iter()
            .filter_map(|(root, scope, shown, path)| {
                let cache = sources.first_audits.filter(|_| !inventory);
                if let Some(a) = cache.and_then(|c| c.get(&path, scope, &shown)) {
                    return Some((root, a));
                }
                // Taken before the read: a file that changes while it is
                // read is not kept as the older one.
                let before = cache.and_then(|_| stamp(&path));
                let bytes = (sources.read)(&path, scope)?;
                let outcome = (sources.first)(scope).check_bytes(&shown, &bytes, inventory);
                let mut a = Audited::new(path, scope, shown, outcome);
                if let (Some(c), Some(before)) = (cache, before) {
                    c.put(before, &a);
                }
                // Held for the passes, which may audit it again, within
                // their bound: read once.
                if held.take(bytes.len()) {
                    a.bytes = Some(bytes);
                }
                Some((root, a))
            })
            .collect()
    });
    for (root, f) in context {
        crate_of.push(root);
        files.push(f);
    }
    Some(Crates {
        walked,
        crate_of,
        held,
    })
}

/// Whether some file offers wrappers, texts or types, or asks for
/// functions of other files.
fn needed(files: &[Audited]) -> bool {
    files
        .iter()
        .any(|f| f.outcome.offers() || !f.outcome.asked.calls.is_empty())
}

/// The passes over the files [`gather`] gave them, the wrapper rounds
/// within `max_followed` files looked at ([`MAX_FOLLOWED`]); the files
/// past the walked ones are dropped at the end.
pub fn passes(
    files: &mut Vec<Audited>,
    crates: Crates,
    pool: &rayon::ThreadPool,
    inventory: bool,
    sources: &Sources,
) {
    passes_within(files, crates, pool, inventory, sources, MAX_FOLLOWED);
}

fn passes_within(
    files: &mut Vec<Audited>,
    crates: Crates,
    pool: &rayon::ThreadPool,
    inventory: bool,
    sources: &Sources,
    max_followed: usize,
) {
    use rayon::prelude::*;
    let Crates {
        walked,
        crate_of,
        held,
    } = crates;
    // A batch run's first audits take no words (most crates offer
    // nothing): they are taken here, once, of the files of each crate
    // where some file offers wrappers or texts or asks for functions.
    let offering: HashSet<&PathBuf> = files
        .iter()
        .zip(&crate_of)
        .filter(|(f, _)| f.outcome.offers() || !f.outcome.asked.calls.is_empty())
        .map(|(_, root)| root)
        .collect();
    let missing: Vec<usize> = (0..files.len())
        .filter(|&i| files[i].words.is_none() && offering.contains(&crate_of[i]))
        .collect();
    // The bytes of a file the passes will read again are kept now: one
    // whose words meet what the first round looks for in its crate (it
    // reaches an offer), or that may define a function a fencing check of
    // its crate asked for.
    /// A file's words, and its bytes when kept.
    type Taken = (usize, FileWords, Option<Arc<[u8]>>);
    // What the crates offer before any file is audited again: the first
    // round's offers, computed once for both.
    let first_offers = (!missing.is_empty()).then(|| unambiguous(files, &crate_of));
    let taken: Vec<Taken> = {
        let no_offers = ByCrate::new();
        let offers = first_offers.as_ref().unwrap_or(&no_offers);
        let needles: HashMap<&PathBuf, (Needles, Needles)> = offers
            .iter()
            .map(|(root, o)| {
                let names: Vec<&str> = o
                    .wrappers
                    .keys()
                    .chain(o.texts.keys())
                    .chain(o.types.keys())
                    .map(String::as_str)
                    .collect();
                (root, needles_for(o, &names))
            })
            .collect();
        let mut asked: HashMap<&PathBuf, Vec<&Wanted>> = HashMap::new();
        for (f, root) in files.iter().zip(&crate_of) {
            asked
                .entry(root)
                .or_default()
                .extend(&f.outcome.asked.calls);
        }
        let read_again = |i: usize, words: &FileWords| {
            let root = &crate_of[i];
            let reaches = |(names, reach): &(Needles, Needles)| {
                names.in_words(words) && reach.in_words(words)
            };
            let defines = |wanted: &Vec<&Wanted>| {
                let module = module_of(Path::new(&files[i].shown));
                wanted.iter().any(|w| w.may_be_in(words, module.as_deref()))
            };
            needles.get(root).is_some_and(reaches) || asked.get(root).is_some_and(defines)
        };
        pool.install(|| {
            missing
                .par_iter()
                .filter_map(|&i| {
                    let bytes = files[i].text(sources)?;
                    let words = FileWords::of(&bytes);
                    let keep = (read_again(i, &words) && held.take(bytes.len())).then_some(bytes);
                    Some((i, words, keep))
                })
                .collect()
        })
    };
    for (i, words, bytes) in taken {
        files[i].words = Some(words);
        if bytes.is_some() {
            files[i].bytes = bytes;
        }
    }
    // A file audited knowing what an earlier run's crate gave it is
    // checked against what the crate gives it now.
    if needed(files) || files.iter().any(|f| f.assumed.is_some()) {
        let run = Run {
            walked,
            crate_of: &crate_of,
            pool,
            inventory,
            sources,
            held: &held,
            max_followed,
        };
        follow_wrappers(files, &run, first_offers);
        follow_calls(files, &run);
    }
    files.truncate(walked);
}

/// What every crate pass works with: how many of the files come from the
/// walk (the rest are other files of a crate it covered in part), each
/// file's crate root, the pool, whether inventory rows are wanted, and
/// where files are read.
#[derive(Clone, Copy)]
struct Run<'r, 's> {
    walked: usize,
    crate_of: &'r [PathBuf],
    pool: &'r rayon::ThreadPool,
    inventory: bool,
    sources: &'r Sources<'s>,
    /// The file bytes the passes hold.
    held: &'r Held,
    /// What the wrapper rounds may cost ([`MAX_FOLLOWED`]).
    max_followed: usize,
}

/// Most bytes of file text the crate passes hold to spare a later read:
/// past it a file is read again when needed, so a crate of many large
/// files costs reads, not memory.
pub(crate) const MAX_HELD_BYTES: usize = 256 << 20;

/// The bytes of file text the passes hold, against a bound.
pub struct Held {
    bytes: std::sync::atomic::AtomicUsize,
    max: usize,
}

impl Held {
    pub(crate) fn new(max: usize) -> Held {
        Held {
            bytes: Default::default(),
            max,
        }
    }

    /// Whether `n` more bytes may be held; if so, they are counted.
    pub(crate) fn take(&self, n: usize) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.bytes
            .fetch_update(Relaxed, Relaxed, |held| {
                held.checked_add(n).filter(|&t| t <= self.max)
            })
            .is_ok()
    }

    /// Gives back `n` bytes taken: they are no longer held.
    pub(crate) fn give_back(&self, n: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        let _ = self
            .bytes
            .fetch_update(Relaxed, Relaxed, |held| Some(held.saturating_sub(n)));
    }
}

/// The files whose fencing check asked for functions of other files are
/// judged again from their facts, knowing them: the functions are found
/// and modelled here, once (from kept facts when there are some), and the
/// check reads nothing.
fn follow_calls(files: &mut [Audited], run: &Run) {
    let (walked, crate_of, pool) = (run.walked, run.crate_of, run.pool);
    let (inventory, sources) = (run.inventory, run.sources);
    use crate::model::resolve::FnIndex;
    use rayon::prelude::*;
    let mut by_scope: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, f) in files.iter().enumerate().take(walked) {
        if !f.outcome.asked.calls.is_empty() {
            by_scope.entry(f.scope).or_default().push(i);
        }
    }
    if by_scope.is_empty() {
        return;
    }
    let crate_files = |root: &Path| -> Vec<(String, PathBuf)> {
        files
            .iter()
            .zip(crate_of)
            .filter(|(_, r)| r.as_path() == root)
            .map(|(f, _)| (f.shown.clone(), f.path.clone()))
            .collect()
    };
    let by_path: HashMap<&Path, &Audited> = files.iter().map(|f| (f.path.as_path(), f)).collect();
    let mut redone: Vec<(usize, FileOutcome)> = Vec::new();
    for (scope, askers) in by_scope {
        let asks: Vec<_> = askers
            .iter()
            .map(|&i| {
                let f = &files[i];
                (
                    f.shown.clone(),
                    crate_of[i].clone(),
                    f.outcome.asked.clone(),
                )
            })
            .collect();
        // The crate's files: those walked, and the rest of a crate the
        // walk did not cover whole.
        let list = |root: &Path| crate_files(root);
        let read = |path: &Path| match by_path.get(path) {
            Some(f) => f.text(sources),
            None => (sources.read)(path, scope),
        };
        let words = |path: &Path| by_path.get(path).and_then(|f| f.words.as_ref());
        // An asking file's model is in its facts; an editor session keeps
        // the models it made of the others while they are unchanged.
        let cache = sources.first_audits.filter(|_| !inventory);
        let kept = |path: &Path| {
            by_path
                .get(path)
                .and_then(|f| f.outcome.facts.as_ref())
                .map(|k| k.model.clone())
                .or_else(|| cache?.model(path, scope))
        };
        // The stamp each file had before it was read, for what is kept.
        let stamps: std::sync::Mutex<HashMap<PathBuf, Stamp>> = Default::default();
        let read = |path: &Path| {
            if let Some(at) = cache.and_then(|_| stamp(path)) {
                if let Ok(mut s) = stamps.lock() {
                    s.insert(path.to_path_buf(), at);
                }
            }
            read(path)
        };
        let made = |path: &Path, model: &Arc<crate::model::FileModel>| {
            let at = stamps.lock().ok().and_then(|s| s.get(path).copied());
            if let (Some(c), Some(at)) = (cache, at) {
                c.put_model(path, scope, at, model);
            }
        };
        let engine = (sources.engine)(scope);
        let index = FnIndex::build(
            &asks,
            engine.packs,
            &engine.settings.lock_name,
            &list,
            &words,
            &kept,
            &read,
            &made,
            pool,
        );
        redone.extend(pool.install(|| {
            askers
                .par_iter()
                .filter_map(|&i| {
                    let facts = files[i].outcome.facts.as_ref()?;
                    Some((i, engine.judge_again(facts, &index, inventory)))
                })
                .collect::<Vec<_>>()
        }));
    }
    for (i, out) in redone {
        files[i].outcome = out;
    }
}

/// The wrappers and statement texts of each crate, followed to the files
/// that use them; returns what each file audited again was given.
/// `first_offers` are the crates' offers when the run computed them
/// already (taking words), for the first round.
fn follow_wrappers(files: &mut [Audited], run: &Run, first_offers: Option<ByCrate>) {
    let (walked, inventory, sources) = (run.walked, run.inventory, run.sources);
    // An editor session's audits of the crate's other files, by what they
    // were given (an inventory run keeps nothing).
    let cache = sources.first_audits.filter(|_| !inventory);
    // What each file was last audited knowing: an edited file's first
    // audit may already have known what the crate gave it last time.
    let mut imported: HashMap<usize, Given> = HashMap::new();
    let mut pending: HashMap<usize, Given> = HashMap::new();
    for (i, f) in files.iter_mut().enumerate().take(walked) {
        if let Some(Assumed(given)) = f.assumed.take() {
            imported.insert(i, given.clone());
            pending.insert(i, given);
        }
    }
    if files.iter().any(|f| f.outcome.offers()) || !pending.is_empty() {
        offer_wrappers(files, run, first_offers, &mut imported, pending);
    }
    // What each edited file was given, for its next edit's first audit.
    if let Some(c) = cache {
        let none = Given::default();
        for (i, f) in files.iter().enumerate().take(walked) {
            c.put_assumed(&f.path, f.scope, imported.get(&i).unwrap_or(&none));
        }
    }
}

/// [`follow_wrappers`]' rounds, knowing what each file was last audited
/// knowing (`imported`) and which of those an earlier run assumed
/// (`pending`): those are checked in the first round, whatever they say.
/// The first round takes `first_offers` when given.
fn offer_wrappers(
    files: &mut [Audited],
    run: &Run,
    mut first_offers: Option<ByCrate>,
    imported: &mut HashMap<usize, Given>,
    mut pending: HashMap<usize, Given>,
) {
    let (walked, crate_of, pool) = (run.walked, run.crate_of, run.pool);
    let (inventory, sources) = (run.inventory, run.sources);
    use rayon::prelude::*;
    let engine = sources.engine;
    let cache = sources.first_audits.filter(|_| !inventory);
    let no_offers = Offers::default();
    let mut seen: HashSet<(PathBuf, String)> = HashSet::new();
    let mut by_crate: ByCrate;
    let mut crate_sizes: HashMap<&PathBuf, usize> = HashMap::new();
    for root in crate_of {
        *crate_sizes.entry(root).or_default() += 1;
    }
    let mut followed = 0usize;
    loop {
        let next = first_offers
            .take()
            .unwrap_or_else(|| unambiguous(files, crate_of));
        // The names new this round: only a file holding one can reach more
        // than it was audited knowing.
        let fresh: HashMap<&PathBuf, Vec<&str>> = next
            .iter()
            .map(|(root, offers)| {
                let names = offers
                    .wrappers
                    .keys()
                    .chain(offers.texts.keys())
                    .chain(offers.types.keys())
                    .filter(|n| !seen.contains(&(root.clone(), (*n).clone())))
                    .map(String::as_str)
                    .collect::<Vec<_>>();
                (root, names)
            })
            .filter(|(_, names)| !names.is_empty())
            .collect();
        if fresh.is_empty() && pending.is_empty() {
            by_crate = next;
            break;
        }
        followed += files.iter().filter(|f| f.outcome.offers()).count()
            + fresh.keys().map(|root| crate_sizes[root]).sum::<usize>()
            + pending.len();
        if followed > run.max_followed {
            by_crate = next;
            break;
        }
        // Per crate, the words a caller's text must hold before it is
        // scanned: a new name, and a type or module that reaches an offer.
        // Most files hold neither, and a substring search is far cheaper
        // than a scan.
        let needles: HashMap<&PathBuf, (Needles, Needles)> = fresh
            .iter()
            .map(|(root, names)| (*root, needles_for(&next[*root], names)))
            .collect();
        // Pass 1: the files that reach an offer, each audited knowing what
        // it reaches (and nothing else: what a file is given is bounded by
        // what it says).
        let none = CalledElsewhere::default();
        let redone: Vec<Redone> = pool.install(|| {
            (0..files.len())
                .into_par_iter()
                .filter_map(|i| {
                    let root = &crate_of[i];
                    let assumed = pending.get(&i);
                    let offers = match (next.get(root), assumed) {
                        (Some(o), _) => o,
                        (None, Some(_)) => &no_offers,
                        (None, None) => return None,
                    };
                    let f = &files[i];
                    let api_names = &engine(f.scope).packs.call_names;
                    // Taken before the read: a file that changes while it
                    // is read is not kept as the older one.
                    let before = cache.filter(|_| i >= walked).and_then(|_| stamp(&f.path));
                    // Every file of a crate that offers has its words
                    // (from its first audit, or taken before the passes):
                    // most files are never read again. One that could not
                    // be read has none, and nothing to be given.
                    // A file audited knowing an earlier run's gift is
                    // asked what it reaches now, whatever its words say.
                    if assumed.is_none() {
                        let (names, reach) = needles.get(root)?;
                        let words = f.words.as_ref()?;
                        if !names.in_words(words) || !reach.in_words(words) {
                            return None;
                        }
                    }
                    let mut bytes: Option<Arc<[u8]>> = None;
                    // An editor session's file unchanged since its scan
                    // was kept is neither read nor scanned again.
                    let kept = cache.zip(before).and_then(|(c, at)| c.scan(&f.path, at));
                    let given = match kept {
                        Some(k) => given_to(i, &*k, offers, api_names),
                        None => {
                            let b = f.text(sources)?;
                            let text = String::from_utf8_lossy(&b);
                            let found = scan(&text);
                            if let Some((c, at)) = cache.zip(before) {
                                c.put_scan(&f.path, at, Arc::new(KeptScan::of(&found)));
                            }
                            let given = given_to(i, &found, offers, api_names);
                            drop(text);
                            bytes = Some(b);
                            given
                        }
                    };
                    let same = match (assumed, imported.get(&i)) {
                        (Some(before), _) => given.same_as(before),
                        (None, Some(before)) => given.same_names(before),
                        (None, None) => given.is_empty(),
                    };
                    if same {
                        return None;
                    }
                    let cross = Cross {
                        imported: &given.wrappers,
                        called_elsewhere: &none,
                        texts: &given.texts,
                        types: Some(&given.types),
                        reached_from: None,
                    };
                    let kept = cache
                        .filter(|_| i >= walked)
                        .map(|c| (c, given_key(f, &given, &none, None)));
                    if let Some(out) = kept.and_then(|(c, k)| c.kept_again(f, Pass::Caller, k)) {
                        return Some((i, given, out, bytes));
                    }
                    let b = match bytes {
                        Some(b) => b,
                        None => f.text(sources)?,
                    };
                    let out =
                        engine(f.scope).check_bytes_with(&f.shown, &b, inventory, Some(&cross));
                    if let Some((c, k)) = kept {
                        c.keep_again(f, Pass::Caller, k, before, &out);
                    }
                    Some((i, given, out, Some(b)))
                })
                .collect()
        });
        for (root, names) in &fresh {
            seen.extend(names.iter().map(|n| ((*root).clone(), n.to_string())));
        }
        // What an earlier run assumed is checked in the first round only.
        pending.clear();
        by_crate = next;
        if redone.is_empty() {
            break;
        }
        for (i, given, out, bytes) in redone {
            files[i].outcome = out;
            // Audited again: kept for the passes that follow, within
            // what the passes may hold.
            if let Some(b) = bytes {
                if files[i].bytes.is_none() && run.held.take(b.len()) {
                    files[i].bytes = Some(b);
                }
            }
            imported.insert(i, given);
        }
    }
    if by_crate.is_empty() {
        return;
    }
    // Which wrappers the callers used, per defining file, and which of
    // them some call holds the outcome of.
    let mut called: HashMap<usize, CalledElsewhere> = HashMap::new();
    for i in imported.keys() {
        let Some(offers) = by_crate.get(&crate_of[*i]) else {
            continue;
        };
        let aliases = &imported[i].aliases;
        let out = &files[*i].outcome;
        let held: HashSet<&String> = out.wrappers_held.iter().collect();
        for name in &out.wrappers_called {
            let defined = aliases.get(name).unwrap_or(name);
            if let Some((def, _)) = offers.wrappers.get(defined) {
                if def != i {
                    let c = called.entry(*def).or_default();
                    c.called.insert(defined.clone());
                    if held.contains(name) {
                        c.held.insert(defined.clone());
                    }
                }
            }
        }
    }
    // The calls that end a chain, by the lock call they reach, for the
    // files that define it (a file of the crate's reports only).
    let reports: Vec<SiteReport> = files
        .iter()
        .flat_map(|f| f.outcome.sites.iter().cloned())
        .collect();
    let shown: HashSet<&str> = files.iter().map(|f| f.shown.as_str()).collect();
    let mut reaching: HashMap<&str, Reaching> = HashMap::new();
    for (target, sites) in crate::model::chains::outermost(&reports) {
        let Some(file) = target.file.as_deref().and_then(|f| shown.get(f).copied()) else {
            continue;
        };
        reaching.entry(file).or_default().insert(target.key, sites);
    }
    let no_sites = Reaching::new();
    // Pass 2: the defining files, their wrappers' inner calls relayed to
    // the callers and reached from them.
    let mut defining: Vec<(usize, CalledElsewhere)> = called.into_iter().collect();
    defining.sort_by_key(|(i, _)| *i);
    let redone: Vec<(usize, FileOutcome)> = pool.install(|| {
        defining
            .par_iter()
            .filter_map(|(i, names)| {
                let f = &files[*i];
                let before = cache.filter(|_| *i >= walked).and_then(|_| stamp(&f.path));
                let empty = Given::default();
                let given = imported.get(i).unwrap_or(&empty);
                let reached = reaching.get(f.shown.as_str()).unwrap_or(&no_sites);
                let cross = Cross {
                    imported: &given.wrappers,
                    called_elsewhere: names,
                    texts: &given.texts,
                    types: Some(&given.types),
                    reached_from: Some(reached),
                };
                let kept = cache
                    .filter(|_| *i >= walked)
                    .map(|c| (c, given_key(f, given, names, Some(reached))));
                if let Some(out) = kept.and_then(|(c, k)| c.kept_again(f, Pass::Definer, k)) {
                    return Some((*i, out));
                }
                // Judged again from its facts; audited again only when
                // they cannot say it all.
                let judged = f.outcome.facts.as_ref().and_then(|facts| {
                    engine(f.scope).judge_as_definer(facts, names, reached, inventory)
                });
                let out = match judged {
                    Some(out) => out,
                    None => {
                        let bytes = f.text(sources)?;
                        engine(f.scope).check_bytes_with(&f.shown, &bytes, inventory, Some(&cross))
                    }
                };
                if let Some((c, k)) = kept {
                    c.keep_again(f, Pass::Definer, k, before, &out);
                }
                Some((*i, out))
            })
            .collect()
    });
    for (i, out) in redone {
        files[i].outcome = out;
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Settings;
    use crate::engine::Engine;
    use crate::pack::PackSet;

    use super::scan;

    /// A run over `texts` (display path, text) under `cwd`: each file's
    /// first audit with `first`, then the crate passes, which audit again
    /// with `again` and read through `read`.
    fn passes_in_memory(
        cwd: &std::path::Path,
        texts: &[(String, String)],
        read: &super::ReadFn,
        first: crate::engine::Engine,
        again: crate::engine::Engine,
        max_followed: usize,
    ) -> Vec<super::Audited> {
        let mut files: Vec<super::Audited> = texts
            .iter()
            .map(|(shown, _)| {
                let path = cwd.join(shown);
                let out = first.check_bytes(shown, &read(&path, 0).unwrap(), false);
                super::Audited::new(path, 0, shown.clone(), out)
            })
            .collect();
        let first_of = |_: usize| first;
        let engine_of = |_: usize| again;
        let none = |_: &std::path::Path, _: usize| Vec::new();
        let sources = super::Sources {
            first: &first_of,
            engine: &engine_of,
            read,
            crate_files: &none,
            partial: false,
            first_audits: None,
        };
        let pool = crate::parse::pool(Some(1)).unwrap();
        super::crate_passes_within(&mut files, cwd, &pool, false, &sources, max_followed);
        files
    }

    /// What a counted run over `texts` left: the files, the reads of each
    /// (by display path) and the files the engine parsed.
    struct Counted {
        files: Vec<super::Audited>,
        reads: std::collections::BTreeMap<String, usize>,
        parses: usize,
    }

    /// [`passes_in_memory`] with the built-in packs, the pre-filter in the
    /// first audit (which takes words when `words_first`, as the editor
    /// does), and counts of the reads and parses.
    fn counted_passes(
        cwd: &std::path::Path,
        texts: &[(String, String)],
        words_first: bool,
    ) -> Counted {
        counted_passes_within(cwd, texts, words_first, super::MAX_FOLLOWED)
    }

    /// [`counted_passes`], the wrapper rounds within `max_followed`.
    fn counted_passes_within(
        cwd: &std::path::Path,
        texts: &[(String, String)],
        words_first: bool,
        max_followed: usize,
    ) -> Counted {
        use crate::prefilter::Prefilter;
        use std::collections::HashMap;
        use std::path::{Path, PathBuf};
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::{Arc, Mutex};

        let disk: HashMap<PathBuf, Arc<[u8]>> = texts
            .iter()
            .map(|(p, t)| (cwd.join(p), t.as_bytes().into()))
            .collect();
        let reads: Mutex<HashMap<PathBuf, usize>> = Mutex::default();
        let read = |p: &Path, _: usize| -> Option<Arc<[u8]>> {
            *reads.lock().unwrap().entry(p.to_path_buf()).or_default() += 1;
            disk.get(p).cloned()
        };
        let packs = PackSet::builtin();
        let settings = Settings::default();
        let pre = Prefilter::new(&packs, &settings.lock_name);
        let parses = AtomicUsize::new(0);
        let first = Engine::new(&packs, &settings)
            .with_prefilter(Some(&pre))
            .keeping_words(words_first)
            .counting(&parses);
        let again = Engine::new(&packs, &settings).counting(&parses);
        let files = passes_in_memory(cwd, texts, &read, first, again, max_followed);
        let reads = reads
            .into_inner()
            .unwrap()
            .into_iter()
            .map(|(p, n)| (p.strip_prefix(cwd).unwrap().display().to_string(), n))
            .collect();
        Counted {
            files,
            reads,
            parses: parses.load(Ordering::Relaxed),
        }
    }

    /// A counting source: the first audit reads every file, as a run does;
    /// the crate passes then read only a file they audit again with what
    /// another file offers, and that file once. A file that offers (here
    /// `locks.rs`, the wrapper) is kept by the first audit and never read
    /// again; the words of the rest answer whether they reach an offer.
    /// Taken in the first audit (the editor), the words cost no read; taken
    /// by the passes (a batch run), one read of each file of the crate that
    /// offers, once however many rounds ask, and the bytes of a file whose
    /// words reach the offer are kept then: the caller is read twice in
    /// either run, when its first audit's bytes are not given (a run's
    /// session gives them, and reads each file once: `tests/robust.rs`).
    #[test]
    fn the_passes_read_only_what_they_audit_again_once() {
        for words_first in [true, false] {
            passes_read_once(words_first);
        }
    }

    fn passes_read_once(words_first: bool) {
        let cwd = std::path::Path::new("/nonexistent-lockaudit-crate");
        let mut texts: Vec<(String, String)> = vec![
            (
                "src/locks.rs".into(),
                "pub async fn acquire_lock(con: &mut redis::aio::MultiplexedConnection, key: &str) -> bool {\n    redis::cmd(\"SET\").arg(key).arg(\"me\").arg(\"NX\").arg(\"PX\").arg(30_000)\n        .query_async::<Option<String>>(con).await.map(|r| r.is_some()).unwrap_or(false)\n}\n".into(),
            ),
            (
                "src/jobs.rs".into(),
                "use crate::locks::acquire_lock;\npub async fn run(con: &mut redis::aio::MultiplexedConnection) {\n    acquire_lock(con, \"jobs\").await;\n}\n".into(),
            ),
            // Names the wrapper, not its module: it reaches nothing.
            ("src/noise.rs".into(), "// acquire_lock is defined elsewhere\npub fn f() {}\n".into()),
        ];
        for i in 0..20 {
            texts.push((
                format!("src/util{i}.rs"),
                format!("pub fn helper{i}() -> u8 {{ {i} }}\n"),
            ));
        }
        let Counted {
            files,
            reads,
            parses,
        } = counted_passes(cwd, &texts, words_first);
        // Each file is parsed once at most: `locks.rs` in its first audit
        // (judged again as the wrapper's definer from its facts), `jobs.rs`
        // when audited knowing the wrapper (the pre-filter let its first
        // audit skip it), the rest never.
        assert_eq!(parses, 2);
        let for_words = usize::from(!words_first);
        for (shown, _) in &texts {
            let n = reads[shown];
            let want = match shown.as_str() {
                "src/locks.rs" => 1,
                "src/jobs.rs" => 2,
                _ => 1 + for_words,
            };
            assert_eq!(
                n, want,
                "{shown} read {n} times (words first: {words_first})"
            );
        }
        // And the caller was audited knowing the wrapper.
        let jobs = files.iter().find(|f| f.shown == "src/jobs.rs").unwrap();
        assert!(
            jobs.outcome
                .findings
                .iter()
                .any(|f| f.check.as_str() == "ignored-acquire-result"),
            "{:?}",
            jobs.outcome.findings
        );
    }

    /// The bytes the passes hold stop at their bound, however they are
    /// asked for: past it, a file is read again instead.
    #[test]
    fn the_passes_hold_bytes_up_to_their_bound() {
        let held = super::Held::new(100);
        assert!(held.take(60));
        assert!(!held.take(41));
        assert!(held.take(40));
        assert!(!held.take(1));
        assert!(!held.take(usize::MAX));
        let held = super::Held::new(usize::MAX);
        assert!(held.take(usize::MAX));
        assert!(!held.take(1), "no overflow");
    }

    /// A file whose fencing check asks for another file's functions is
    /// judged again from the facts its audit kept: read once and parsed
    /// once, and the helper it calls is still followed.
    #[test]
    fn a_file_asking_for_functions_is_read_and_parsed_once() {
        let (found, reads, parses) = fenced_crate_in_memory(&[]);
        assert_eq!(found, ["17:23 unfenced-correctness-lock"]);
        assert_eq!(reads["src/lib.rs"], 1);
        // The engine parsed only lib.rs (store.rs holds no lock API: the
        // index models it, once).
        assert_eq!(parses, 1);
    }

    /// The function index reads only the files that can hold a definition
    /// sought: a function of the same name in another module, or a method
    /// of the same name on another type, is not read again for
    /// `store::write_plain(..)`.
    #[test]
    fn the_function_index_reads_only_files_that_can_hold_the_call() {
        let (found, reads, _) = fenced_crate_in_memory(&[
            (
                "src/archive.rs",
                "pub async fn write_plain(pool: &sqlx::PgPool, fence: i64, v: i64) {}\n",
            ),
            (
                "src/cache.rs",
                "pub struct Cache;\nimpl Cache {\n    pub async fn write_fenced(&self, v: i64) {}\n}\n",
            ),
        ]);
        assert_eq!(found, ["17:23 unfenced-correctness-lock"]);
        // Lock-free files are read by the walk and once more for their
        // words (a batch run takes words only in crates that ask); the
        // bytes of store.rs, which may hold the call's definition, are
        // kept then for the index to model, and neither look-alike's.
        assert_eq!(reads["src/lib.rs"], 1, "{reads:?}");
        assert_eq!(reads["src/store.rs"], 2, "{reads:?}");
        assert_eq!(reads["src/archive.rs"], 2, "{reads:?}");
        assert_eq!(reads["src/cache.rs"], 2, "{reads:?}");
    }

    /// A lock client's type alias of another file is given to the files
    /// that name it and call a method a pack knows, and they find the lock
    /// through it; a file that only names the alias is not audited again.
    #[test]
    fn a_client_alias_is_given_only_to_files_calling_an_api() {
        let texts: Vec<(String, String)> = [
            (
                "src/types.rs",
                "pub type Api = kube::Api<k8s_openapi::api::coordination::v1::Lease>;\n",
            ),
            (
                "src/leader.rs",
                "use crate::types::Api;\nuse kube::api::PostParams;\n\
                 pub async fn take(api: &Api, lease: &Lease) -> kube::Result<Lease> {\n    \
                 api.create(&PostParams::default(), lease).await\n}\n",
            ),
            (
                "src/holder.rs",
                "use crate::types::Api;\npub struct Holder {\n    pub api: Api,\n}\n",
            ),
        ]
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
        let cwd = std::path::Path::new("/nonexistent-lockaudit-aliases");
        let run = counted_passes(cwd, &texts, false);
        let found: Vec<String> =
            run.files
                .iter()
                .flat_map(|f| {
                    f.outcome.findings.iter().map(move |x| {
                        format!("{} {}:{}", x.check.as_str(), f.shown, x.span.start.line)
                    })
                })
                .collect();
        assert_eq!(found, ["missing-purpose src/leader.rs:4"]);
        // types.rs once (the pre-filter lets an alias of a client's type
        // through), leader.rs in its first audit and again knowing the
        // alias, holder.rs never.
        assert_eq!(run.parses, 3);
    }

    /// A crate of `layers` files each wrapping the next one's `take_`
    /// function (`l{i}.rs` calls `l{i+1}.rs`), the last one taking the
    /// lock, or, when `ring`, calling back the first one too before it
    /// takes it; `main.rs` calls the first one and drops the result.
    fn chain_crate(layers: usize, ring: bool) -> Vec<(String, String)> {
        let sig = |i: usize| {
            format!(
                "pub fn take_{i}(con: &mut redis::Connection, key: &str) -> redis::RedisResult<bool> {{\n"
            )
        };
        let last = layers - 1;
        let mut texts: Vec<(String, String)> = (0..last)
            .map(|i| {
                let n = i + 1;
                let body = format!("    crate::l{n}::take_{n}(con, key)\n}}\n");
                (format!("src/l{i}.rs"), sig(i) + &body)
            })
            .collect();
        let back = if ring {
            "    if key.is_empty() {\n        return crate::l0::take_0(con, \"lock:fallback\");\n    }\n"
        } else {
            ""
        };
        texts.push((
            format!("src/l{last}.rs"),
            format!(
                "{}{back}    let won: Option<String> = redis::cmd(\"SET\").arg(key).arg(\"me\").arg(\"NX\").arg(\"PX\").arg(5_000).query(con)?;\n    Ok(won.is_some())\n}}\n",
                sig(last)
            ),
        ));
        texts.push((
            "src/main.rs".to_string(),
            "fn run(con: &mut redis::Connection) {\n    let _ = crate::l0::take_0(con, \"lock:job\");\n}\n"
                .to_string(),
        ));
        texts
    }

    /// The findings of a counted run, as `check path:line`.
    fn found(run: &Counted) -> Vec<String> {
        run.files
            .iter()
            .flat_map(|f| {
                f.outcome
                    .findings
                    .iter()
                    .map(move |x| format!("{} {}:{}", x.check.as_str(), f.shown, x.span.start.line))
            })
            .collect()
    }

    /// A chain of wrappers forty files long is followed to its outermost
    /// caller, where the ignored result stands; the missing purpose stands
    /// once, at the lock call. Each file of the chain is audited again
    /// once, in the round that finds the wrapper it calls. A chain of
    /// thirty that calls back into its first wrapper ends the same way.
    #[test]
    fn a_chain_is_followed_to_its_end_however_long_or_looped() {
        // (files, whether the last calls back the first, the lock's line)
        for (layers, ring, line) in [(40, false, 2), (30, true, 5)] {
            let texts = chain_crate(layers, ring);
            let cwd = std::path::Path::new("/nonexistent-lockaudit-deep");
            let run = counted_passes(cwd, &texts, false);
            assert_eq!(
                found(&run),
                [
                    format!("missing-purpose src/l{}.rs:{line}", layers - 1),
                    "ignored-acquire-result src/main.rs:2".to_string()
                ],
                "ring: {ring}"
            );
            // The lock's file parsed in its first audit, and judged again
            // from its facts as the definer its callers reach; every other
            // file parsed once, in the round that finds the wrapper it
            // calls (the pre-filter skipped it).
            if !ring {
                assert_eq!(run.parses, layers + 1);
            }
        }
    }

    /// Past their bound on work, the rounds stop where they are: the run
    /// ends with what they found (the lock call's own finding), and a
    /// caller beyond is not told of the lock.
    #[test]
    fn the_rounds_stop_at_their_bound_on_work() {
        const LAYERS: usize = 40;
        let texts = chain_crate(LAYERS, false);
        let cwd = std::path::Path::new("/nonexistent-lockaudit-bound");
        // Each round looks at the crate's 41 files and the files that
        // offer: four rounds fit in 200.
        let run = counted_passes_within(cwd, &texts, false, 200);
        assert_eq!(
            found(&run),
            [format!("missing-purpose src/l{}.rs:2", LAYERS - 1)]
        );
        assert_eq!(run.parses, 1 + 4);
    }

    /// The fenced-crate fixture and `extra` files, audited in memory:
    /// lib.rs's findings, the reads of each file and the engine's parses.
    fn fenced_crate_in_memory(
        extra: &[(&str, &str)],
    ) -> (
        Vec<String>,
        std::collections::BTreeMap<String, usize>,
        usize,
    ) {
        use std::path::Path;

        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/projects/fenced-crate");
        let mut texts: Vec<(String, String)> = ["src/lib.rs", "src/store.rs"]
            .iter()
            .map(|p| {
                let text = std::fs::read_to_string(fixture.join(p)).unwrap();
                (p.to_string(), text)
            })
            .collect();
        texts.extend(extra.iter().map(|(p, t)| (p.to_string(), t.to_string())));
        let cwd = Path::new("/nonexistent-lockaudit-fenced");
        let Counted {
            files,
            reads,
            parses,
        } = counted_passes(cwd, &texts, false);
        let lib = files.iter().find(|f| f.shown == "src/lib.rs").unwrap();
        let found: Vec<String> = lib
            .outcome
            .findings
            .iter()
            .map(|f| {
                format!(
                    "{}:{} {}",
                    f.span.start.line,
                    f.span.start.column,
                    f.check.as_str()
                )
            })
            .collect();
        (found, reads, parses)
    }

    /// An editor session's keeps are bounded by bytes as well as by
    /// entries: past the budget, what was kept is forgotten (and read
    /// again when needed), never grown without end.
    #[test]
    fn kept_scans_stay_within_their_bytes() {
        use std::path::Path;
        use std::sync::Arc;
        let stamp = (1, std::time::SystemTime::UNIX_EPOCH);
        let scan_of = |text: &str| Arc::new(super::KeptScan::of(&super::scan(text)));
        let small = scan_of("fn a() { b(c) }");
        let budget = small.size() * 3;
        let kept = super::FirstAudits::with_max_bytes(budget);
        for i in 0..3 {
            kept.put_scan(Path::new(&format!("src/f{i}.rs")), stamp, small.clone());
        }
        assert!((0..3).all(|i| kept
            .scan(Path::new(&format!("src/f{i}.rs")), stamp)
            .is_some()));
        // The same file again replaces its entry: nothing is forgotten.
        kept.put_scan(Path::new("src/f0.rs"), stamp, small.clone());
        assert!(kept.scan(Path::new("src/f2.rs"), stamp).is_some());
        // One more is past the budget: the others are forgotten.
        kept.put_scan(Path::new("src/f3.rs"), stamp, small.clone());
        assert!(kept.scan(Path::new("src/f3.rs"), stamp).is_some());
        assert!(kept.scan(Path::new("src/f0.rs"), stamp).is_none());
        // A scan larger than the whole budget is kept alone.
        let big = scan_of(&(0..2_000).map(|i| format!("w{i} ")).collect::<String>());
        assert!(big.size() > budget);
        kept.put_scan(Path::new("src/big.rs"), stamp, big);
        assert!(kept.scan(Path::new("src/f3.rs"), stamp).is_none());
    }

    /// A read helper (`cached(con, key)` returning `con.get(key)`) is
    /// followed into its callers, but a call reading a key that is no lock
    /// (`"user:42"`) does not send its defining file through the definer
    /// pass: only a call on a lock key does.
    #[test]
    fn a_read_helper_called_on_no_lock_key_is_not_a_definer_again() {
        use std::collections::HashMap;
        use std::path::{Path, PathBuf};
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;

        let parses_for = |key: &str| -> (usize, usize) {
            let cwd = Path::new("/nonexistent-lockaudit-read-helper");
            let texts: Vec<(String, String)> = vec![
                (
                    "src/cache.rs".into(),
                    "pub fn cached(con: &mut redis::Connection, key: &str) -> Option<String> {\n    con.get(key).ok()\n}\n".into(),
                ),
                (
                    "src/jobs.rs".into(),
                    format!("use crate::cache::cached;\npub fn run(con: &mut redis::Connection) {{\n    if cached(con, \"{key}\").is_some() {{}}\n}}\n"),
                ),
            ];
            let disk: HashMap<PathBuf, Arc<[u8]>> = texts
                .iter()
                .map(|(p, t)| (cwd.join(p), t.as_bytes().into()))
                .collect();
            let read = |p: &Path, _: usize| -> Option<Arc<[u8]>> { disk.get(p).cloned() };
            let packs = PackSet::builtin();
            let settings = Settings::default();
            let parses = AtomicUsize::new(0);
            let judged = AtomicUsize::new(0);
            let first = Engine::new(&packs, &settings).counting(&parses);
            let again = Engine::new(&packs, &settings)
                .counting(&parses)
                .counting_judged(&judged);
            passes_in_memory(cwd, &texts, &read, first, again, super::MAX_FOLLOWED);
            (
                parses.load(Ordering::Relaxed),
                judged.load(Ordering::Relaxed),
            )
        };
        // Both first audits and the caller's: the definer is left alone.
        assert_eq!(parses_for("user:42"), (3, 0));
        // On a lock's key the definer is judged again too, from its facts.
        assert_eq!(parses_for("lock:jobs"), (3, 1));
    }

    /// One editor run over the crate in `dir`: `src/jobs.rs` is the edited
    /// buffer `edited`, the files of `listing` come from disk (each read
    /// told to `on_read`), and `kept` is the session's memory. Returns the
    /// edited file's findings, each as `line check: message`.
    fn session_run(
        dir: &std::path::Path,
        edited: &str,
        listing: &[(String, std::path::PathBuf)],
        engine: crate::engine::Engine,
        kept: &super::FirstAudits,
        on_read: &(dyn Fn(&std::path::Path) + Sync),
    ) -> Vec<String> {
        use std::path::Path;
        use std::sync::Arc;
        let first = engine.keeping_words(true);
        // The edited file is the editor's buffer, as in
        // `session::audit_in_crate`; the others come from disk.
        let read = |p: &Path, _: usize| -> Option<Arc<[u8]>> {
            if p == dir.join("src/jobs.rs") {
                return Some(edited.as_bytes().into());
            }
            on_read(p);
            std::fs::read(p).ok().map(Into::into)
        };
        let first_of = |_: usize| first;
        let engine_of = |_: usize| engine;
        let list = |_: &Path, _: usize| listing.to_vec();
        let sources = super::Sources {
            first: &first_of,
            engine: &engine_of,
            read: &read,
            crate_files: &list,
            partial: true,
            first_audits: Some(kept),
        };
        let mut files = vec![super::Audited::edited(
            &engine,
            dir.join("src/jobs.rs"),
            "src/jobs.rs",
            edited.as_bytes(),
            Some(kept),
        )];
        let pool = crate::parse::pool(Some(1)).unwrap();
        super::crate_passes(&mut files, dir, &pool, false, &sources);
        files[0]
            .outcome
            .findings
            .iter()
            .map(|f| format!("{} {}: {}", f.span.start.line, f.check.as_str(), f.message))
            .collect()
    }

    /// An editor session's first audits: a crate file unchanged on disk is
    /// neither read nor audited again for what it offers; one that changed
    /// is, once.
    #[test]
    fn unchanged_crate_files_are_not_read_again_in_a_session() {
        use std::collections::HashMap;
        use std::path::PathBuf;

        let utils: Vec<(String, String)> = (0..5)
            .map(|i| {
                (
                    format!("src/util{i}.rs"),
                    format!("pub fn helper{i}() {{}}\n"),
                )
            })
            .collect();
        let files: Vec<(&str, &str)> = std::iter::once(("src/locks.rs", WRAPPER))
            .chain(utils.iter().map(|(p, t)| (p.as_str(), t.as_str())))
            .collect();
        let disk = crate_on_disk("first-audits", &files);
        let (dir, kept) = (&disk.dir, &disk.kept);
        let edited = "use crate::locks::acquire_lock;\npub async fn run(con: &mut redis::aio::MultiplexedConnection) {\n    acquire_lock(con, \"jobs\").await;\n}\n";
        let run = |kept: &super::FirstAudits| -> (HashMap<PathBuf, usize>, Vec<String>) {
            counting_reads(|count| {
                super::tests::session_run(dir, edited, &disk.listing, disk.engine(), kept, count)
            })
        };
        let (reads, checks) = run(kept);
        assert_eq!(reads.len(), 6, "{reads:?}");
        assert!(reads.values().all(|&n| n == 1), "{reads:?}");
        assert!(
            checks
                .iter()
                .any(|c| c.contains(" ignored-acquire-result: ")),
            "{checks:?}"
        );
        let (reads, again) = run(kept);
        assert!(reads.is_empty(), "{reads:?}");
        assert_eq!(again, checks);
        std::fs::write(
            dir.join("src/util3.rs"),
            "pub fn helper3() { let changed = 1; }\n",
        )
        .unwrap();
        let (reads, _) = run(kept);
        assert_eq!(
            reads.keys().collect::<Vec<_>>(),
            vec![&dir.join("src/util3.rs")],
            "{reads:?}"
        );
    }

    /// A crate on disk in a fresh temporary directory named after `name`
    /// (a `Cargo.toml` and `files`, each a path under it and a text), its
    /// listing for [`session_run`], the built-in packs, default settings and
    /// an editor session's memory. Dropped, the directory goes.
    struct OnDisk {
        dir: std::path::PathBuf,
        listing: super::Listing,
        packs: PackSet,
        settings: Settings,
        kept: super::FirstAudits,
    }

    impl OnDisk {
        fn engine(&self) -> Engine<'_> {
            Engine::new(&self.packs, &self.settings)
        }
    }

    impl Drop for OnDisk {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn crate_on_disk(name: &str, files: &[(&str, &str)]) -> OnDisk {
        let dir = std::env::temp_dir().join(format!("lockaudit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"app\"\n").unwrap();
        for (path, text) in files {
            std::fs::write(dir.join(path), text).unwrap();
        }
        let listing = files
            .iter()
            .map(|(s, _)| (s.to_string(), dir.join(s)))
            .collect();
        OnDisk {
            dir,
            listing,
            packs: PackSet::builtin(),
            settings: Settings::default(),
            kept: super::FirstAudits::default(),
        }
    }

    /// The other files of a crate the walk covered in part are held within
    /// the budget `gather` is given, counted with what the walked files
    /// already hold: a run has one bound on held bytes, not one per phase.
    #[test]
    fn gathered_files_are_held_within_the_budget_given() {
        let disk = wrapper_and_caller("gather-budget");
        let engine = disk.engine();
        let read = |p: &std::path::Path, _: usize| -> Option<std::sync::Arc<[u8]>> {
            std::fs::read(p).ok().map(Into::into)
        };
        let first_of = |_: usize| engine;
        let list = |_: &std::path::Path, _: usize| disk.listing.to_vec();
        let sources = super::Sources {
            first: &first_of,
            engine: &first_of,
            read: &read,
            crate_files: &list,
            partial: true,
            first_audits: None,
        };
        let pool = crate::parse::pool(Some(1)).unwrap();
        let sweep = std::fs::read(disk.dir.join("src/sweep.rs")).unwrap();
        let held_context = |budget: super::Held| {
            let out = engine.check_bytes("src/sweep.rs", &sweep, false);
            let mut files = vec![super::Audited::new(
                disk.dir.join("src/sweep.rs"),
                0,
                "src/sweep.rs".into(),
                out,
            )];
            let crates =
                super::gather(&mut files, &disk.dir, &pool, false, &sources, budget).unwrap();
            assert_eq!((crates.walked, files.len()), (1, 2));
            files[1].bytes.is_some()
        };
        assert!(held_context(super::Held::new(super::MAX_HELD_BYTES)));
        // What the walked files hold already fills the bound.
        let full = super::Held::new(sweep.len());
        assert!(full.take(sweep.len()));
        assert!(!held_context(full));
    }

    /// What `run` returns, with the reads of each file it told of.
    fn counting_reads<R>(
        run: impl FnOnce(&(dyn Fn(&std::path::Path) + Sync)) -> R,
    ) -> (std::collections::HashMap<std::path::PathBuf, usize>, R) {
        let reads: std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, usize>> =
            Default::default();
        let count = |p: &std::path::Path| {
            *reads.lock().unwrap().entry(p.to_path_buf()).or_default() += 1;
        };
        let out = run(&count);
        (reads.into_inner().unwrap(), out)
    }

    /// A crate on disk (`Cargo.toml`, `src/locks.rs` with a wrapper,
    /// `src/sweep.rs` calling it) in a fresh temporary directory named
    /// after `name`, and its listing for [`session_run`].
    fn wrapper_and_caller(name: &str) -> OnDisk {
        let sweep = "use crate::locks::acquire_lock;\npub async fn sweep(con: &mut redis::aio::MultiplexedConnection) {\n    acquire_lock(con, \"sweep\").await;\n}\n";
        crate_on_disk(name, &[("src/locks.rs", WRAPPER), ("src/sweep.rs", sweep)])
    }

    /// `src/locks.rs` of the crates on disk: a wrapper that takes a Redis
    /// lock and hands back whether it won.
    const WRAPPER: &str = "pub async fn acquire_lock(con: &mut redis::aio::MultiplexedConnection, key: &str) -> bool {\n    redis::cmd(\"SET\").arg(key).arg(\"me\").arg(\"NX\").arg(\"PX\").arg(30_000)\n        .query_async::<Option<String>>(con).await.map(|r| r.is_some()).unwrap_or(false)\n}\n";

    /// An editor session keeps what each unchanged crate file names: a
    /// file on disk that calls a wrapper is read (and scanned) once, not
    /// on every edit of another file.
    #[test]
    fn an_unchanged_caller_is_not_read_again_in_a_session() {
        use std::collections::HashMap;
        use std::path::PathBuf;

        let disk = wrapper_and_caller("kept-scan");
        let dir = &disk.dir;
        let sweep = std::fs::read_to_string(dir.join("src/sweep.rs")).unwrap();
        let run = |edited: &str| -> HashMap<PathBuf, usize> {
            counting_reads(|count| {
                super::tests::session_run(
                    dir,
                    edited,
                    &disk.listing,
                    disk.engine(),
                    &disk.kept,
                    count,
                )
            })
            .0
        };
        let edit = |n: usize| format!("pub fn work() {{ let n = {n}; }}\n");
        let reads = run(&edit(0));
        assert!(reads.contains_key(&dir.join("src/sweep.rs")), "{reads:?}");
        for n in 1..3 {
            let reads = run(&edit(n));
            assert!(reads.is_empty(), "edit {n}: {reads:?}");
        }
        // Changed on disk: read again, once; its audit as a caller works
        // on the bytes its first audit read.
        std::fs::write(dir.join("src/sweep.rs"), format!("{sweep}// changed\n")).unwrap();
        let reads = run(&edit(3));
        assert_eq!(reads.get(&dir.join("src/sweep.rs")), Some(&1), "{reads:?}");
    }

    /// An editor session's later audits: while a crate file and what the
    /// crate gives it stay the same, an edit of another file audits it
    /// neither as a caller of a wrapper nor as the wrapper's definer; only
    /// the edited file is parsed again. A change to what it is given (a
    /// new caller in the edited file) audits the definer again.
    #[test]
    fn an_edit_audits_only_the_edited_file_again() {
        use std::sync::atomic::{AtomicUsize, Ordering};

        let disk = wrapper_and_caller("again");
        let judged = AtomicUsize::new(0);
        let run = |edited: &str| -> (usize, Vec<String>) {
            let parses = AtomicUsize::new(0);
            let engine = disk.engine().counting(&parses).counting_judged(&judged);
            let checks = super::tests::session_run(
                &disk.dir,
                edited,
                &disk.listing,
                engine,
                &disk.kept,
                &|_| {},
            );
            (parses.load(Ordering::Relaxed), checks)
        };
        let edit = |n: usize| {
            format!("pub async fn work(con: &mut redis::aio::MultiplexedConnection) {{\n    let _ = con;\n    let n = {n};\n}}\n")
        };
        // The first run parses every file, audits the caller again with
        // what the crate gives it, and judges the definer again from its
        // facts.
        let (parses, _) = run(&edit(0));
        assert!(parses >= 3, "{parses}");
        assert_eq!(judged.swap(0, Ordering::Relaxed), 1);
        // Edits that change nothing the others are given: the edited file
        // only (its first audit).
        for n in 1..3 {
            let (parses, checks) = run(&edit(n));
            assert_eq!(parses, 1, "edit {n}");
            assert!(checks.is_empty(), "{checks:?}");
        }
        assert_eq!(judged.load(Ordering::Relaxed), 0);
        // The edited file now calls the wrapper: it is audited with it, and
        // the definer judged again, reached from a new call.
        let calling = "use crate::locks::acquire_lock;\npub async fn run(con: &mut redis::aio::MultiplexedConnection) {\n    acquire_lock(con, \"jobs\").await;\n}\n";
        let (parses, checks) = run(calling);
        assert_eq!(parses, 2, "{checks:?}");
        assert_eq!(judged.swap(0, Ordering::Relaxed), 1);
        assert!(
            checks
                .iter()
                .any(|c| c.contains(" ignored-acquire-result: ")),
            "{checks:?}"
        );
        // Edited again, it is audited once, knowing at once what the crate
        // gave it at the previous edit, which the crate still gives.
        for _ in 0..2 {
            let (parses, again) = run(calling);
            assert_eq!(parses, 1, "the edited file's one audit only");
            assert_eq!(again, checks);
        }
    }

    /// An editor session keeps the models the function index made of the
    /// files defining the functions a correctness lock's critical section
    /// calls: while they are unchanged on disk, an edit neither reads nor
    /// parses them again, and the call is still followed into them.
    #[test]
    fn the_function_index_models_are_kept_across_edits() {
        use std::path::Path;

        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/projects/fenced-crate/src");
        let store = std::fs::read_to_string(fixture.join("store.rs")).unwrap();
        let disk = crate_on_disk("kept-models", &[("src/store.rs", &store)]);
        let dir = &disk.dir;
        let lib = std::fs::read_to_string(fixture.join("lib.rs")).unwrap();
        let edited = lib.replace("mod store;", "use crate::store;");
        let run = |edited: &str| -> (usize, Vec<String>) {
            let (reads, found) = counting_reads(|count| {
                let (listing, kept) = (&disk.listing, &disk.kept);
                super::tests::session_run(dir, edited, listing, disk.engine(), kept, count)
            });
            let n = reads.get(&dir.join("src/store.rs")).copied().unwrap_or(0);
            (n, found)
        };
        let (first, found) = run(&edited);
        assert!(first >= 1, "{first}");
        // The plain write in store.rs is followed: the unfenced lock of
        // `settle_unfenced` is reported, the fenced one is not.
        assert_eq!(
            found
                .iter()
                .filter(|f| f.contains("unfenced-correctness-lock"))
                .count(),
            1,
            "{found:?}"
        );
        for n in 1..3 {
            let (reads, again) = run(&format!("{edited}// edit {n}\n"));
            assert_eq!(reads, 0, "edit {n}: store.rs read again");
            assert_eq!(again, found);
        }
        // Changed on disk: modelled again, and what it now says counts.
        std::fs::write(
            dir.join("src/store.rs"),
            store.replace(
                "WHERE id = 2\")",
                "WHERE id = 2 AND fence < $2\").bind(_fence)",
            ),
        )
        .unwrap();
        let (reads, now) = run(&edited);
        assert!(reads >= 1, "{reads}");
        assert!(
            !now.iter().any(|f| f.contains("unfenced-correctness-lock")),
            "{now:?}"
        );
    }

    /// What an edited file's first audit assumes its crate gives it (what
    /// it gave at the previous edit) never outlives a change: when the
    /// wrapper changes behind the same name, is renamed, or the edited
    /// file stops calling it, the findings are those of a session that
    /// assumed nothing.
    #[test]
    fn an_assumed_gift_is_checked_against_the_crate() {
        let disk = wrapper_and_caller("assumed");
        let dir = &disk.dir;
        let calling = "use crate::locks::acquire_lock;\npub async fn run(con: &mut redis::aio::MultiplexedConnection) {\n    if acquire_lock(con, \"jobs\").await {\n        println!(\"won\");\n    }\n}\n";
        let check = |edited: &str, what: &str| {
            let run = |kept: &super::FirstAudits| {
                let engine = disk.engine();
                super::tests::session_run(dir, edited, &disk.listing, engine, kept, &|_| {})
            };
            let with = run(&disk.kept);
            let without = run(&super::FirstAudits::default());
            assert_eq!(with, without, "{what}");
            with
        };
        assert!(check(calling, "first").is_empty());
        assert!(check(calling, "again").is_empty());
        // The wrapper now turns an error into a won lock, behind the same
        // name: its callers cannot trust the reply.
        let locks = std::fs::read_to_string(dir.join("src/locks.rs")).unwrap();
        std::fs::write(
            dir.join("src/locks.rs"),
            locks.replace("unwrap_or(false)", "unwrap_or(true)"),
        )
        .unwrap();
        let swallowed = check(calling, "swallowed");
        assert!(
            !swallowed.is_empty(),
            "the caller is told of the swallowed error"
        );
        // Renamed: the call reaches no wrapper.
        std::fs::write(
            dir.join("src/locks.rs"),
            locks.replace("acquire_lock", "take_lock"),
        )
        .unwrap();
        assert!(check(calling, "renamed").is_empty());
        // Back, then the edited file stops calling it.
        std::fs::write(dir.join("src/locks.rs"), &locks).unwrap();
        check(calling, "back");
        check("pub fn work() {}\n", "no call");
        check(calling, "calling again");
    }

    #[test]
    fn a_call_is_a_whole_name_then_a_parenthesis() {
        let s = scan("let ok = acquire_lock(&key).await; locks::release (&key);");
        assert!(s.calls.contains(&("acquire_lock", false)));
        assert!(s.calls.contains(&("release", false)));
        assert!(s.words.contains("locks"));
        let s = scan("self.locker\n    .take::<u8>(k); try_take(k); take_all(k); 9take(1)");
        assert!(s.calls.contains(&("take", true)));
        assert!(!s.calls.contains(&("take", false)));
        assert!(s.calls.contains(&("try_take", false)));
        assert!(!s.words.contains("9take"));
        let s = scan("use crate::locks::acquire_lock;");
        assert!(s.calls.is_empty());
        assert!(s.words.contains("acquire_lock"));
    }

    #[test]
    fn an_unclosed_turbofish_costs_its_window_only() {
        // Each `::<` looks for its `>` in a bounded window: 100,000 of them
        // without one is one pass, not 100,000 passes over the rest.
        let text = "a::<".repeat(100_000) + "b(x)";
        let s = scan(&text);
        assert!(s.calls.contains(&("b", false)));
        assert!(s.words.contains("a"));
    }

    #[test]
    fn names_are_known_with_the_path_before_them() {
        let s = scan("use crate::locks::{self, acquire_lock, b::{c, d}, e};\nuse x::y::*;\nfn f() { locks::release(k); g(a, b); }");
        for pair in [
            ("crate", "locks"),
            ("locks", "self"),
            ("locks", "acquire_lock"),
            ("b", "c"),
            ("b", "d"),
            ("locks", "e"),
            ("y", "*"),
            ("locks", "release"),
        ] {
            assert!(s.qualified.contains(&pair), "{pair:?}");
        }
        assert!(!s.qualified.iter().any(|(_, n)| *n == "g"));
        assert!(!s.qualified.iter().any(|(q, _)| *q == "f"));
    }

    #[test]
    fn a_name_imported_under_another_is_known_by_both() {
        let s = scan(
            "use crate::locks::{acquire_lock as take, release};
fn f(n: u8) -> u64 { take(c); n as u64 }",
        );
        assert_eq!(s.renames.get("take"), Some(&"acquire_lock"));
        assert!(s.qualified.contains(&("locks", "acquire_lock")));
        // A cast renames nothing: `n` has no path before it.
        assert!(!s.renames.contains_key("u64"));
        assert_eq!(s.renames.len(), 1);
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
}
