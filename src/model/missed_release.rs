//! Which lock a release misses: a release (or a delete of a lock-named
//! key) whose key cannot be the key its lock was taken with, paired here
//! so that `mismatched-release-key` only words the finding.
//!
//! A function's *open* locks are the acquisitions none of its releases
//! names by the same key. A release is paired with the one lock its
//! function holds open before it, or, for a release helper, with the one
//! lock a caller of the file holds when it passes that lock's own key in.
//! Keys are compared by their constant *shape* (`lock:{}` of
//! `format!("lock:{id}")`).

use std::collections::HashMap;

use super::locks::is_take;
use super::{Event, FileModel, FnId, Key};
use crate::pack::Role;
use crate::source::Span;

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

/// A release paired with the lock whose key it misses.
pub struct MissedRelease<'m> {
    /// The lock the function (or its caller) holds.
    pub lock: &'m Event,
    /// The shapes of the lock's key and of the release's.
    pub lock_shape: String,
    pub release_shape: String,
    /// The release adds the lock key's prefix again around it
    /// (`format!("lock:{key}")` of a `key` that is `lock:{id}`).
    pub doubled: bool,
    /// Where a caller passes the lock's own key into the release's
    /// function, when the lock is the caller's.
    pub passed_at: Option<Span>,
}

/// Each function's locks that nothing in it releases by their own key,
/// found once per file (each acquisition against each release of its
/// function).
pub struct OpenLocks<'m> {
    model: &'m FileModel,
    open: HashMap<FnId, Vec<&'m Event>>,
}

impl<'m> OpenLocks<'m> {
    /// The open locks of `model`; `None` for a file with more than
    /// [`MAX_PAIRED`] acquisitions and releases, which is not paired.
    pub fn of(model: &'m FileModel) -> Option<OpenLocks<'m>> {
        let paired = model
            .events
            .iter()
            .filter(|e| is_take(e) || releases(e))
            .count();
        if paired > MAX_PAIRED {
            return None;
        }
        let mut open = HashMap::new();
        for (f, _) in model.fn_ids() {
            let events: Vec<&Event> = model.fn_events(f).collect();
            let left: Vec<&Event> = events
                .iter()
                .copied()
                .filter(|a| is_take(a))
                .filter(|a| {
                    let Some(ak) = &a.key else { return false };
                    !events
                        .iter()
                        .any(|e| releases(e) && e.key.as_ref().is_some_and(|k| same_key(ak, k)))
                })
                .collect();
            if !left.is_empty() {
                open.insert(f, left);
            }
        }
        Some(OpenLocks { model, open })
    }

    /// The one lock `f` takes before `offset` and never releases by its
    /// own key; `None` when there are none or several.
    fn open_lock(&self, f: FnId, offset: usize) -> Option<&'m Event> {
        let mut before = self
            .open
            .get(&f)?
            .iter()
            .filter(|a| a.span.end.offset <= offset);
        match (before.next(), before.next()) {
            (Some(a), None) => Some(*a),
            _ => None,
        }
    }

    /// The lock whose key the release (or delete) `r` misses, if the text
    /// tells: both keys have a constant shape and they differ, or the
    /// release adds the lock key's prefix again. A release of a key some
    /// acquisition of the file takes is that lock's own; a key built
    /// around the lock's (`{key}:progress`) is a companion key.
    pub fn missed_by(&self, r: &Event) -> Option<MissedRelease<'m>> {
        if !releases(r) {
            return None;
        }
        let rk = r.key.as_ref().filter(|k| !k.holder_lease)?;
        let release_shape = shape(rk)?;
        // The one lock the function holds here, or the one its caller
        // holds and hands in.
        let mut passed_at = None;
        let lock = match self.open_lock(r.func, r.span.start.offset) {
            Some(a) => a,
            None => {
                let (a, call) = self.doubled_by_caller(r.func, rk)?;
                passed_at = Some(call);
                a
            }
        };
        let ak = lock.key.as_ref()?;
        let lock_shape = shape(ak)?;
        let doubled = passed_at.is_some() || doubled(ak, rk);
        if !doubled {
            let own = self
                .model
                .takes()
                .any(|e| e.key.as_ref().is_some_and(|k| same_key(k, rk)));
            if wraps(ak, rk) || own || lock_shape == release_shape {
                return None;
            }
        }
        Some(MissedRelease {
            lock,
            lock_shape,
            release_shape,
            doubled,
            passed_at,
        })
    }

    /// The call of the release's function `f` (from another function of the
    /// file) that passes, at the parameter `rk` builds its key around, the key
    /// of the one lock the caller holds, with the prefix `rk` adds again:
    /// `self.unlock(&key)` into `unlock(name) { del(self.lock_key(name)) }`.
    fn doubled_by_caller(&self, f: FnId, rk: &Key) -> Option<(&'m Event, Span)> {
        let def = &self.model.fns[f];
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
        let calls = self
            .model
            .fn_ids()
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
            let Some(a) = self.open_lock(g, c.offset) else {
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
}

/// The text before the first placeholder of a shape: `lock:` of `lock:{}`.
pub fn prefix(shape: &str) -> &str {
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

/// Most acquisitions and releases a file may hold for them to be paired:
/// each release is compared with every acquisition, so a generated file
/// of thousands is not judged (and cannot make the run quadratic).
pub const MAX_PAIRED: usize = 512;

/// Longest key literal compared: a longer one (generated, or hostile)
/// has no shape, and nothing is said about it.
const MAX_KEY: usize = 256;

/// Most calls of a release helper compared with their callers' locks.
const MAX_CALLERS: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    fn key(literal: Option<&str>) -> Key {
        Key {
            norm: "k".into(),
            text: "k".into(),
            span: Span::default(),
            literal: literal.map(str::to_string),
            holder_lease: false,
        }
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
