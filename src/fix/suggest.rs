//! The fixes that rewrite code: a redis-rs `DEL` of a lock into the
//! compare-and-delete script call, and a TTL added to `SET … NX`. Each is
//! offered only when every piece of the replacement is known from the
//! source: the token is one immutable local that the acquisition stored and
//! that is still the same binding, not moved, at the release; the
//! connection's type is a redis-rs connection named in the file; the TTL is
//! the one TTL-named constant or local in scope and its unit is written in
//! its type or name. Anything less gives no fix.

use std::collections::{BTreeSet, HashMap};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Expr, Type};

use super::scope::{Binding, Kind, Scope};
use super::{Edit, Fix};
use crate::checks::{CheckCtx, CheckId};
use crate::finding::Finding;
use crate::model::{Event, ExpiryState};
use crate::source::{SourceFile, Span};

/// The compare-and-delete script: deletes the key only while it still
/// holds the caller's token.
pub const UNLOCK_SCRIPT: &str = r##"redis::Script::new(r#"if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end"#)"##;

/// redis-rs connection types whose value is `&mut`-borrowed for a call.
const CONNECTION_TYPES: [&str; 4] = [
    "Connection",
    "MultiplexedConnection",
    "ConnectionManager",
    "ClusterConnection",
];

/// Methods of `redis::Client` that return an owned connection.
const CONNECT_METHODS: [&str; 5] = [
    "get_connection",
    "get_multiplexed_async_connection",
    "get_multiplexed_tokio_connection",
    "get_connection_manager",
    "get_async_connection",
];

/// Methods that only borrow their receiver: calling one does not move it.
const BORROWING_METHODS: [&str; 9] = [
    "clone",
    "as_str",
    "as_bytes",
    "as_ref",
    "as_deref",
    "len",
    "is_empty",
    "to_string",
    "to_owned",
];

/// Macros that take their arguments by reference.
const FORMAT_MACROS: [&str; 16] = [
    "format",
    "print",
    "println",
    "eprint",
    "eprintln",
    "write",
    "writeln",
    "panic",
    "assert",
    "assert_eq",
    "assert_ne",
    "trace",
    "debug",
    "info",
    "warn",
    "error",
];

/// Attaches the fixes of `unowned-release` and `lock-without-expiry`
/// findings that have an exact one.
pub fn attach(ctx: &CheckCtx, file: &syn::File, findings: &mut [Finding]) {
    let wanted = |f: &Finding| f.fix.is_none() && from_tree(f.check);
    if !findings.iter().any(wanted) {
        return;
    }
    let info = FileInfo::new(ctx.src, file);
    let events: HashMap<Span, &Event> =
        ctx.model.events.iter().rev().map(|e| (e.span, e)).collect();
    // Each function is looked at once, however many findings it holds.
    let mut fns: HashMap<usize, FnCx> = HashMap::new();
    for f in findings.iter_mut().filter(|f| wanted(f)) {
        let Some(&e) = events.get(&f.span) else {
            continue;
        };
        let Some(index) = info.fn_at(e.span.start.offset) else {
            continue;
        };
        let cx = fns
            .entry(index)
            .or_insert_with(|| FnCx::new(ctx.src, &info, &info.fns[index]));
        f.fix = match f.check {
            CheckId::UnownedRelease => release_fix(ctx, cx, e),
            CheckId::LockWithoutExpiry => expiry_fix(ctx, cx, e),
            _ => None,
        };
    }
}

/// Whether findings of a check get their fixes from the syntax tree
/// ([`attach`]).
pub fn from_tree(check: CheckId) -> bool {
    matches!(check, CheckId::UnownedRelease | CheckId::LockWithoutExpiry)
}

/// A function of the file with a body.
struct FnInfo<'ast> {
    sig: &'ast syn::Signature,
    body: &'ast syn::Block,
    start: usize,
    end: usize,
    module: usize,
}

/// What the fixes need of the whole file.
struct FileInfo<'ast> {
    fns: Vec<FnInfo<'ast>>,
    /// Per module (0: the file), its `const` items: name, type, offset.
    consts: Vec<Vec<(String, &'ast Type, usize)>>,
    /// Names the file imports from the `redis` crate (`Connection`, `aio`).
    redis_names: BTreeSet<String>,
}

