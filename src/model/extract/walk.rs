//! The statement walk: visits every statement and expression of a function
//! body once, keeps the [`LocalTable`] in step with Rust's block scoping,
//! and hands every call chain to the classifier ([`super::classify`]).

use std::collections::{BTreeSet, HashMap, HashSet};

use syn::spanned::Spanned;
use syn::{Expr, Pat, Stmt};

use super::super::event::*;
use super::chain::{flatten, is_chain, Chain, Root, SegKind};
use super::context::Cx;
use super::locals::{strings_of, Binding, Builder, LocalTable, NameStrings, SetId};
use super::result_use::Use;
use super::syntax::*;

/// Deeper expression nesting than this stops the walk; the file is then
/// reported as not audited rather than risking the stack.
pub const MAX_EXPR_DEPTH: usize = 1000;

pub(super) struct Walker<'a, 'c, 'ast> {
    pub cx: &'a Cx<'c, 'ast>,
    pub model: &'a mut FileModel,
    /// Events replaced by a fuller view of the same builder.
    pub dead: &'a mut HashSet<usize>,
    pub f: usize,
    pub fn_lockish: bool,
    pub locals: LocalTable<'ast>,
    pub guards: Vec<usize>,
    pub stmt_line: usize,
    /// Expressions being walked, outermost first: bounded so that machine-
    /// generated code (a 20,000-term `a + b + …`) cannot exhaust the stack.
    pub depth: usize,
    /// Unexecuted builders that functions of this file return.
    pub returned: &'a HashMap<String, Builder<'ast>>,
    /// What this function returns, when it is an unexecuted builder.
    pub returns: Option<Returned<'ast>>,
    /// The initialiser of the `let` being walked, and the events classified
    /// on it: a builder bound there is replaced where it runs.
    pub let_init: Option<*const Expr>,
    pub let_events: Vec<usize>,
}

impl NameStrings for Walker<'_, '_, '_> {
    fn local_strings(&self, name: &str) -> Option<SetId> {
        self.locals.get(name).map(|b| b.strings)
    }
    fn const_strings(&self, name: &str) -> Option<SetId> {
        self.cx.const_strings(name)
    }
}

/// An unexecuted builder a function hands back, and the events its body
/// made of it (its callers judge the command where they run it).
pub(super) struct Returned<'ast> {
    pub builder: Builder<'ast>,
    pub events: Vec<usize>,
}

/// A condition being walked: the events created inside it belong to it.
pub(super) struct GuardMark {
    guard: usize,
    first_event: usize,
}

impl<'a, 'c, 'ast> Walker<'a, 'c, 'ast> {
    /// Walks a function body with its parameters bound.
    pub fn body(&mut self, params: &[(String, Option<String>)], body: &'ast syn::Block) {
        self.locals.push_scope();
        for (name, ty) in params {
            let mut b = Binding::new(name.clone());
            b.ty = ty.clone();
            self.locals.declare(b);
        }
        let n = body.stmts.len();
        for (i, s) in body.stmts.iter().enumerate() {
            match s {
                Stmt::Expr(tail, None) if i + 1 == n => self.returning(tail),
                _ => self.stmt(s),
            }
        }
        self.locals.pop_scope();
    }

    /// Walks a value the function hands back (its tail, or `return v`).
    fn returning(&mut self, e: &'ast Expr) {
        let saved = self.stmt_line;
        self.stmt_line = start_span(e).start().line;
        let outer = (self.let_init.take(), std::mem::take(&mut self.let_events));
        self.let_init = Some(e as *const Expr);
        self.expr(e, Use::Value);
        let events = std::mem::take(&mut self.let_events);
        (self.let_init, self.let_events) = outer;
        self.note_return(e, events);
        self.stmt_line = saved;
    }

    pub fn block(&mut self, b: &'ast syn::Block) {
        self.locals.push_scope();
        self.block_stmts(b);
        self.locals.pop_scope();
    }

