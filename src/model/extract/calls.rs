//! Walking call chains and macro calls: each chain is classified once,
//! then the expressions nested in it (the root's and every own method's
//! arguments) are walked; calls that may reach a function of this crate
//! are recorded for the fencing check.

use std::collections::BTreeSet;

use syn::spanned::Spanned;
use syn::Expr;

use super::super::event::*;
use super::chain::{flatten, is_chain, Chain, Root, SegKind};
use super::result_use::Use;
use super::syntax::*;
use super::walk::Walker;

impl<'a, 'c, 'ast> Walker<'a, 'c, 'ast> {
    pub(super) fn mac(&mut self, m: &'ast syn::Macro, use_: Use, as_expr: Option<&'ast Expr>) {
        let name = macro_name(m);
        if LOG_MACROS.contains(&name.as_str()) {
            let span = self.cx.src.span_of(m.path.span());
            self.model.fns[self.f].logs.push(LogUse {
                mentions: token_idents(&m.tokens),
                span,
            });
            return;
        }
        if name == "json" {
            // A Lease written as JSON: `"leaseDurationSeconds": 15`.
            match json_lease_seconds(m.tokens.clone(), 0) {
                Some(Some((span, secs))) => {
                    let span = self.cx.src.span_of(span);
                    self.note_lease_ttl(span, secs * 1000.0);
                }
                Some(None) => self.model.fns[self.f].lease_ttl_unknown = true,
                None => {}
            }
        }
        match (as_expr, self.cx.macros.get(&super::chain::macro_key(m))) {
            (Some(e), Some(_)) => self.chain(e, use_),
            (None, Some(args)) => {
                for a in args {
                    self.expr(a, Use::Value);
                }
            }
            _ => {}
        }
    }

