//! Calls of wrappers: functions of this file, or of another file of the
//! crate, that take, release or renew a lock and hand the outcome back
//! ([`crate::model::Wrapper`]). Such a call is a lock site with the inner
//! call's API, expiry and owner check.

use syn::spanned::Spanned;
use syn::Expr;

use super::super::event::*;
use super::super::keys;
use super::super::lockname::is_lock_name;
use super::chain::{Anchor, Chain, Root, SegKind};
use super::result_use::{result_use, Use};
use super::syntax::{end_span, expr_span, mentions};
use super::walk::Walker;
use crate::pack::Role;

impl<'a, 'c, 'ast> Walker<'a, 'c, 'ast> {
    /// Which of the wrapper methods of one name (`keys`) a call on
    /// `receiver` reaches: the one of the receiver's declared type, else
    /// the only one implementing a trait the type stands for (`Arc<dyn
    /// Locker>`, `impl Locker`, `L: Locker`) or several that take the lock
    /// the same way (then named by the trait: `Locker::try_lock`), else,
    /// on `self` in a trait's default body, the only one of this file
    /// implementing that trait.
    fn method_wrapper(&self, keys: &[String], receiver: &Expr) -> Option<(String, Option<String>)> {
        let only = |mut it: std::vec::IntoIter<&String>| match (it.next(), it.next()) {
            (Some(k), None) => Some((k.clone(), None)),
            _ => None,
        };
        // A type alias (of this file, or another file's that this file
        // names) stands for its type.
        let declared = self
            .declared_type(receiver)
            .map(|t| self.cx.aliases.get(&t).cloned().unwrap_or(t));
        if let Some(t) = &declared {
            let head = super::syntax::type_head(t);
            if let Some(k) = keys
                .iter()
                .find(|k| self.wrappers[*k].owner.as_deref() == Some(head))
            {
                return Some((k.clone(), None));
            }
            let traits = super::syntax::traits_of(t, self.cx.bounds, self.cx.aliases);
            if !traits.is_empty() {
                let through: Vec<&String> = keys
                    .iter()
                    .filter(|k| {
                        self.wrappers[*k]
                            .via_trait
                            .as_deref()
                            .is_some_and(|tr| traits.contains(&tr))
                    })
                    .collect();
                // Either implementation may run: followed only when they
                // agree on what a finding would say (the API, whether it
                // sets an expiry, what they hand back, where the key comes
                // from).
                let first = &self.wrappers[*through.first()?];
                let packs = self.cx.packs;
                let agree = through.iter().all(|k| {
                    let w = &self.wrappers[*k];
                    packs.same_lock_api(w.inner.api, first.inner.api)
                        && std::mem::discriminant(&w.inner.expiry)
                            == std::mem::discriminant(&first.inner.expiry)
                        && w.flag_only == first.flag_only
                        && w.key_param == first.key_param
                        && w.key_field == first.key_field
                        && w.owner_param == first.owner_param
                        && w.owner_field == first.owner_field
                        && w.has_self == first.has_self
                });
                return match through.len() {
                    1 => Some((through[0].clone(), None)),
                    _ if agree => Some((through[0].clone(), first.via_trait.clone())),
                    _ => None,
                };
            }
        }
        let on_self = matches!(keys::strip(receiver), Expr::Path(p) if p.path.is_ident("self"));
        if on_self {
            // In a trait's default body, `self` is any implementation.
            let head = declared.as_deref().map(super::syntax::type_head);
            let local: Vec<&String> = keys
                .iter()
                .filter(|k| {
                    let w = &self.wrappers[*k];
                    !w.imported && (head.is_none() || w.via_trait.as_deref() == head)
                })
                .collect();
            return only(local.into_iter());
        }
        None
    }

