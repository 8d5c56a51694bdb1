//! The extraction pass: syntax tree + rule packs → [`FileModel`].
//!
//! Every method-call chain (`redis::cmd("SET").arg(k).arg("NX").query(c)`,
//! `con.set_nx(k, v).await?`, `client.put_item()…send()`) is flattened once,
//! matched against the packs, and each match becomes an [`Event`] that records
//! the key, the literal words, how the result is used, and what encloses it.
//! Builders split across `let` statements (`let mut c = cmd("SET"); c.arg(..);
//! c.query(..)`) and script texts kept in a `const`, `static` or `let` are
//! followed. A second, more detailed pass (lets, assignments, local calls,
//! log macros) runs only on files that take a lock: the fencing check needs it
//! and nothing else does.

use std::collections::{BTreeSet, HashMap, HashSet};

use proc_macro2::TokenTree;
use quote::ToTokens;
use regex::Regex;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Expr, Pat, Stmt};

use super::event::*;
use super::keys;
use super::lockname::{is_lock_name, mentions_word};
use crate::pack::{ApiRef, ExpirySource, KeySpec, PackSet, ResultKind};
use crate::source::{SourceFile, Span};

/// Macros whose arguments are only printed: a token that reaches one of these
/// has been logged, not used.
const LOG_MACROS: &[&str] = &[
    "println",
    "print",
    "eprintln",
    "eprint",
    "info",
    "debug",
    "warn",
    "error",
    "trace",
    "log",
    "event",
    "span",
    "info_span",
    "debug_span",
    "trace_span",
    "warn_span",
    "error_span",
    "dbg",
    "format_args",
    "write",
    "writeln",
    "panic",
    "unreachable",
    "todo",
    "unimplemented",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "tracing",
];

/// Macros that are not expressions worth parsing.
const OPAQUE_MACROS: &[&str] = &[
    "format",
    "concat",
    "stringify",
    "include_str",
    "include_bytes",
    "include",
    "env",
    "option_env",
    "cfg",
    "compile_error",
    "line",
    "column",
    "file",
    "module_path",
    "matches",
    "macro_rules",
];

pub struct Options<'a> {
    pub lock_name: &'a Regex,
    /// The pack crate this file belongs to (its `Cargo.toml` names it): a
    /// lock crate's own source never imports itself, so the crate is
    /// evidence there.
    pub own_crate: Option<&'a str>,
    /// Always run the detailed pass (lets, assignments, calls), even in a
    /// file without lock events: a helper another file's lock calls into.
    pub detail: bool,
}

pub fn extract(file: &syn::File, src: &SourceFile, packs: &PackSet, opts: &Options) -> FileModel {
    let mut index = Index::default();
    index.visit_file(file);
    let cx = Cx {
        packs,
        src,
        lock_name: opts.lock_name,
        consts: &index.consts,
        crates: index
            .crates
            .iter()
            .filter(|c| packs.crate_names.contains(*c))
            .cloned()
            .chain(opts.own_crate.map(str::to_string))
            .collect(),
        local_fns: index.fns.iter().map(|f| f.name.clone()).collect(),
        modules: index.modules.iter().cloned().collect(),
        text_only: {
            let hit = packs.triggered(&src.text);
            packs
                .text_only()
                .iter()
                .copied()
                .filter(|r| hit[r.pack])
                .collect()
        },
        macros: &index.macros,
    };
    let mut model = run(&cx, &index.fns, opts.detail);
    if !opts.detail && !model.events.is_empty() {
        model = run(&cx, &index.fns, true);
    }
    model
}

fn run<'ast>(cx: &Cx<'_, 'ast>, fns: &[FnItem<'ast>], detail: bool) -> FileModel {
    let mut model = FileModel::default();
    let mut dead = HashSet::new();
    for item in fns {
        let f = model.fns.len();
        let span = item.full_span(cx.src);
        model.fns.push(FnModel {
            name: item.name.clone(),
            qualified: item.qualified.clone(),
            span,
            first_line: item.first_line,
            params: item.params.clone(),
            in_drop: item.in_drop,
            ..FnModel::default()
        });
        let mut w = Walker {
            cx,
            model: &mut model,
            dead: &mut dead,
            f,
            fn_lockish: is_lock_name(cx.lock_name, &item.qualified),
            locals: HashMap::new(),
            var_events: HashMap::new(),
            guards: Vec::new(),
            stmt_line: span.start.line,
            detail,
            depth: 0,
            strings: Default::default(),
        };
        w.block(item.body);
    }
    if !dead.is_empty() {
        // Events replaced by a later, fuller view of the same builder.
        let keep: Vec<bool> = (0..model.events.len())
            .map(|i| !dead.contains(&i))
            .collect();
        let mut remap = vec![usize::MAX; model.events.len()];
        let mut events = Vec::new();
        for (i, e) in model.events.drain(..).enumerate() {
            if keep[i] {
                remap[i] = events.len();
                events.push(e);
            }
        }
        for (i, e) in events.iter_mut().enumerate() {
            e.id = i;
        }
        model.events = events;
        for f in &mut model.fns {
            f.events = f
                .events
                .iter()
                .filter(|&&i| keep[i])
                .map(|&i| remap[i])
                .collect();
            for g in &mut f.guards {
                g.events = g
                    .events
                    .iter()
                    .filter(|&&i| keep[i])
                    .map(|&i| remap[i])
                    .collect();
            }
        }
    }
    for f in &mut model.fns {
        f.events.sort_by_key(|&i| model.events[i].span.start.offset);
    }
    model
}

struct Cx<'a, 'ast> {
    packs: &'a PackSet,
    src: &'a SourceFile,
    lock_name: &'a Regex,
    consts: &'a HashMap<String, &'ast Expr>,
    /// Pack crates the file imports or names.
    crates: BTreeSet<String>,
    local_fns: HashSet<String>,
    /// Modules this file declares (`mod store;`).
    modules: HashSet<String>,
    /// Text shapes (SQL, Lua) whose pack's trigger words occur in the file:
    /// the others cannot match, and are not tried on every chain.
    text_only: Vec<ApiRef>,
    macros: &'ast HashMap<usize, Vec<Expr>>,
}

// ---------------------------------------------------------------------------
// File index: functions, consts and statics, crates, parsed macro bodies.

struct FnItem<'ast> {
    name: String,
    qualified: String,
    span: proc_macro2::Span,
    first_line: usize,
    params: Vec<String>,
    in_drop: bool,
    body: &'ast syn::Block,
}

impl FnItem<'_> {
    fn full_span(&self, src: &SourceFile) -> Span {
        Span {
            start: src.span_of(self.span).start,
            end: src.span_of(self.body.brace_token.span.close()).end,
        }
    }
}

#[derive(Default)]
struct Index<'ast> {
    fns: Vec<FnItem<'ast>>,
    consts: HashMap<String, &'ast Expr>,
    crates: BTreeSet<String>,
    macros: HashMap<usize, Vec<Expr>>,
    impl_stack: Vec<(String, bool)>,
    modules: Vec<String>,
}

fn first_line(
    attrs: &[syn::Attribute],
    sig: &syn::Signature,
    vis_span: Option<proc_macro2::Span>,
) -> usize {
    // The placement rules look above the fn's first line that is not a doc
    // comment (doc comments are attributes to syn, but comments to us).
    let mut line = vis_span
        .map(|s| s.start().line)
        .unwrap_or_else(|| sig.span().start().line);
    line = line.min(sig.fn_token.span.start().line);
    for a in attrs {
        if !a.path().is_ident("doc") {
            line = line.min(a.span().start().line);
        }
    }
    line
}