impl<'ast> FileInfo<'ast> {
    fn new(src: &SourceFile, file: &'ast syn::File) -> FileInfo<'ast> {
        let mut info = FileInfo {
            fns: Vec::new(),
            consts: vec![Vec::new()],
            redis_names: BTreeSet::new(),
        };
        info.items(src, &file.items, 0);
        info
    }

    fn items(&mut self, src: &SourceFile, items: &'ast [syn::Item], module: usize) {
        for item in items {
            match item {
                syn::Item::Fn(f) => self.push_fn(src, &f.sig, &f.block, module),
                syn::Item::Impl(i) => {
                    for it in &i.items {
                        if let syn::ImplItem::Fn(f) = it {
                            self.push_fn(src, &f.sig, &f.block, module);
                        }
                    }
                }
                syn::Item::Trait(t) => {
                    for it in &t.items {
                        if let syn::TraitItem::Fn(syn::TraitItemFn {
                            sig,
                            default: Some(body),
                            ..
                        }) = it
                        {
                            self.push_fn(src, sig, body, module);
                        }
                    }
                }
                syn::Item::Const(c) => {
                    let decl = src.span_of(c.ident.span()).start.offset;
                    self.consts[module].push((c.ident.to_string(), &c.ty, decl));
                }
                syn::Item::Mod(m) => {
                    if let Some((_, inner)) = &m.content {
                        self.consts.push(Vec::new());
                        let id = self.consts.len() - 1;
                        self.items(src, inner, id);
                    }
                }
                syn::Item::Use(u) => {
                    if let syn::UseTree::Path(p) = &u.tree {
                        if p.ident == "redis" {
                            leaf_names(&p.tree, &mut self.redis_names);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn push_fn(
        &mut self,
        src: &SourceFile,
        sig: &'ast syn::Signature,
        body: &'ast syn::Block,
        module: usize,
    ) {
        let s = src.span_of(sig.fn_token.span);
        let e = src.span_of_node(body);
        self.fns.push(FnInfo {
            sig,
            body,
            start: s.start.offset,
            end: e.end.offset,
            module,
        });
    }

    /// The innermost function holding `offset`.
    fn fn_at(&self, offset: usize) -> Option<usize> {
        self.fns
            .iter()
            .enumerate()
            .filter(|(_, f)| f.start <= offset && offset < f.end)
            .min_by_key(|(_, f)| f.end - f.start)
            .map(|(i, _)| i)
    }

    /// Whether a type path names a redis-rs connection type.
    fn is_redis_connection(&self, ty: &Type) -> bool {
        let Type::Path(tp) = ty else { return false };
        if tp.qself.is_some() {
            return false;
        }
        let segs: Vec<String> = tp
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let (Some(first), Some(last)) = (segs.first(), segs.last()) else {
            return false;
        };
        CONNECTION_TYPES.contains(&last.as_str())
            && (first == "redis" || self.redis_names.contains(first))
    }
}

fn leaf_names(t: &syn::UseTree, out: &mut BTreeSet<String>) {
    match t {
        syn::UseTree::Path(p) => {
            out.insert(p.ident.to_string());
        }
        syn::UseTree::Name(n) => {
            out.insert(n.ident.to_string());
        }
        syn::UseTree::Rename(r) => {
            out.insert(r.rename.to_string());
        }
        syn::UseTree::Group(g) => g.items.iter().for_each(|i| leaf_names(i, out)),
        syn::UseTree::Glob(_) => {}
    }
}

/// One function, for the fixes in it.
struct FnCx<'a, 'ast> {
    src: &'a SourceFile,
    info: &'a FileInfo<'ast>,
    scope: Scope<'ast>,
    calls: Calls<'a, 'ast>,
    /// Where each name is used by value (possibly moved), by offset.
    by_value: HashMap<String, Vec<usize>>,
}

impl<'a, 'ast> FnCx<'a, 'ast> {
    fn new(src: &'a SourceFile, info: &'a FileInfo<'ast>, func: &FnInfo<'ast>) -> FnCx<'a, 'ast> {
        let scope = Scope::of_fn(src, func.sig, func.body, &info.consts[func.module]);
        let mut calls = Calls {
            src,
            methods: Vec::new(),
            awaited: Vec::new(),
        };
        calls.visit_block(func.body);
        let mut by_value = HashMap::new();
        uses_by_value(&func.body.to_token_stream(), src, false, &mut by_value);
        FnCx {
            src,
            info,
            scope,
            calls,
            by_value,
        }
    }

    /// Whether `name` is used by value strictly between `from` and `to`.
    fn used_by_value(&self, name: &str, from: usize, to: usize) -> bool {
        self.by_value
            .get(name)
            .is_some_and(|at| at.iter().any(|&o| from < o && o < to))
    }

    fn range(&self, node: &impl Spanned) -> (usize, usize) {
        let s = self.src.span_of_node(node);
        (s.start.offset, s.end.offset)
    }

    fn text(&self, node: &impl Spanned) -> &str {
        let (s, e) = self.range(node);
        &self.src.text[s..e]
    }

    fn span(&self, node: &impl Spanned) -> Span {
        self.src.span_of_node(node)
    }

    /// Whether `.await` follows the call.
    fn awaited(&self, c: &Call) -> bool {
        self.calls.awaited.contains(&(c.start, c.end))
    }
}

/// A method call of a body, with its byte range and the offset of its
/// method name, measured once.
struct Call<'ast> {
    m: &'ast syn::ExprMethodCall,
    start: usize,
    end: usize,
    name_at: usize,
}

impl Call<'_> {
    /// The whole call lies inside `span`.
    fn inside(&self, span: &Span) -> bool {
        span.start.offset <= self.start && self.end <= span.end.offset
    }

    /// The method name lies inside `span`.
    fn named_inside(&self, span: &Span) -> bool {
        span.start.offset <= self.name_at && self.name_at < span.end.offset
    }
}

/// The method calls of a body, and the ranges of what it `.await`s.
struct Calls<'s, 'ast> {
    src: &'s SourceFile,
    methods: Vec<Call<'ast>>,
    awaited: Vec<(usize, usize)>,
}

impl<'ast> Visit<'ast> for Calls<'_, 'ast> {
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let s = self.src.span_of_node(m);
        self.methods.push(Call {
            m,
            start: s.start.offset,
            end: s.end.offset,
            name_at: self.src.span_of(m.method.span()).start.offset,
        });
        syn::visit::visit_expr_method_call(self, m);
    }
    fn visit_expr_await(&mut self, a: &'ast syn::ExprAwait) {
        let s = self.src.span_of_node(&a.base);
        self.awaited.push((s.start.offset, s.end.offset));
        syn::visit::visit_expr_await(self, a);
    }
    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// `redis::cmd("WORD")` / `cmd("WORD")`.
fn is_cmd(e: &Expr, word: &str) -> bool {
    let Expr::Call(c) = e else { return false };
    let Expr::Path(p) = &*c.func else {
        return false;
    };
    let last = p.path.segments.last().map(|s| s.ident.to_string());
    last.as_deref() == Some("cmd")
        && c.args.len() == 1
        && str_lit(&c.args[0]).is_some_and(|w| w.eq_ignore_ascii_case(word))
}

fn str_lit(e: &Expr) -> Option<String> {
    match e {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Some(s.value()),
        _ => None,
    }
}

/// A method chain, innermost call first, and the expression it starts from.
fn chain(m: &syn::ExprMethodCall) -> (&Expr, Vec<&syn::ExprMethodCall>) {
    let mut segs = vec![m];
    let mut root = &*m.receiver;
    while let Expr::MethodCall(inner) = root {
        segs.push(inner);
        root = &*inner.receiver;
    }
    segs.reverse();
    (root, segs)
}

/// A plain local name: `x`.
fn ident(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
            p.path.get_ident().map(|i| i.to_string())
        }
        _ => None,
    }
}

/// `&x`, `x.clone()`, `x.as_str()` (borrowed: `true`) or `x`.
fn token_local(e: &Expr) -> Option<(String, bool)> {
    match e {
        Expr::Reference(r) if r.mutability.is_none() => ident(&r.expr).map(|n| (n, true)),
        Expr::MethodCall(m)
            if m.args.is_empty()
                && ["clone", "as_str", "as_bytes", "to_string"]
                    .contains(&m.method.to_string().as_str()) =>
        {
            ident(&m.receiver).map(|n| (n, true))
        }
        Expr::Paren(p) => token_local(&p.expr),
        _ => ident(e).map(|n| (n, false)),
    }
}

fn is_integer(ty: &Type) -> bool {
    use crate::model::INTEGER_TYPES;
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.get_ident().is_some_and(|i| INTEGER_TYPES.contains(&i.to_string().as_str())))
}

fn is_duration(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => is_duration(&r.elem),
        Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Duration"),
        _ => false,
    }
}

fn int_literal(e: &Expr) -> bool {
    matches!(e, Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) if matches!(i.suffix(), "" | "u8" | "u16" | "u32" | "u64" | "u128" | "usize" | "i32" | "i64" | "i128" | "isize"))
}

