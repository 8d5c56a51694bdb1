//! `mismatched-release-key`: a release whose key cannot be the key its lock
//! was taken with. The release deletes nothing, and the lock stays until it
//! expires.
//!
//! Evidence, all of it required: a function takes exactly one lock that no
//! release or delete of the function names by its own key, and then
//! releases (or deletes, on a lock-named key) a key that no acquisition of
//! the file takes. Both keys are texts or formats the model resolves
//! (`format!("lock:{id}")`, a local bound to one, a literal), and they
//! differ in their constant parts (`lock:{}` against `locks:{}`), or the
//! release builds its key around the acquisition's own key variable
//! (`format!("lock:{key}")` of a `key` that already is `lock:{id}`).

use std::collections::HashMap;

use super::common::{call_label, key_name, CheckCtx};
use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Severity};
use crate::model::{Event, Key};
use crate::pack::Role;
use crate::source::Span;

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::MismatchedReleaseKey,
    severity: Severity::Error,
    summary: "a release's key cannot be the key its lock was taken with, so it deletes nothing",
    docs: include_str!("mismatched_release_key.md"),
    precision: "high",
    tags: &["distributed-lock", "availability"],
    help: HELP,
    run: Some(run),
};

const HELP: &str = "release the key the lock was taken with: build it once (one variable, or one function both calls use) and pass that same value to the acquisition and the release";

/// The constant shape of a key's text: its literal with every `{..}`
/// placeholder as `{}` (`{{` and `}}` kept as written). `None` when the key
/// has no literal, or the literal is placeholders only (`"{}"`): nothing
/// constant to compare.
fn shape(key: &Key) -> Option<String> {
    let lit = key.literal.as_deref().filter(|l| l.len() <= MAX_KEY)?;
    let mut out = String::with_capacity(lit.len());
    let mut chars = lit.chars().peekable();
    let mut constant = false;
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push_str("{{");
                constant = true;
            }
            '{' => {
                for d in chars.by_ref() {
                    if d == '}' {
                        break;
                    }
                }
                out.push_str("{}");
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push_str("}}");
                constant = true;
            }
            _ => {
                out.push(c);
                constant = true;
            }
        }
    }
    constant.then_some(out)
}

/// Whether `text` spells `name` as a whole identifier that is a value, not
/// the name of a call (`self.key(name)` calls `key`; it does not use it).
fn names(text: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(at) = text[from..].find(name).map(|i| i + from) {
        let end = at + name.len();
        from = end;
        let whole = !text[..at].ends_with(is_word) && !text[end..].starts_with(is_word);
        let called = text[end..].trim_start().starts_with('(');
        if whole && !called {
            return true;
        }
    }
    false
}

fn takes(e: &Event) -> bool {
    matches!(e.role, Role::Acquire | Role::TryAcquire)
}

fn releases(e: &Event) -> bool {
    matches!(e.role, Role::Release | Role::Delete)
}

/// Whether the release key `r` is a format built around the acquisition's
/// key variable `a` (`format!("lock:{lock_key}")` of a `lock_key` that is
/// itself a lock key): the prefix is added twice.
fn wraps(a: &Key, r: &Key) -> bool {
    r.norm != a.norm
        && r.literal.is_some()
        && shape(a).is_some()
        && a.norm
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        && names(&r.text, a.norm.rsplit('.').next().unwrap_or(&a.norm))
}

/// Whether `a` and `r` name the same key, as far as the text tells.
fn same_key(a: &Key, r: &Key) -> bool {
    !wraps(a, r)
        && (a.norm == r.norm || matches!((shape(a), shape(r)), (Some(x), Some(y)) if x == y))
}

/// Each function's locks that nothing in it releases by their own key,
/// found once per file (each acquisition against each release of its
/// function).
type Unreleased<'c> = HashMap<crate::model::FnId, Vec<&'c Event>>;

fn unreleased<'c>(ctx: &CheckCtx<'c>) -> Unreleased<'c> {
    let mut out: Unreleased = HashMap::new();
    for (i, _) in ctx.model.fns.iter().enumerate() {
        let f = crate::model::FnId(i as u32);
        let events: Vec<&Event> = ctx.model.fn_events(f).collect();
        let open: Vec<&Event> = events
            .iter()
            .copied()
            .filter(|a| takes(a))
            .filter(|a| {
                let Some(ak) = &a.key else { return false };
                !events
                    .iter()
                    .any(|e| releases(e) && e.key.as_ref().is_some_and(|k| same_key(ak, k)))
            })
            .collect();
        if !open.is_empty() {
            out.insert(f, open);
        }
    }
    out
}

