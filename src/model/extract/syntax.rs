//! Small syntax helpers: spans without rendering tokens, literals, patterns,
//! and the identifiers an expression mentions.

use std::collections::{BTreeSet, HashMap};

use proc_macro2::TokenTree;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Expr, Pat};

use super::super::keys;
use crate::source::{SourceFile, Span};

/// Macros whose arguments are only printed: a token that reaches one of these
/// has been logged, not used.
pub(super) const LOG_MACROS: &[&str] = &[
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
pub(super) const OPAQUE_MACROS: &[&str] = &[
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

/// Where an expression starts, without `Spanned::span`, which renders the
/// whole expression to tokens (a statement holding a large block would be
/// rendered again at every level of nesting). Falls back to it for the
/// rare shapes not listed, and where attributes come first.
pub(super) fn start_span(e: &Expr) -> proc_macro2::Span {
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
        Expr::Macro(m) if m.attrs.is_empty() => path_start(&m.mac.path),
        Expr::Path(p) if p.attrs.is_empty() && p.qself.is_none() => path_start(&p.path),
        Expr::Struct(s) if s.attrs.is_empty() && s.qself.is_none() => path_start(&s.path),
        Expr::Reference(r) if r.attrs.is_empty() => r.and_token.span,
        Expr::Lit(l) if l.attrs.is_empty() => l.lit.span(),
        Expr::Unary(u) if u.attrs.is_empty() => match u.op {
            syn::UnOp::Deref(t) => t.span,
            syn::UnOp::Not(t) => t.span,
            syn::UnOp::Neg(t) => t.span,
            _ => e.span(),
        },
        Expr::Paren(p) if p.attrs.is_empty() => p.paren_token.span.open(),
        Expr::Tuple(t) if t.attrs.is_empty() => t.paren_token.span.open(),
        Expr::Array(a) if a.attrs.is_empty() => a.bracket_token.span.open(),
        Expr::Async(a) if a.attrs.is_empty() => a.async_token.span,
        Expr::Let(l) if l.attrs.is_empty() => l.let_token.span,
        Expr::Break(b) if b.attrs.is_empty() => b.break_token.span,
        Expr::Continue(c) if c.attrs.is_empty() => c.continue_token.span,
        Expr::Closure(c)
            if c.attrs.is_empty()
                && c.lifetimes.is_none()
                && c.constness.is_none()
                && c.movability.is_none() =>
        {
            match (c.asyncness, c.capture) {
                (Some(a), _) => a.span,
                (None, Some(m)) => m.span,
                (None, None) => c.or1_token.span,
            }
        }
        Expr::Range(r) if r.attrs.is_empty() => match &r.start {
            Some(s) => start_span(s),
            None => range_limits(&r.limits).0,
        },
        other => other.span(),
    }
}

/// Where a path starts: its leading `::` or its first segment.
fn path_start(p: &syn::Path) -> proc_macro2::Span {
    match (&p.leading_colon, p.segments.first()) {
        (Some(c), _) => c.spans[0],
        (None, Some(s)) => s.ident.span(),
        (None, None) => p.span(),
    }
}

/// Where a path ends: its last segment's name, or the `>` or `)` closing
/// that segment's arguments.
fn path_end(p: &syn::Path) -> proc_macro2::Span {
    match p.segments.last().map(|s| (s, &s.arguments)) {
        Some((s, syn::PathArguments::None)) => s.ident.span(),
        Some((_, syn::PathArguments::AngleBracketed(a))) => a.gt_token.span,
        Some((_, syn::PathArguments::Parenthesized(a)))
            if matches!(a.output, syn::ReturnType::Default) =>
        {
            a.paren_token.span.close()
        }
        _ => p.span(),
    }
}

/// The first and last spans of a range's `..` or `..=`.
fn range_limits(l: &syn::RangeLimits) -> (proc_macro2::Span, proc_macro2::Span) {
    match l {
        syn::RangeLimits::HalfOpen(t) => (t.spans[0], t.spans[1]),
        syn::RangeLimits::Closed(t) => (t.spans[0], t.spans[2]),
    }
}

/// Where an expression ends, for the shapes a chain is made of (see
/// [`start_span`]).
pub(super) fn end_span(e: &Expr) -> proc_macro2::Span {
    match e {
        Expr::MethodCall(m) => m.paren_token.span.close(),
        Expr::Call(c) => c.paren_token.span.close(),
        Expr::Await(a) => a.await_token.span,
        Expr::Try(t) => t.question_token.span,
        Expr::Macro(m) => m.mac.delimiter.span().close(),
        Expr::Path(p) => path_end(&p.path),
        Expr::Lit(l) => l.lit.span(),
        Expr::Field(f) => match &f.member {
            syn::Member::Named(i) => i.span(),
            syn::Member::Unnamed(i) => i.span,
        },
        Expr::Index(i) => i.bracket_token.span.close(),
        Expr::Paren(p) => p.paren_token.span.close(),
        Expr::Tuple(t) => t.paren_token.span.close(),
        Expr::Array(a) => a.bracket_token.span.close(),
        Expr::Struct(s) => s.brace_token.span.close(),
        Expr::Block(b) => b.block.brace_token.span.close(),
        Expr::Unsafe(u) => u.block.brace_token.span.close(),
        Expr::Async(a) => a.block.brace_token.span.close(),
        Expr::Loop(l) => l.body.brace_token.span.close(),
        Expr::While(w) => w.body.brace_token.span.close(),
        Expr::ForLoop(f) => f.body.brace_token.span.close(),
        Expr::Match(m) => m.brace_token.span.close(),
        // An `else if` chain is followed in a loop, however long.
        Expr::If(first) => {
            let mut i = first;
            loop {
                match i.else_branch.as_ref().map(|(_, e)| &**e) {
                    None => return i.then_branch.brace_token.span.close(),
                    Some(Expr::If(next)) => i = next,
                    Some(other) => return end_span(other),
                }
            }
        }
        Expr::Reference(r) => end_span(&r.expr),
        Expr::Unary(u) => end_span(&u.expr),
        Expr::Binary(b) => end_span(&b.right),
        Expr::Assign(a) => end_span(&a.right),
        Expr::Closure(c) => end_span(&c.body),
        Expr::Let(l) => end_span(&l.expr),
        Expr::Return(r) => r.expr.as_deref().map_or(r.return_token.span, end_span),
        Expr::Range(r) => match &r.end {
            Some(e) => end_span(e),
            None => range_limits(&r.limits).1,
        },
        other => other.span(),
    }
}

/// An expression's span, from [`start_span`] to [`end_span`].
/// The spans of what a returned value starts on another task or thread
/// (the arguments of `tokio::spawn(..)`, `thread::spawn(..)`,
/// `handle.spawn(..)`): a lock call in there is consumed there, and the
/// `JoinHandle` hands back no outcome of it. Nesting is bounded by the
/// extractor's own depth guard.
pub(super) fn spawned_spans(src: &SourceFile, e: &Expr) -> Vec<Span> {
    struct Find<'s> {
        src: &'s SourceFile,
        out: Vec<Span>,
        depth: usize,
    }
    impl<'ast> Visit<'ast> for Find<'_> {
        fn visit_expr(&mut self, e: &'ast Expr) {
            if self.depth > 64 {
                return;
            }
            let spawned = match e {
                Expr::Call(c) => match &*c.func {
                    Expr::Path(p) => p
                        .path
                        .segments
                        .last()
                        .is_some_and(|s| s.ident.to_string().starts_with("spawn"))
                        .then(|| c.args.iter().collect::<Vec<_>>()),
                    _ => None,
                },
                Expr::MethodCall(m) if m.method.to_string().starts_with("spawn") => {
                    Some(m.args.iter().collect())
                }
                _ => None,
            };
            for a in spawned.into_iter().flatten() {
                self.out.push(self.src.span_of(a.span()));
            }
            self.depth += 1;
            visit::visit_expr(self, e);
            self.depth -= 1;
        }
    }
    let mut f = Find {
        src,
        out: Vec::new(),
        depth: 0,
    };
    f.visit_expr(e);
    f.out
}