    pub(super) fn chain(&mut self, e: &'ast Expr, use_: Use) {
        let raw = flatten(self.cx.macros, self.cx.packs, e);
        // The root's own arguments (a builder continued from a local was
        // walked where it was built; a function of this file that returns
        // one was walked in its body, but its arguments are walked here).
        let own_root_args: Vec<&'ast Expr> = match &raw.root {
            Root::Call { args, .. } | Root::Macro { args, .. } => args.clone(),
            _ => Vec::new(),
        };
        let root_expr = raw.root_expr;
        let chain = self.resolve_chain(raw);
        let ids = self.classify(&chain, e, &use_);
        if self.let_init == Some(e as *const Expr) {
            self.let_events.extend(ids);
        }
        self.record_calls(&chain);
        // Walk nested expressions: the root's and every own segment's arguments.
        for a in own_root_args {
            self.expr(a, Use::Value);
        }
        // A root that is itself a call of a non-path (`(self.f)(x)`,
        // `make()(x)`) or an unparsed macro: walk its parts, never the
        // root again (it would flatten to this same chain).
        if matches!(chain.root, Root::Other) && !chain.resolved {
            match root_expr {
                Expr::Call(c) => {
                    self.expr(&c.func, Use::Value);
                    for a in &c.args {
                        self.expr(a, Use::Value);
                    }
                }
                Expr::Macro(_) => {}
                other if !is_chain(other) => self.expr(other, Use::Value),
                _ => {}
            }
        }
        for s in &chain.segs[chain.inherited..] {
            if let SegKind::Method { args, .. } = &s.kind {
                for a in args.clone() {
                    self.expr(a, Use::Value);
                }
            }
        }
    }

    pub(super) fn record_calls(&mut self, chain: &Chain<'ast>) {
        self.record_held_checks(chain);
        if let Root::Call { path, args } = &chain.root {
            let name = path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            let first = path.segments[0].ident.to_string();
            let n = path.segments.len();
            // `Type::f(..)` of a type whose `impl` this file holds is this
            // file's function too, whatever a pack calls its name.
            let this_file = ((n == 1 || (n == 2 && first == "Self"))
                && self.cx.local_fns.contains(&name))
                || (n == 2 && self.cx.methods.contains(&(first.clone(), name.clone())));
            // A function of this crate in another file: a bare name, or a
            // path through `crate`, `self`, `super` or a module this file
            // declares. Such calls are followed across files when a fencing
            // question needs it.
            // `Store::open(..)`: an associated function of a type, which
            // the crate may define in another file.
            let type_path = n == 2
                && first != "Self"
                && first.starts_with(|c: char| c.is_ascii_uppercase())
                && !self.cx.packs.call_names.contains(name.as_str());
            let crate_path = n == 1
                || type_path
                || matches!(first.as_str(), "crate" | "self" | "super" | "Self")
                || self.cx.modules.contains(&first);
            // `Some(..)`, `Ok(..)`, `Wrapper(..)`: a bare name in upper
            // camel case constructs a value, it calls no function.
            let constructor = n == 1 && name.starts_with(|c: char| c.is_ascii_uppercase());
            if (this_file || crate_path) && !chain.resolved && !constructor {
                let span = expr_span(self.cx.src, chain.root_expr);
                let owner = (type_path && !this_file).then(|| first.clone());
                let module = if owner.is_some() {
                    None
                } else if n >= 2 {
                    Some(path.segments[n - 2].ident.to_string())
                        .filter(|m| !matches!(m.as_str(), "self" | "super" | "Self"))
                } else {
                    self.cx.use_modules.get(&name).cloned()
                };
                // `put(..)` after `use crate::store::write as put;`.
                let name = match self.cx.use_renames.get(&name) {
                    Some(orig) if n == 1 && !this_file => orig.clone(),
                    _ => name,
                };
                self.model.fns[self.f].calls.push(CallSite {
                    name,
                    method: false,
                    args: args.iter().map(|a| mentions(a)).collect(),
                    receiver: BTreeSet::new(),
                    span,
                    offset: span.start.offset,
                    local: this_file,
                    module,
                    owner,
                });
            }
        }
        for (i, s) in chain.segs.iter().enumerate().skip(chain.inherited) {
            let SegKind::Method { name, args, .. } = &s.kind else {
                continue;
            };
            let receiver = chain.receiver(i);
            // A method of this file; else a method of a type the crate
            // defines elsewhere, on a receiver whose type is declared
            // (`store: &Store`): the fencing check may follow it into that
            // type's `impl`. A name a pack knows is the client's.
            let local = self.cx.local_fns.contains(name);
            let owner = if local || self.cx.packs.call_names.contains(name.as_str()) {
                None
            } else {
                self.declared_type(receiver)
                    .map(|t| super::syntax::type_head(&t).to_string())
                    .filter(|h| h.starts_with(|c: char| c.is_ascii_uppercase()) && h != "Self")
            };
            if !local && owner.is_none() {
                continue;
            }
            let start = self.cx.src.span_of(s.start).start;
            let end = expr_span(self.cx.src, s.expr).end;
            self.model.fns[self.f].calls.push(CallSite {
                local,
                name: name.clone(),
                method: true,
                args: args.iter().map(|a| mentions(a)).collect(),
                receiver: mentions(receiver),
                span: crate::source::Span { start, end },
                offset: start.offset,
                module: None,
                owner,
            });
        }
    }

    /// A lease's constant time to live, in milliseconds, once however often
    /// its statement is walked.
    pub(super) fn note_lease_ttl(&mut self, span: crate::source::Span, ms: f64) {
        let f = &mut self.model.fns[self.f];
        if f.lease_ttls.len() >= crate::model::MAX_PACED {
            // More than the model keeps: which lease is which is unknown.
            f.lease_ttl_unknown = true;
            return;
        }
        if (0.0..1e15).contains(&ms) && !f.lease_ttls.iter().any(|(at, _)| *at == span) {
            f.lease_ttls.push((span, ms as u64));
        }
    }

    /// A struct-literal field that sets a lease's time to live: a
    /// Kubernetes `LeaseSpec { lease_duration_seconds: Some(15), .. }`, or
    /// kube-leader-election's `LeaseLockParams { lease_ttl:
    /// Duration::from_secs(15), .. }`.
    pub(super) fn note_lease_field(&mut self, name: &str, value: &Expr) {
        let ms = match name {
            "lease_duration_seconds" => {
                let v = match crate::model::keys::strip(value) {
                    Expr::Call(c)
                        if c.args.len() == 1
                            && matches!(&*c.func, Expr::Path(p) if p.path.is_ident("Some")) =>
                    {
                        &c.args[0]
                    }
                    v => v,
                };
                number(v, self.cx.consts, 0).map(|s| s * 1000.0)
            }
            "lease_ttl" => duration_millis(value, self.cx.consts, 0).map(|ms| ms as f64),
            _ => None,
        };
        match ms {
            Some(ms) => {
                let span = expr_span(self.cx.src, value);
                self.note_lease_ttl(span, ms);
            }
            // `None` for a Lease's duration says nothing; anything else
            // is a time to live the code computes.
            None if matches!(name, "lease_duration_seconds" | "lease_ttl")
                && !super::syntax::is_none(value) =>
            {
                self.model.fns[self.f].lease_ttl_unknown = true;
            }
            None => {}
        }
    }

    /// A call asking whether the lock is still held, once however often
    /// its statement is walked.
    fn note_held_check(&mut self, c: crate::model::event::HeldCheck) {
        let checks = &mut self.model.fns[self.f].held_checks;
        if checks.len() < crate::model::MAX_PACED && !checks.iter().any(|h| h.span == c.span) {
            checks.push(c);
        }
    }

    /// A wait of the function, once however often its statement is walked
    /// (a `let`'s value is walked again when its binding is resolved).
    fn note_pause(&mut self, p: crate::model::event::Pause) {
        let pauses = &mut self.model.fns[self.f].pauses;
        // Kept up to a bound (a function past it is not judged by the
        // checks that read waits).
        if pauses.len() < crate::model::MAX_PACED
            && !pauses.iter().any(|q| q.span == p.span && q.kind == p.kind)
        {
            pauses.push(p);
        }
    }

    /// The calls of the chain whose name asks whether the lock is still
    /// held (`self.is_leader()`, `locks::still_holds(..)`), for the fencing
    /// check to say why such a check is no fence.
    fn record_held_checks(&mut self, chain: &Chain<'ast>) {
        use crate::model::event::{asks_if_held, HeldCheck, Pause, PauseKind};
        if let Root::Call { path, args } = &chain.root {
            if let Some(last) = path.segments.last() {
                let name = last.ident.to_string();
                let kind = match name.as_str() {
                    "sleep" if args.len() == 1 => Some(PauseKind::Sleep),
                    "interval" if args.len() == 1 => Some(PauseKind::Interval),
                    "interval_at" if args.len() == 2 => Some(PauseKind::Interval),
                    _ => None,
                };
                if let Some(kind) = kind {
                    let millis = args
                        .last()
                        .and_then(|d| duration_millis(d, self.cx.consts, 0));
                    let span = expr_span(self.cx.src, chain.root_expr);
                    let guards = self.guards.clone();
                    self.note_pause(Pause {
                        span,
                        kind,
                        millis,
                        guards,
                    });
                }
                if asks_if_held(&name) {
                    let span = expr_span(self.cx.src, chain.root_expr);
                    self.note_held_check(HeldCheck { name, span });
                }
            }
        }
        for s in chain.segs.iter().skip(chain.inherited) {
            let SegKind::Method { name, .. } = &s.kind else {
                continue;
            };
            // etcd's `lease_grant(ttl_seconds, options)`: the time to live
            // its keep-alive must beat.
            if name == "lease_grant" {
                if let SegKind::Method { args, .. } = &s.kind {
                    let secs = args.first().and_then(|a| number(a, self.cx.consts, 0));
                    if secs.is_none() {
                        self.model.fns[self.f].lease_ttl_unknown = true;
                    }
                    if let Some(secs) = secs {
                        let start = self.cx.src.span_of(s.start).start;
                        let end = expr_span(self.cx.src, s.expr).end;
                        let span = crate::source::Span { start, end };
                        self.note_lease_ttl(span, secs * 1000.0);
                    }
                }
            }
            if name == "tick" {
                let start = self.cx.src.span_of(s.start).start;
                let end = expr_span(self.cx.src, s.expr).end;
                let guards = self.guards.clone();
                self.note_pause(Pause {
                    span: crate::source::Span { start, end },
                    kind: PauseKind::Tick,
                    millis: None,
                    guards,
                });
            }
            if asks_if_held(name) {
                let start = self.cx.src.span_of(s.start).start;
                let end = expr_span(self.cx.src, s.expr).end;
                self.note_held_check(HeldCheck {
                    name: name.clone(),
                    span: crate::source::Span { start, end },
                });
            }
        }
    }
}