/// The one lock `f` takes before `offset` and never releases by its own
/// key; `None` when there are none or several.
fn open_lock<'c>(open: &Unreleased<'c>, f: crate::model::FnId, offset: usize) -> Option<&'c Event> {
    let mut before = open.get(&f)?.iter().filter(|a| a.span.end.offset <= offset);
    match (before.next(), before.next()) {
        (Some(a), None) => Some(a),
        _ => None,
    }
}

/// The text before the first placeholder of a shape: `lock:` of `lock:{}`.
fn prefix(shape: &str) -> &str {
    shape.split("{}").next().unwrap_or_default()
}

/// Whether the release key `rk` adds `prefix(rk)` again around the key of
/// the lock `a` (named by `a_key`): `lock:export:` + `lock:export:{}`. A
/// key built around another (`{key}:progress`) is a companion key.
fn doubled(a_key: &Key, rk: &Key) -> bool {
    let (Some(a_shape), Some(r_shape)) = (shape(a_key), shape(rk)) else {
        return false;
    };
    let p = prefix(&r_shape);
    wraps(a_key, rk) && !p.is_empty() && a_shape.starts_with(p)
}

/// The call of the release's function `f` (from another function of the
/// file) that passes, at the parameter `rk` builds its key around, the key
/// of the one lock the caller holds, with the prefix `rk` adds again:
/// `self.unlock(&key)` into `unlock(name) { del(self.lock_key(name)) }`.
fn doubled_by_caller<'c>(
    ctx: &CheckCtx<'c>,
    open: &Unreleased<'c>,
    f: crate::model::FnId,
    rk: &Key,
) -> Option<(&'c Event, Span)> {
    let def = &ctx.model.fns[f];
    let r_shape = shape(rk)?;
    let p = prefix(&r_shape);
    if p.is_empty() {
        return None;
    }
    let has_self = def.params.first().is_some_and(|s| s == "self");
    let param = def
        .params
        .iter()
        .position(|n| n != "self" && !n.is_empty() && names(&rk.text, n))?;
    let calls = ctx
        .model
        .fns
        .iter()
        .enumerate()
        .map(|(g, caller)| (crate::model::FnId(g as u32), caller))
        .filter(|(g, _)| *g != f)
        .flat_map(|(g, caller)| {
            caller
                .calls
                .iter()
                .filter(|c| c.local && c.name == def.name && c.method == has_self)
                .map(move |c| (g, c))
        })
        .take(MAX_CALLERS);
    for (g, c) in calls {
        let at = if has_self { param - 1 } else { param };
        let Some(arg) = c.args.get(at) else { continue };
        let Some(a) = open_lock(open, g, c.offset) else {
            continue;
        };
        let Some(ak) = &a.key else { continue };
        let ident = ak.norm.rsplit('.').next().unwrap_or(&ak.norm);
        let plain = ak
            .norm
            .chars()
            .all(|ch| ch.is_alphanumeric() || ch == '_' || ch == '.');
        if plain
            && arg.contains(ident)
            && shape(ak).is_some_and(|s| s.starts_with(p))
            && ak.norm != rk.norm
        {
            return Some((a, c.span));
        }
    }
    None
}

/// Most acquisitions and releases a file may hold for the check to pair
/// them: each release is compared with every acquisition, so a generated
/// file of thousands is not judged (and cannot make the run quadratic).
const MAX_PAIRED: usize = 512;

/// Longest key literal compared: a longer one (generated, or hostile)
/// has no shape, and nothing is said about it.
const MAX_KEY: usize = 256;