fn params(sig: &syn::Signature) -> Vec<String> {
    sig.inputs
        .iter()
        .map(|arg| match arg {
            syn::FnArg::Receiver(_) => "self".to_string(),
            syn::FnArg::Typed(t) => pat_names(&t.pat).into_iter().next().unwrap_or_default(),
        })
        .collect()
}

impl<'ast> Visit<'ast> for Index<'ast> {
    fn visit_item_fn(&mut self, i: &'ast syn::ItemFn) {
        let vis = vis_span(&i.vis);
        self.fns.push(FnItem {
            name: i.sig.ident.to_string(),
            qualified: i.sig.ident.to_string(),
            span: i.sig.ident.span(),
            first_line: first_line(&i.attrs, &i.sig, vis),
            params: params(&i.sig),
            in_drop: false,
            body: &i.block,
        });
        visit::visit_item_fn(self, i);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let ty = match &*i.self_ty {
            syn::Type::Path(p) => p
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default(),
            other => keys::compact(other),
        };
        let drop = i
            .trait_
            .as_ref()
            .and_then(|(_, p, _)| p.segments.last())
            .is_some_and(|s| s.ident == "Drop");
        self.impl_stack.push((ty, drop));
        visit::visit_item_impl(self, i);
        self.impl_stack.pop();
    }

    fn visit_impl_item_fn(&mut self, i: &'ast syn::ImplItemFn) {
        let (ty, drop) = self.impl_stack.last().cloned().unwrap_or_default();
        let vis = vis_span(&i.vis);
        self.fns.push(FnItem {
            name: i.sig.ident.to_string(),
            qualified: format!("{ty}::{}", i.sig.ident),
            span: i.sig.ident.span(),
            first_line: first_line(&i.attrs, &i.sig, vis),
            params: params(&i.sig),
            in_drop: drop,
            body: &i.block,
        });
        visit::visit_impl_item_fn(self, i);
    }

    fn visit_item_trait(&mut self, i: &'ast syn::ItemTrait) {
        self.impl_stack.push((i.ident.to_string(), false));
        visit::visit_item_trait(self, i);
        self.impl_stack.pop();
    }

    fn visit_trait_item_fn(&mut self, i: &'ast syn::TraitItemFn) {
        if let Some(body) = &i.default {
            let (ty, _) = self.impl_stack.last().cloned().unwrap_or_default();
            self.fns.push(FnItem {
                name: i.sig.ident.to_string(),
                qualified: format!("{ty}::{}", i.sig.ident),
                span: i.sig.ident.span(),
                first_line: first_line(&i.attrs, &i.sig, None),
                params: params(&i.sig),
                in_drop: false,
                body,
            });
        }
        visit::visit_trait_item_fn(self, i);
    }

    fn visit_item_mod(&mut self, i: &'ast syn::ItemMod) {
        self.modules.push(i.ident.to_string());
        visit::visit_item_mod(self, i);
    }

    fn visit_item_const(&mut self, i: &'ast syn::ItemConst) {
        self.consts.insert(i.ident.to_string(), &i.expr);
        visit::visit_item_const(self, i);
    }

    fn visit_item_static(&mut self, i: &'ast syn::ItemStatic) {
        self.consts.insert(i.ident.to_string(), &i.expr);
        visit::visit_item_static(self, i);
    }

    fn visit_use_tree(&mut self, u: &'ast syn::UseTree) {
        match u {
            syn::UseTree::Path(p) => {
                self.crates.insert(p.ident.to_string());
            }
            syn::UseTree::Name(n) => {
                self.crates.insert(n.ident.to_string());
            }
            syn::UseTree::Rename(r) => {
                self.crates.insert(r.ident.to_string());
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.visit_use_tree(t);
                }
            }
            syn::UseTree::Glob(_) => {}
        }
    }

    fn visit_item_extern_crate(&mut self, i: &'ast syn::ItemExternCrate) {
        self.crates.insert(i.ident.to_string());
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.segments.len() >= 2 {
            let first = p.segments[0].ident.to_string();
            if first != "self" && first != "crate" && first != "super" && first != "Self" {
                self.crates.insert(first);
            }
        }
        visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        let name = macro_name(m);
        if !LOG_MACROS.contains(&name.as_str()) && !OPAQUE_MACROS.contains(&name.as_str()) {
            if let Ok(args) =
                m.parse_body_with(Punctuated::<Expr, syn::Token![,]>::parse_terminated)
            {
                let args: Vec<Expr> = args.into_iter().collect();
                self.macros.insert(m as *const syn::Macro as usize, args);
            }
        }
        // Paths inside macro bodies are evidence too (`sqlx::query!` args).
        for tt in m.tokens.clone() {
            if let TokenTree::Ident(id) = tt {
                let s = id.to_string();
                if s.len() > 2 {
                    // Only identifiers directly followed by `::` would be
                    // paths; a cheap over-approximation is fine here because
                    // it is filtered against the packs' crate names.
                    self.crates.insert(s);
                }
            }
        }
        visit::visit_macro(self, m);
    }
}

/// Where an expression starts, without `Spanned::span`, which renders the
/// whole expression to tokens (a statement holding a large block would be
/// rendered again at every level of nesting). Falls back to it for the
/// rare shapes not listed, and where attributes come first.
fn start_span(e: &Expr) -> proc_macro2::Span {
    use syn::spanned::Spanned;
    match e {
        Expr::MethodCall(m) if m.attrs.is_empty() => start_span(&m.receiver),
        Expr::Call(c) if c.attrs.is_empty() => start_span(&c.func),
        Expr::Field(f) if f.attrs.is_empty() => start_span(&f.base),
        Expr::Await(a) if a.attrs.is_empty() => start_span(&a.base),
        Expr::Try(t) if t.attrs.is_empty() => start_span(&t.expr),
        Expr::Index(i) if i.attrs.is_empty() => start_span(&i.expr),
        Expr::Binary(b) if b.attrs.is_empty() => start_span(&b.left),
        Expr::Assign(a) if a.attrs.is_empty() => start_span(&a.left),
        Expr::Cast(c) if c.attrs.is_empty() => start_span(&c.expr),
        Expr::If(i) if i.attrs.is_empty() => i.if_token.span,
        Expr::Match(m) if m.attrs.is_empty() => m.match_token.span,
        Expr::While(w) if w.attrs.is_empty() && w.label.is_none() => w.while_token.span,
        Expr::ForLoop(f) if f.attrs.is_empty() && f.label.is_none() => f.for_token.span,
        Expr::Loop(l) if l.attrs.is_empty() && l.label.is_none() => l.loop_token.span,
        Expr::Block(b) if b.attrs.is_empty() && b.label.is_none() => {
            b.block.brace_token.span.open()
        }
        Expr::Unsafe(u) if u.attrs.is_empty() => u.unsafe_token.span,
        Expr::Return(r) if r.attrs.is_empty() => r.return_token.span,
        Expr::Macro(m) if m.attrs.is_empty() => m.mac.path.span(),
        Expr::Path(p) if p.attrs.is_empty() && p.qself.is_none() => p.path.span(),
        other => other.span(),
    }
}

/// Where an expression ends, for the shapes a chain is made of (see
/// [`start_span`]).
fn end_span(e: &Expr) -> proc_macro2::Span {
    use syn::spanned::Spanned;
    match e {
        Expr::MethodCall(m) => m.paren_token.span.close(),
        Expr::Call(c) => c.paren_token.span.close(),
        Expr::Await(a) => a.await_token.span,
        Expr::Try(t) => t.question_token.span,
        Expr::Macro(m) => m.mac.delimiter.span().close(),
        other => other.span(),
    }
}

/// An expression's span, from [`start_span`] to [`end_span`].
fn expr_span(src: &crate::source::SourceFile, e: &Expr) -> Span {
    Span {
        start: src.span_of(start_span(e)).start,
        end: src.span_of(end_span(e)).end,
    }
}

