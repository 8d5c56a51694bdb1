//! The sound pre-filter: a multi-pattern pass over a file's bytes decides
//! whether the file could produce any finding. A first search, for the few
//! needles every admission needs one of (the crate names, the always words
//! and the words of APIs that need no crate), rejects most files at the
//! speed of a packed SIMD search; only a file it hits gets the full pass. A
//! file is parsed when it holds an annotation or suppression word, or when
//! some API that can lead to a finding could match it, judged as the
//! extractor judges it: the API's name (method, function, macro or command)
//! stands as a whole identifier or string, or a trigger word of its pack
//! starts a word (text-matched APIs); a crate of its evidence is a word of
//! some identifier, when the API needs that evidence; and some word is a
//! lock name, when the API only counts on lock-named keys. A file is also
//! parsed when it declares a type alias naming a lock client's crate (`type
//! Api = kube::Api<Lease>;`): it finds nothing itself, but tells the
//! crate's other files what a receiver declared with the alias is. Effects,
//! mints and token reads alone never produce a finding (they only matter
//! next to an acquisition), so they open no file. The extractor can only
//! match what these words spell, so no finding is ever lost; a test
//! compares every fixture with and without the filter, and the
//! `check_bytes` fuzz target checks it on arbitrary input.

use std::collections::BTreeMap;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::Regex;

use crate::pack::PackSet;

struct Gate {
    needle: usize,
    /// The API's word must stand as a whole identifier or string (a
    /// method, function, macro or command name), not inside another word.
    ident: bool,
    crates: Vec<usize>,
    needs_lock_name: bool,
}

/// How a needle was seen in the file.
#[derive(Clone, Copy, Default)]
struct Seen {
    /// As a whole identifier (`.lock(`, `"SET"`).
    ident: bool,
    /// As a word of an identifier ([`crate::model::lockname::word_at`]).
    word: bool,
    /// Starting a word ([`starts_word`]) inside a string literal: how
    /// trigger words count, since a text shape only matches string values
    /// ([`PackSet::triggered_in_literals`]).
    start: bool,
}

pub struct Prefilter {
    ac: AhoCorasick,
    /// The needles without which no file is worth parsing: the always
    /// words, the crate names, and the words of APIs that need no crate
    /// (every other API needs one of its crates as a word). Far rarer than
    /// the API names (`set`, `get`, `lock`), so most files are rejected by
    /// one search for these that stops at the first hit, before the full
    /// overlapping pass ([`Prefilter::first_hit`]).
    first: AhoCorasick,
    /// The longest of those, in bytes.
    first_longest: usize,
    /// Needles whose presence anywhere makes a file worth parsing.
    always: Vec<bool>,
    /// Needles whose presence at the start of a word makes a file worth
    /// parsing (trigger words of APIs that need no other evidence).
    always_start: Vec<bool>,
    /// Needles that are trigger words (they count inside string literals).
    trigger: Vec<bool>,
    gates: Vec<Gate>,
    count: usize,
    /// Needle texts, by pattern id.
    words: Vec<String>,
    lock_name: Regex,
    unanchored: bool,
    /// Needles that are the crate names of the packs.
    crates: Vec<usize>,
    /// A type alias naming one of those crates (`type Api =
    /// kube::Api<Lease>;`), tried only when one of them is a word.
    client_alias: Option<regex::bytes::Regex>,
}

