//! Rule packs: everything lockaudit knows about real lock client libraries.
//! The engine knows no library by name; it asks the [`PackSet`] what a call
//! chain is. Built-in packs are embedded from `rules/`; user packs come from
//! the config's `rules:` list and are consulted first.

pub mod builtin;
mod compile;
pub mod raw;
mod recover;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use regex::Regex;

pub use raw::{Evidence, ExpirySource, ResultKind, Role, Scope, TokenKind};

use crate::diag::YamlErrors;

/// A validated rule pack.
#[derive(Debug, Clone)]
pub struct Pack {
    pub backend: String,
    pub description: String,
    /// Where it came from: `rules/redis.yaml` or the user's path.
    pub source: String,
    pub builtin: bool,
    pub crates: Vec<String>,
    pub consensus: bool,
    pub consensus_note: Option<String>,
    /// Where and why a config overrode the pack's `consensus`
    /// (`lockaudit.yaml:7:3: a single-node etcd`); `None`: the pack's own
    /// fact.
    pub consensus_source: Option<String>,
    pub trigger_words: Vec<String>,
    /// Methods that extend a command builder in place (`builder-methods`).
    pub builder_methods: Vec<String>,
    /// Traits whose methods may be called through their path (`traits`).
    pub traits: Vec<String>,
    /// Help per check id, in this backend's terms.
    pub help: std::collections::BTreeMap<String, String>,
    pub apis: Vec<Api>,
}

/// A validated API shape.
#[derive(Debug, Clone)]
pub struct Api {
    pub id: String,
    pub library: Option<String>,
    pub role: Role,
    pub matcher: Matcher,
    pub key: Vec<KeySpec>,
    pub owner: Vec<KeySpec>,
    pub atomic: Option<bool>,
    pub owner_checked: Option<bool>,
    pub expiry: Option<Expiry>,
    pub token: Option<Token>,
    pub result: Option<ResultKind>,
    /// The API's own and the pack's discard methods.
    pub discard_methods: Vec<String>,
    pub needs_lock_name: bool,
    /// Resolved: the API's override or the pack's value.
    pub consensus: bool,
    pub scope: Option<Scope>,
    pub released_on_drop: bool,
    /// Called again, it renews the lock its caller holds (`renews`).
    pub renews: bool,
    /// The call returns a key only this holder has (`returns-owned-key`).
    pub returns_owned_key: bool,
    pub flaw: Option<String>,
    /// Help for every check about this API.
    pub help: Option<String>,
    /// Help per check id; wins over `help`.
    pub help_by_check: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default)]
pub struct Matcher {
    pub method: Option<String>,
    /// Path segments, last segment last.
    pub function: Option<Vec<String>>,
    pub macro_name: Option<String>,
    /// Upper case.
    pub command: Option<String>,
    pub args: Option<usize>,
    /// Upper case.
    pub words: Vec<String>,
    pub any_words: Vec<String>,
    pub no_words: Vec<String>,
    pub chain: Vec<String>,
    pub no_chain: Vec<String>,
    pub text: Vec<Pattern>,
    pub no_text: Vec<Pattern>,
    pub receiver: Option<Pattern>,
    /// Or: the strings the receiver holds match this.
    pub receiver_strings: Option<Pattern>,
    /// Field names, compared by [`field_name`].
    pub fields: Vec<String>,
    pub no_fields: Vec<String>,
    pub cleared_fields: Vec<String>,
    pub needs_crate: bool,
    /// This API's own evidence crates; `None`: the pack's `crates`.
    pub crates: Option<Vec<String>>,
}

