//! Call chains: `root(args).m1(a).await?.m2(b)` flattened once into a root
//! and a list of segments, so matching reads a slice instead of a tree.

use std::collections::HashMap;

use syn::ext::IdentExt;
use syn::Expr;

use crate::pack::PackSet;

use super::super::keys;
use super::syntax::macro_name;

/// Macro bodies parsed as comma-separated expressions, by the macro's address.
pub(super) type MacroArgs = HashMap<usize, Vec<Expr>>;

pub(super) fn macro_key(m: &syn::Macro) -> usize {
    m as *const syn::Macro as usize
}

#[derive(Clone)]
pub(super) enum Root<'ast> {
    /// `path(args)`.
    Call {
        path: &'ast syn::Path,
        args: Vec<&'ast Expr>,
    },
    /// `path!(args)` with a parsed body.
    Macro {
        name: String,
        args: Vec<&'ast Expr>,
    },
    /// A variable or constant: `con`, `self.pool`, `SCRIPT`.
    Path(String),
    Other,
}

#[derive(Clone)]
pub(super) enum SegKind<'ast> {
    Method {
        name: String,
        args: Vec<&'ast Expr>,
        unit_turbofish: bool,
    },
    Await,
    Try,
    Field,
}

#[derive(Clone)]
pub(super) struct Seg<'ast> {
    pub kind: SegKind<'ast>,
    /// Start of the method name (or operator).
    pub start: proc_macro2::Span,
    /// The expression this segment completes.
    pub expr: &'ast Expr,
}

impl Seg<'_> {
    pub fn method(&self) -> Option<&str> {
        match &self.kind {
            SegKind::Method { name, .. } => Some(name),
            _ => None,
        }
    }

    pub fn args(&self) -> &[&Expr] {
        match &self.kind {
            SegKind::Method { args, .. } => args,
            _ => &[],
        }
    }

    /// `.await`, `?`, or `.unwrap()`/`.expect(..)`, which unwrap an
    /// outcome as `?` does: the call has run.
    pub fn runs(&self) -> bool {
        match &self.kind {
            SegKind::Await | SegKind::Try => true,
            SegKind::Method { name, .. } => name == "unwrap" || name == "expect",
            SegKind::Field => false,
        }
    }
}

/// Where a pack API is anchored in a chain: the root call, or a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Anchor {
    Root,
    Seg(usize),
}

impl Anchor {
    /// The first segment of the anchor's window.
    pub fn from(self) -> usize {
        match self {
            Anchor::Root => 0,
            Anchor::Seg(i) => i,
        }
    }
}

pub(super) struct Chain<'ast> {
    pub root: Root<'ast>,
    pub root_expr: &'ast Expr,
    pub segs: Vec<Seg<'ast>>,
    /// Segments that came from a `let`-bound builder this chain continues.
    pub inherited: usize,
    /// The root came from a builder (already walked where it was built).
    pub resolved: bool,
    /// The variable the chain starts from, if any.
    pub var: Option<String>,
    /// The function of this file that built the command this chain runs
    /// (`acquire_lock_command(key).query(con)`), when it did.
    pub built_by: Option<String>,
}

impl<'ast> Chain<'ast> {
    /// The chain has run: an `.await` or `?` of its own.
    pub fn runs(&self) -> bool {
        self.segs.iter().any(Seg::runs)
    }

    /// What segment `i` is called on: the root, or the segment before it.
    pub fn receiver(&self, i: usize) -> &'ast Expr {
        match i {
            0 => self.root_expr,
            _ => self.segs[i - 1].expr,
        }
    }

    /// What the call at `anchor` is made on; none for the root call.
    pub fn receiver_of(&self, anchor: Anchor) -> Option<&'ast Expr> {
        match anchor {
            Anchor::Root => None,
            Anchor::Seg(i) => Some(self.receiver(i)),
        }
    }
}

pub(super) fn is_chain(e: &Expr) -> bool {
    matches!(
        e,
        Expr::MethodCall(_) | Expr::Call(_) | Expr::Macro(_) | Expr::Await(_) | Expr::Try(_)
    )
}