/// A value that says "not won": `None`, `false`, `Ok(None)`, `Ok(false)`,
/// `Err(..)`.
pub(super) fn says_not_won(e: &Expr) -> bool {
    match e {
        Expr::Paren(p) => says_not_won(&p.expr),
        Expr::Group(g) => says_not_won(&g.expr),
        Expr::Return(r) => r.expr.as_deref().is_some_and(says_not_won),
        Expr::Path(p) => p.path.is_ident("None"),
        Expr::Lit(l) => matches!(&l.lit, syn::Lit::Bool(b) if !b.value),
        Expr::Call(c) => match &*c.func {
            Expr::Path(p) if p.path.is_ident("Err") => true,
            Expr::Path(p) if p.path.is_ident("Ok") || p.path.is_ident("Some") => {
                c.args.len() == 1 && p.path.is_ident("Ok") && says_not_won(&c.args[0])
            }
            _ => false,
        },
        _ => false,
    }
}

pub(super) fn expr_span(src: &SourceFile, e: &Expr) -> Span {
    Span {
        start: src.span_of(start_span(e)).start,
        end: src.span_of(end_span(e)).end,
    }
}

pub(super) fn vis_span(v: &syn::Visibility) -> Option<proc_macro2::Span> {
    match v {
        syn::Visibility::Inherited => None,
        other => Some(other.span()),
    }
}