impl Matcher {
    /// The crates whose presence is evidence for this API.
    pub fn evidence_crates<'a>(&'a self, pack: &'a Pack) -> &'a [String] {
        self.crates.as_deref().unwrap_or(&pack.crates)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySpec {
    Arg(usize),
    /// Argument `arg` (0 unless given) of the `nth` call of a chain method.
    Method {
        name: String,
        nth: usize,
        arg: usize,
    },
    Field(String),
    RootArg(usize),
    /// Argument `arg` of a call named `name` inside the arguments.
    Call {
        name: String,
        arg: usize,
    },
    /// The value a Lua script reads as `ARGV[n]` (1-based).
    ScriptArg(usize),
    /// The value a SQL statement's nth placeholder is given (1-based).
    Param(usize),
}

#[derive(Debug, Clone)]
pub struct Expiry {
    pub from: ExpirySource,
    pub words: Vec<String>,
    pub arg: Option<usize>,
    pub field: Option<String>,
    pub methods: Vec<String>,
    pub text: Vec<Pattern>,
    pub note: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Token {
    pub kind: TokenKind,
    pub accessors: Vec<String>,
    pub note: Option<String>,
}

/// A field's name as fields are compared: lower case, without `_`, so
/// that a Rust field `holder_identity` and a JSON key `holderIdentity` are
/// the same field. A JSON Patch `test` of a path keeps its `test:` prefix.
pub fn field_name(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Identifies an API: (pack index, api index) in a [`PackSet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiRef {
    pub pack: usize,
    pub api: usize,
}

/// A rule pack's regex, compiled on first use: a run asks only a few of
/// the built-in packs' hundreds of patterns, and compiling them all was the
/// largest fixed cost of a run. A user pack's patterns are compiled when it
/// is loaded (that is how a bad one is reported at its line and column);
/// the built-in ones are compiled by a test.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    regex: std::sync::OnceLock<Regex>,
}

impl Pattern {
    /// Compiles `source` now, or only on first use when it is `known_good`.
    pub fn new(source: &str, known_good: bool) -> Result<Pattern, regex::Error> {
        let regex = std::sync::OnceLock::new();
        if !known_good {
            let _ = regex.set(bounded_regex(source)?);
        }
        Ok(Pattern {
            source: source.to_string(),
            regex,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl std::ops::Deref for Pattern {
    type Target = Regex;

    fn deref(&self) -> &Regex {
        self.regex.get_or_init(|| {
            Regex::new(&self.source).expect("built-in pack patterns are compiled by a test")
        })
    }
}

/// Longest regex accepted from a user's pack or config, in bytes.
pub const MAX_PATTERN: usize = 4096;

/// Compiles a regex from a user's file: at most [`MAX_PATTERN`] bytes, and
/// at most 1 MB once compiled, so that no pattern costs more than its text.
pub fn bounded_regex(source: &str) -> Result<Regex, regex::Error> {
    if source.len() > MAX_PATTERN {
        return Err(regex::Error::Syntax(format!(
            "longer than {MAX_PATTERN} bytes ({} bytes)",
            source.len()
        )));
    }
    regex::RegexBuilder::new(source)
        .size_limit(1 << 20)
        .dfa_size_limit(1 << 20)
        .build()
}

/// Every loaded pack, indexed for the extractor.
#[derive(Debug, Default)]
pub struct PackSet {
    pub packs: Vec<Pack>,
    by_method: HashMap<String, Vec<ApiRef>>,
    by_function: HashMap<String, Vec<ApiRef>>,
    by_macro: HashMap<String, Vec<ApiRef>>,
    by_command: HashMap<String, Vec<ApiRef>>,
    text_only: Vec<ApiRef>,
    /// Every crate name of every pack.
    pub crate_names: BTreeSet<String>,
    /// Every pack's `builder-methods`.
    pub builder_methods: BTreeSet<String>,
    /// Every pack's `traits`.
    pub traits: BTreeSet<String>,
    /// Every name a pack matches a call by: methods, functions' last
    /// segments, macros, and the builder methods.
    pub call_names: std::collections::HashSet<String>,
    /// Every pack's trigger words in one automaton, and the pack of each.
    triggers: Option<aho_corasick::AhoCorasick>,
    trigger_pack: Vec<usize>,
}

/// The compiled built-in packs. Compiling their regexes is the costly part
/// of loading, and they never change within a process, so the first
/// successful compilation is kept and cloned (a `Regex` clone is cheap).
fn builtin_packs() -> Result<Vec<Pack>, Vec<YamlErrors>> {
    static CACHE: std::sync::OnceLock<Vec<Pack>> = std::sync::OnceLock::new();
    if let Some(packs) = CACHE.get() {
        return Ok(packs.clone());
    }
    let mut packs = Vec::new();
    let mut errors = Vec::new();
    for (name, text) in builtin::BUILTIN {
        match compile::compile(&format!("rules/{name}"), text, true) {
            Ok(p) => packs.push(p),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(CACHE.get_or_init(|| packs).clone())
}

impl PackSet {
    /// Loads user packs (first) and the built-in packs.
    pub fn load(
        user: &[std::path::PathBuf],
        display_base: &Path,
    ) -> Result<PackSet, Vec<YamlErrors>> {
        let mut packs = Vec::new();
        let mut errors = Vec::new();
        for path in user {
            let shown = crate::walk::display_path(path, display_base);
            match crate::config::read_input(path, crate::config::MAX_CONFIG_BYTES) {
                Ok(text) => match compile::compile(&shown, &text, false) {
                    Ok(p) => packs.push(p),
                    Err(e) => errors.push(e),
                },
                Err(e) => {
                    let mut c = crate::diag::Collector::new(&shown, "");
                    c.at(&[], format!("cannot read rule pack: {e}"), None);
                    errors.extend(c.finish("rule pack").err());
                }
            }
        }
        match builtin_packs() {
            Ok(b) => packs.extend(b),
            Err(e) => errors.extend(e),
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(PackSet::from_packs(packs))
    }

    /// The JSON Schema of the pack format, generated from [`raw::RawPack`]
    /// and checked in as `rules/schema.json`.
    pub fn schema_json() -> String {
        let schema = schemars::schema_for!(raw::RawPack);
        let mut text = serde_json::to_string_pretty(&schema).expect("a schema serialises");
        text.push('\n');
        text
    }

    /// Compiles one pack from text (tests, fuzzing).
    pub fn compile_one(path: &str, text: &str) -> Result<Pack, YamlErrors> {
        compile::compile(path, text, false)
    }

    pub fn builtin() -> PackSet {
        PackSet::load(&[], Path::new(".")).expect("built-in rule packs are valid")
    }

    /// These packs with a config's facts about its deployment applied:
    /// each named backend's packs, and every API of them, decide by
    /// consensus or not as the config says, and carry where and why it
    /// says so ([`Pack::consensus_source`]).
    pub fn with_facts(
        &self,
        facts: &std::collections::BTreeMap<String, crate::config::BackendFact>,
    ) -> PackSet {
        let mut packs = self.packs.clone();
        for p in &mut packs {
            let Some(f) = facts.get(&p.backend) else {
                continue;
            };
            p.consensus = f.consensus;
            // The pack's note is about the backend as usually deployed; the
            // config's reason, with its place, is what reports carry now.
            p.consensus_note = None;
            p.consensus_source = Some(format!("{}: {}", f.source, f.reason));
            for a in &mut p.apis {
                a.consensus = f.consensus;
            }
        }
        PackSet::from_packs(packs)
    }

    pub fn from_packs(packs: Vec<Pack>) -> PackSet {
        let mut set = PackSet {
            packs,
            ..PackSet::default()
        };
        for (pi, pack) in set.packs.iter().enumerate() {
            set.crate_names.extend(pack.crates.iter().cloned());
            set.builder_methods
                .extend(pack.builder_methods.iter().cloned());
            set.traits.extend(pack.traits.iter().cloned());
            set.call_names.extend(pack.builder_methods.iter().cloned());
            for (ai, api) in pack.apis.iter().enumerate() {
                set.crate_names
                    .extend(api.matcher.crates.iter().flatten().cloned());
                let r = ApiRef { pack: pi, api: ai };
                let m = &api.matcher;
                set.call_names.extend(m.method.iter().cloned());
                set.call_names
                    .extend(m.function.iter().filter_map(|f| f.last().cloned()));
                set.call_names.extend(m.macro_name.iter().cloned());
                if let Some(name) = &m.method {
                    set.by_method.entry(name.clone()).or_default().push(r);
                } else if let Some(segs) = &m.function {
                    set.by_function
                        .entry(segs.last().cloned().unwrap_or_default())
                        .or_default()
                        .push(r);
                } else if let Some(name) = &m.macro_name {
                    set.by_macro.entry(name.clone()).or_default().push(r);
                } else if let Some(cmd) = &m.command {
                    set.by_command.entry(cmd.clone()).or_default().push(r);
                } else {
                    set.text_only.push(r);
                }
            }
        }
        let mut words = Vec::new();
        for (pi, pack) in set.packs.iter().enumerate() {
            for w in pack.trigger_words.iter().filter(|w| !w.is_empty()) {
                words.push(w.as_str());
                set.trigger_pack.push(pi);
            }
        }
        if !words.is_empty() {
            set.triggers = Some(
                aho_corasick::AhoCorasickBuilder::new()
                    .ascii_case_insensitive(true)
                    .kind(Some(aho_corasick::AhoCorasickKind::DFA))
                    .build(&words)
                    .expect("trigger words build"),
            );
        }
        set
    }

    /// Which packs (by index) have a trigger word starting a word somewhere
    /// in `text`: only their text-matched APIs are tried on it.
    pub fn triggered(&self, text: &str) -> Vec<bool> {
        let mut hit = vec![false; self.packs.len()];
        if let Some(ac) = &self.triggers {
            for m in ac.find_overlapping_iter(text) {
                if crate::prefilter::starts_word(text.as_bytes(), m.start()) {
                    hit[self.trigger_pack[m.pattern().as_usize()]] = true;
                }
            }
        }
        hit
    }

    /// Which packs have a trigger word starting a word inside a string
    /// literal of the Rust source `text`: a text shape only ever matches
    /// string values, so a trigger word spelled as an identifier
    /// (`reader.get_lock(key)`) or in a comment opens nothing. The
    /// pre-filter judges a file the same way.
    pub fn triggered_in_literals(&self, text: &str) -> Vec<bool> {
        let mut hit = vec![false; self.packs.len()];
        let Some(ac) = &self.triggers else {
            return hit;
        };
        let bytes = text.as_bytes();
        let mut bodies = None;
        for m in ac.find_overlapping_iter(text) {
            let pack = self.trigger_pack[m.pattern().as_usize()];
            if hit[pack] || !crate::prefilter::starts_word(bytes, m.start()) {
                continue;
            }
            let bodies =
                bodies.get_or_insert_with(|| crate::directives::lexer::string_bodies(bytes));
            if crate::directives::lexer::inside(bodies, m.start()) {
                hit[pack] = true;
            }
        }
        hit
    }

    pub fn api(&self, r: ApiRef) -> &Api {
        &self.packs[r.pack].apis[r.api]
    }

    pub fn pack(&self, r: ApiRef) -> &Pack {
        &self.packs[r.pack]
    }

    /// Whether two APIs say the same of a lock: one backend, role, result,
    /// token and consensus (the SQLite and the MySQL spelling of one lease
    /// upsert). A finding about either reads the same.
    pub fn same_lock_api(&self, a: ApiRef, b: ApiRef) -> bool {
        if a == b {
            return true;
        }
        let (x, y) = (self.api(a), self.api(b));
        self.pack(a).backend == self.pack(b).backend
            && x.role == y.role
            && x.result == y.result
            && x.consensus == y.consensus
            && x.atomic == y.atomic
            && x.token.as_ref().map(|t| t.kind) == y.token.as_ref().map(|t| t.kind)
    }

    /// What to write instead, for a finding of `check` about the API `r`:
    /// the API's help for that check, else its help for every check, else
    /// the pack's help for that check. `None`: the check's neutral help.
    pub fn help(&self, r: ApiRef, check: &str) -> Option<&str> {
        let api = self.api(r);
        api.help_by_check
            .get(check)
            .or(api.help.as_ref())
            .or_else(|| self.pack(r).help.get(check))
            .map(String::as_str)
    }

    pub fn by_method(&self, name: &str) -> &[ApiRef] {
        self.by_method.get(name).map(Vec::as_slice).unwrap_or(&[])
    }

    pub fn by_function(&self, last: &str) -> &[ApiRef] {
        self.by_function.get(last).map(Vec::as_slice).unwrap_or(&[])
    }

    pub fn by_macro(&self, name: &str) -> &[ApiRef] {
        self.by_macro.get(name).map(Vec::as_slice).unwrap_or(&[])
    }

    pub fn by_command(&self, word: &str) -> &[ApiRef] {
        self.by_command.get(word).map(Vec::as_slice).unwrap_or(&[])
    }

    pub fn text_only(&self) -> &[ApiRef] {
        &self.text_only
    }

    /// Every word whose presence in a file's bytes could make a pack match:
    /// the pre-filter's needles. Lower-cased; the pre-filter compares
    /// case-insensitively.
    pub fn trigger_words(&self) -> BTreeSet<String> {
        let mut words = BTreeSet::new();
        for pack in &self.packs {
            words.extend(pack.crates.iter().map(|s| s.to_lowercase()));
            words.extend(pack.trigger_words.iter().map(|s| s.to_lowercase()));
            for api in &pack.apis {
                let m = &api.matcher;
                words.extend(m.crates.iter().flatten().map(|s| s.to_lowercase()));
                words.extend(m.method.iter().map(|s| s.to_lowercase()));
                words.extend(
                    m.function
                        .iter()
                        .filter_map(|f| f.last())
                        .map(|s| s.to_lowercase()),
                );
                words.extend(m.macro_name.iter().map(|s| s.to_lowercase()));
                words.extend(m.command.iter().map(|s| s.to_lowercase()));
                // A text-only API (SQL, Lua) can only match through its words.
                if m.method.is_none()
                    && m.function.is_none()
                    && m.macro_name.is_none()
                    && m.command.is_none()
                {
                    words.extend(m.words.iter().map(|s| s.to_lowercase()));
                    words.extend(m.any_words.iter().map(|s| s.to_lowercase()));
                }
            }
        }
        words.retain(|w| !w.is_empty());
        words
    }
}
