//! The sound pre-filter: one multi-pattern pass over a file's bytes decides
//! whether the file could produce any finding. A file is parsed when it holds
//! an annotation or suppression word, or when some API that can lead to a
//! finding could match it: the API's own word (method, function, macro or
//! command name; a text API's pack trigger words) is present, and so is a
//! crate name of its pack when the API requires that evidence, and a match
//! of `lock-name-pattern` when the API only counts on lock-named keys.
//! Effects, mints and token reads alone never produce a finding (they only
//! matter next to an acquisition), so they open no file. The extractor can
//! only match what these words spell, so no finding is ever lost; a test
//! compares every fixture with and without the filter.

use std::collections::BTreeMap;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::Regex;

use crate::pack::{PackSet, Role};

struct Gate {
    needle: usize,
    crates: Vec<usize>,
    needs_lock_name: bool,
}

pub struct Prefilter {
    ac: AhoCorasick,
    /// Needles whose presence alone makes a file worth parsing.
    always: Vec<bool>,
    gates: Vec<Gate>,
    count: usize,
    lock_name: Regex,
}

impl Prefilter {
    pub fn new(packs: &PackSet, lock_name: &Regex) -> Prefilter {
        let mut ids: BTreeMap<String, usize> = BTreeMap::new();
        let mut intern = |w: &str| -> usize {
            let w = w.to_ascii_lowercase();
            let n = ids.len();
            *ids.entry(w).or_insert(n)
        };
        let mut always_ids = vec![intern("lock-purpose"), intern("lockaudit")];
        let mut gates = Vec::new();
        for pack in &packs.packs {
            let crates: Vec<usize> = pack.crates.iter().map(|c| intern(c)).collect();
            for api in &pack.apis {
                if matches!(
                    api.role,
                    Role::Effect
                        | Role::FencedEffect
                        | Role::Mint
                        | Role::Token
                        | Role::OwnershipCheck
                ) {
                    continue;
                }
                let m = &api.matcher;
                let mut words: Vec<String> = Vec::new();
                if let Some(x) = &m.method {
                    words.push(x.clone());
                } else if let Some(f) = &m.function {
                    words.extend(f.last().cloned());
                } else if let Some(x) = &m.macro_name {
                    words.push(x.clone());
                } else if let Some(x) = &m.command {
                    words.push(x.clone());
                } else {
                    words.extend(pack.trigger_words.iter().cloned());
                }
                let gate_crate = m.needs_crate && !pack.crates.is_empty();
                for w in words {
                    let needle = intern(&w);
                    if !gate_crate && !api.needs_lock_name {
                        always_ids.push(needle);
                    } else {
                        gates.push(Gate {
                            needle,
                            crates: if gate_crate {
                                crates.clone()
                            } else {
                                Vec::new()
                            },
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
            .build(needles.iter().map(|(_, w)| w.as_str()))
            .expect("pre-filter needles build");
        let mut always = vec![false; count];
        for i in always_ids {
            always[i] = true;
        }
        Prefilter {
            ac,
            always,
            gates,
            count,
            lock_name: lock_name.clone(),
        }
    }

    /// Whether the file could produce any finding.
    pub fn could_match(&self, bytes: &[u8]) -> bool {
        let mut seen = vec![false; self.count];
        let mut any = false;
        for m in self.ac.find_overlapping_iter(bytes) {
            let i = m.pattern().as_usize();
            if self.always[i] {
                return true;
            }
            seen[i] = true;
            any = true;
        }
        if !any {
            return false;
        }
        let mut lock_named: Option<bool> = None;
        self.gates.iter().any(|g| {
            seen[g.needle]
                && (g.crates.is_empty() || g.crates.iter().any(|&c| seen[c]))
                && (!g.needs_lock_name
                    || *lock_named.get_or_insert_with(|| {
                        self.lock_name.is_match(&String::from_utf8_lossy(bytes))
                    }))
        })
    }
}