/// The first `"leaseDurationSeconds": N` of a `json!` body, at any depth
/// (a few levels of objects): the number with its span, or `Some(None)`
/// when the value is not a number literal.
fn json_lease_seconds(
    tokens: proc_macro2::TokenStream,
    depth: usize,
) -> Option<Option<(proc_macro2::Span, f64)>> {
    use proc_macro2::TokenTree;
    if depth > 8 {
        return None;
    }
    let list: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, t) in list.iter().enumerate() {
        match t {
            TokenTree::Literal(l) if l.to_string() == "\"leaseDurationSeconds\"" => {
                let colon =
                    matches!(list.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                if !colon {
                    continue;
                }
                let value = match list.get(i + 2) {
                    Some(TokenTree::Literal(n)) => match syn::Lit::new(n.clone()) {
                        syn::Lit::Int(v) => v
                            .base10_parse::<u32>()
                            .ok()
                            .map(|secs| (n.span(), f64::from(secs))),
                        _ => None,
                    },
                    // `null`: no duration, which says nothing.
                    Some(TokenTree::Ident(id)) if id == "null" => continue,
                    _ => None,
                };
                return Some(value);
            }
            TokenTree::Group(g) => {
                if let Some(found) = json_lease_seconds(g.stream(), depth + 1) {
                    return Some(found);
                }
            }
            _ => {}
        }
    }
    None
}

