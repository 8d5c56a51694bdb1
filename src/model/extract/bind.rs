//! What the walk learns about values: bindings made from patterns and
//! initialisers, assignments, builders grown in place or handed back by a
//! function of the file, and the evident types of values.

use syn::{Expr, Pat};

use super::super::event::EventId;
use super::super::keys;
use super::chain::{flatten, is_chain, Chain, Root, SegKind};
use super::fields::{clears, place_root};
use super::locals::{strings_of, Binding, Builder, SetId};
use super::result_use::Use;
use super::syntax::*;
use super::walk::Walker;

/// Most field assignments remembered per local.
const MAX_ASSIGNED: usize = 64;

impl<'a, 'c, 'ast> Walker<'a, 'c, 'ast> {
    /// Binds the names of `pat`. A name that is the whole pattern gets the
    /// initialiser (its strings, builder and type); parts of a destructured
    /// tuple get the matching element; any other name shadows whatever it
    /// names outside, with nothing known of its value.
    pub(super) fn bind(&mut self, pat: &'ast Pat, init: Option<&'ast Expr>, events: Vec<EventId>) {
        let pat_ty = pat_type(pat).map(type_text);
        let pat = strip_type(pat);
        match (pat, init.map(keys::strip)) {
            (Pat::Ident(i), _) if i.subpat.is_none() => {
                let mut b = Binding::new(i.ident.to_string());
                if let Some(e) = init {
                    b.init = Some(e);
                    b.strings = self.let_strings(e, !events.is_empty());
                    b.builder = self.builder_of(e);
                    b.ty = pat_ty.or_else(|| self.type_of(e));
                    if b.builder.is_some() {
                        b.builder_events = events;
                    }
                } else {
                    b.ty = pat_ty;
                }
                self.locals.declare(b);
                if let Some(e) = init {
                    self.note_alias(pat, e);
                }
            }
            (Pat::Tuple(t), Some(Expr::Tuple(v))) if t.elems.len() == v.elems.len() => {
                for (p, e) in t.elems.iter().zip(v.elems.iter()) {
                    self.bind(p, Some(e), Vec::new());
                }
            }
            _ => self.bind_opaque(pat),
        }
    }

    /// `if let Some(spec) = lease.spec.as_mut()`, `let spec = &mut
    /// lease.spec`: the name (bound already) borrows a part of another
    /// local, reached through a field, so what is assigned through it is
    /// assigned to that local.
    pub(super) fn note_alias(&mut self, pat: &Pat, init: &Expr) {
        let name = match strip_type(pat) {
            Pat::Ident(i) => i.ident.to_string(),
            Pat::TupleStruct(t) if t.elems.len() == 1 => match &t.elems[0] {
                Pat::Ident(i) => i.ident.to_string(),
                _ => return,
            },
            _ => return,
        };
        // Down to the local the place starts from, through at least one
        // field (`lease.spec`, not `lease.clone()`).
        let mut e = keys::strip(init);
        let mut through_field = false;
        let root = loop {
            match e {
                Expr::Field(f) => {
                    through_field = true;
                    e = &f.base;
                }
                Expr::MethodCall(m) => e = &m.receiver,
                Expr::Paren(p) => e = &p.expr,
                Expr::Reference(r) => e = &r.expr,
                Expr::Unary(u) => e = &u.expr,
                Expr::Try(t) => e = &t.expr,
                Expr::Path(p) if through_field => match p.path.get_ident() {
                    Some(i) => break i.to_string(),
                    None => return,
                },
                _ => return,
            }
        };
        if root == name || self.locals.get(&root).is_none() {
            return;
        }
        if let Some(b) = self.locals.get_mut(&name) {
            b.alias_of = Some(root);
        }
    }

    /// Binds every name of a pattern with nothing known of its value.
    pub(super) fn bind_opaque(&mut self, pat: &Pat) {
        for n in pat_names(pat) {
            self.locals.declare(Binding::new(n));
        }
    }

    /// The strings a bound value can hold.
    pub(super) fn value_strings(&self, e: &'ast Expr) -> SetId {
        strings_of(e, &self.cx.strings, self)
    }

    /// The strings of a `let`'s value. A lock call that has run (`.await`,
    /// `?`) and that the packs matched there yields a reply, not the text
    /// it was sent: `let stmt = client.prepare(SQL).await?` is the site,
    /// and `query(&stmt)` does not run the SQL a second time. Any other
    /// value carries its text on (`let body = serde_json::from_str(TEXT)?`).
    fn let_strings(&self, e: &'ast Expr, matched_here: bool) -> SetId {
        if matched_here && is_chain(e) && flatten(self.cx.macros, self.cx.packs, e).runs() {
            return SetId::EMPTY;
        }
        self.value_strings(e)
    }

    /// An unexecuted builder `e` evaluates to: a constructor chain that has
    /// not run (`redis::cmd("SET").arg(k)`, `Locks::builder()…build()`), a
    /// local holding one, or a call of a function of this file that
    /// returns one.
    pub(super) fn builder_of(&self, e: &'ast Expr) -> Option<Builder<'ast>> {
        let e = keys::strip(e);
        if let Expr::Path(p) = e {
            let name = p.path.get_ident()?.to_string();
            return self.locals.get(&name).and_then(|b| b.builder.clone());
        }
        if !is_chain(e) {
            return None;
        }
        let c = self.resolve_chain(flatten(self.cx.macros, self.cx.packs, e));
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
    pub(super) fn type_of(&self, e: &'ast Expr) -> Option<String> {
        match keys::strip(e) {
            Expr::Struct(s) => Some(keys::compact(&s.path)),
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) if p.path.segments.len() >= 2 => {
                    let ty = &p.path.segments[p.path.segments.len() - 2];
                    let name = ty.ident.to_string();
                    name.chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_uppercase())
                        .then(|| keys::compact(ty))
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
        let base_ty = match keys::strip(&f.base) {
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
    pub(super) fn extend_builder(&mut self, e: &'ast Expr) -> bool {
        if !is_chain(e) {
            return false;
        }
        let c = flatten(self.cx.macros, self.cx.packs, e);
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

    /// `x = value;` gives the binding `x` a new value.
    pub(super) fn reassign(&mut self, left: &'ast Expr, right: &'ast Expr) {
        if let Expr::Field(f) = keys::strip(left) {
            if let syn::Member::Named(n) = &f.member {
                self.learn_field(&n.to_string(), right);
                // `lease.spec.holder_identity = None;`: what the local's
                // value now says, for the call it is passed to.
                let cleared = clears(right);
                let mut alias = None;
                if let Some(b) = place_root(&f.base).and_then(|r| self.locals.get_mut(&r)) {
                    if b.assigned.len() < MAX_ASSIGNED {
                        b.assigned.push((n.to_string(), cleared));
                    }
                    alias = b.alias_of.clone();
                }
                // Through a borrow of another local's part, that local.
                if let Some(b) = alias.and_then(|a| self.locals.get_mut(&a)) {
                    if b.assigned.len() < MAX_ASSIGNED {
                        b.assigned.push((n.to_string(), cleared));
                    }
                }
            }
            return;
        }
        let Expr::Path(p) = keys::strip(left) else {
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
        let built_by = match (&c.root, from_local, from_fn) {
            (Root::Call { path, .. }, None, Some(_)) => {
                path.segments.last().map(|s| s.ident.to_string())
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
            built_by,
        }
    }
}

/// `x: T` → `x`.
pub(super) fn strip_type(p: &Pat) -> &Pat {
    match p {
        Pat::Type(t) => strip_type(&t.pat),
        other => other,
    }
}