    fn block_stmts(&mut self, b: &'ast syn::Block) {
        for s in &b.stmts {
            self.stmt(s);
        }
    }

    /// A value the function hands back: an unexecuted builder is recorded
    /// so that its callers in this file judge it where they run it.
    fn note_return(&mut self, e: &'ast Expr, mut events: Vec<usize>) {
        if self.returns.is_some() {
            return;
        }
        let Some(builder) = self.builder_of(e) else {
            return;
        };
        if let Expr::Path(p) = super::super::keys::strip(e) {
            if let Some(b) = p
                .path
                .get_ident()
                .and_then(|i| self.locals.get(&i.to_string()))
            {
                events.extend(b.builder_events.iter().copied());
            }
        }
        self.returns = Some(Returned { builder, events });
    }

    fn stmt(&mut self, s: &'ast Stmt) {
        let saved = self.stmt_line;
        match s {
            Stmt::Local(l) => {
                self.stmt_line = l.let_token.span.start().line;
                let names = pat_names(&l.pat);
                let unit = pat_is_unit_typed(&l.pat);
                if let Some(init) = &l.init {
                    let use_ = if is_wild(&l.pat) {
                        Use::LetWild { unit }
                    } else if init.diverge.is_some() {
                        // `let Some(x) = acquire() else { return }` and
                        // `let Ok(g) = ..` inspect the value.
                        Use::Cond {
                            names: names.clone(),
                        }
                    } else {
                        Use::Let {
                            names: names.clone(),
                            unit,
                        }
                    };
                    let outer = (self.let_init.take(), std::mem::take(&mut self.let_events));
                    self.let_init = Some(&*init.expr as *const Expr);
                    self.expr(&init.expr, use_);
                    let events = std::mem::take(&mut self.let_events);
                    (self.let_init, self.let_events) = outer;
                    if let Some((_, d)) = &init.diverge {
                        self.expr(d, Use::Value);
                    }
                    let offset = self.cx.src.span_of(l.let_token.span).start.offset;
                    self.model.fns[self.f].lets.push(LetBinding {
                        names: names.clone(),
                        mentions: mentions(&init.expr),
                        offset,
                    });
                    self.bind(&l.pat, Some(&init.expr), events);
                } else {
                    self.bind(&l.pat, None, Vec::new());
                }
            }
            Stmt::Expr(e, semi) => {
                self.stmt_line = start_span(e).start().line;
                if semi.is_some() && self.extend_builder(e) {
                    self.stmt_line = saved;
                    return;
                }
                let use_ = if semi.is_some() {
                    Use::Stmt
                } else {
                    Use::Value
                };
                self.expr(e, use_);
            }
            Stmt::Macro(m) => {
                self.stmt_line = m.mac.path.span().start().line;
                self.mac(&m.mac, Use::Stmt, None);
            }
            Stmt::Item(_) => {}
        }
        self.stmt_line = saved;
    }

    /// Binds the names of `pat`. A name that is the whole pattern gets the
    /// initialiser (its strings, builder and type); parts of a destructured
    /// tuple get the matching element; any other name shadows whatever it
    /// names outside, with nothing known of its value.
    fn bind(&mut self, pat: &'ast Pat, init: Option<&'ast Expr>, events: Vec<usize>) {
        let pat_ty = pat_type(pat).map(type_text);
        let pat = strip_type(pat);
        match (pat, init.map(super::super::keys::strip)) {
            (Pat::Ident(i), _) if i.subpat.is_none() => {
                let mut b = Binding::new(i.ident.to_string());
                if let Some(e) = init {
                    b.init = Some(e);
                    b.strings = self.value_strings(e);
                    b.builder = self.builder_of(e);
                    b.ty = pat_ty.or_else(|| self.type_of(e));
                    if b.builder.is_some() {
                        b.builder_events = events;
                    }
                } else {
                    b.ty = pat_ty;
                }
                self.locals.declare(b);
            }
            (Pat::Tuple(t), Some(Expr::Tuple(v))) if t.elems.len() == v.elems.len() => {
                for (p, e) in t.elems.iter().zip(v.elems.iter()) {
                    self.bind(p, Some(e), Vec::new());
                }
            }
            _ => self.bind_opaque(pat),
        }
    }

