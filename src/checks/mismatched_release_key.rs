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

use super::common::{call_label, key_name, CheckCtx};
use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Severity};
use crate::model::{Event, Key};
use crate::pack::Role;

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
    let lit = key.literal.as_deref()?;
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

/// Whether `text` spells `name` as a whole identifier.
fn names(text: &str, name: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| w == name)
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

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    for r in &ctx.model.events {
        if !releases(r) || (r.role == Role::Delete && !r.lockish) {
            continue;
        }
        let Some(rk) = &r.key else { continue };
        if rk.holder_lease {
            continue;
        }
        let Some(r_shape) = shape(rk) else { continue };
        // A lock of the file taken on this key: the release is its own.
        if ctx
            .model
            .events
            .iter()
            .filter(|e| takes(e))
            .any(|a| a.key.as_ref().is_some_and(|ak| same_key(ak, rk)))
        {
            continue;
        }
        // The locks the function takes before it and never releases by
        // their own key: exactly one, or nothing is said.
        let fn_events: Vec<&Event> = ctx.model.fn_events(r.func).collect();
        let open: Vec<&Event> = fn_events
            .iter()
            .copied()
            .filter(|a| takes(a) && a.span.end.offset <= r.span.start.offset)
            .filter(|a| {
                let Some(ak) = &a.key else { return false };
                !fn_events
                    .iter()
                    .any(|e| releases(e) && e.key.as_ref().is_some_and(|k| same_key(ak, k)))
            })
            .collect();
        let [a] = open.as_slice() else { continue };
        let Some(ak) = &a.key else { continue };
        // The release wraps the lock's own key again: `lock:` + `lock:{id}`.
        let doubled = wraps(ak, rk);
        let Some(a_shape) = shape(ak) else { continue };
        // Built around the lock's key: a mistake when the text before it
        // is the lock's own prefix again (`lock:export:` + `lock:export:{}`);
        // `{key}:progress` is a companion key, not a release.
        if doubled {
            let prefix = r_shape.split("{}").next().unwrap_or_default();
            if prefix.is_empty() || !a_shape.starts_with(prefix) {
                continue;
            }
        }
        if !doubled && a_shape == r_shape {
            continue;
        }
        let what = if r.role == Role::Delete {
            "delete"
        } else {
            "release"
        };
        let message = if doubled {
            let prefix = r_shape.split("{}").next().unwrap_or_default();
            format!(
                "this {what} adds `{prefix}` again to the lock's own key {}: it removes `{prefix}{a_shape}`, not the lock on `{a_shape}`",
                key_name(Some(ak)),
            )
        } else {
            format!(
                "this {what} of `{r_shape}` misses the lock taken on `{a_shape}`: the keys differ, so the lock stays until it expires"
            )
        };
        let f = ctx
            .finding(CheckId::MismatchedReleaseKey, r, message)
            .label(format!(
                "{} removes nothing: no lock is held under {}",
                match call_label(ctx, ctx.api(r), r) {
                    l if l.starts_with("the ") => l,
                    l => format!("`{l}`"),
                },
                key_name(Some(rk))
            ))
            .secondary(a.span, format!("the lock is taken on `{a_shape}` here"))
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