fn vis_span(v: &syn::Visibility) -> Option<proc_macro2::Span> {
    match v {
        syn::Visibility::Inherited => None,
        other => Some(other.span()),
    }
}

fn macro_name(m: &syn::Macro) -> String {
    m.path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Chains.

enum Root<'ast> {
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
enum SegKind<'ast> {
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
struct Seg<'ast> {
    kind: SegKind<'ast>,
    /// Start of the method name (or operator).
    start: proc_macro2::Span,
    /// The expression this segment completes.
    expr: &'ast Expr,
}

struct Chain<'ast> {
    root: Root<'ast>,
    root_expr: &'ast Expr,
    segs: Vec<Seg<'ast>>,
    /// Segments that came from a `let`-bound builder this chain continues.
    inherited: usize,
    /// The root came from a `let` binding (already walked at the `let`).
    resolved: bool,
    /// The variable the chain starts from, if any.
    var: Option<String>,
}

impl<'ast> Chain<'ast> {
    fn method_names(&self) -> impl Iterator<Item = &str> {
        self.segs.iter().filter_map(|s| match &s.kind {
            SegKind::Method { name, .. } => Some(name.as_str()),
            _ => None,
        })
    }
}

fn is_chain(e: &Expr) -> bool {
    matches!(
        e,
        Expr::MethodCall(_) | Expr::Call(_) | Expr::Macro(_) | Expr::Await(_) | Expr::Try(_)
    )
}