impl Prefilter {
    pub fn new(packs: &PackSet, lock_name: &Regex) -> Prefilter {
        let mut ids: BTreeMap<String, usize> = BTreeMap::new();
        let mut intern = |w: &str| -> usize {
            let w = w.to_ascii_lowercase();
            let n = ids.len();
            *ids.entry(w).or_insert(n)
        };
        let always_ids = vec![intern("lock-purpose"), intern("lockaudit")];
        let crate_ids: Vec<usize> = packs.crate_names.iter().map(|c| intern(c)).collect();
        let mut always_start_ids = Vec::new();
        let mut gates = Vec::new();
        for pack in &packs.packs {
            for api in &pack.apis {
                if api.role.is_context() {
                    continue;
                }
                let m = &api.matcher;
                // The extractor anchors an API on an identifier or string
                // equal to its name; an API without one is matched on the
                // text of its statement, which holds a pack trigger word.
                let (words, ident): (Vec<String>, bool) = if let Some(x) = &m.method {
                    (vec![x.clone()], true)
                } else if let Some(f) = &m.function {
                    (f.last().cloned().into_iter().collect(), true)
                } else if let Some(x) = &m.macro_name {
                    (vec![x.clone()], true)
                } else if let Some(x) = &m.command {
                    (vec![x.clone()], true)
                } else {
                    (pack.trigger_words.to_vec(), false)
                };
                let evidence = m.evidence_crates(pack);
                let gate_crate = m.needs_crate && !evidence.is_empty();
                let crates: Vec<usize> = if gate_crate {
                    evidence.iter().map(|c| intern(c)).collect()
                } else {
                    Vec::new()
                };
                for w in words {
                    let needle = intern(&w);
                    if !ident && !gate_crate && !api.needs_lock_name {
                        always_start_ids.push(needle);
                    } else {
                        gates.push(Gate {
                            needle,
                            ident,
                            crates: crates.clone(),
                            needs_lock_name: api.needs_lock_name,
                        });
                    }
                }
            }
        }
        let mut needles: Vec<(usize, String)> = ids.into_iter().map(|(w, i)| (i, w)).collect();
        needles.sort();
        let count = needles.len();
        let ac = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            // A DFA: the fastest search, and the needles are few.
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .build(needles.iter().map(|(_, w)| w.as_str()))
            .expect("pre-filter needles build");
        // Every way `reason_in` lets a file through needs one of these
        // as a substring: an always word, a crate's name (each gate with
        // crates, and the client alias, need one as a word), or the word
        // of a gate without crates or of an always-start API.
        let mut first_ids: Vec<usize> = always_ids.iter().chain(&crate_ids).copied().collect();
        first_ids.extend(&always_start_ids);
        for g in &gates {
            if g.crates.is_empty() {
                first_ids.push(g.needle);
            }
            first_ids.extend(&g.crates);
        }
        first_ids.sort_unstable();
        first_ids.dedup();
        // Searched case-sensitively in lowercased bytes (the needles are
        // lowercase): a case-insensitive automaton cannot use the packed
        // SIMD search, which is several times faster on these few needles.
        // A needle that holds another is found wherever that one is: only
        // the others are searched for, which keeps the set small enough
        // for the packed search (64 needles).
        let all_first: Vec<&str> = first_ids.iter().map(|&i| needles[i].1.as_str()).collect();
        let first_words: Vec<&str> = all_first
            .iter()
            .copied()
            .filter(|w| !all_first.iter().any(|o| o != w && w.contains(o)))
            .collect();
        let first = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostFirst)
            .build(&first_words)
            .expect("pre-filter needles build");
        let first_longest = first_words.iter().map(|w| w.len()).max().unwrap_or(0);
        let mut always = vec![false; count];
        for i in always_ids {
            always[i] = true;
        }
        let mut always_start = vec![false; count];
        for i in always_start_ids {
            always_start[i] = true;
        }
        let mut trigger = always_start.clone();
        for g in gates.iter().filter(|g| !g.ident) {
            trigger[g.needle] = true;
        }
        Prefilter {
            ac,
            first,
            first_longest,
            always,
            always_start,
            trigger,
            gates,
            count,
            words: needles.into_iter().map(|(_, w)| w).collect(),
            lock_name: lock_name.clone(),
            unanchored: !["^", "$", "\\b", "\\B", "\\A", "\\z", "\\<", "\\>"]
                .iter()
                .any(|a| lock_name.as_str().contains(a)),
            crates: crate_ids,
            client_alias: client_alias(&packs.crate_names),
        }
    }

    /// Whether some word of the file is a lock name, exactly as the
    /// extractor decides it of an identifier or key (every key, binding and
    /// function name it asks about is spelled in the file; a string literal
    /// spelled with escapes such as `\x6cock` is the one thing missed).
    fn lock_named(&self, bytes: &[u8]) -> bool {
        let text = String::from_utf8_lossy(bytes);
        // A cheap reject first, where a match inside a word implies a match
        // in the whole text: not for anchored patterns (`^lock$`).
        if self.unanchored && !self.lock_name.is_match(&text) {
            return false;
        }
        crate::model::lockname::is_lock_name(&self.lock_name, &text)
    }

    /// Whether one of the first needles occurs in `bytes`, ASCII case
    /// ignored. The bytes are lowercased a chunk at a time into a small
    /// buffer; consecutive chunks overlap by the longest needle less one
    /// byte, so a needle across a chunk's end is still found whole.
    fn first_hit(&self, bytes: &[u8]) -> bool {
        const CHUNK: usize = 32 * 1024;
        let overlap = self.first_longest.saturating_sub(1);
        let mut buf = Vec::with_capacity(CHUNK.min(bytes.len()) + overlap);
        let mut start = 0;
        loop {
            let end = (start + CHUNK + overlap).min(bytes.len());
            buf.clear();
            buf.extend(bytes[start..end].iter().map(u8::to_ascii_lowercase));
            if self.first.is_match(&buf[..]) {
                return true;
            }
            if end == bytes.len() {
                return false;
            }
            start += CHUNK;
        }
    }

    /// Whether the file could produce any finding.
    pub fn could_match(&self, bytes: &[u8]) -> bool {
        self.reason(bytes).is_some()
    }

    /// As [`Prefilter::could_match`], for a file of the lock crate
    /// `own_crate` (as `use` paths spell it): its source never names
    /// itself, so the crate counts as seen and only its APIs' names decide.
    pub fn could_match_in(&self, bytes: &[u8], own_crate: &str) -> bool {
        self.reason_in(bytes, Some(own_crate)).is_some()
    }

    /// The word that makes the file worth parsing, if any (for benchmarks
    /// and for tuning packs: which word lets a file through).
    pub fn reason(&self, bytes: &[u8]) -> Option<&str> {
        self.reason_in(bytes, None)
    }

    fn reason_in(&self, bytes: &[u8], own_crate: Option<&str>) -> Option<&str> {
        // A lock crate's own file counts its crate as seen: the first
        // search cannot reject it.
        if own_crate.is_none() && !self.first_hit(bytes) {
            return None;
        }
        self.full_reason(bytes, own_crate)
    }

    /// The overlapping pass over every needle, which decides.
    fn full_reason(&self, bytes: &[u8], own_crate: Option<&str>) -> Option<&str> {
        let mut seen = vec![Seen::default(); self.count];
        if let Some(c) = own_crate {
            let c = c.to_ascii_lowercase();
            if let Some(i) = self.words.iter().position(|w| *w == c) {
                seen[i].word = true;
            }
        }
        let mut any = false;
        // Where a word starts with a needle: a trigger word there counts
        // only inside a string literal, which is known after the pass.
        let mut starts: Vec<(usize, usize)> = Vec::new();
        for m in self.ac.find_overlapping_iter(bytes) {
            let i = m.pattern().as_usize();
            if self.always[i] {
                return Some(&self.words[i]);
            }
            let s = &mut seen[i];
            s.ident |= ident_at(bytes, m.start(), m.end());
            s.word |= crate::model::lockname::word_at(bytes, m.start(), m.end());
            if self.trigger[i] && starts_word(bytes, m.start()) {
                starts.push((i, m.start()));
            }
            any = true;
        }
        if !any {
            return None;
        }
        let mut lock_named: Option<bool> = None;
        let mut passes = |g: &Gate, seen: &[Seen]| {
            let s = seen[g.needle];
            (if g.ident { s.ident } else { s.start })
                && (g.crates.is_empty() || g.crates.iter().any(|&c| seen[c].word))
                && (!g.needs_lock_name || *lock_named.get_or_insert_with(|| self.lock_named(bytes)))
        };
        // The gates of names first: where one passes, the string literals
        // need not be found.
        if let Some(g) = self.gates.iter().find(|g| g.ident && passes(g, &seen)) {
            return Some(&self.words[g.needle]);
        }
        if !starts.is_empty() {
            let bodies = crate::directives::lexer::string_bodies(bytes);
            for (i, at) in starts {
                if !seen[i].start && crate::directives::lexer::inside(&bodies, at) {
                    seen[i].start = true;
                    if self.always_start[i] {
                        return Some(&self.words[i]);
                    }
                }
            }
        }
        if let Some(g) = self.gates.iter().find(|g| !g.ident && passes(g, &seen)) {
            return Some(&self.words[g.needle]);
        }
        // A type alias of a client's type, for the crate's other files.
        let alias = self.client_alias.as_ref()?;
        if self.crates.iter().any(|&c| seen[c].word || seen[c].ident) && alias.is_match(bytes) {
            return Some("type");
        }
        None
    }
}

