//! Wrapper chains: which call sites reach a lock call inside a wrapper, and
//! what they say of its purpose. This decides where a wrapped lock's
//! findings stand (SPEC, "each finding is reported once, where the fix
//! goes"):
//!
//! - what the lock call itself does wrong, and a missing purpose, at the
//!   lock call inside the innermost wrapper, naming the call sites that
//!   reach it;
//! - what a caller does with the outcome at the outermost call, the one no
//!   called wrapper hands back;
//! - an annotation anywhere on the chain (the lock call's statement, above
//!   a wrapper `fn`, at a call site or above its `fn`) covers the calls
//!   through it.
//!
//! A file knows its own chains; the crate passes bring each defining file
//! the outermost call sites of other files that reach its lock calls
//! ([`SiteReport`]s, filtered by [`outermost`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::directives::{Directives, PurposeLookup};
use crate::pack::Role;

use super::locks::{chain_lookup, Locks};
use super::{Event, FileModel, Layer, Origin, Reached, SiteRef, SiteReport};

/// A command built by a function of the file and run elsewhere in it: the
/// builder function's line and name, and its statement and `fn` as a place
/// whose annotation covers the run.
pub fn settle_built(model: &mut FileModel) {
    let fns: HashMap<&str, (usize, &str)> = model
        .fns
        .iter()
        .rev()
        .map(|f| (f.name.as_str(), (f.first_line, f.qualified.as_str())))
        .collect();
    let mut found = Vec::new();
    for (i, e) in model.events.iter().enumerate() {
        let Some(b) = &e.built_in else { continue };
        if let Some(&(line, item)) = fns.get(b.item.as_str()) {
            found.push((i, line, item.to_string()));
        }
    }
    for (i, line, item) in found {
        let e = &mut model.events[i];
        if let Some(b) = e.built_in.as_mut() {
            b.fn_line = line;
            b.item = item;
            e.layers.push(Layer {
                stmt_line: b.stmt_line,
                last_line: b.stmt_line,
                fn_line: line,
            });
        }
    }
}

/// The purpose each wrapper of the file states for its callers in other
/// files: the annotation on its inner call's statement or above its `fn`,
/// else one further down its chain.
pub fn wrapper_purposes(model: &mut FileModel, d: &Directives) {
    for (_, w) in &mut model.wrappers {
        let inner = &w.inner;
        let at = Layer {
            stmt_line: inner.stmt_line,
            last_line: inner.span.end.line.max(inner.stmt_line),
            fn_line: w.fn_line,
        };
        w.purpose = match chain_lookup(d, at, inner) {
            PurposeLookup::Found { purpose, .. } | PurposeLookup::Inherited { purpose } => {
                Some(purpose)
            }
            _ => None,
        };
    }
}

/// What each call of a wrapper in this file says, for the files that
/// define the lock calls it reaches (targets and direct wrappers named
/// from anywhere: a file of `None` is `here`).
pub fn site_reports(model: &FileModel, locks: &Locks, here: &str) -> Vec<SiteReport> {
    model
        .events
        .iter()
        .filter(|e| e.through_wrapper())
        .map(|e| {
            let (covered, purpose) = stated(locks, e);
            SiteReport {
                targets: e.targets.iter().map(|t| t.resolved(here)).collect(),
                direct: e.direct.iter().map(|t| t.resolved(here)).collect(),
                handed_by: e.handed_by.clone(),
                at: site_ref(e, here),
                covered,
                purpose,
                lockish: e.lockish,
            }
        })
        .collect()
}

/// Whether an annotation covers the chain from `e`, and the purpose `e` is
/// held to.
fn stated(locks: &Locks, e: &Event) -> (bool, Option<crate::finding::Purpose>) {
    let take = matches!(e.role, Role::Acquire | Role::TryAcquire);
    let covered = !take || *locks.lookup(e.id) != PurposeLookup::None;
    (covered, locks.purpose(e.id))
}