/// The milliseconds a `Duration` spells as a constant:
/// `Duration::from_secs(20)`, `from_millis(500)`, `from_secs_f64(1.5)`,
/// `from_mins(1)`, or a `const` of the file holding one. `None` for
/// anything computed.
pub(super) fn duration_millis(
    e: &Expr,
    consts: &std::collections::HashMap<String, &Expr>,
    depth: usize,
) -> Option<u64> {
    match crate::model::keys::strip(e) {
        Expr::Call(c) if c.args.len() == 1 => {
            let Expr::Path(p) = &*c.func else { return None };
            let unit = p.path.segments.last()?.ident.to_string();
            let per: f64 = match unit.as_str() {
                "from_millis" => 1.0,
                "from_secs" | "from_secs_f64" | "from_secs_f32" => 1000.0,
                "from_mins" => 60_000.0,
                "from_hours" => 3_600_000.0,
                _ => return None,
            };
            let n = number(&c.args[0], consts, depth)?;
            let ms = n * per;
            ((0.0..1e15).contains(&ms)).then_some(ms as u64)
        }
        Expr::Path(p) if depth < 4 => {
            let name = p.path.get_ident()?.to_string();
            duration_millis(consts.get(&name)?, consts, depth + 1)
        }
        _ => None,
    }
}

/// A number literal (`30`, `30_000`, `1.5`), or a `const` of the file
/// holding one.
pub(super) fn number(
    e: &Expr,
    consts: &std::collections::HashMap<String, &Expr>,
    depth: usize,
) -> Option<f64> {
    match crate::model::keys::strip(e) {
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => i.base10_parse::<u64>().ok().map(|n| n as f64),
            syn::Lit::Float(f) => f.base10_parse::<f64>().ok(),
            _ => None,
        },
        Expr::Path(p) if depth < 4 => {
            let name = p.path.get_ident()?.to_string();
            number(consts.get(&name)?, consts, depth + 1)
        }
        _ => None,
    }
}