fn flatten<'ast>(cx: &Cx<'_, 'ast>, e: &'ast Expr) -> Chain<'ast> {
    let mut segs = Vec::new();
    let mut cur = e;
    loop {
        match cur {
            Expr::MethodCall(m) => {
                let unit_turbofish = m.turbofish.as_ref().is_some_and(|t| {
                    t.args.iter().any(|a| {
                        matches!(a, syn::GenericArgument::Type(syn::Type::Tuple(tt)) if tt.elems.is_empty())
                    })
                });
                segs.push(Seg {
                    kind: SegKind::Method {
                        name: m.method.to_string(),
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
        Expr::Macro(m) => match cx.macros.get(&(&m.mac as *const syn::Macro as usize)) {
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
    }
}

/// A `let`-bound value the walker remembers: builders and script texts.
struct Local<'ast> {
    init: &'ast Expr,
    chain: Option<(Root<'ast>, &'ast Expr, Vec<Seg<'ast>>)>,
}

// ---------------------------------------------------------------------------
// The walker.

/// How the value of the expression being walked is used.
#[derive(Clone)]
enum Use {
    /// `expr;`
    Stmt,
    /// `let _ = expr;` (`unit` when typed `()`).
    LetWild { unit: bool },
    /// `let names = expr;`
    Let { names: Vec<String>, unit: bool },
    /// `if expr`, `while expr`, a match scrutinee, `let PAT = expr else`;
    /// `names` are bound by a pattern (`if let Some(g) = expr`).
    Cond { names: Vec<String> },
    /// `if let Ok(..) = expr` or `if let Some(..) = expr` without an `else`.
    IfLetNoElse { names: Vec<String> },
    /// Anything else: an argument, a return value, an operand.
    Value,
}

struct Walker<'a, 'c, 'ast> {
    cx: &'a Cx<'c, 'ast>,
    model: &'a mut FileModel,
    dead: &'a mut HashSet<usize>,
    f: usize,
    fn_lockish: bool,
    locals: HashMap<String, Local<'ast>>,
    var_events: HashMap<String, Vec<usize>>,
    guards: Vec<usize>,
    stmt_line: usize,
    detail: bool,
    /// Expressions being walked, outermost first: bounded so that machine-
    /// generated code (a 20,000-term `a + b + …`) cannot exhaust the stack.
    depth: usize,
    /// [`collect_strings`] results by (expression, depth), valid while
    /// `locals` stays the same: nested chains ask about the same arguments
    /// again and again, and a local's initialiser may be large.
    strings: std::cell::RefCell<StringsCache>,
}

/// Strings found under an expression, by (its address, the depth asked).
type StringsCache = HashMap<(usize, usize), std::rc::Rc<[String]>>;

/// Deeper expression nesting than this stops the walk; the file is then
/// reported as not audited rather than risking the stack.
pub const MAX_EXPR_DEPTH: usize = 1000;

impl<'a, 'c, 'ast> Walker<'a, 'c, 'ast> {
    fn block(&mut self, b: &'ast syn::Block) {
        for s in &b.stmts {
            self.stmt(s);
        }
    }

    fn line_of(&self, s: proc_macro2::Span) -> usize {
        s.start().line
    }

    fn stmt(&mut self, s: &'ast Stmt) {
        let saved = self.stmt_line;
        match s {
            Stmt::Local(l) => {
                self.stmt_line = self.line_of(l.let_token.span);
                let names = pat_names(&l.pat);
                let wild = is_wild(&l.pat);
                let unit = pat_is_unit_typed(&l.pat);
                if let Some(init) = &l.init {
                    let use_ = if wild {
                        Use::LetWild { unit }
                    } else if l.init.as_ref().is_some_and(|i| i.diverge.is_some()) {
                        // `let Some(x) = acquire() else { return }` inspects it.
                        Use::Cond {
                            names: names.clone(),
                        }
                    } else {
                        Use::Let {
                            names: names.clone(),
                            unit,
                        }
                    };
                    self.expr(&init.expr, use_);
                    if let Some((_, d)) = &init.diverge {
                        self.expr(d, Use::Value);
                    }
                    if self.detail {
                        let offset = self.cx.src.span_of(l.let_token.span).start.offset;
                        self.model.fns[self.f].lets.push(LetBinding {
                            names: names.clone(),
                            mentions: mentions(&init.expr),
                            offset,
                        });
                    }
                    // Builders started from a constructor call and not yet
                    // run (no `.await`, no `?`) are continued by later
                    // statements: `let mut c = cmd("SET"); c.arg(k); c.query(..)`.
                    let builder = if is_chain(&init.expr) {
                        let c = self.resolve_chain(flatten(self.cx, &init.expr));
                        let run = c
                            .segs
                            .iter()
                            .any(|s| matches!(s.kind, SegKind::Await | SegKind::Try));
                        (!run && matches!(c.root, Root::Call { .. })).then_some(c)
                    } else {
                        None
                    };
                    for n in &names {
                        let chain = builder
                            .as_ref()
                            .map(|c| (clone_root(&c.root), c.root_expr, c.segs.clone()));
                        self.strings.get_mut().clear();
                        self.locals.insert(
                            n.clone(),
                            Local {
                                init: &init.expr,
                                chain,
                            },
                        );
                    }
                }
            }
            Stmt::Expr(e, semi) => {
                self.stmt_line = self.line_of(start_span(e));
                let use_ = if semi.is_some() {
                    Use::Stmt
                } else {
                    Use::Value
                };
                self.expr(e, use_);
            }
            Stmt::Macro(m) => {
                self.stmt_line = self.line_of(m.mac.path.span());
                self.mac(&m.mac, Use::Stmt, None);
            }
            Stmt::Item(_) => {}
        }
        self.stmt_line = saved;
    }

    fn expr(&mut self, e: &'ast Expr, use_: Use) {
        if self.depth >= MAX_EXPR_DEPTH {
            // No `e.span()` here: it would walk the deep tree again.
            self.model.too_deep.get_or_insert(self.stmt_line);
            return;
        }
        self.depth += 1;
        self.expr_inner(e, use_);
        self.depth -= 1;
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
            Expr::Unary(u) => {
                let inner = if matches!(use_, Use::Cond { .. }) {
                    Use::Cond { names: vec![] }
                } else {
                    Use::Value
                };
                self.expr(&u.expr, inner);
            }
            Expr::Binary(b) => {
                let inner = if matches!(use_, Use::Cond { .. }) {
                    Use::Cond { names: vec![] }
                } else {
                    Use::Value
                };
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
                    if let Some((_, guard)) = &arm.guard {
                        self.expr(guard, Use::Cond { names: vec![] });
                    }
                    self.expr(&arm.body, Use::Value);
                }
                self.guards.pop();
            }
            Expr::Let(l) => self.expr(
                &l.expr,
                Use::Cond {
                    names: pat_names(&l.pat),
                },
            ),
            Expr::Block(b) => self.block(&b.block),
            Expr::Unsafe(b) => self.block(&b.block),
            Expr::Async(b) => self.block(&b.block),
            Expr::TryBlock(b) => self.block(&b.block),
            Expr::Loop(l) => self.block(&l.body),
            Expr::While(w) => {
                let g = self.guard_start(&w.cond);
                self.expr(&w.cond, Use::Cond { names: vec![] });
                let g = self.guard_end(g);
                self.guards.push(g);
                self.block(&w.body);
                self.guards.pop();
            }
            Expr::ForLoop(f) => {
                self.expr(&f.expr, Use::Value);
                self.block(&f.body);
            }
            Expr::Closure(c) => self.expr(&c.body, Use::Value),
            Expr::Assign(a) => {
                self.expr(&a.right, Use::Value);
                if self.detail {
                    let target = assign_target(&a.left);
                    let offset = self.cx.src.span_of(a.eq_token.span).start.offset;
                    self.model.fns[self.f].assigns.push(Assign {
                        target,
                        mentions: mentions(&a.right),
                        offset,
                    });
                }
                self.expr(&a.left, Use::Value);
            }
            Expr::Return(r) => {
                if let Some(v) = &r.expr {
                    self.expr(v, Use::Value);
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

    fn if_expr(&mut self, i: &'ast syn::ExprIf) {
        let g = self.guard_start(&i.cond);
        match &*i.cond {
            Expr::Let(l) if i.else_branch.is_none() && pat_is_ok_some(&l.pat) => self.expr(
                &l.expr,
                Use::IfLetNoElse {
                    names: pat_names(&l.pat),
                },
            ),
            other => self.expr(other, Use::Cond { names: vec![] }),
        }
        let g = self.guard_end(g);
        self.guards.push(g);
        self.block(&i.then_branch);
        if let Some((_, e)) = &i.else_branch {
            self.expr(e, Use::Value);
        }
        self.guards.pop();
    }

    fn guard_start(&mut self, cond: &'ast Expr) -> usize {
        // Spans and mentions cost a walk of the condition: only the detailed
        // pass needs them.
        let (span, mentioned) = if self.detail {
            (self.cx.src.span_of(cond.span()), mentions(cond))
        } else {
            (Span::default(), BTreeSet::new())
        };
        let f = &mut self.model.fns[self.f];
        f.guards.push(Guard {
            span,
            mentions: mentioned,
            events: Vec::new(),
        });
        // Events created from here until guard_end belong to the condition.
        f.guards.len() - 1 + (self.model.events.len() << 32)
    }

    fn guard_end(&mut self, g: usize) -> usize {
        let gi = g & 0xffff_ffff;
        let first_event = g >> 32;
        let ids: Vec<usize> = (first_event..self.model.events.len()).collect();
        self.model.fns[self.f].guards[gi].events = ids;
        gi
    }

    fn mac(&mut self, m: &'ast syn::Macro, use_: Use, as_expr: Option<&'ast Expr>) {
        let name = macro_name(m);
        if LOG_MACROS.contains(&name.as_str()) {
            if self.detail {
                let span = self.cx.src.span_of(m.path.span());
                self.model.fns[self.f].logs.push(LogUse {
                    mentions: token_idents(&m.tokens),
                    span,
                });
            }
            return;
        }
        match (
            as_expr,
            self.cx.macros.get(&(m as *const syn::Macro as usize)),
        ) {
            (Some(e), Some(_)) => self.chain(e, use_),
            (None, Some(args)) => {
                for a in args {
                    self.expr(a, Use::Value);
                }
            }
            _ => {}
        }
    }

    /// Continues a chain rooted at a `let`-bound builder.
    fn resolve_chain(&self, mut c: Chain<'ast>) -> Chain<'ast> {
        if let Some(var) = &c.var {
            if let Some(Local {
                chain: Some((root, root_expr, segs)),
                ..
            }) = self.locals.get(var)
            {
                let root = clone_root(root);
                let mut all = segs.clone();
                c.inherited = all.len();
                all.extend(c.segs);
                return Chain {
                    root,
                    root_expr,
                    segs: all,
                    inherited: c.inherited,
                    resolved: true,
                    var: c.var,
                };
            }
        }
        c
    }

    fn chain(&mut self, e: &'ast Expr, use_: Use) {
        let raw = flatten(self.cx, e);
        let chain = self.resolve_chain(raw);
        self.classify(&chain, e, &use_);
        if self.detail {
            self.record_calls(&chain);
        }
        // Walk nested expressions: the root's and every own segment's arguments.
        match &chain.root {
            Root::Call { args, .. } | Root::Macro { args, .. } if !chain.resolved => {
                for a in args.clone() {
                    self.expr(a, Use::Value);
                }
            }
            // A root that is itself a call of a non-path (`(self.f)(x)`,
            // `make()(x)`) or an unparsed macro: walk its parts, never the
            // root again (it would flatten to this same chain).
            Root::Other if !chain.resolved => match chain.root_expr {
                Expr::Call(c) => {
                    self.expr(&c.func, Use::Value);
                    for a in &c.args {
                        self.expr(a, Use::Value);
                    }
                }
                Expr::Macro(_) => {}
                other if !is_chain(other) => self.expr(other, Use::Value),
                _ => {}
            },
            _ => {}
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
                        span: Span { start, end },
                        offset: start.offset,
                    });
                }
            }
        }
    }

    // -----------------------------------------------------------------------
    // Matching a chain against the packs.

    fn classify(&mut self, chain: &Chain<'ast>, top: &'ast Expr, use_: &Use) {
        let packs = self.cx.packs;
        // Candidate anchors: (segment index or usize::MAX for the root, api).
        // Evaluated right to left so that each anchor's window ends where the
        // next matched anchor begins (pipelines hold several commands).
        let n = chain.segs.len();
        let mut anchors: Vec<(usize, Vec<ApiRef>)> = Vec::new();
        match &chain.root {
            Root::Call { path, args } => {
                let last = path
                    .segments
                    .last()
                    .map(|s| s.ident.to_string())
                    .unwrap_or_default();
                let mut cands: Vec<ApiRef> = packs.by_function(&last).to_vec();
                if last == "cmd" {
                    if let Some(word) = args.first().and_then(|a| str_lit(a)) {
                        cands.extend_from_slice(packs.by_command(&word.to_uppercase()));
                    }
                }
                if !cands.is_empty() {
                    anchors.push((usize::MAX, cands));
                }
            }
            Root::Macro { name, .. } => {
                let cands = packs.by_macro(name);
                if !cands.is_empty() {
                    anchors.push((usize::MAX, cands.to_vec()));
                }
            }
            _ => {}
        }
        for (i, s) in chain.segs.iter().enumerate() {
            if let SegKind::Method { name, args, .. } = &s.kind {
                let mut cands: Vec<ApiRef> = packs.by_method(name).to_vec();
                // `pipe().cmd("SET")` and `Cmd::new().arg("SET")`.
                if name == "cmd" || (name == "arg" && i > 0 && is_cmd_new(chain, i)) {
                    if let Some(word) = args.first().and_then(|a| str_lit(a)) {
                        cands.extend_from_slice(packs.by_command(&word.to_uppercase()));
                    }
                }
                if !cands.is_empty() {
                    anchors.push((i, cands));
                }
            }
        }
        let mut matched: Vec<(usize, ApiRef, usize)> = Vec::new(); // (anchor, api, window end)
                                                                   // Anchored shapes (a method, function, macro or command) first,
                                                                   // right to left so each anchor's window ends where the next matched
                                                                   // anchor begins (a pipeline holds several commands).
        let mut end = n;
        for (anchor, cands) in anchors.iter().rev() {
            let from = if *anchor == usize::MAX { 0 } else { *anchor };
            let need = Need::of(packs, cands);
            let view = View::new(self, chain, *anchor, from, end, need);
            if let Some(api) = self.first_match(cands, &view) {
                matched.push((*anchor, api, end));
                end = from;
            }
        }
        // A script or SQL statement says more than the generic method that
        // runs it (`execute`, `invoke`): text shapes win over effects.
        let only_effects = matched.iter().all(|(_, r, _)| {
            matches!(
                packs.api(*r).role,
                crate::pack::Role::Effect | crate::pack::Role::FencedEffect
            )
        });
        if only_effects && !self.cx.text_only.is_empty() {
            let need = Need::of(packs, &self.cx.text_only);
            let view = View::new(self, chain, usize::MAX, 0, n, need);
            if !view.texts.is_empty() {
                if let Some(api) = self.first_match(&self.cx.text_only, &view) {
                    matched.clear();
                    matched.push((usize::MAX, api, n));
                }
            }
        }
        if matched.is_empty() {
            return;
        }
        // A later view of a let-bound builder replaces the earlier one.
        if chain.inherited > 0 {
            if let Some(var) = &chain.var {
                if let Some(old) = self.var_events.remove(var) {
                    self.dead.extend(old);
                }
            }
        }
        matched.reverse();
        for (anchor, api, end) in matched {
            let from = if anchor == usize::MAX { 0 } else { anchor };
            let view = View::new(self, chain, anchor, from, end, Need::ALL);
            let id = self.emit(chain, &view, api, top, use_, end);
            if let Some(var) = &chain.var {
                self.var_events.entry(var.clone()).or_default().push(id);
            }
            if let Use::Let { names, .. } = use_ {
                for n in names {
                    self.var_events.entry(n.clone()).or_default().push(id);
                }
            }
        }
    }

    /// The first candidate that matches, skipping shapes that need a lock
    /// name when this call's key, binding and function have none.
    fn first_match(&self, cands: &[ApiRef], view: &View<'ast>) -> Option<ApiRef> {
        let packs = self.cx.packs;
        cands.iter().copied().find(|&r| {
            let api = packs.api(r);
            view.matches(api, packs.pack(r))
                && (!api.needs_lock_name || self.lockish(view, api, &[]))
        })
    }

    fn lockish(&self, view: &View<'ast>, api: &crate::pack::Api, binding: &[String]) -> bool {
        let key = view.key(api, self);
        let key_lockish = key.as_ref().is_some_and(|k| {
            is_lock_name(self.cx.lock_name, &k.norm)
                || k.literal
                    .as_ref()
                    .is_some_and(|l| is_lock_name(self.cx.lock_name, l))
                || self
                    .locals
                    .get(&k.norm)
                    .is_some_and(|l| is_lock_name(self.cx.lock_name, &keys::normalise(l.init)))
        });
        key_lockish || self.fn_lockish || binding.iter().any(|b| is_lock_name(self.cx.lock_name, b))
    }

    fn emit(
        &mut self,
        chain: &Chain<'ast>,
        view: &View<'ast>,
        r: ApiRef,
        top: &'ast Expr,
        use_: &Use,
        end: usize,
    ) -> usize {
        let packs = self.cx.packs;
        let api = packs.api(r);
        let src = self.cx.src;
        // Primary span: from the anchor to the last method of its window.
        let start = match view.anchor {
            usize::MAX => src.span_of(chain.root_expr.span()).start,
            i => src.span_of(chain.segs[i].start).start,
        };
        let last_method = (view.from..end)
            .rev()
            .find(|&i| matches!(chain.segs[i].kind, SegKind::Method { .. }));
        let end_pos = match last_method {
            Some(i) => src.span_of(chain.segs[i].expr.span()).end,
            None => src.span_of(chain.root_expr.span()).end,
        };
        let span = Span {
            start,
            end: end_pos,
        };
        let chain_span = src.span_of(top.span());
        let key = view.key(api, self);
        let binding = match use_ {
            Use::Let { names, .. } | Use::Cond { names } | Use::IfLetNoElse { names } => {
                names.clone()
            }
            _ => Vec::new(),
        };
        let result = result_use(chain, view, end, use_, api.result, &api.discard_methods);
        let expiry = view.expiry(api);
        let lockish = self.lockish(view, api, &binding);
        let mut all_mentions = mentions(chain.root_expr);
        let mut arg_mentions = BTreeSet::new();
        for s in &chain.segs {
            if let SegKind::Method { args, .. } = &s.kind {
                for a in args {
                    let m = mentions(a);
                    arg_mentions.extend(m.iter().cloned());
                    all_mentions.extend(m);
                }
            }
        }
        if let Root::Call { args, .. } | Root::Macro { args, .. } = &chain.root {
            for a in args {
                arg_mentions.extend(mentions(a));
            }
        }
        let id = self.model.events.len();
        self.model.events.push(Event {
            id,
            api: r,
            role: api.role,
            backend: packs.pack(r).backend.clone(),
            func: self.f,
            span,
            chain_span,
            stmt_line: self.stmt_line,
            key,
            words: view.words.clone(),
            chain_methods: chain.method_names().map(str::to_string).collect(),
            result,
            binding,
            mentions: all_mentions,
            arg_mentions,
            expiry,
            guards: self.guards.clone(),
            lockish,
            receiver: view.receiver().to_string(),
            purpose: None,
        });
        self.model.fns[self.f].events.push(id);
        id
    }
}

fn clone_root<'ast>(root: &Root<'ast>) -> Root<'ast> {
    match root {
        Root::Call { path, args } => Root::Call {
            path,
            args: args.clone(),
        },
        Root::Macro { name, args } => Root::Macro {
            name: name.clone(),
            args: args.clone(),
        },
        Root::Path(p) => Root::Path(p.clone()),
        Root::Other => Root::Other,
    }
}

fn is_cmd_new(chain: &Chain, i: usize) -> bool {
    // `Cmd::new().arg("SET")`: the first `.arg` right after `Cmd::new()`.
    i == 0
        && matches!(&chain.root, Root::Call { path, .. }
            if path.segments.len() >= 2
                && path.segments[path.segments.len() - 2].ident == "Cmd"
                && path.segments.last().is_some_and(|s| s.ident == "new"))
}

/// What a view must gather for the candidates it is matched against: the
/// words and strings under a chain are costly, and most candidates (a
/// method named `get` or `query`) ask for neither.
#[derive(Clone, Copy)]
struct Need {
    words: bool,
    texts: bool,
}

impl Need {
    /// Everything: the view an event is made from.
    const ALL: Need = Need {
        words: true,
        texts: true,
    };

    fn of(packs: &PackSet, cands: &[ApiRef]) -> Need {
        let mut need = Need {
            words: false,
            texts: false,
        };
        for &r in cands {
            let m = &packs.api(r).matcher;
            need.words |= !m.words.is_empty() || !m.any_words.is_empty() || !m.no_words.is_empty();
            need.texts |= !m.text.is_empty() || !m.no_text.is_empty();
        }
        need
    }
}

/// What one anchor sees of its chain.
struct View<'ast> {
    anchor: usize,
    from: usize,
    end: usize,
    /// The matched call's own arguments.
    args: Vec<&'ast Expr>,
    words: BTreeSet<String>,
    methods: Vec<String>,
    texts: Vec<String>,
    receiver_expr: Option<&'ast Expr>,
    /// The receiver's text, made on first use (most views never ask).
    receiver: std::cell::OnceCell<String>,
    chain_segs: Vec<Seg<'ast>>,
    root_is_command: Option<String>,
    root_fn: Option<Vec<String>>,
    macro_name: Option<String>,
    method_name: Option<String>,
    file_has_crate: Vec<String>,
    /// Fields the matched call's arguments set (struct-literal fields and
    /// builder methods), for `fields` / `no-fields`.
    fields: BTreeSet<String>,
    /// Arguments of the constructor call the chain starts from, for
    /// `root-arg` keys.
    root_args: Vec<&'ast Expr>,
}