    /// Binds every name of a pattern with nothing known of its value.
    fn bind_opaque(&mut self, pat: &Pat) {
        for n in pat_names(pat) {
            self.locals.declare(Binding::new(n));
        }
    }

    /// The strings a bound value can hold. A call that has run (`.await`,
    /// `?`) yields a reply, not the text it was sent.
    fn value_strings(&self, e: &'ast Expr) -> SetId {
        if is_chain(e) && flatten(self.cx.macros, e).runs() {
            return SetId::EMPTY;
        }
        strings_of(e, &self.cx.strings, self)
    }

    /// An unexecuted builder `e` evaluates to: a constructor chain that has
    /// not run (`redis::cmd("SET").arg(k)`, `Locks::builder()…build()`), a
    /// local holding one, or a call of a function of this file that
    /// returns one.
    fn builder_of(&self, e: &'ast Expr) -> Option<Builder<'ast>> {
        let e = super::super::keys::strip(e);
        if let Expr::Path(p) = e {
            let name = p.path.get_ident()?.to_string();
            return self.locals.get(&name).and_then(|b| b.builder.clone());
        }
        if !is_chain(e) {
            return None;
        }
        let c = self.resolve_chain(flatten(self.cx.macros, e));
        if c.runs() || !(matches!(c.root, Root::Call { .. }) || c.resolved) {
            return None;
        }
        Some(Builder {
            root: c.root,
            root_expr: c.root_expr,
            segs: c.segs,
        })
    }

    /// What type a value evidently has: `Type::new(..)`, `Type { .. }`, a
    /// local or field of a known type.
    fn type_of(&self, e: &'ast Expr) -> Option<String> {
        match super::super::keys::strip(e) {
            Expr::Struct(s) => Some(super::super::keys::compact(&s.path)),
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) if p.path.segments.len() >= 2 => {
                    let ty = &p.path.segments[p.path.segments.len() - 2];
                    let name = ty.ident.to_string();
                    name.chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_uppercase())
                        .then(|| super::super::keys::compact(ty))
                }
                _ => None,
            },
            Expr::Path(p) => {
                let name = p.path.get_ident()?.to_string();
                self.locals.get(&name).and_then(|b| b.ty.clone())
            }
            Expr::Field(f) => self.field_type(f),
            Expr::Try(t) => self.type_of(&t.expr),
            _ => None,
        }
    }

    /// `self.api` where the struct declares `api: Api<Lease>`.
    pub fn field_type(&self, f: &syn::ExprField) -> Option<String> {
        let syn::Member::Named(field) = &f.member else {
            return None;
        };
        let base_ty = match super::super::keys::strip(&f.base) {
            Expr::Path(p) => {
                let name = p.path.get_ident()?.to_string();
                self.locals.get(&name).and_then(|b| b.ty.clone())?
            }
            Expr::Field(inner) => self.field_type(inner)?,
            _ => return None,
        };
        self.cx
            .fields
            .get(&(type_head(&base_ty).to_string(), field.to_string()))
            .cloned()
    }

    /// `cmd.arg(k).arg("NX");` on a builder held in a local: the builder
    /// grows, nothing runs, and the command is judged where it does.
    fn extend_builder(&mut self, e: &'ast Expr) -> bool {
        if !is_chain(e) {
            return false;
        }
        let c = flatten(self.cx.macros, e);
        let Some(var) = &c.var else {
            return false;
        };
        if c.segs.is_empty()
            || c.runs()
            || !c.segs.iter().all(|s| {
                s.method()
                    .is_some_and(|m| self.cx.packs.builder_methods.contains(m))
            })
        {
            return false;
        }
        let Some(b) = self.locals.get_mut(var) else {
            return false;
        };
        let Some(builder) = b.builder.as_mut() else {
            return false;
        };
        builder.segs.extend(c.segs.iter().cloned());
        for s in c.segs {
            if let SegKind::Method { args, .. } = s.kind {
                for a in args {
                    self.expr(a, Use::Value);
                }
            }
        }
        true
    }

    pub fn expr(&mut self, e: &'ast Expr, use_: Use) {
        if self.depth >= MAX_EXPR_DEPTH {
            // No `e.span()` here: it would walk the deep tree again.
            self.model.too_deep.get_or_insert(self.stmt_line);
            return;
        }
        self.depth += 1;
        self.expr_inner(e, use_);
        self.depth -= 1;
    }

    fn cond_use(use_: &Use) -> Use {
        if matches!(use_, Use::Cond { .. }) {
            Use::Cond { names: vec![] }
        } else {
            Use::Value
        }
    }

    fn expr_inner(&mut self, e: &'ast Expr, use_: Use) {
        match e {
            Expr::MethodCall(_) | Expr::Call(_) | Expr::Await(_) | Expr::Try(_) => {
                self.chain(e, use_);
            }
            Expr::Macro(m) => self.mac(&m.mac, use_, Some(e)),
            Expr::Paren(p) => self.expr(&p.expr, use_),
            Expr::Group(g) => self.expr(&g.expr, use_),
            Expr::Field(f) if is_chain(&f.base) => self.chain(e, use_),
            Expr::Reference(r) => self.expr(&r.expr, Use::Value),
            Expr::Unary(u) => self.expr(&u.expr, Self::cond_use(&use_)),
            Expr::Binary(b) => {
                let inner = Self::cond_use(&use_);
                self.expr(&b.left, inner.clone());
                self.expr(&b.right, inner);
            }
            Expr::If(i) => self.if_expr(i),
            Expr::Match(m) => {
                let g = self.guard_start(&m.expr);
                self.expr(&m.expr, Use::Cond { names: vec![] });
                let g = self.guard_end(g);
                self.guards.push(g);
                for arm in &m.arms {
                    self.locals.push_scope();
                    self.bind_opaque(&arm.pat);
                    if let Some((_, guard)) = &arm.guard {
                        self.expr(guard, Use::Cond { names: vec![] });
                    }
                    self.expr(&arm.body, Use::Value);
                    self.locals.pop_scope();
                }
                self.guards.pop();
            }
            Expr::Let(l) => {
                self.expr(
                    &l.expr,
                    Use::Cond {
                        names: pat_names(&l.pat),
                    },
                );
                // The names are visible in the rest of the condition and
                // the branch: the caller opened a scope for them.
                self.bind_opaque(&l.pat);
            }
            Expr::Block(b) => self.block(&b.block),
            Expr::Unsafe(b) => self.block(&b.block),
            Expr::Async(b) => self.block(&b.block),
            Expr::TryBlock(b) => self.block(&b.block),
            Expr::Loop(l) => self.block(&l.body),
            Expr::While(w) => {
                self.locals.push_scope();
                let g = self.guard_start(&w.cond);
                self.expr(&w.cond, Use::Cond { names: vec![] });
                let g = self.guard_end(g);
                self.guards.push(g);
                self.block(&w.body);
                self.guards.pop();
                self.locals.pop_scope();
            }
            Expr::ForLoop(f) => {
                self.expr(&f.expr, Use::Value);
                self.locals.push_scope();
                self.bind_opaque(&f.pat);
                self.block(&f.body);
                self.locals.pop_scope();
            }
            Expr::Closure(c) => {
                self.locals.push_scope();
                for p in &c.inputs {
                    self.bind_opaque(p);
                }
                self.expr(&c.body, Use::Value);
                self.locals.pop_scope();
            }
            Expr::Assign(a) => {
                self.expr(&a.right, Use::Value);
                let target = assign_target(&a.left);
                let offset = self.cx.src.span_of(a.eq_token.span).start.offset;
                self.model.fns[self.f].assigns.push(Assign {
                    target,
                    mentions: mentions(&a.right),
                    offset,
                });
                self.reassign(&a.left, &a.right);
                self.expr(&a.left, Use::Value);
            }
            Expr::Return(r) => {
                if let Some(v) = &r.expr {
                    self.returning(v);
                }
            }
            Expr::Break(b) => {
                if let Some(v) = &b.expr {
                    self.expr(v, Use::Value);
                }
            }
            Expr::Struct(s) => {
                for f in &s.fields {
                    self.expr(&f.expr, Use::Value);
                }
                if let Some(r) = &s.rest {
                    self.expr(r, Use::Value);
                }
            }
            Expr::Tuple(t) => t.elems.iter().for_each(|x| self.expr(x, Use::Value)),
            Expr::Array(t) => t.elems.iter().for_each(|x| self.expr(x, Use::Value)),
            Expr::Index(i) => {
                self.expr(&i.expr, Use::Value);
                self.expr(&i.index, Use::Value);
            }
            Expr::Cast(c) => self.expr(&c.expr, Use::Value),
            Expr::Range(r) => {
                if let Some(s) = &r.start {
                    self.expr(s, Use::Value);
                }
                if let Some(s) = &r.end {
                    self.expr(s, Use::Value);
                }
            }
            Expr::Field(f) => self.expr(&f.base, Use::Value),
            Expr::Repeat(r) => self.expr(&r.expr, Use::Value),
            Expr::Yield(y) => {
                if let Some(v) = &y.expr {
                    self.expr(v, Use::Value);
                }
            }
            _ => {}
        }
    }

    /// `x = value;` gives the binding `x` a new value.
    fn reassign(&mut self, left: &'ast Expr, right: &'ast Expr) {
        let Expr::Path(p) = super::super::keys::strip(left) else {
            return;
        };
        let Some(name) = p.path.get_ident().map(|i| i.to_string()) else {
            return;
        };
        if self.locals.get(&name).is_none() {
            return;
        }
        let strings = self.value_strings(right);
        let builder = self.builder_of(right);
        let ty = self.type_of(right);
        if let Some(b) = self.locals.get_mut(&name) {
            b.init = Some(right);
            b.strings = strings;
            b.builder = builder;
            b.builder_events.clear();
            if ty.is_some() {
                b.ty = ty;
            }
        }
    }

    fn if_expr(&mut self, i: &'ast syn::ExprIf) {
        self.locals.push_scope();
        let g = self.guard_start(&i.cond);
        match &*i.cond {
            Expr::Let(l) if i.else_branch.is_none() && pat_is_ok_some(&l.pat) => {
                self.expr(
                    &l.expr,
                    Use::IfLetNoElse {
                        names: pat_names(&l.pat),
                    },
                );
                self.bind_opaque(&l.pat);
            }
            other => self.expr(other, Use::Cond { names: vec![] }),
        }
        let g = self.guard_end(g);
        self.guards.push(g);
        self.block(&i.then_branch);
        self.locals.pop_scope();
        if let Some((_, e)) = &i.else_branch {
            self.expr(e, Use::Value);
        }
        self.guards.pop();
    }

    fn guard_start(&mut self, cond: &'ast Expr) -> GuardMark {
        let f = &mut self.model.fns[self.f];
        f.guards.push(Guard {
            span: self.cx.src.span_of(cond.span()),
            mentions: mentions(cond),
            events: Vec::new(),
        });
        GuardMark {
            guard: f.guards.len() - 1,
            first_event: self.model.events.len(),
        }
    }

    /// Events created since [`Self::guard_start`] belong to the condition.
    fn guard_end(&mut self, g: GuardMark) -> usize {
        let ids: Vec<usize> = (g.first_event..self.model.events.len()).collect();
        self.model.fns[self.f].guards[g.guard].events = ids;
        g.guard
    }

    fn mac(&mut self, m: &'ast syn::Macro, use_: Use, as_expr: Option<&'ast Expr>) {
        let name = macro_name(m);
        if LOG_MACROS.contains(&name.as_str()) {
            let span = self.cx.src.span_of(m.path.span());
            self.model.fns[self.f].logs.push(LogUse {
                mentions: token_idents(&m.tokens),
                span,
            });
            return;
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

    /// Continues a chain rooted at a builder: one held in a local, or one
    /// a function of this file returns.
    pub fn resolve_chain(&self, mut c: Chain<'ast>) -> Chain<'ast> {
        let from_local = c
            .var
            .as_ref()
            .and_then(|v| self.locals.get(v))
            .and_then(|b| b.builder.as_ref());
        let from_fn = match &c.root {
            Root::Call { path, .. } if from_local.is_none() => {
                let n = path.segments.len();
                let first = path.segments[0].ident.to_string();
                if n == 1 || (n == 2 && first == "Self") {
                    path.segments
                        .last()
                        .and_then(|s| self.returned.get(&s.ident.to_string()))
                } else {
                    None
                }
            }
            _ => None,
        };
        let Some(b) = from_local.or(from_fn) else {
            return c;
        };
        let mut all = b.segs.clone();
        c.inherited = all.len();
        all.extend(c.segs);
        Chain {
            root: b.root.clone(),
            root_expr: b.root_expr,
            segs: all,
            inherited: c.inherited,
            resolved: true,
            var: c.var,
        }
    }

    fn chain(&mut self, e: &'ast Expr, use_: Use) {
        let raw = flatten(self.cx.macros, e);
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

    fn record_calls(&mut self, chain: &Chain<'ast>) {
        if let Root::Call { path, args } = &chain.root {
            let name = path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            let first = path.segments[0].ident.to_string();
            let n = path.segments.len();
            let this_file =
                (n == 1 || (n == 2 && first == "Self")) && self.cx.local_fns.contains(&name);
            // A function of this crate in another file: a bare name, or a
            // path through `crate`, `self`, `super` or a module this file
            // declares. Such calls are followed across files when a fencing
            // question needs it.
            let crate_path = n == 1
                || matches!(first.as_str(), "crate" | "self" | "super" | "Self")
                || self.cx.modules.contains(&first);
            if (this_file || crate_path) && !chain.resolved {
                let span = expr_span(self.cx.src, chain.root_expr);
                self.model.fns[self.f].calls.push(CallSite {
                    name,
                    method: false,
                    args: args.iter().map(|a| mentions(a)).collect(),
                    receiver: BTreeSet::new(),
                    span,
                    offset: span.start.offset,
                    local: this_file,
                });
            }
        }
        for (i, s) in chain.segs.iter().enumerate().skip(chain.inherited) {
            if let SegKind::Method { name, args, .. } = &s.kind {
                if self.cx.local_fns.contains(name) {
                    let start = self.cx.src.span_of(s.start).start;
                    let end = expr_span(self.cx.src, s.expr).end;
                    let receiver = if i == 0 {
                        mentions(chain.root_expr)
                    } else {
                        mentions(chain.segs[i - 1].expr)
                    };
                    self.model.fns[self.f].calls.push(CallSite {
                        local: true,
                        name: name.clone(),
                        method: true,
                        args: args.iter().map(|a| mentions(a)).collect(),
                        receiver,
                        span: crate::source::Span { start, end },
                        offset: start.offset,
                    });
                }
            }
        }
    }
}

/// `x: T` → `x`.
fn strip_type(p: &Pat) -> &Pat {
    match p {
        Pat::Type(t) => strip_type(&t.pat),
        other => other,
    }
}