/// The pattern of a type alias whose type names one of `crates` as a path
/// segment: `type Api = kube::Api<LeaseObject>;`, `pub(crate) type Conn<'a>
/// = &'a mut redis::aio::Connection;`.
fn client_alias(crates: &std::collections::BTreeSet<String>) -> Option<regex::bytes::Regex> {
    if crates.is_empty() {
        return None;
    }
    let names: Vec<String> = crates.iter().map(|c| regex::escape(c)).collect();
    let pattern = format!(
        r"\btype\s+[A-Za-z_][A-Za-z0-9_]*\s*(?:<[^=;{{}}]*>)?\s*=[^;{{}}]*\b(?:{})::",
        names.join("|")
    );
    regex::bytes::Regex::new(&pattern).ok()
}

/// Whether the text at `start` begins a word: no identifier character
/// before it.
pub fn starts_word(bytes: &[u8], start: usize) -> bool {
    start == 0 || !is_ident_byte(bytes[start - 1])
}

use crate::words::is_ident_byte;

/// Whether `bytes[start..end]` is a whole identifier or string body: no
/// identifier character on either side.
fn ident_at(bytes: &[u8], start: usize, end: usize) -> bool {
    starts_word(bytes, start) && bytes.get(end).is_none_or(|&b| !is_ident_byte(b))
}