// ---- unowned-release: DEL → compare-and-delete ------------------------------

fn release_fix(ctx: &CheckCtx, cx: &FnCx, e: &Event) -> Option<Fix> {
    let api = ctx.api(e);
    if !ctx.packs.pack(e.api).builtin
        || !matches!(api.id.as_str(), "redis.del-method" | "redis.del-command")
    {
        return None;
    }
    // The acquisition that stored the token, earlier in the same function.
    let a = ctx.acquisition_for(e)?;
    if a.func != e.func || a.span.end.offset > e.span.start.offset {
        return None;
    }
    let value = stored_value(ctx, cx, a)?;
    let (name, borrowed) = token_local(value)?;
    let at_set = cx.scope.resolve(&name, cx.range(value).0)?;
    let at_del = cx.scope.resolve(&name, e.span.start.offset)?;
    if (at_set.decl, at_set.from) != (at_del.decl, at_del.from) || mutable(&at_set) {
        return None;
    }
    // A closure or async block around the release would capture the token.
    if cx.scope.captured(a.span.start.offset, e.span.start.offset) {
        return None;
    }
    let by_value_ok = match at_set.kind {
        Kind::Param { ty, .. } => matches!(ty, Type::Reference(_)) || is_integer(ty),
        Kind::Let { ty: Some(ty), .. } => matches!(ty, Type::Reference(_)) || is_integer(ty),
        Kind::Let {
            init: Some(init), ..
        } => str_lit(init).is_some() || int_literal(init),
        Kind::Const { .. } => true,
        _ => false,
    };
    // A token the acquisition took by value was moved into it, unless it
    // is a reference or a number.
    if !borrowed && !by_value_ok {
        return None;
    }
    if cx.used_by_value(&name, cx.range(value).1, e.span.start.offset) {
        return None;
    }
    let token = if by_value_ok {
        name
    } else {
        format!("&{name}")
    };
    let (span, replacement) = if api.id == "redis.del-method" {
        del_method(cx, e, &token)?
    } else {
        del_command(cx, e, &token)?
    };
    Some(Fix {
        description: "release the lock only while it still holds this caller's token: a Lua compare-and-delete".into(),
        edits: vec![Edit { span, replacement }],
    })
}