pub(super) fn macro_name(m: &syn::Macro) -> String {
    m.path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}

pub(super) fn str_lit(e: &Expr) -> Option<String> {
    match keys::strip(e) {
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Str(s) => Some(s.value()),
            syn::Lit::ByteStr(b) => Some(String::from_utf8_lossy(&b.value()).into_owned()),
            _ => None,
        },
        Expr::Macro(m) => keys::concat_text(&m.mac),
        _ => None,
    }
}

pub(super) fn is_none(e: &Expr) -> bool {
    matches!(keys::strip(e), Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "None"))
}

/// `false`, `Ok(false)`, `None`, `0`: a fallback that means "not acquired".
pub(super) fn is_negative(e: &Expr) -> bool {
    match keys::strip(e) {
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Bool(b) => !b.value,
            syn::Lit::Int(i) => i.base10_digits() == "0",
            _ => false,
        },
        Expr::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "None"),
        Expr::Call(c) => {
            matches!(&*c.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Ok" || s.ident == "Some"))
                && c.args.len() == 1
                && is_negative(&c.args[0])
        }
        Expr::Closure(c) => is_negative(&c.body),
        Expr::Block(b) => match b.block.stmts.last() {
            Some(syn::Stmt::Expr(e, None)) => is_negative(e),
            _ => false,
        },
        Expr::Return(r) => r.expr.is_none(),
        _ => false,
    }
}

/// `true`, `Ok(true)`, `Some(..)`, `1`: a fallback that means "acquired".
pub(super) fn is_positive(e: &Expr) -> bool {
    match keys::strip(e) {
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Bool(b) => b.value,
            syn::Lit::Int(i) => i.base10_digits() == "1",
            _ => false,
        },
        Expr::Call(c) => {
            matches!(&*c.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Ok" || s.ident == "Some"))
                && c.args.len() == 1
                && (is_positive(&c.args[0])
                    || matches!(keys::strip(&c.args[0]), Expr::Tuple(t) if t.elems.is_empty()))
        }
        Expr::Closure(c) => is_positive(&c.body),
        Expr::Block(b) => match b.block.stmts.last() {
            Some(syn::Stmt::Expr(e, None)) => is_positive(e),
            _ => false,
        },
        _ => false,
    }
}

pub(super) fn struct_field<'e>(e: &'e Expr, field: &str) -> Option<&'e Expr> {
    match keys::strip(e) {
        Expr::Struct(s) => s.fields.iter().find_map(|f| match &f.member {
            syn::Member::Named(n) if n == field => Some(&f.expr),
            _ => None,
        }),
        Expr::Call(c) => c.args.iter().find_map(|a| struct_field(a, field)),
        _ => None,
    }
}