impl<'ast> View<'ast> {
    fn receiver(&self) -> &str {
        self.receiver
            .get_or_init(|| self.receiver_expr.map(keys::compact).unwrap_or_default())
    }

    fn new(
        w: &Walker<'_, '_, 'ast>,
        chain: &Chain<'ast>,
        anchor: usize,
        from: usize,
        end: usize,
        need: Need,
    ) -> View<'ast> {
        let mut words = BTreeSet::new();
        let mut texts = Vec::new();
        let mut methods = Vec::new();
        let mut arg_lists: Vec<&'ast Expr> = Vec::new();
        let mut args = Vec::new();
        let mut root_is_command = None;
        let mut root_fn = None;
        let mut macro_name = None;
        let mut method_name = None;
        if anchor == usize::MAX {
            match &chain.root {
                Root::Call { path, args: a } => {
                    root_fn = Some(
                        path.segments
                            .iter()
                            .map(|s| s.ident.to_string())
                            .collect::<Vec<_>>(),
                    );
                    if path.segments.last().is_some_and(|s| s.ident == "cmd") {
                        root_is_command =
                            a.first().and_then(|x| str_lit(x)).map(|s| s.to_uppercase());
                    }
                    args = a.clone();
                }
                Root::Macro { name, args: a } => {
                    macro_name = Some(name.clone());
                    args = a.clone();
                }
                Root::Path(p) => {
                    // A builder or script held in a const/static.
                    if let Some(e) = w.cx.consts.get(p.rsplit("::").next().unwrap_or(p)) {
                        if need.texts {
                            collect_strings(e, w, &mut texts, 0);
                        }
                    }
                }
                Root::Other => {}
            }
            arg_lists.extend(args.iter().copied());
        } else if let SegKind::Method { name, args: a, .. } = &chain.segs[anchor].kind {
            method_name = Some(name.clone());
            args = a.clone();
            if name == "cmd" || name == "arg" {
                root_is_command = a.first().and_then(|x| str_lit(x)).map(|s| s.to_uppercase());
            }
        }
        if anchor == usize::MAX {
            // Texts reachable from the root variable (a `let` or a static).
            // Not through a call that already ran: `let row = client
            // .query_one(SQL, ..).await?; row.get(0)` does not run SQL again.
            if let Root::Path(p) = &chain.root {
                if let Some(l) = w.locals.get(p) {
                    if need.texts && (l.chain.is_some() || !is_chain(l.init)) {
                        collect_strings(l.init, w, &mut texts, 0);
                    }
                }
            }
        }
        for s in &chain.segs[from..end] {
            if let SegKind::Method { name, args: a, .. } = &s.kind {
                methods.push(name.clone());
                arg_lists.extend(a.iter().copied());
            }
        }
        if anchor != usize::MAX {
            // The anchor's own args were pushed by the loop above.
        }
        for a in arg_lists.iter().filter(|_| need.words) {
            collect_words(a, &mut words);
            // An argument held in a local: `client.txn(txn)`, `opts`.
            if let Expr::Path(p) = keys::strip(a) {
                if let Some(l) = p
                    .path
                    .get_ident()
                    .and_then(|i| w.locals.get(&i.to_string()))
                {
                    collect_words(l.init, &mut words);
                }
            }
        }
        // SQL and Lua texts are read from the whole chain: the statement is
        // usually given to the root (`query(SQL)`) and run by a later method.
        if need.texts {
            if let Root::Call { args: a, .. } | Root::Macro { args: a, .. } = &chain.root {
                for x in a {
                    collect_strings(x, w, &mut texts, 0);
                }
            }
            for s in &chain.segs {
                if let SegKind::Method { args: a, .. } = &s.kind {
                    for x in a {
                        collect_strings(x, w, &mut texts, 0);
                    }
                }
            }
        }
        // The receiver: everything before the anchor, as text when asked.
        let receiver_expr = if anchor == usize::MAX {
            None
        } else if anchor == 0 {
            Some(chain.root_expr)
        } else {
            Some(chain.segs[anchor - 1].expr)
        };
        let mut fields = BTreeSet::new();
        for a in &args {
            set_fields(a, &mut fields);
            if let Expr::Path(p) = keys::strip(a) {
                if let Some(l) = p
                    .path
                    .get_ident()
                    .and_then(|i| w.locals.get(&i.to_string()))
                {
                    set_fields(l.init, &mut fields);
                }
            }
        }
        let root_args = match &chain.root {
            Root::Call { args: a, .. } => a.clone(),
            _ => Vec::new(),
        };
        View {
            fields,
            root_args,
            anchor,
            from,
            end,
            args,
            words,
            methods,
            texts,
            receiver_expr,
            receiver: std::cell::OnceCell::new(),
            chain_segs: chain.segs.clone(),
            root_is_command,
            root_fn,
            macro_name,
            method_name,
            file_has_crate: w.cx.crates.iter().cloned().collect(),
        }
    }

    fn matches(&self, api: &crate::pack::Api, pack: &crate::pack::Pack) -> bool {
        let m = &api.matcher;
        if let Some(name) = &m.method {
            if self.method_name.as_deref() != Some(name.as_str()) {
                return false;
            }
        }
        if let Some(segs) = &m.function {
            let Some(have) = &self.root_fn else {
                return false;
            };
            if have.len() < segs.len() || have[have.len() - segs.len()..] != segs[..] {
                return false;
            }
        }
        if let Some(name) = &m.macro_name {
            if self.macro_name.as_deref() != Some(name.as_str()) {
                return false;
            }
        }
        if let Some(cmd) = &m.command {
            if self.root_is_command.as_deref() != Some(cmd.as_str()) {
                return false;
            }
        }
        if let Some(n) = m.args {
            // For a command, `args` counts the `.arg(..)` calls after it.
            let count = if m.command.is_some() {
                self.methods.iter().filter(|x| *x == "arg").count()
            } else {
                self.args.len()
            };
            if count != n {
                return false;
            }
        }
        if !m.words.iter().all(|w| self.words.contains(w)) {
            return false;
        }
        if !m.any_words.is_empty() && !m.any_words.iter().any(|w| self.words.contains(w)) {
            return false;
        }
        if m.no_words.iter().any(|w| self.words.contains(w)) {
            return false;
        }
        if !m.chain.iter().all(|c| self.methods.iter().any(|x| x == c)) {
            return false;
        }
        if m.no_chain
            .iter()
            .any(|c| self.methods.iter().any(|x| x == c))
        {
            return false;
        }
        if !m.text.is_empty() || !m.no_text.is_empty() {
            let joined = self.texts.join("\n");
            if !m.text.iter().all(|r| r.is_match(&joined)) {
                return false;
            }
            if m.no_text.iter().any(|r| r.is_match(&joined)) {
                return false;
            }
        }
        if let Some(r) = &m.receiver {
            if !r.is_match(self.receiver()) {
                return false;
            }
        }
        if !m.fields.iter().all(|f| self.fields.contains(f))
            || m.no_fields.iter().any(|f| self.fields.contains(f))
        {
            return false;
        }
        let crates = m.evidence_crates(pack);
        if m.needs_crate && !crates.is_empty() {
            let root_mentions = self
                .root_fn
                .as_ref()
                .and_then(|p| p.first())
                .is_some_and(|first| crates.iter().any(|c| c == first));
            if !root_mentions
                && !crates.iter().any(|c| self.file_has_crate.contains(c))
                && !crates.iter().any(|c| mentions_word(self.receiver(), c))
            {
                return false;
            }
        }
        true
    }

    fn key(&self, api: &crate::pack::Api, w: &Walker<'_, '_, 'ast>) -> Option<Key> {
        for spec in &api.key {
            let e = match spec {
                KeySpec::Arg(i) => self.args.get(*i).copied(),
                KeySpec::Method { name, nth, arg } => self.chain_segs[self.from..self.end]
                    .iter()
                    .filter_map(|s| match &s.kind {
                        SegKind::Method { name: n, args, .. } if n == name => {
                            args.get(*arg).copied()
                        }
                        _ => None,
                    })
                    .filter(|a| {
                        !(name == "arg"
                            && self.root_is_command.is_some()
                            && is_command_word(a, &self.root_is_command))
                    })
                    .nth(*nth),
                KeySpec::Field(field) => self.args.iter().find_map(|a| struct_field(a, field)),
                KeySpec::RootArg(i) => self.root_args.get(*i).copied(),
            };
            if let Some(e) = e {
                let span = w.cx.src.span_of(e.span());
                return Some(Key {
                    norm: keys::normalise(e),
                    text: w.cx.src.snippet(&span).to_string(),
                    span,
                    literal: keys::literal(e).or_else(|| {
                        // A key variable bound to a literal or format!.
                        let norm = keys::normalise(e);
                        w.locals.get(&norm).and_then(|l| keys::literal(l.init))
                    }),
                });
            }
        }
        None
    }

    fn expiry(&self, api: &crate::pack::Api) -> ExpiryState {
        let Some(e) = &api.expiry else {
            return ExpiryState::Unknown;
        };
        match e.from {
            ExpirySource::Words => match e.words.iter().find(|w| self.words.contains(*w)) {
                Some(w) => ExpiryState::Set(Some(w.clone())),
                None => ExpiryState::Missing,
            },
            ExpirySource::Arg => match e.arg.and_then(|i| self.args.get(i)) {
                Some(a) if is_none(a) => ExpiryState::Missing,
                Some(a) => ExpiryState::Set(Some(keys::compact(*a))),
                None => ExpiryState::Missing,
            },
            ExpirySource::Field => {
                let field = e.field.as_deref().unwrap_or("");
                match self.args.iter().find_map(|a| struct_field(a, field)) {
                    Some(v) if is_none(v) => ExpiryState::Missing,
                    Some(v) => ExpiryState::Set(Some(keys::compact(v))),
                    // `..Default::default()` or a value built elsewhere.
                    None => ExpiryState::Unknown,
                }
            }
            ExpirySource::Methods => {
                let found = e.methods.iter().any(|m| {
                    self.methods.iter().any(|x| x == m)
                        || self
                            .args
                            .iter()
                            .any(|a| keys::compact(*a).contains(&format!(".{m}(")))
                });
                if found {
                    ExpiryState::Set(None)
                } else {
                    ExpiryState::Missing
                }
            }
            ExpirySource::Text => {
                let joined = self.texts.join("\n");
                if e.text.iter().any(|r| r.is_match(&joined)) {
                    ExpiryState::Set(None)
                } else {
                    ExpiryState::Missing
                }
            }
            ExpirySource::Server => ExpiryState::Server(e.note.clone()),
            ExpirySource::Session => ExpiryState::Session,
            ExpirySource::Always => ExpiryState::Set(None),
            ExpirySource::Never => ExpiryState::Missing,
        }
    }
}