fn mutable(b: &Binding) -> bool {
    matches!(
        b.kind,
        Kind::Param { mutable: true, .. } | Kind::Let { mutable: true, .. }
    )
}

/// The value argument of the acquisition `a`: `SET key VALUE NX …`,
/// `set_nx(key, VALUE)`, `set_options(key, VALUE, opts)`.
fn stored_value<'ast>(ctx: &CheckCtx, cx: &FnCx<'_, 'ast>, a: &Event) -> Option<&'ast Expr> {
    let api = ctx.api(a);
    if !ctx.packs.pack(a.api).builtin {
        return None;
    }
    match api.id.as_str() {
        "redis.set-nx" => {
            // The whole `cmd("SET").arg(key).arg(value)…` chain in one expression.
            let outer = cx
                .calls
                .methods
                .iter()
                .filter(|c| c.inside(&a.chain_span) && is_cmd(chain(c.m).0, "SET"))
                .max_by_key(|c| c.end - c.start)?;
            let (_, segs) = chain(outer.m);
            let mut args = segs.iter().filter(|s| s.method == "arg");
            let _key = args.next()?;
            let v = args.next()?;
            (v.args.len() == 1).then(|| &v.args[0])
        }
        "redis.set-nx-method" | "redis.set-options-nx" => {
            let method = api.matcher.method.as_deref()?;
            let c = cx
                .calls
                .methods
                .iter()
                .find(|c| c.m.method == method && c.named_inside(&a.span))?;
            c.m.args.iter().nth(1)
        }
        _ => None,
    }
}