/// Most calls of a release helper compared with their callers' locks.
const MAX_CALLERS: usize = 64;

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    let paired = ctx
        .model
        .events
        .iter()
        .filter(|e| takes(e) || releases(e))
        .count();
    if paired > MAX_PAIRED {
        return;
    }
    let open = unreleased(ctx);
    for r in &ctx.model.events {
        if !releases(r) || (r.role == Role::Delete && !r.lockish) {
            continue;
        }
        let Some(rk) = &r.key else { continue };
        if rk.holder_lease {
            continue;
        }
        let Some(r_shape) = shape(rk) else { continue };
        // The one lock the function holds here, or the one its caller
        // holds and hands in.
        let mut passed = None;
        let held = match open_lock(&open, r.func, r.span.start.offset) {
            Some(a) => Some(a),
            None => doubled_by_caller(ctx, &open, r.func, rk).map(|(a, call)| {
                passed = Some(call);
                a
            }),
        };
        let Some(a) = held else { continue };
        let Some(ak) = &a.key else { continue };
        let Some(a_shape) = shape(ak) else { continue };
        let doubled = passed.is_some() || doubled(ak, rk);
        if !doubled {
            // A wrapped key that is a companion key, not a release.
            if wraps(ak, rk) {
                continue;
            }
            // A lock of the file taken on this key: the release is its own.
            if ctx
                .model
                .events
                .iter()
                .filter(|e| takes(e))
                .any(|e| e.key.as_ref().is_some_and(|k| same_key(k, rk)))
            {
                continue;
            }
            if a_shape == r_shape {
                continue;
            }
        }
        let what = if r.role == Role::Delete {
            "delete"
        } else {
            "release"
        };
        let message = if doubled {
            let p = prefix(&r_shape);
            format!(
                "this {what} adds `{p}` again to the lock's own key {}: it removes `{p}{a_shape}`, not the lock on `{a_shape}`",
                key_name(Some(ak)),
            )
        } else {
            format!(
                "this {what} of `{r_shape}` misses the lock taken on `{a_shape}`: the keys differ, so the lock stays until it expires"
            )
        };
        let mut f = ctx
            .finding(CheckId::MismatchedReleaseKey, r, message)
            .label(format!(
                "{} removes nothing: no lock is held under {}",
                match call_label(ctx, ctx.api(r), r) {
                    l if l.starts_with("the ") => l,
                    l => format!("`{l}`"),
                },
                key_name(Some(rk))
            ))
            .secondary(a.span, format!("the lock is taken on `{a_shape}` here"));
        if let Some(call) = passed {
            f = f.secondary(call, "the lock's own key is passed in here".to_string());
        }
        let f = f
            .note("a release that misses its key leaves the lock in place until it expires: every other worker waits out the whole TTL, and a lock without expiry is held by a ghost for good")
            .help(HELP);
        out.push(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Span;

    fn key(literal: Option<&str>) -> Key {
        Key {
            norm: "k".into(),
            text: "k".into(),
            span: Span::default(),
            literal: literal.map(str::to_string),
            holder_lease: false,
        }
    }

    /// A file with more acquisitions and releases than the check pairs is
    /// not judged; one within the bound is, one finding a function.
    #[test]
    fn a_file_of_thousands_of_locks_is_not_paired() {
        use crate::config::Settings;
        use crate::engine::Engine;
        use crate::pack::PackSet;
        let file = |n: usize| -> String {
            (0..n)
                .map(|i| {
                    format!(
                        "fn settle_{i}(con: &mut redis::Connection, id: u64) {{\n    \
                         let won: bool = redis::Commands::set_nx(con, format!(\"lock:s{i}:{{id}}\"), 1).unwrap();\n    \
                         if won {{ let _: () = redis::Commands::del(con, format!(\"locks:s{i}:{{id}}\")).unwrap(); }}\n}}\n"
                    )
                })
                .collect()
        };
        let packs = PackSet::builtin();
        let settings = Settings::default();
        let only = [CheckId::MismatchedReleaseKey];
        let engine = Engine::new(&packs, &settings).only(&only);
        let within = MAX_PAIRED / 2;
        let out = engine.check_bytes("t.rs", file(within).as_bytes(), false);
        assert_eq!(out.findings.len(), within);
        let out = engine.check_bytes("t.rs", file(within + 1).as_bytes(), false);
        assert!(out.findings.is_empty());
    }

    #[test]
    fn shapes_keep_constants_and_blank_placeholders() {
        assert_eq!(shape(&key(Some("lock:{id}"))).as_deref(), Some("lock:{}"));
        assert_eq!(
            shape(&key(Some("lock:{}:{0}"))).as_deref(),
            Some("lock:{}:{}")
        );
        assert_eq!(
            shape(&key(Some("{{lock}}:{}"))).as_deref(),
            Some("{{lock}}:{}")
        );
        assert_eq!(shape(&key(Some("{}"))), None);
        assert_eq!(shape(&key(Some("{a}{b}"))), None);
        assert_eq!(shape(&key(None)), None);
    }
}
