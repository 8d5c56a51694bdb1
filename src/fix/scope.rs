//! Which binding a name refers to at a point of a function, for the fixes
//! only: a fix may name a local only when it is certain which value that is.
//! Every binding of the function is recorded with the range where it is
//! visible; a binding the resolver cannot describe (a pattern in `match`,
//! `if let`, `for`, a closure parameter) makes a name unknown rather than
//! guessed, and so does a point inside a macro call.

use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Expr, FnArg, Pat, Stmt, Type};

use crate::source::SourceFile;

/// How a binding was made.
#[derive(Debug, Clone, Copy)]
pub enum Kind<'ast> {
    /// A fn parameter `name: ty`.
    Param { ty: &'ast Type, mutable: bool },
    /// `let [mut] name[: ty] [= init];`
    Let {
        ty: Option<&'ast Type>,
        init: Option<&'ast Expr>,
        mutable: bool,
    },
    /// A module-level `const NAME: ty = …;`.
    Const { ty: &'ast Type },
    /// Any other pattern binding: nothing is known about it.
    Other,
}

#[derive(Debug, Clone, Copy)]
pub struct Binding<'ast> {
    /// Offset of the bound name.
    pub decl: usize,
    /// Where the name refers to this binding: `[from, to)`.
    pub from: usize,
    pub to: usize,
    pub kind: Kind<'ast>,
}

/// The bindings of one function body, and the ranges inside it where
/// nothing is resolved (macro calls, nested items).
pub struct Scope<'ast> {
    bindings: Vec<(String, Binding<'ast>)>,
    macros: Vec<(usize, usize)>,
    /// Closures and async blocks: code that may run elsewhere, later.
    closures: Vec<(usize, usize)>,
}

impl<'ast> Scope<'ast> {
    /// The bindings of `sig` and `body`; `consts` are visible everywhere
    /// unless a local of the same name shadows them.
    pub fn of_fn(
        src: &SourceFile,
        sig: &'ast syn::Signature,
        body: &'ast syn::Block,
        consts: &[(String, &'ast Type, usize)],
    ) -> Scope<'ast> {
        let body_span = src.span_of_node(body);
        let (from, to) = (body_span.start.offset, body_span.end.offset);
        let mut v = Collector {
            src,
            bindings: Vec::new(),
            macros: Vec::new(),
            closures: Vec::new(),
        };
        for (name, ty, decl) in consts {
            v.bindings.push((
                name.clone(),
                Binding {
                    decl: *decl,
                    from: 0,
                    to: usize::MAX,
                    kind: Kind::Const { ty },
                },
            ));
        }
        for input in &sig.inputs {
            if let FnArg::Typed(pt) = input {
                match &*pt.pat {
                    Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                        v.push(
                            &pi.ident,
                            from,
                            to,
                            Kind::Param {
                                ty: &pt.ty,
                                mutable: pi.mutability.is_some(),
                            },
                        );
                    }
                    p => v.other(p, from, to),
                }
            }
        }
        v.visit_block(body);
        Scope {
            bindings: v.bindings,
            macros: v.macros,
            closures: v.closures,
        }
    }

    /// The binding `name` refers to at `offset`; `None` when there is none
    /// or it cannot be known.
    pub fn resolve(&self, name: &str, offset: usize) -> Option<Binding<'ast>> {
        if self.in_macro(offset) {
            return None;
        }
        let b = self
            .bindings
            .iter()
            .filter(|(n, b)| n == name && b.from <= offset && offset < b.to)
            .map(|(_, b)| *b)
            .max_by_key(|b| (b.from, b.decl))?;
        match b.kind {
            Kind::Other => None,
            _ => Some(b),
        }
    }

    /// Names visible at `offset` (each once), for finding candidates.
    pub fn visible(&self, offset: usize) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .bindings
            .iter()
            .filter(|(_, b)| b.from <= offset && offset < b.to)
            .map(|(n, _)| n.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    pub fn in_macro(&self, offset: usize) -> bool {
        self.macros.iter().any(|&(s, e)| s <= offset && offset < e)
    }

    /// Whether a closure or async block holds `inner` but not `outer`: a
    /// local of the outer code named there would be captured by it.
    pub fn captured(&self, outer: usize, inner: usize) -> bool {
        self.closures
            .iter()
            .any(|&(s, e)| s <= inner && inner < e && !(s <= outer && outer < e))
    }
}

struct Collector<'s, 'ast> {
    src: &'s SourceFile,
    bindings: Vec<(String, Binding<'ast>)>,
    macros: Vec<(usize, usize)>,
    closures: Vec<(usize, usize)>,
}

impl<'ast> Collector<'_, 'ast> {
    fn push(&mut self, ident: &syn::Ident, from: usize, to: usize, kind: Kind<'ast>) {
        let decl = self.src.span_of(ident.span()).start.offset;
        self.bindings.push((
            ident.to_string(),
            Binding {
                decl,
                from,
                to,
                kind,
            },
        ));
    }

    /// Every name `p` binds, as unknown bindings visible in `[from, to)`.
    fn other(&mut self, p: &'ast Pat, from: usize, to: usize) {
        for ident in pat_idents(p) {
            self.push(ident, from, to, Kind::Other);
        }
    }

    fn range(&self, node: &impl Spanned) -> (usize, usize) {
        let s = self.src.span_of_node(node);
        (s.start.offset, s.end.offset)
    }
}