/// How a connection binding is passed to `invoke`: `con` for a `&mut`
/// connection, `&mut con` for an owned one.
fn connection_arg(cx: &FnCx, name: &str, offset: usize) -> Option<String> {
    let b = cx.scope.resolve(name, offset)?;
    let (ty, init, mutable) = match b.kind {
        Kind::Param { ty, mutable } => (Some(ty), None, mutable),
        Kind::Let { ty, init, mutable } => (ty, init, mutable),
        _ => return None,
    };
    if let Some(ty) = ty {
        return match ty {
            Type::Reference(r)
                if r.mutability.is_some() && cx.info.is_redis_connection(&r.elem) =>
            {
                Some(name.to_string())
            }
            t if mutable && cx.info.is_redis_connection(t) => Some(format!("&mut {name}")),
            _ => None,
        };
    }
    // `let mut con = client.get_connection()?;`
    let mut init = init?;
    loop {
        init = match init {
            Expr::Try(t) => &t.expr,
            Expr::Await(a) => &a.base,
            Expr::MethodCall(m) if m.method == "unwrap" || m.method == "expect" => &m.receiver,
            _ => break,
        };
    }
    match init {
        Expr::MethodCall(m)
            if mutable && CONNECT_METHODS.contains(&m.method.to_string().as_str()) =>
        {
            Some(format!("&mut {name}"))
        }
        _ => None,
    }
}

/// `con.del(key)` → `Script…key(key).arg(token).invoke(con)`.
fn del_method(cx: &FnCx, e: &Event, token: &str) -> Option<(Span, String)> {
    let c = cx
        .calls
        .methods
        .iter()
        .find(|c| c.m.method == "del" && c.named_inside(&e.span))?;
    let m = c.m;
    if m.args.len() != 1 || m.turbofish.is_some() {
        return None;
    }
    let con = ident(&m.receiver)?;
    let con = connection_arg(cx, &con, c.name_at)?;
    let invoke = if cx.awaited(c) {
        "invoke_async"
    } else {
        "invoke"
    };
    let key = cx.text(&m.args[0]);
    Some((
        cx.span(m),
        format!("{UNLOCK_SCRIPT}.key({key}).arg({token}).{invoke}({con})"),
    ))
}

/// `redis::cmd("DEL").arg(key).query(con)` → `Script…key(key).arg(token).invoke(con)`.
fn del_command(cx: &FnCx, e: &Event, token: &str) -> Option<(Span, String)> {
    let outer = cx
        .calls
        .methods
        .iter()
        .filter(|c| c.inside(&e.chain_span) && is_cmd(chain(c.m).0, "DEL"))
        .max_by_key(|c| c.end - c.start)?;
    let (_, segs) = chain(outer.m);
    let [arg, run] = segs.as_slice() else {
        return None;
    };
    if arg.method != "arg" || arg.args.len() != 1 || run.args.len() != 1 {
        return None;
    }
    let invoke = match run.method.to_string().as_str() {
        "query" => "invoke",
        "query_async" => "invoke_async",
        _ => return None,
    };
    let turbofish = run
        .turbofish
        .as_ref()
        .map(|t| cx.text(t).to_string())
        .unwrap_or_default();
    let key = cx.text(&arg.args[0]);
    let con = cx.text(&run.args[0]);
    Some((
        cx.span(outer.m),
        format!("{UNLOCK_SCRIPT}.key({key}).arg({token}).{invoke}{turbofish}({con})"),
    ))
}