/// Upper-cased string literals, small integer literals and last segments
/// of multi-segment paths.
pub(super) fn collect_words(e: &Expr, out: &mut BTreeSet<String>) {
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
        // Small integers are words too: the `0` of
        // `Compare::version(key, CompareOp::Equal, 0)`.
        fn visit_lit_int(&mut self, l: &'ast syn::LitInt) {
            let digits = l.base10_digits();
            if digits.len() <= 6 {
                self.0.insert(digits.to_string());
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
        // `vec![Compare::version(key, CompareOp::Equal, 0)]`: the elements
        // of a `vec!` are expressions like an array's.
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            for e in vec_elements(m) {
                collect_words(&e, self.0);
            }
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_expr_block(&mut self, _: &'ast syn::ExprBlock) {}
        fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    }
    V(out).visit_expr(e);
}

/// The elements of a `vec![a, b, ..]` (none for `vec![x; n]` or another
/// macro), parsed from its tokens.
pub(super) fn vec_elements(m: &syn::Macro) -> Vec<Expr> {
    use syn::punctuated::Punctuated;
    if m.path.segments.last().is_none_or(|s| s.ident != "vec") {
        return Vec::new();
    }
    m.parse_body_with(Punctuated::<Expr, syn::Token![,]>::parse_terminated)
        .map(|list| list.into_iter().collect())
        .unwrap_or_default()
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

pub(super) fn token_idents(ts: &proc_macro2::TokenStream) -> BTreeSet<String> {
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
                        if name.chars().next().is_some_and(|c| !c.is_ascii_digit()) {
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

pub(super) fn assign_target(e: &Expr) -> String {
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

/// Names a pattern binds, in source order.
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

pub(super) fn is_wild(p: &Pat) -> bool {
    match p {
        Pat::Wild(_) => true,
        Pat::Type(t) => is_wild(&t.pat),
        _ => false,
    }
}

/// The type written on a `let` pattern (`let x: T = ..`).
pub(super) fn pat_type(p: &Pat) -> Option<&syn::Type> {
    match p {
        Pat::Type(t) => Some(&t.ty),
        _ => None,
    }
}

pub(super) fn pat_is_unit_typed(p: &Pat) -> bool {
    matches!(p, Pat::Type(t) if matches!(&*t.ty, syn::Type::Tuple(tt) if tt.elems.is_empty()))
}

pub(super) fn pat_is_ok_some(p: &Pat) -> bool {
    match p {
        Pat::TupleStruct(ts) => ts
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Ok" || s.ident == "Some"),
        _ => false,
    }
}

/// `Err(..)`.
pub(super) fn pat_is_err(p: &Pat) -> bool {
    matches!(p, Pat::TupleStruct(ts) if ts.path.segments.last().is_some_and(|s| s.ident == "Err"))
}

/// A block that does nothing but log (`{ warn!("..: {e}"); }`), or nothing.
pub(super) fn only_logs(b: &syn::Block) -> bool {
    let is_log = |m: &syn::Macro| {
        m.path
            .segments
            .last()
            .is_some_and(|s| LOG_MACROS.contains(&s.ident.to_string().as_str()))
    };
    b.stmts.iter().all(|s| match s {
        syn::Stmt::Macro(m) => is_log(&m.mac),
        syn::Stmt::Expr(Expr::Macro(m), _) => is_log(&m.mac),
        _ => false,
    })
}

/// The text of a type with references, `mut`, `Arc`, `Box`, `Rc`, `Option`
/// and generic wrappers that do not change what a method call reaches
/// peeled off: `&Arc<Api<Lease>>` → `Api<Lease>`.
pub(super) fn type_text(t: &syn::Type) -> String {
    const WRAPPERS: &[&str] = &["Arc", "Rc", "Box", "Option", "RefCell", "Cell"];
    let mut t = t;
    loop {
        match t {
            syn::Type::Reference(r) => t = &r.elem,
            syn::Type::Paren(p) => t = &p.elem,
            syn::Type::Group(g) => t = &g.elem,
            syn::Type::Path(p) if p.qself.is_none() => {
                let last = match p.path.segments.last() {
                    Some(l) => l,
                    None => return String::new(),
                };
                if WRAPPERS.iter().any(|w| last.ident == w) {
                    if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                        if let Some(syn::GenericArgument::Type(inner)) = a.args.first() {
                            t = inner;
                            continue;
                        }
                    }
                }
                return keys::compact(p);
            }
            // `dyn Locker + Send`, `impl Locker`: the traits, after a space
            // that [`traits_of`] reads them by.
            syn::Type::TraitObject(o) => return format!("dyn {}", keys::compact(&o.bounds)),
            syn::Type::ImplTrait(i) => return format!("impl {}", keys::compact(&i.bounds)),
            other => return keys::compact(other),
        }
    }
}

/// The traits a type text made by [`type_text`] stands for: those of `dyn
/// A + B` and `impl A`, or a generic parameter's bounds (`L` with `L:
/// Locker`), by their last path segment; a type alias of the file (`type
/// Shared = Arc<dyn Locker>;`) stands for what it names.
pub(super) fn traits_of<'t>(
    text: &'t str,
    bounds: &'t HashMap<String, Vec<String>>,
    aliases: &'t HashMap<String, String>,
) -> Vec<&'t str> {
    // One alias deep: an alias of an alias is rare, and a cycle costs
    // nothing this way.
    let text = aliases.get(text).map_or(text, String::as_str);
    let list = text
        .strip_prefix("dyn ")
        .or_else(|| text.strip_prefix("impl "));
    match list {
        Some(list) => list
            .split('+')
            .filter(|b| !b.starts_with('\''))
            .map(|b| type_head(b.trim_start_matches('?')))
            .collect(),
        None => bounds
            .get(text)
            .map(|b| b.iter().map(String::as_str).collect())
            .unwrap_or_default(),
    }
}

/// Whether a type head names a standard collection (or one of the common
/// crates' maps), whose `get`, `insert`, `remove` or `contains_key` are the
/// collection's, never a lock client's.
pub(super) fn is_collection(head: &str) -> bool {
    const COLLECTIONS: &[&str] = &[
        "HashMap",
        "BTreeMap",
        "HashSet",
        "BTreeSet",
        "Vec",
        "VecDeque",
        "LinkedList",
        "BinaryHeap",
        "IndexMap",
        "IndexSet",
        "DashMap",
        "DashSet",
    ];
    COLLECTIONS.contains(&head)
}

/// Whether a declared type is a primitive number or `bool`.
pub(super) fn is_scalar(ty: &str) -> bool {
    let ty = ty.trim();
    crate::model::INTEGER_TYPES.contains(&ty) || ["f32", "f64", "bool"].contains(&ty)
}

/// The last path segment's name of a type text: `kube::Api<Lease>` → `Api`.
pub(super) fn type_head(text: &str) -> &str {
    let base = text.split('<').next().unwrap_or(text);
    base.rsplit("::").next().unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks [`start_span`] and [`end_span`] against `Spanned::span` (the
    /// tokens rendered and joined) at every expression of `file`; returns
    /// how many it checked.
    fn same_spans(file: &syn::File, name: &str) -> usize {
        struct V<'n> {
            name: &'n str,
            checked: usize,
        }
        impl<'ast> Visit<'ast> for V<'_> {
            fn visit_expr(&mut self, e: &'ast Expr) {
                let whole = e.span();
                assert_eq!(
                    start_span(e).start(),
                    whole.start(),
                    "{}: start of {}",
                    self.name,
                    quote::ToTokens::to_token_stream(e)
                );
                assert_eq!(
                    end_span(e).end(),
                    whole.end(),
                    "{}: end of {}",
                    self.name,
                    quote::ToTokens::to_token_stream(e)
                );
                self.checked += 1;
                visit::visit_expr(self, e);
            }
        }
        let mut v = V { name, checked: 0 };
        v.visit_file(file);
        v.checked
    }

    /// Where an expression starts and ends, without rendering it, is
    /// where its rendered tokens start and end: for every shape listed,
    /// in the spellings below and at every expression of every fixture.
    #[test]
    fn spans_without_rendering_are_the_rendered_spans() {
        let shapes = r#"
fn f() {
    let a = -x + !y * *z;
    let b = (a, b.0, c.field, [1, 2][0], [0u8; 4]);
    let c = ::std::mem::take(&mut v) as u32;
    let d = Vec::<u8>::new().len() .. 10;
    let e = ..=n;
    let g = ..;
    let h = async move { 1 }.await;
    let i = move |x: u8| x + 1;
    let j = async || 1;
    let k = |x| -> u8 { x };
    let l = Point { x: 1, ..Default::default() };
    let m = crate::a::B::<T> { x };
    let n = if a { 1 } else if b { 2 } else if c { 3 } else { 4 };
    let o = if let Some(v) = w { v } else { 0 };
    let p = loop { break 5; };
    let q = 'outer: loop { continue 'outer; };
    let r = match s { _ => unsafe { t() } };
    let u = <T as Trait>::method(v)?;
    while let Some(x) = it.next() { x; }
    for x in 0..n { a = b; a += c; }
    return;
    return f(x);
    #[allow(unused)] { x }
    (a..b).start
}
"#;
        let file = syn::parse_file(shapes).unwrap();
        assert!(same_spans(&file, "shapes") > 100);
        let mut files = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from("fixtures")];
        while let Some(d) = dirs.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    files.push(p);
                }
            }
        }
        let mut checked = 0;
        for p in &files {
            // Fixtures of broken input (not UTF-8, not Rust) are skipped.
            let Ok(text) = std::fs::read_to_string(p) else {
                continue;
            };
            if let Ok(file) = syn::parse_file(&text) {
                checked += same_spans(&file, &p.display().to_string());
            }
        }
        assert!(
            checked > 10_000,
            "{checked} expressions in {} files",
            files.len()
        );
    }
}