fn is_command_word(a: &Expr, cmd: &Option<String>) -> bool {
    matches!((str_lit(a), cmd), (Some(s), Some(c)) if s.eq_ignore_ascii_case(c))
}

fn result_use(
    chain: &Chain,
    view: &View,
    end: usize,
    use_: &Use,
    kind: Option<ResultKind>,
    discard: &[String],
) -> ResultUse {
    let _ = kind;
    // Methods after the anchor that throw the reply away or swallow the error.
    let tail = &chain.segs[view.from..chain.segs.len()];
    let _ = end;
    let mut propagated = false;
    let mut swallowed: Option<String> = None;
    for (i, s) in tail.iter().enumerate() {
        match &s.kind {
            SegKind::Method {
                name,
                unit_turbofish,
                args,
            } => {
                if i == 0 && view.anchor != usize::MAX {
                    continue;
                }
                if *unit_turbofish {
                    return ResultUse::Discarded {
                        how: format!("`.{name}::<()>` throws the reply away"),
                        propagated: true,
                    };
                }
                if discard.iter().any(|d| d == name) {
                    return ResultUse::Discarded {
                        how: format!("`.{name}(..)` throws the reply away"),
                        propagated: true,
                    };
                }
                match name.as_str() {
                    "ok" => swallowed = Some("`.ok()` turns the error into `None`".into()),
                    "unwrap_or_default" => {
                        swallowed =
                            Some("`.unwrap_or_default()` turns a failure into a default".into())
                    }
                    "unwrap_or" if args.first().is_some_and(|a| keys::compact(*a) == "true") => {
                        swallowed = Some("`.unwrap_or(true)` treats a failure as success".into())
                    }
                    "unwrap_or" | "unwrap_or_else" if swallowed.is_none() => {
                        swallowed =
                            Some(format!("`.{name}(..)` replaces a failure with a fallback"))
                    }
                    "is_ok" | "is_err" | "is_some" | "is_none" => return ResultUse::Inspected,
                    _ => {}
                }
            }
            SegKind::Try => propagated = true,
            _ => {}
        }
    }
    let dropped = match use_ {
        Use::Stmt => Some("the call is a statement whose value is dropped".to_string()),
        Use::LetWild { unit: true } => Some("`let _: () =` throws the reply away".to_string()),
        Use::LetWild { unit: false } => Some("`let _ =` drops the result".to_string()),
        Use::Let { unit: true, .. } => Some("the reply is read as `()`".to_string()),
        _ => None,
    };
    if let Some(how) = swallowed {
        if dropped.is_some() || matches!(use_, Use::Let { .. } | Use::Value | Use::Cond { .. }) {
            return ResultUse::Swallowed { how };
        }
    }
    if matches!(use_, Use::IfLetNoElse { .. }) {
        return ResultUse::IfLetNoElse;
    }
    match (dropped, propagated) {
        (Some(_), true) if matches!(use_, Use::Stmt) => ResultUse::Propagated,
        (Some(how), propagated) => ResultUse::Discarded { how, propagated },
        (None, _) => match use_ {
            Use::Let { .. } => ResultUse::Bound,
            _ => ResultUse::Inspected,
        },
    }
}