/// `redis::Commands::del(&mut con, key)` or `<Connection as
/// Commands>::del(&mut con, key)`: a method of a client called through the
/// path of a trait a pack names (`traits`), where the packs know `method`
/// as a method and not as a function.
fn ufcs<'ast>(
    packs: &PackSet,
    c: &'ast syn::ExprCall,
) -> Option<(&'ast syn::PathSegment, &'ast Expr)> {
    let Expr::Path(p) = &*c.func else { return None };
    let n = p.path.segments.len();
    // `<T>::f` names no trait; `<T as Trait>::f` names it before `f`.
    if n < 2 || p.qself.as_ref().is_some_and(|q| q.position == 0) {
        return None;
    }
    let owner = p.path.segments[n - 2].ident.unraw().to_string();
    let last = &p.path.segments[n - 1];
    let name = last.ident.unraw().to_string();
    let receiver = c.args.first()?;
    // A function a pack names under this same owner (`Cmd::del`) is that
    // function, not the trait's method.
    let owned_function = packs.by_function(&name).iter().any(|r| {
        packs
            .api(*r)
            .matcher
            .function
            .as_ref()
            .is_some_and(|f| f.len() >= 2 && f[f.len() - 2] == owner)
    });
    (packs.traits.contains(&owner) && !owned_function && !packs.by_method(&name).is_empty())
        .then_some((last, receiver))
}

pub(super) fn flatten<'ast>(
    macros: &'ast MacroArgs,
    packs: &PackSet,
    e: &'ast Expr,
) -> Chain<'ast> {
    let mut segs = Vec::new();
    let mut cur = e;
    loop {
        match cur {
            Expr::Call(c) if let Some((last, receiver)) = ufcs(packs, c) => {
                let unit_turbofish = matches!(&last.arguments, syn::PathArguments::AngleBracketed(a)
                    if a.args.iter().any(|a| matches!(a, syn::GenericArgument::Type(syn::Type::Tuple(tt)) if tt.elems.is_empty())));
                segs.push(Seg {
                    kind: SegKind::Method {
                        name: last.ident.unraw().to_string(),
                        args: c.args.iter().skip(1).collect(),
                        unit_turbofish,
                    },
                    start: last.ident.span(),
                    expr: cur,
                });
                // `&mut con` is `con`; `&mut pool.get().await?` continues
                // the chain.
                cur = match receiver {
                    Expr::Reference(r) if is_chain(&r.expr) => &r.expr,
                    other => other,
                };
            }
            Expr::MethodCall(m) => {
                let unit_turbofish = m.turbofish.as_ref().is_some_and(|t| {
                    t.args.iter().any(|a| {
                        matches!(a, syn::GenericArgument::Type(syn::Type::Tuple(tt)) if tt.elems.is_empty())
                    })
                });
                segs.push(Seg {
                    kind: SegKind::Method {
                        name: m.method.unraw().to_string(),
                        args: m.args.iter().collect(),
                        unit_turbofish,
                    },
                    start: m.method.span(),
                    expr: cur,
                });
                cur = &m.receiver;
            }
            Expr::Await(a) => {
                segs.push(Seg {
                    kind: SegKind::Await,
                    start: a.await_token.span,
                    expr: cur,
                });
                cur = &a.base;
            }
            Expr::Try(t) => {
                segs.push(Seg {
                    kind: SegKind::Try,
                    start: t.question_token.span,
                    expr: cur,
                });
                cur = &t.expr;
            }
            Expr::Paren(p) => cur = &p.expr,
            Expr::Group(g) => cur = &g.expr,
            Expr::Field(f) if is_chain(&f.base) => {
                segs.push(Seg {
                    kind: SegKind::Field,
                    start: f.dot_token.span,
                    expr: cur,
                });
                cur = &f.base;
            }
            _ => break,
        }
    }
    segs.reverse();
    let root = match cur {
        Expr::Call(c) => match &*c.func {
            Expr::Path(p) => Root::Call {
                path: &p.path,
                args: c.args.iter().collect(),
            },
            _ => Root::Other,
        },
        Expr::Macro(m) => match macros.get(&macro_key(&m.mac)) {
            Some(args) => Root::Macro {
                name: macro_name(&m.mac),
                args: args.iter().collect(),
            },
            None => Root::Other,
        },
        Expr::Path(p) => Root::Path(keys::compact(&p.path)),
        Expr::Field(_) | Expr::Reference(_) => Root::Path(keys::normalise(cur)),
        _ => Root::Other,
    };
    let var = match &root {
        Root::Path(p) => Some(p.clone()),
        _ => None,
    };
    Chain {
        root,
        root_expr: cur,
        segs,
        inherited: 0,
        resolved: false,
        var,
        built_by: None,
    }
}

/// `Cmd::new().arg("SET")`: the first `.arg` right after `Cmd::new()`.
pub(super) fn is_cmd_new(chain: &Chain, i: usize) -> bool {
    i == 0
        && matches!(&chain.root, Root::Call { path, .. }
            if path.segments.len() >= 2
                && path.segments[path.segments.len() - 2].ident == "Cmd"
                && path.segments.last().is_some_and(|s| s.ident == "new"))
}