fn site_ref(e: &Event, here: &str) -> SiteRef {
    SiteRef {
        path: here.to_string(),
        span: e.span,
        key: e.key.as_ref().map(|k| k.text.clone()),
    }
}

/// The reports of a crate's files that end a chain: a call whose outcome
/// its function hands back is no end when that function is a wrapper
/// someone calls. Grouped by the lock call reached (file, key).
pub fn outermost(reports: &[SiteReport]) -> BTreeMap<Origin, Vec<SiteReport>> {
    let called: HashSet<&Origin> = reports.iter().flat_map(|r| &r.direct).collect();
    let mut out: BTreeMap<Origin, Vec<SiteReport>> = BTreeMap::new();
    for r in reports {
        let relayed = r.handed_by.as_ref().is_some_and(|k| {
            called.contains(&Origin {
                file: Some(r.at.path.clone()),
                key: k.clone(),
            })
        });
        if relayed {
            continue;
        }
        for t in &r.targets {
            out.entry(t.clone()).or_default().push(r.clone());
        }
    }
    out
}

/// Gives each relayed lock call of the file the call sites that reach it:
/// this file's outermost calls of its wrapper, and `elsewhere`'s (other
/// files' outermost calls, by the wrapper's key).
pub fn attach_reached(
    model: &mut FileModel,
    locks: &Locks,
    elsewhere: Option<&HashMap<String, Vec<SiteReport>>>,
    here: &str,
) {
    let mut by_key: HashMap<String, Reached> = HashMap::new();
    let mut add = |key: &str, at: SiteRef, covered: bool, purpose, lockish: bool| {
        let r = by_key.entry(key.to_string()).or_default();
        if !covered {
            r.uncovered.push(at.clone());
        }
        if covered {
            r.purposes.extend(purpose);
        }
        r.lockish |= lockish;
        r.sites.push(at);
    };
    for e in model
        .events
        .iter()
        .filter(|e| e.through_wrapper() && !e.relayed)
    {
        let (covered, purpose) = stated(locks, e);
        for t in e.targets.iter().filter(|t| t.file.is_none()) {
            add(&t.key, site_ref(e, here), covered, purpose, e.lockish);
        }
    }
    for (key, reports) in elsewhere.into_iter().flatten() {
        for r in reports.iter().filter(|r| r.at.path != here) {
            add(key, r.at.clone(), r.covered, r.purpose, r.lockish);
        }
    }
    if by_key.is_empty() {
        return;
    }
    for e in model
        .events
        .iter_mut()
        .filter(|e| e.relayed && !e.through_wrapper())
    {
        let Some(r) = e.handed_by.as_ref().and_then(|k| by_key.get(k)) else {
            continue;
        };
        let mut r = r.clone();
        for list in [&mut r.sites, &mut r.uncovered] {
            list.sort();
            list.dedup();
        }
        e.lockish |= r.lockish;
        e.reached = Some(Box::new(r));
    }
}

/// "reached from 2 call sites: src/jobs.rs:12:5 (`"lock:report"`), …", for
/// the finding at a wrapped lock call; `None` for any other event.
pub fn reached_note(e: &Event, sites: &[SiteRef], what: &str) -> Option<String> {
    e.reached.as_ref()?;
    if sites.is_empty() {
        return None;
    }
    const SHOWN: usize = 4;
    let mut parts: Vec<String> = sites
        .iter()
        .take(SHOWN)
        .map(|s| {
            let at = format!("{}:{}:{}", s.path, s.span.start.line, s.span.start.column);
            match &s.key {
                Some(k) if k.chars().count() <= 48 => format!("{at} (`{}`)", k.replace('\n', " ")),
                _ => at,
            }
        })
        .collect();
    if sites.len() > SHOWN {
        parts.push(format!("and {} more", sites.len() - SHOWN));
    }
    let n = sites.len();
    let plural = if n == 1 { "" } else { "s" };
    Some(format!(
        "{what} {n} call site{plural}: {}",
        parts.join(", ")
    ))
}