    /// A call of a function of this file that passes a lock call's outcome
    /// on: a lock site here, with the inner call's API, expiry and owner
    /// check, the key from the argument the wrapper takes it from, and
    /// this call's own use of the result.
    pub(super) fn wrapper_call(
        &mut self,
        chain: &Chain<'ast>,
        top: &'ast Expr,
        use_: &Use,
    ) -> Vec<EventId> {
        if self.wrappers.is_empty() || chain.resolved {
            return Vec::new();
        }
        let src = self.cx.src;
        let found = match &chain.root {
            Root::Call { path, args } => {
                let n = path.segments.len();
                let plain = n == 1 || (n == 2 && path.segments[0].ident == "Self");
                let name = path.segments[n - 1].ident.to_string();
                // Another file's function is also reached through its
                // module path: `crate::locks::acquire(..)`, `locks::acquire(..)`.
                // The module right before the name must be the wrapper's.
                let module_path = |w: &crate::model::Wrapper| {
                    n >= 2
                        && w.module
                            .as_deref()
                            .is_some_and(|m| path.segments[n - 2].ident == m)
                };
                // `Type::name(..)` and `Self::name(..)`: a function of the
                // type's `impl` block, with or without `self`.
                let associated = || {
                    let ty = path.segments[n.checked_sub(2)?].ident.to_string();
                    let ty = if ty == "Self" {
                        self.self_ty.clone()?
                    } else {
                        ty
                    };
                    let key = format!("{ty}::{name}");
                    self.wrappers.get(&key).filter(|w| w.method).map(|_| key)
                };
                let key = match self.wrappers.get(&name) {
                    Some(w) if !w.method && (plain || (w.imported && module_path(w))) => Some(name),
                    _ => associated(),
                };
                key.map(|key| {
                    (
                        key,
                        None,
                        Anchor::Root,
                        args.clone(),
                        expr_span(src, chain.root_expr),
                    )
                })
            }
            _ => None,
        };
        let found = found.or_else(|| {
            chain.segs.iter().enumerate().find_map(|(i, s)| {
                let name = s.method()?;
                let keys = self.wrapper_methods.get(name)?;
                let (key, via) = self.method_wrapper(keys, chain.receiver(i))?;
                Some((
                    key,
                    via,
                    Anchor::Seg(i),
                    s.args().to_vec(),
                    crate::source::Span {
                        start: src.span_of(s.start).start,
                        end: src.span_of(end_span(s.expr)).end,
                    },
                ))
            })
        });
        let Some((name, via, anchor, args, span)) = found else {
            return Vec::new();
        };
        let mut w = self.wrappers[&name].clone();
        // A path call (`Type::name(x, a)`) passes the receiver, if any, as
        // its first argument.
        let by_path = anchor == Anchor::Root;
        let receiver = if by_path {
            args.first().copied().filter(|_| w.has_self)
        } else {
            chain.receiver_of(anchor)
        };
        let arg_of = |i: usize| {
            if w.has_self && !by_path {
                i.checked_sub(1)
            } else {
                Some(i)
            }
        };
        // What the call reaches, and through which wrappers: an annotation
        // of this file's chain covers it by its lines, one of another
        // file's by the purpose that file found.
        let direct_of = |w: &crate::model::Wrapper| Origin {
            file: w.file.clone().filter(|_| w.imported),
            key: w.key(),
        };
        let mut targets = w.targets.clone();
        let mut direct = vec![direct_of(&w)];
        let (layers, chain_purpose) = if w.imported {
            (Vec::new(), w.purpose)
        } else {
            let inner = &w.inner;
            let mut layers = vec![Layer {
                stmt_line: inner.stmt_line,
                last_line: inner.span.end.line.max(inner.stmt_line),
                fn_line: w.fn_line,
            }];
            layers.extend(inner.layers.iter().copied());
            (layers, inner.chain_purpose)
        };
        // The call is the tail of a closure or `async` block: the outcome is
        // handed to whatever runs it, not held here.
        let escapes = self.escaping.contains(&(top as *const Expr));
        // Several implementations that agree: the call is the trait's, and
        // each of them is called (each lock call is reached from here).
        if via.is_some() {
            for k in self.wrapper_methods.get(&w.name).into_iter().flatten() {
                let other = &self.wrappers[k];
                // A call reaches at most MAX_TARGETS lock calls (a hostile
                // trait with thousands of agreeing implementations).
                if other.via_trait == via && direct.len() < MAX_TARGETS {
                    self.wrappers_called.insert(k.clone());
                    if !escapes {
                        self.wrappers_held.insert(k.clone());
                    }
                    if k != &name {
                        targets.extend(other.targets.iter().cloned());
                        direct.push(direct_of(other));
                    }
                }
            }
            w.owner = via;
        }
        targets.truncate(MAX_TARGETS);
        let packs = self.cx.packs;
        let api = packs.api(w.inner.api);
        let mut ev = w.inner;
        if let Some(i) = w.key_param {
            if let Some(a) = arg_of(i).and_then(|i| args.get(i)) {
                let kspan = src.span_of(a.span());
                let norm = keys::normalise(a);
                let init = self.locals.get(&norm).and_then(|b| b.init);
                ev.key = Some(Key {
                    text: src.snippet(&kspan).to_string(),
                    span: kspan,
                    literal: keys::literal(a).or_else(|| init.and_then(keys::literal)),
                    holder_lease: matches!(api.role, Role::Release | Role::Delete)
                        && (keys::embeds_lease_id(a) || init.is_some_and(keys::embeds_lease_id)),
                    norm,
                });
            }
        } else if let (Some(field), Some(r)) = (&w.key_field, receiver.filter(|_| w.method)) {
            // `job_lock.take(con)` with `take` keying on `self.key`.
            let base = keys::normalise(r);
            ev.key = Some(Key {
                text: format!("{}.{field}", src.snippet(&src.span_of(r.span()))),
                span: src.span_of(r.span()),
                literal: None,
                holder_lease: false,
                norm: format!("{base}.{field}"),
            });
        } else if let Some(k) = ev.key.as_mut().filter(|_| w.imported) {
            // The key is the wrapper's own (a constant of its file): its
            // text is kept, and it is shown at the call.
            k.span = span;
        }
        // The owner value, where the wrapper takes it from its caller.
        let owner_arg = w.owner_param.and_then(arg_of).and_then(|i| args.get(i));
        ev.owner_at_call = owner_arg.is_some();
        if let Some(a) = owner_arg {
            ev.owner = Some(self.owner_value(a));
        } else if let (Some(field), Some(r)) = (&w.owner_field, receiver.filter(|_| w.method)) {
            let rspan = src.span_of(r.span());
            ev.owner = Some(Owner {
                norm: format!("{}.{field}", keys::normalise(r)),
                text: format!("{}.{field}", src.snippet(&rspan)),
                span: rspan,
                constant: None,
            });
        } else if let Some(o) = ev.owner.as_mut().filter(|_| w.imported) {
            // The wrapper's own value (a constant of its file), shown at
            // the call.
            o.span = span;
        }
        let binding = match use_ {
            Use::Let { names, .. } | Use::Cond { names } | Use::IfLetNoElse { names } => {
                names.clone()
            }
            _ => Vec::new(),
        };
        let key_lockish = ev.key.as_ref().is_some_and(|k| {
            is_lock_name(self.cx.lock_name, &k.norm)
                || k.literal
                    .as_ref()
                    .is_some_and(|l| is_lock_name(self.cx.lock_name, l))
        });
        ev.lockish = ev.lockish || key_lockish || self.fn_lockish;
        let inside = std::mem::replace(
            &mut ev.result,
            result_use(
                chain,
                anchor,
                use_,
                api.result,
                &api.discard_methods,
                matches!(api.role, Role::Acquire | Role::TryAcquire),
            ),
        );
        ev.func = self.f;
        ev.span = span;
        ev.chain_span = expr_span(src, top);
        ev.executor = crate::model::conn::executor(&src.text, top, ev.chain_span.end.offset);
        ev.stmt_line = self.stmt_line;
        ev.binding = binding;
        ev.guards = self.guards.clone();
        ev.arg_mentions = args.iter().flat_map(|a| mentions(a)).collect();
        ev.mentions = ev.arg_mentions.clone();
        ev.mentions.extend(mentions(chain.root_expr));
        ev.receiver = keys::compact(chain.root_expr);
        ev.layers = layers;
        ev.chain_purpose = chain_purpose;
        ev.targets = targets;
        ev.direct = direct;
        ev.handed_by = None;
        ev.relayed = false;
        ev.reached = None;
        ev.token_dropped = ev.token_dropped || w.flag_only;
        // Its lock call, judged instead, is in the wrapper's file when no
        // call there or elsewhere holds the outcome.
        ev.escapes = escapes;
        // Named as defined, whatever name the file imports it under.
        let own = &w.name;
        let called = match (&w.owner, &w.module) {
            (Some(owner), _) if w.method => format!("{owner}::{own}"),
            (_, Some(module)) if w.imported => format!("{module}::{own}"),
            _ => own.clone(),
        };
        // A recursive wrapper's inner call is itself: named once.
        let inner: Vec<String> = ev
            .wrapper
            .take()
            .map(|inner| {
                inner
                    .split(" → ")
                    .skip_while(|inner| inner.rsplit("::").next() == Some(own.as_str()))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        // A wrapper that can only say "not won" as an `Err` or `None`
        // (`Result<(), Held>`): unwrapping or `?`-ing every layer checks it.
        if let Some(layers) = w.unit_layers.filter(|&n| n > 0) {
            let checked = chain.segs[anchor.from()..]
                .iter()
                .enumerate()
                .filter(|(i, s)| match &s.kind {
                    SegKind::Try => true,
                    SegKind::Method { name, .. } if *i > 0 || anchor == Anchor::Root => {
                        matches!(name.as_str(), "unwrap" | "expect")
                    }
                    _ => false,
                })
                .count();
            let propagated = matches!(
                ev.result,
                ResultUse::Propagated
                    | ResultUse::Discarded {
                        propagated: true,
                        ..
                    }
            );
            if propagated && checked >= layers {
                ev.result = ResultUse::Inspected;
            }
        }
        // A wrapper that turns a failure into success (`.unwrap_or(true)`)
        // hands its callers a reply that cannot be trusted, however they
        // read it: the call site is judged by what the wrapper did.
        if let ResultUse::Swallowed { how } = inside {
            if ev.result.is_bound_or_inspected() || ev.result == ResultUse::IfLetNoElse {
                ev.result = ResultUse::Swallowed {
                    how: swallowed_inside(&how, &called),
                };
            }
        }
        ev.wrapper = Some(
            std::iter::once(called)
                .chain(inner)
                .collect::<Vec<_>>()
                .join(" → "),
        );
        let id = EventId::of(self.model.events.len());
        ev.id = id;
        let (ev_role, ev_lockish) = (ev.role, ev.lockish);
        self.model.events.push(ev);
        // A read through a helper (`get_owner(con, key)`) matters only on a
        // lock's key: a call reading anything else (a cache's `get`) does
        // not make the helper's file a definer its callers reach.
        if ev_role != Role::Read || ev_lockish {
            if !escapes {
                self.wrappers_held.insert(name.clone());
            }
            self.wrappers_called.insert(name);
        }
        self.model.fns[self.f].events.push(id);
        vec![id]
    }
}

/// Most lock calls (and wrappers) one call is known to reach through a
/// trait whose implementations agree.
const MAX_TARGETS: usize = 16;

/// How a wrapper swallowed its inner call's result, told at its call site:
/// "`.unwrap_or(true)` treats a failure as success" becomes
/// "`.unwrap_or(true)` inside `locks::try_lock` treats a failure as success".
fn swallowed_inside(how: &str, wrapper: &str) -> String {
    let code_end = how
        .strip_prefix('`')
        .and_then(|rest| rest.find('`'))
        .map(|i| i + 2);
    match code_end {
        Some(end) => format!("{} inside `{wrapper}`{}", &how[..end], &how[end..]),
        None => format!("{how} (inside `{wrapper}`)"),
    }
}

#[cfg(test)]
mod tests {
    use super::swallowed_inside;

    #[test]
    fn the_swallow_is_placed_inside_the_wrapper() {
        assert_eq!(
            swallowed_inside(
                "`.unwrap_or(true)` treats a failure as success",
                "locks::try_lock"
            ),
            "`.unwrap_or(true)` inside `locks::try_lock` treats a failure as success"
        );
        assert_eq!(
            swallowed_inside("a failure is ignored", "try_lock"),
            "a failure is ignored (inside `try_lock`)"
        );
    }
}