/// Records where each identifier is used by value (so possibly moved):
/// anything but `&name`, `&mut name`, `name.clone()` and the like, or an
/// argument of a formatting macro.
fn uses_by_value(
    ts: &TokenStream,
    src: &SourceFile,
    in_fmt: bool,
    out: &mut HashMap<String, Vec<usize>>,
) {
    let tokens: Vec<TokenTree> = ts.clone().into_iter().collect();
    let punct =
        |j: usize, c: char| matches!(tokens.get(j), Some(TokenTree::Punct(p)) if p.as_char() == c);
    for (i, t) in tokens.iter().enumerate() {
        match t {
            TokenTree::Group(g) => {
                let fmt_macro = i >= 2
                    && punct(i - 1, '!')
                    && matches!(&tokens[i - 2], TokenTree::Ident(m) if FORMAT_MACROS.contains(&m.to_string().as_str()));
                uses_by_value(&g.stream(), src, in_fmt || fmt_macro, out);
            }
            TokenTree::Ident(id) if !in_fmt => {
                let borrowed = (i >= 1 && punct(i - 1, '&'))
                    || (i >= 2
                        && matches!(&tokens[i - 1], TokenTree::Ident(m) if m == "mut")
                        && punct(i - 2, '&'));
                let borrowing_call = punct(i + 1, '.')
                    && matches!(tokens.get(i + 2), Some(TokenTree::Ident(m)) if BORROWING_METHODS.contains(&m.to_string().as_str()));
                if !borrowed && !borrowing_call {
                    let at = src.span_of(id.span()).start.offset;
                    out.entry(id.to_string()).or_default().push(at);
                }
            }
            _ => {}
        }
    }
}

// ---- lock-without-expiry: SET … NX → SET … NX PX ttl -------------------------

/// Whether a name speaks of a TTL: one of its `_`-separated words is
/// `ttl`, `expiry`, `expiration`, `expire` or `lease`.
fn ttl_name(name: &str) -> bool {
    name.split('_').any(|w| {
        matches!(
            w.to_ascii_lowercase().as_str(),
            "ttl" | "expiry" | "expiration" | "expire" | "lease"
        )
    })
}

/// The `.arg("PX").arg(…)` that sets `name`'s TTL, when its unit is known.
fn ttl_args(name: &str, b: &Binding) -> Option<String> {
    let (ty, init) = match b.kind {
        Kind::Param { ty, .. } | Kind::Const { ty } => (Some(ty), None),
        Kind::Let { ty, init, .. } => (ty, init),
        Kind::Other => return None,
    };
    let duration = ty.is_some_and(is_duration)
        || init.is_some_and(|i| matches!(i, Expr::Call(c) if matches!(&*c.func, Expr::Path(p) if p.path.segments.iter().any(|s| s.ident == "Duration"))));
    if duration {
        return Some(format!(".arg(\"PX\").arg({name}.as_millis() as u64)"));
    }
    let integer = ty.is_some_and(is_integer) || (ty.is_none() && init.is_some_and(int_literal));
    if !integer {
        return None;
    }
    let words: Vec<String> = name.split('_').map(|w| w.to_ascii_lowercase()).collect();
    let has = |ws: &[&str]| words.iter().any(|w| ws.contains(&w.as_str()));
    if has(&["ms", "millis", "milliseconds"]) {
        Some(format!(".arg(\"PX\").arg({name})"))
    } else if has(&["s", "sec", "secs", "seconds"]) {
        Some(format!(".arg(\"EX\").arg({name})"))
    } else {
        None
    }
}

fn expiry_fix(ctx: &CheckCtx, cx: &FnCx, e: &Event) -> Option<Fix> {
    if !ctx.packs.pack(e.api).builtin
        || ctx.api(e).id != "redis.set-nx"
        || e.expiry != ExpiryState::Missing
    {
        return None;
    }
    let nx: Vec<&Call> = cx
        .calls
        .methods
        .iter()
        .filter(|c| c.inside(&e.chain_span) && c.m.method == "arg" && c.m.args.len() == 1)
        .filter(|c| str_lit(&c.m.args[0]).is_some_and(|w| w.eq_ignore_ascii_case("NX")))
        .collect();
    let [nx] = nx.as_slice() else { return None };
    let at = nx.end;
    if cx.scope.in_macro(at) {
        return None;
    }
    let candidates: Vec<&str> = cx
        .scope
        .visible(e.span.start.offset)
        .into_iter()
        .filter(|n| ttl_name(n))
        .collect();
    let [name] = candidates.as_slice() else {
        return None;
    };
    let b = cx.scope.resolve(name, e.span.start.offset)?;
    let args = ttl_args(name, &b)?;
    let pos = cx.src.pos_of_offset(at);
    Some(Fix {
        description: format!("set the expiry in the same command: `{args}` after `NX`"),
        edits: vec![Edit {
            span: Span {
                start: pos,
                end: pos,
            },
            replacement: args,
        }],
    })
}