// ---------------------------------------------------------------------------
// Small syntax helpers.

fn str_lit(e: &Expr) -> Option<String> {
    match keys::strip(e) {
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Str(s) => Some(s.value()),
            syn::Lit::ByteStr(b) => Some(String::from_utf8_lossy(&b.value()).into_owned()),
            _ => None,
        },
        _ => None,
    }
}

fn is_none(e: &Expr) -> bool {
    matches!(keys::strip(e), Expr::Path(p) if p.path.is_ident("None"))
        || matches!(keys::strip(e), Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "None"))
}

fn struct_field<'e>(e: &'e Expr, field: &str) -> Option<&'e Expr> {
    match keys::strip(e) {
        Expr::Struct(s) => s.fields.iter().find_map(|f| match &f.member {
            syn::Member::Named(n) if n == field => Some(&f.expr),
            _ => None,
        }),
        Expr::Call(c) => c.args.iter().find_map(|a| struct_field(a, field)),
        _ => None,
    }
}

/// Fields an argument sets: struct-literal fields whose value is not `None`
/// (`CreateOrUpdateKeyRequest { acquire: &sid, .. }`) and builder methods
/// called inside it (`SetKeyRequest::builder().acquire(sid)`).
fn set_fields(e: &Expr, out: &mut BTreeSet<String>) {
    struct V<'o>(&'o mut BTreeSet<String>);
    impl<'ast> Visit<'ast> for V<'_> {
        fn visit_expr_struct(&mut self, s: &'ast syn::ExprStruct) {
            for f in &s.fields {
                if let syn::Member::Named(n) = &f.member {
                    if !is_none(&f.expr) {
                        self.0.insert(n.to_string());
                    }
                }
            }
            visit::visit_expr_struct(self, s);
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            self.0.insert(m.method.to_string());
            visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_expr_block(&mut self, _: &'ast syn::ExprBlock) {}
        fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    }
    V(out).visit_expr(e);
}

