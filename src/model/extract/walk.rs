//! The statement walk: visits every statement and expression of a function
//! body once, keeps the [`LocalTable`] in step with Rust's block scoping,
//! and hands every call chain to the classifier ([`super::classify`]).

use std::collections::{HashMap, HashSet};

use syn::spanned::Spanned;
use syn::{Expr, Stmt};

use super::super::event::*;
use super::chain::is_chain;
use super::context::Cx;
use super::locals::{Binding, Builder, LocalTable, NameStrings, SetId};
use super::result_use::Use;
use super::syntax::*;

/// Deeper expression nesting than this stops the walk; the file is then
/// reported as not audited rather than risking the stack.
pub const MAX_EXPR_DEPTH: usize = 1000;

pub(super) struct Walker<'a, 'c, 'ast> {
    pub cx: &'a Cx<'c, 'ast>,
    pub model: &'a mut FileModel,
    /// Events replaced by a fuller view of the same builder.
    pub dead: &'a mut HashSet<EventId>,
    pub f: FnId,
    pub fn_lockish: bool,
    pub locals: LocalTable<'ast>,
    pub guards: Vec<GuardId>,
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
    pub let_events: Vec<EventId>,
    /// Strings each function of the file returns, and strings stored in
    /// each field name, from the previous walk of the file.
    pub known: &'a KnownStrings,
    /// The name of the function being walked.
    pub fn_name: String,
    /// The type of its `impl` block (what `Self` names), if any.
    pub self_ty: Option<String>,
    /// Functions of the file that pass a lock call's outcome to their
    /// callers (from the previous walk), and which of them were called.
    /// Keyed by [`Wrapper::key`]: a function by the name this file calls
    /// it by, a method as `Type::name`.
    pub wrappers: &'a HashMap<String, Wrapper>,
    /// The keys of the wrappers that are methods, by method name.
    pub wrapper_methods: &'a HashMap<String, Vec<String>>,
    pub wrappers_called: &'a mut HashSet<String>,
    /// Those of them called here other than as the tail of a closure or
    /// `async` block ([`Self::escaping`]): the call holds the outcome.
    pub wrappers_held: &'a mut HashSet<String>,
    /// Identifiers of the values this function hands back.
    pub returned_exprs: Vec<&'ast Expr>,
    /// Events made on a value this function hands back.
    pub returned_events: Vec<EventId>,
    /// The conditions around each of `returned_exprs` (`if !won { return
    /// Ok(None); }`).
    pub returned_guards: Vec<Vec<GuardId>>,
    /// Parameter names of the function being walked.
    pub params: Vec<String>,
    /// Events matched only because their key is a parameter (see
    /// `key_from_param`): dropped after the walk, kept only as a wrapper's
    /// inner call.
    pub provisional: Vec<EventId>,
    /// What this walk learns of them (for the next walk).
    pub learned: &'a mut KnownStrings,
    /// The values closures and `async` blocks of the function hand to
    /// whatever runs them (their tails).
    pub escaping: HashSet<*const Expr>,
}

/// Strings that cross function boundaries within a file: what functions
/// return and what struct fields hold. A name defined twice with different
/// strings keeps their union: these only feed text shapes (SQL, Lua),
/// which the text itself must match.
#[derive(Default)]
pub(super) struct KnownStrings {
    pub returned: HashMap<String, SetId>,
    pub fields: HashMap<String, SetId>,
}

impl KnownStrings {
    pub fn is_empty(&self) -> bool {
        self.returned.is_empty() && self.fields.is_empty()
    }
}

impl NameStrings for Walker<'_, '_, '_> {
    fn local_strings(&self, name: &str) -> Option<SetId> {
        self.locals.get(name).map(|b| b.strings)
    }
    fn const_strings(&self, name: &str) -> Option<SetId> {
        self.cx.const_strings(name)
    }
    fn fn_strings(&self, name: &str) -> Option<SetId> {
        self.known
            .returned
            .get(name)
            .or_else(|| self.cx.imported_texts.get(name))
            .copied()
    }
    fn field_strings(&self, name: &str) -> Option<SetId> {
        match (
            self.known.fields.get(name),
            self.cx.imported_fields.get(name),
        ) {
            (Some(&own), Some(&given)) => Some(self.cx.strings.union(&[own, given])),
            (own, given) => own.or(given).copied(),
        }
    }
    fn path_fn_strings(&self, name: &str) -> Option<SetId> {
        self.cx.imported_texts.get(name).copied()
    }
    fn is_local_type(&self, name: &str) -> bool {
        self.cx.types.contains(name)
    }
}