#[cfg(test)]
mod tests {

    use super::*;

    const DEL: &str = "fn release(con: &mut redis::Connection, lock: &str) {\n    \
                       redis::cmd(\"DEL\").arg(lock).query::<()>(con).ok();\n}\n";

    /// The first search rejects only files the full pass would reject:
    /// every fixture, as written and with its letters' case changed, is
    /// judged the same with and without it.
    #[test]
    fn the_first_search_rejects_only_what_the_full_pass_rejects() {
        let packs = PackSet::builtin();
        let pre = Prefilter::new(&packs, &Regex::new("(?i)lock").unwrap());
        let mut files = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from("fixtures")];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    files.push(std::fs::read(&p).unwrap());
                }
            }
        }
        assert!(files.len() > 100, "{} fixture files", files.len());
        let (mut admitted, mut rejected) = (0, 0);
        for f in &files {
            for text in [f.clone(), f.to_ascii_uppercase(), f.to_ascii_lowercase()] {
                let full = pre.full_reason(&text, None).is_some();
                assert_eq!(pre.could_match(&text), full);
                if full {
                    admitted += 1;
                } else {
                    rejected += 1;
                }
            }
        }
        // Both outcomes are exercised.
        assert!(admitted > 100 && rejected > 10, "{admitted} / {rejected}");
    }

    /// A needle across the end of a lowercased chunk is found whole.
    #[test]
    fn the_first_search_finds_a_needle_across_chunks() {
        let packs = PackSet::builtin();
        let pre = Prefilter::new(&packs, &Regex::new("(?i)lock").unwrap());
        let chunk = 32 * 1024;
        for at in (chunk - 8)..(chunk + 8) {
            for needle in ["Redis", "SQLX", "lock-purpose"] {
                let mut text = vec![b' '; at];
                text.extend_from_slice(needle.as_bytes());
                text.extend(std::iter::repeat_n(b' ', 3 * chunk));
                assert!(pre.first_hit(&text), "{needle} at {at}");
            }
            let text = vec![b'x'; at + 3 * chunk];
            assert!(!pre.first_hit(&text));
        }
        assert!(!pre.first_hit(b""));
    }

    /// An anchored `lock-name-pattern` matches words, never the whole
    /// text: the pre-filter must judge words as the extractor does.
    #[test]
    fn anchored_lock_name_patterns_are_judged_per_word() {
        let packs = PackSet::builtin();
        for pattern in ["(?i)lock", "(?i)^lock$", r"(?i)\block\b"] {
            let pre = Prefilter::new(&packs, &Regex::new(pattern).unwrap());
            assert!(pre.could_match(DEL.as_bytes()), "{pattern}");
            let cache = DEL.replace("lock", "entry");
            assert!(!pre.could_match(cache.as_bytes()), "{pattern}");
        }
    }

    /// A file declaring a type alias of a lock client's type is parsed (it
    /// offers the alias to its crate); one whose aliases name no client
    /// crate's path, or that only names a client crate elsewhere, is not.
    #[test]
    fn a_type_alias_of_a_client_type_opens_its_file() {
        let packs = PackSet::builtin();
        let pre = Prefilter::new(&packs, &Regex::new("(?i)lock").unwrap());
        for alias in [
            "pub type Api = kube::Api<LeaseObject>;\n",
            "pub(crate) type Conn<'a> = &'a mut redis::aio::Connection;\n",
            "type Shared =\n    std::sync::Arc<etcd_client::Client>;\n",
        ] {
            assert_eq!(pre.reason(alias.as_bytes()), Some("type"), "{alias}");
        }
        for plain in [
            "pub type Result<T> = std::result::Result<T, Error>;\nuse redis::Value;\n",
            "pub type Kubeconfig = config::Kubeconfig;\n",
            "use kube::Api;\ntype Id = u64;\nfn f(api: Api<Pod>) {}\n",
        ] {
            assert!(!pre.could_match(plain.as_bytes()), "{plain}");
        }
    }

    /// Inside a lock crate's own source the crate counts as seen: a file
    /// calling one of its APIs is parsed without naming the crate, and a
    /// file of the crate that names none of its APIs is still skipped.
    #[test]
    fn a_lock_crates_own_files_need_only_an_api_name() {
        let packs = PackSet::builtin();
        let pre = Prefilter::new(&packs, &Regex::new("(?i)lock").unwrap());
        let layer = "impl Client {\n    pub async fn lock(&mut self, name: Vec<u8>) -> Result<R> {\n        \
                     self.inner.lock(name, None).await\n    }\n}\n";
        assert!(!pre.could_match(layer.as_bytes()));
        assert!(pre.could_match_in(layer.as_bytes(), "etcd_client"));
        assert!(pre.could_match_in(layer.as_bytes(), "Etcd_Client"));
        // Not for a crate whose APIs these are not.
        assert!(!pre.could_match_in(layer.as_bytes(), "serde"));
        let plain = "pub struct Options { pub ttl: i64 }\nimpl Options { pub fn new() -> Self { Options { ttl: 0 } } }\n";
        assert!(!pre.could_match_in(plain.as_bytes(), "etcd_client"));
    }

    /// A trigger word counts where it starts a word, in the pre-filter and
    /// the extractor alike: `SELECT GET_LOCK(` opens the file, a C binding
    /// named `CRYPTO_get_locking_callback` does not.
    #[test]
    fn trigger_words_start_a_word() {
        let packs = PackSet::builtin();
        let pre = Prefilter::new(&packs, &Regex::new("(?i)lock").unwrap());
        let sql = "fn f() { let q = \"SELECT GET_LOCK(?, 10)\"; }";
        assert_eq!(pre.reason(sql.as_bytes()), Some("get_lock"));
        let binding = "extern \"C\" { fn CRYPTO_get_locking_callback() -> usize; }";
        assert_eq!(pre.reason(binding.as_bytes()), None);
        let mysql = packs
            .packs
            .iter()
            .position(|p| p.backend == "mysql")
            .unwrap();
        assert!(packs.triggered(sql)[mysql]);
        assert!(!packs.triggered(binding)[mysql]);
    }

    /// A text shape only matches string values, so its trigger word counts
    /// inside a string literal (plain, raw or byte), in the pre-filter and
    /// the extractor alike; spelled as a name, in a comment or in a char
    /// literal's neighbourhood it opens nothing.
    #[test]
    fn trigger_words_count_inside_string_literals() {
        let packs = PackSet::builtin();
        let pre = Prefilter::new(&packs, &Regex::new("(?i)lock").unwrap());
        let mysql = packs
            .packs
            .iter()
            .position(|p| p.backend == "mysql")
            .unwrap();
        let open = [
            "fn f() { let q = \"SELECT GET_LOCK(?, 10)\"; }",
            "fn f() { let q = r#\"SELECT \"x\", GET_LOCK(?, 10)\"#; }",
            "fn f() { let q = b\"SELECT GET_LOCK(?, 10)\"; }",
            "fn f() { let c = '\"'; let q = \"SELECT GET_LOCK(?, 10)\"; }",
            "const Q: &str = \"SELECT\\n GET_LOCK(?, 10)\";",
        ];
        for text in open {
            assert_eq!(pre.reason(text.as_bytes()), Some("get_lock"), "{text}");
            assert!(packs.triggered_in_literals(text)[mysql], "{text}");
        }
        let closed = [
            "fn f(r: &Reader) { let l = r.get_lock(&key); }",
            "// SELECT GET_LOCK(?, 10)\nfn f() {}",
            "/* a /* nested */ GET_LOCK( */ fn f() {}",
            "fn f<'a>(x: &'a str) -> &'a str { get_lock(x) }",
            "fn f() { let c = '\"'; get_lock(c); let s = \"done\"; }",
        ];
        for text in closed {
            assert_eq!(pre.reason(text.as_bytes()), None, "{text}");
            assert!(!packs.triggered_in_literals(text)[mysql], "{text}");
        }
    }
}