/// Upper-cased string literals and last segments of multi-segment paths.
fn collect_words(e: &Expr, out: &mut BTreeSet<String>) {
    struct V<'o>(&'o mut BTreeSet<String>);
    impl<'ast> Visit<'ast> for V<'_> {
        fn visit_lit_str(&mut self, l: &'ast syn::LitStr) {
            let v = l.value();
            if v.len() <= 40 {
                for w in v.split_whitespace() {
                    self.0.insert(w.to_uppercase());
                }
            }
        }
        fn visit_path(&mut self, p: &'ast syn::Path) {
            if p.segments.len() >= 2 {
                if let Some(s) = p.segments.last() {
                    self.0.insert(s.ident.to_string().to_uppercase());
                }
            } else if let Some(s) = p.segments.last() {
                let id = s.ident.to_string();
                if id == "None"
                    || id == "Some"
                    || id.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                {
                    self.0.insert(id.to_uppercase());
                }
            }
            visit::visit_path(self, p);
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_expr_block(&mut self, _: &'ast syn::ExprBlock) {}
        fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    }
    V(out).visit_expr(e);
}

/// String literals of an expression, following consts, statics and lets.
fn collect_strings(e: &Expr, w: &Walker, out: &mut Vec<String>, depth: usize) {
    if depth > 4 {
        return;
    }
    let key = (e as *const Expr as usize, depth);
    let cached = w.strings.borrow().get(&key).cloned();
    if let Some(found) = cached {
        out.extend(found.iter().cloned());
        return;
    }
    let mut found = Vec::new();
    collect_strings_uncached(e, w, &mut found, depth);
    out.extend(found.iter().cloned());
    w.strings.borrow_mut().insert(key, found.into());
}

fn collect_strings_uncached(e: &Expr, w: &Walker, out: &mut Vec<String>, depth: usize) {
    struct V<'o, 'w, 'a, 'c, 'ast> {
        out: &'o mut Vec<String>,
        w: &'w Walker<'a, 'c, 'ast>,
        depth: usize,
    }
    impl<'ast2> Visit<'ast2> for V<'_, '_, '_, '_, '_> {
        fn visit_lit_str(&mut self, l: &'ast2 syn::LitStr) {
            self.out.push(l.value());
        }
        fn visit_expr_path(&mut self, p: &'ast2 syn::ExprPath) {
            if let Some(last) = p.path.segments.last() {
                let name = last.ident.to_string();
                if p.path.segments.len() == 1 {
                    if let Some(l) = self.w.locals.get(&name) {
                        collect_strings(l.init, self.w, self.out, self.depth + 1);
                        return;
                    }
                }
                if name.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
                    if let Some(c) = self.w.cx.consts.get(&name) {
                        collect_strings(c, self.w, self.out, self.depth + 1);
                    }
                }
            }
        }
        fn visit_expr_closure(&mut self, c: &'ast2 syn::ExprClosure) {
            visit::visit_expr_closure(self, c);
        }
        fn visit_macro(&mut self, m: &'ast2 syn::Macro) {
            for tt in m.tokens.clone() {
                if let TokenTree::Literal(l) = tt {
                    if let Ok(s) = syn::parse2::<syn::LitStr>(TokenTree::Literal(l).into()) {
                        self.out.push(s.value());
                    }
                }
            }
        }
    }
    V { out, w, depth }.visit_expr(e);
}

/// Identifiers an expression mentions: variables, fields, method receivers.
pub fn mentions(e: &Expr) -> BTreeSet<String> {
    struct V(BTreeSet<String>);
    impl<'ast> Visit<'ast> for V {
        fn visit_path(&mut self, p: &'ast syn::Path) {
            if let Some(first) = p.segments.first() {
                self.0.insert(first.ident.to_string());
            }
            visit::visit_path(self, p);
        }
        fn visit_member(&mut self, m: &'ast syn::Member) {
            if let syn::Member::Named(n) = m {
                self.0.insert(n.to_string());
            }
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            self.0.extend(token_idents(&m.tokens));
        }
    }
    let mut v = V(BTreeSet::new());
    v.visit_expr(e);
    v.0
}

fn token_idents(ts: &proc_macro2::TokenStream) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![ts.clone()];
    while let Some(ts) = stack.pop() {
        for tt in ts {
            match tt {
                TokenTree::Ident(i) => {
                    out.insert(i.to_string());
                }
                TokenTree::Group(g) => stack.push(g.stream()),
                TokenTree::Literal(l) => {
                    // Inline format arguments: `"{token}"`.
                    let s = l.to_string();
                    for part in s.split('{').skip(1) {
                        let name: String = part
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        if !name.is_empty() && !name.chars().next().unwrap().is_ascii_digit() {
                            out.insert(name);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out
}

fn assign_target(e: &Expr) -> String {
    let mut cur = e;
    loop {
        cur = match cur {
            Expr::Field(f) => &f.base,
            Expr::Index(i) => &i.expr,
            Expr::Unary(u) => &u.expr,
            Expr::Paren(p) => &p.expr,
            Expr::Path(p) => {
                return p
                    .path
                    .segments
                    .first()
                    .map(|s| s.ident.to_string())
                    .unwrap_or_default()
            }
            _ => return String::new(),
        }
    }
}

pub fn pat_names(p: &Pat) -> Vec<String> {
    struct V(Vec<String>);
    impl<'ast> Visit<'ast> for V {
        fn visit_pat_ident(&mut self, i: &'ast syn::PatIdent) {
            self.0.push(i.ident.to_string());
            visit::visit_pat_ident(self, i);
        }
    }
    let mut v = V(Vec::new());
    v.visit_pat(p);
    v.0
}

fn is_wild(p: &Pat) -> bool {
    match p {
        Pat::Wild(_) => true,
        Pat::Type(t) => is_wild(&t.pat),
        _ => false,
    }
}

fn pat_is_unit_typed(p: &Pat) -> bool {
    matches!(p, Pat::Type(t) if matches!(&*t.ty, syn::Type::Tuple(tt) if tt.elems.is_empty()))
}

fn pat_is_ok_some(p: &Pat) -> bool {
    match p {
        Pat::TupleStruct(ts) => ts
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Ok" || s.ident == "Some"),
        _ => false,
    }
}

#[allow(dead_code)]
fn tokens_text(t: &impl ToTokens) -> String {
    keys::compact(t)
}