/// An unexecuted builder a function hands back, and the events its body
/// made of it (its callers judge the command where they run it).
pub(super) struct Returned<'ast> {
    pub builder: Builder<'ast>,
    pub events: Vec<EventId>,
}

/// A condition being walked: the events created inside it belong to it.
pub(super) struct GuardMark {
    guard: GuardId,
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
        self.returned_exprs.push(e);
        self.returned_guards.push(self.guards.clone());
        self.returned_events.extend(events.iter().copied());
        self.note_return(e, events);
        self.stmt_line = saved;
    }

    /// The value `e` (a closure's body, an `async` block) hands to what
    /// runs it: its tail, through blocks and parentheses.
    fn note_escaping(&mut self, mut e: &'ast Expr) {
        loop {
            let block = match e {
                Expr::Async(a) => &a.block,
                Expr::Block(b) if b.label.is_none() => &b.block,
                Expr::Paren(p) => {
                    e = &p.expr;
                    continue;
                }
                _ => break,
            };
            match block.stmts.last() {
                Some(Stmt::Expr(tail, None)) => e = tail,
                _ => return,
            }
        }
        self.escaping.insert(e as *const Expr);
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
    /// A field of this name holds what `e` evaluates to.
    pub fn learn_field(&mut self, name: &str, e: &'ast Expr) {
        let s = self.value_strings(e);
        if s == SetId::EMPTY {
            return;
        }
        let strings = &self.cx.strings;
        let entry = self
            .learned
            .fields
            .entry(name.to_string())
            .or_insert(SetId::EMPTY);
        *entry = strings.union(&[*entry, s]);
    }

    fn note_return(&mut self, e: &'ast Expr, mut events: Vec<EventId>) {
        let s = self.value_strings(e);
        if s != SetId::EMPTY {
            let strings = &self.cx.strings;
            let entry = self
                .learned
                .returned
                .entry(self.fn_name.clone())
                .or_insert(SetId::EMPTY);
            *entry = strings.union(&[*entry, s]);
        }
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

    /// A loop of the function, for the checks that ask what repeats.
    fn note_loop(&mut self, e: &'ast Expr) {
        let span = expr_span(self.cx.src, e);
        self.model.fns[self.f].loops.push(span);
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
                self.note_alias(&l.pat, &l.expr);
            }
            Expr::Block(b) => self.block(&b.block),
            Expr::Unsafe(b) => self.block(&b.block),
            Expr::Async(b) => {
                self.note_escaping(e);
                self.block(&b.block)
            }
            Expr::TryBlock(b) => self.block(&b.block),
            Expr::Loop(l) => {
                self.note_loop(e);
                self.block(&l.body)
            }
            Expr::While(w) => {
                self.note_loop(e);
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
                self.note_loop(e);
                self.expr(&f.expr, Use::Value);
                self.locals.push_scope();
                self.bind_opaque(&f.pat);
                self.block(&f.body);
                self.locals.pop_scope();
            }
            Expr::Closure(c) => {
                self.note_escaping(&c.body);
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
                    if let syn::Member::Named(n) = &f.member {
                        let name = n.to_string();
                        self.note_lease_field(&name, &f.expr);
                        self.learn_field(&name, &f.expr);
                    }
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
                self.note_alias(&l.pat, &l.expr);
            }
            Expr::Let(l)
                if i.else_branch.is_none() && pat_is_err(&l.pat) && only_logs(&i.then_branch) =>
            {
                self.expr(&l.expr, Use::ErrOnlyLogged);
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
            guard: GuardId::of(f.guards.len() - 1),
            first_event: self.model.events.len(),
        }
    }

    /// Events created since [`Self::guard_start`] belong to the condition.
    fn guard_end(&mut self, g: GuardMark) -> GuardId {
        let ids: Vec<EventId> = (g.first_event..self.model.events.len())
            .map(EventId::of)
            .collect();
        self.model.fns[self.f].guards[g.guard].events = ids;
        g.guard
    }
}