fn pat_idents(p: &Pat) -> Vec<&syn::Ident> {
    struct V<'a>(Vec<&'a syn::Ident>);
    impl<'a> Visit<'a> for V<'a> {
        fn visit_pat_ident(&mut self, i: &'a syn::PatIdent) {
            self.0.push(&i.ident);
            syn::visit::visit_pat_ident(self, i);
        }
    }
    let mut v = V(Vec::new());
    v.visit_pat(p);
    v.0
}

impl<'ast> Visit<'ast> for Collector<'_, 'ast> {
    fn visit_block(&mut self, b: &'ast syn::Block) {
        let (_, block_end) = self.range(b);
        for stmt in &b.stmts {
            match stmt {
                Stmt::Local(local) => {
                    if let Some(init) = &local.init {
                        self.visit_expr(&init.expr);
                        if let Some((_, diverge)) = &init.diverge {
                            self.visit_expr(diverge);
                        }
                    }
                    // Visible from the end of the `let` to the end of the block.
                    let (_, after) = self.range(local);
                    let (pat, ty) = match &local.pat {
                        Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
                        p => (p, None),
                    };
                    match pat {
                        Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                            let kind = Kind::Let {
                                ty,
                                init: local.init.as_ref().map(|i| &*i.expr),
                                mutable: pi.mutability.is_some(),
                            };
                            self.push(&pi.ident, after, block_end, kind);
                        }
                        p => self.other(p, after, block_end),
                    }
                }
                // A nested fn sees none of these locals: nothing inside it
                // is resolved.
                Stmt::Item(item) => {
                    let r = self.range(item);
                    self.macros.push(r);
                }
                Stmt::Expr(e, _) => self.visit_expr(e),
                Stmt::Macro(m) => self.visit_macro(&m.mac),
            }
        }
    }

    fn visit_expr_let(&mut self, l: &'ast syn::ExprLet) {
        self.visit_expr(&l.expr);
    }

    fn visit_expr_if(&mut self, i: &'ast syn::ExprIf) {
        if let Expr::Let(l) = &*i.cond {
            let (from, to) = self.range(&i.then_branch);
            self.other(&l.pat, from, to);
        } else {
            // `if let` chains and guards bind in ways not modelled here:
            // every name they mention is unknown in the branch.
            let mut lets = LetPats(Vec::new());
            lets.visit_expr(&i.cond);
            let (from, to) = self.range(&i.then_branch);
            for p in lets.0 {
                self.other(p, from, to);
            }
        }
        syn::visit::visit_expr_if(self, i);
    }

    fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
        let mut lets = LetPats(Vec::new());
        lets.visit_expr(&w.cond);
        let (from, to) = self.range(&w.body);
        for p in lets.0 {
            self.other(p, from, to);
        }
        syn::visit::visit_expr_while(self, w);
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        let (from, to) = self.range(&f.body);
        self.other(&f.pat, from, to);
        syn::visit::visit_expr_for_loop(self, f);
    }

    fn visit_arm(&mut self, a: &'ast syn::Arm) {
        let (from, to) = self.range(a);
        self.other(&a.pat, from, to);
        syn::visit::visit_arm(self, a);
    }

    fn visit_expr_async(&mut self, a: &'ast syn::ExprAsync) {
        let r = self.range(a);
        self.closures.push(r);
        syn::visit::visit_expr_async(self, a);
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        let r = self.range(c);
        self.closures.push(r);
        let (from, to) = self.range(&c.body);
        for p in &c.inputs {
            self.other(p, from, to);
        }
        self.visit_expr(&c.body);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        let r = self.range(m);
        self.macros.push(r);
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// The patterns of `let` expressions inside a condition.
struct LetPats<'ast>(Vec<&'ast Pat>);

impl<'ast> Visit<'ast> for LetPats<'ast> {
    fn visit_expr_let(&mut self, l: &'ast syn::ExprLet) {
        self.0.push(&l.pat);
        syn::visit::visit_expr_let(self, l);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_scope(text: &str, check: impl FnOnce(&Scope, &str)) {
        let src = SourceFile::new("a.rs", text);
        let file = syn::parse_file(text).unwrap();
        let syn::Item::Fn(f) = &file.items[0] else {
            panic!("a fn first")
        };
        let scope = Scope::of_fn(&src, &f.sig, &f.block, &[]);
        check(&scope, text);
    }

    #[test]
    fn a_block_binding_does_not_leak_and_shadowing_picks_the_latest() {
        let text = "fn f(t: &str) { { let t = 1; a(t); } b(t); let t = 2u64; c(t); match x { t => d(t) } }";
        with_scope(text, |s, text| {
            let at = |needle: &str| text.find(needle).unwrap();
            assert!(matches!(
                s.resolve("t", at("a(t)")).unwrap().kind,
                Kind::Let { .. }
            ));
            assert!(matches!(
                s.resolve("t", at("b(t)")).unwrap().kind,
                Kind::Param { .. }
            ));
            let c = s.resolve("t", at("c(t)")).unwrap();
            assert_eq!(c.decl, at("t = 2u64"));
            assert!(
                s.resolve("t", at("d(t)")).is_none(),
                "a match arm binding is unknown"
            );
        });
    }

    #[test]
    fn nothing_is_known_inside_a_macro_call() {
        let text = "fn f(t: &str) { m!(t); }";
        with_scope(text, |s, text| {
            assert!(s.resolve("t", text.find("t)").unwrap()).is_none());
        });
    }
}
