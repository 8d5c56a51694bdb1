//! The fields a call's arguments set or clear, for `fields`, `no-fields`
//! and `cleared-fields`: struct-literal fields, builder methods, the keys
//! of a `json!` object (and the paths of JSON Patch operations), and the
//! fields assigned to a local before the call (`lease.spec.holder_identity
//! = None;`). Names are compared by [`field_name`].

use std::collections::BTreeSet;

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::visit::{self, Visit};
use syn::Expr;

use super::super::keys;
use super::syntax::is_none;
use crate::pack::field_name;

/// Deepest `json!` nesting read; deeper objects are not looked into.
const MAX_JSON_DEPTH: usize = 32;

#[derive(Debug, Default, Clone)]
pub(super) struct FieldSets {
    /// Fields given a value.
    pub set: BTreeSet<String>,
    /// Fields set to nothing: `None`, `""`, `null`, a JSON Patch `remove`.
    pub cleared: BTreeSet<String>,
}

impl FieldSets {
    /// Records `name` as set (or cleared); a later record wins.
    pub fn record(&mut self, name: &str, cleared: bool) {
        let name = field_name(name);
        if cleared {
            self.set.remove(&name);
            self.cleared.insert(name);
        } else {
            self.cleared.remove(&name);
            self.set.insert(name);
        }
    }
}

/// Whether a value clears a field: `None`, `""`.
pub(super) fn clears(e: &Expr) -> bool {
    is_none(e)
        || matches!(keys::strip(e), Expr::Lit(l) if matches!(&l.lit, syn::Lit::Str(s) if s.value().is_empty()))
}

/// Fields an argument sets or clears: struct-literal fields
/// (`CreateOrUpdateKeyRequest { acquire: &sid, .. }`), builder methods
/// called inside it (`SetKeyRequest::builder().acquire(sid)`), and the keys
/// of `json!` objects.
pub(super) fn arg_fields(e: &Expr, out: &mut FieldSets) {
    struct V<'o>(&'o mut FieldSets);
    impl<'ast> Visit<'ast> for V<'_> {
        fn visit_expr_struct(&mut self, s: &'ast syn::ExprStruct) {
            for f in &s.fields {
                if let syn::Member::Named(n) = &f.member {
                    self.0.record(&n.to_string(), clears(&f.expr));
                }
            }
            visit::visit_expr_struct(self, s);
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            self.0.record(&m.method.to_string(), false);
            visit::visit_expr_method_call(self, m);
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            if m.path.segments.last().is_some_and(|s| s.ident == "json") {
                json_fields(&m.tokens, self.0);
            } else if let Some(v) = keys::concat_text(m).filter(|v| v.len() <= 40) {
                // `concat!("N", "X")` is the word it spells.
                for w in v.split_whitespace() {
                    self.0.record(&w.to_uppercase(), false);
                }
            }
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_expr_block(&mut self, _: &'ast syn::ExprBlock) {}
        fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    }
    V(out).visit_expr(e);
}

/// One `key: value` entry of a `json!` object, or one array element
/// (`key` is `None`).
struct Entry {
    key: Option<String>,
    value: Vec<TokenTree>,
}

fn string_value(t: &TokenTree) -> Option<String> {
    match t {
        TokenTree::Literal(l) => match syn::Lit::new(l.clone()) {
            syn::Lit::Str(s) => Some(s.value()),
            _ => None,
        },
        _ => None,
    }
}

fn is_null(value: &[TokenTree]) -> bool {
    match value {
        [TokenTree::Ident(i)] => i == "null" || i == "None",
        [t] => string_value(t).is_some_and(|s| s.is_empty()),
        // A path to nothing: `Option::<()>::None`, `std::option::Option::None`,
        // `serde_json::Value::Null`.
        [.., TokenTree::Ident(last)] => {
            let idents = || {
                value.iter().filter_map(|t| match t {
                    TokenTree::Ident(i) => Some(i.to_string()),
                    _ => None,
                })
            };
            let path = value.iter().all(|t| match t {
                TokenTree::Ident(_) => true,
                TokenTree::Punct(p) => matches!(p.as_char(), ':' | '<' | '>'),
                TokenTree::Group(g) => g.stream().into_iter().all(|t| {
                    matches!(
                        t,
                        TokenTree::Ident(_) | TokenTree::Punct(_) | TokenTree::Group(_)
                    )
                }),
                TokenTree::Literal(_) => false,
            });
            path && ((last == "None" && idents().any(|i| i == "Option"))
                || (last == "Null" && idents().any(|i| i == "Value")))
        }
        _ => false,
    }
}

/// Splits a group's tokens at top-level commas into entries.
fn entries(ts: TokenStream, object: bool) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut cur: Vec<TokenTree> = Vec::new();
    let flush = |cur: &mut Vec<TokenTree>, out: &mut Vec<Entry>| {
        if cur.is_empty() {
            return;
        }
        let tokens = std::mem::take(cur);
        let colon = object
            .then(|| {
                tokens
                    .iter()
                    .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ':'))
            })
            .flatten();
        match colon {
            Some(1) => {
                let key = string_value(&tokens[0]).or_else(|| match &tokens[0] {
                    TokenTree::Ident(id) => Some(id.to_string()),
                    _ => None,
                });
                out.push(Entry {
                    key,
                    value: tokens[2..].to_vec(),
                });
            }
            _ => out.push(Entry {
                key: None,
                value: tokens,
            }),
        }
    };
    for t in ts {
        match &t {
            TokenTree::Punct(p) if p.as_char() == ',' => flush(&mut cur, &mut out),
            _ => cur.push(t),
        }
    }
    flush(&mut cur, &mut out);
    out
}

/// The last segment of a JSON Pointer (`/spec/holderIdentity`).
fn pointer_field(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Keys of every object in a `json!` body. An object that is a JSON Patch
/// operation (`{"op": "replace", "path": "/spec/renewTime", "value": ..}`)
/// sets its path's last segment instead: cleared by `remove` or a `null`
/// value, and recorded as `test:<field>` by a `test`.
fn json_fields(tokens: &TokenStream, out: &mut FieldSets) {
    let mut stack = vec![(tokens.clone(), 0usize)];
    while let Some((ts, depth)) = stack.pop() {
        if depth > MAX_JSON_DEPTH {
            continue;
        }
        for t in ts {
            let TokenTree::Group(g) = t else { continue };
            match g.delimiter() {
                Delimiter::Brace => {
                    let es = entries(g.stream(), true);
                    let value_of = |name: &str| {
                        es.iter()
                            .find(|e| e.key.as_deref() == Some(name))
                            .map(|e| e.value.as_slice())
                    };
                    let op = value_of("op")
                        .and_then(|v| v.first())
                        .and_then(string_value);
                    let path = value_of("path")
                        .and_then(|v| v.first())
                        .and_then(string_value);
                    if let (Some(op), Some(path)) = (op, path) {
                        let field = pointer_field(&path);
                        match op.as_str() {
                            "test" => out.record(&format!("test:{field}"), false),
                            "remove" => out.record(field, true),
                            _ => out.record(field, value_of("value").is_some_and(is_null)),
                        }
                    } else {
                        for e in &es {
                            if let Some(k) = &e.key {
                                out.record(k, is_null(&e.value));
                            }
                        }
                    }
                    for e in es {
                        let value: TokenStream = e.value.into_iter().collect();
                        stack.push((value, depth + 1));
                    }
                }
                _ => stack.push((g.stream(), depth + 1)),
            }
        }
    }
}

/// The local a place expression belongs to: `lease` in
/// `lease.spec.as_mut().unwrap().holder_identity`.
pub(super) fn place_root(e: &Expr) -> Option<String> {
    let mut e = e;
    loop {
        match e {
            Expr::Field(f) => e = &f.base,
            Expr::MethodCall(m) => e = &m.receiver,
            Expr::Index(i) => e = &i.expr,
            Expr::Paren(p) => e = &p.expr,
            Expr::Unary(u) => e = &u.expr,
            Expr::Try(t) => e = &t.expr,
            Expr::Path(p) => return p.path.get_ident().map(|i| i.to_string()),
            _ => return None,
        }
    }
}

/// Single-identifier paths an argument names (`patch` in
/// `&Patch::Merge(&patch)`): the locals whose values it passes on. A
/// local only read through a field (`&elector.name`, `&self.name`) passes
/// on that field, not the object and what was assigned to it.
pub(super) fn named_locals(e: &Expr) -> Vec<String> {
    struct V(Vec<String>);
    impl<'ast> Visit<'ast> for V {
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            if let Some(i) = p.path.get_ident() {
                self.0.push(i.to_string());
            }
        }
        // The elements of `vec![cmp, put]` name locals as an array's do.
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            for e in super::syntax::vec_elements(m) {
                self.0.extend(named_locals(&e));
            }
        }
        fn visit_expr_field(&mut self, f: &'ast syn::ExprField) {
            if !matches!(&*f.base, Expr::Path(_)) {
                visit::visit_expr_field(self, f);
            }
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_expr_block(&mut self, _: &'ast syn::ExprBlock) {}
        fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    }
    let mut v = V(Vec::new());
    v.visit_expr(e);
    v.0
}

/// Argument `arg` of the first call named `name` inside `e` (a function
/// path's last segment or a method): the `key` of `Compare::version(key, ..)`.
pub(super) fn call_arg<'ast>(e: &'ast Expr, name: &str, arg: usize) -> Option<&'ast Expr> {
    struct V<'n, 'ast> {
        name: &'n str,
        arg: usize,
        found: Option<&'ast Expr>,
    }
    impl<'ast> Visit<'ast> for V<'_, 'ast> {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if self.found.is_some() {
                return;
            }
            if let Expr::Path(p) = &*c.func {
                if p.path.segments.last().is_some_and(|s| s.ident == self.name) {
                    self.found = c.args.iter().nth(self.arg);
                    if self.found.is_some() {
                        return;
                    }
                }
            }
            visit::visit_expr_call(self, c);
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            if self.found.is_some() {
                return;
            }
            if m.method == self.name {
                self.found = m.args.iter().nth(self.arg);
                if self.found.is_some() {
                    return;
                }
            }
            visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_expr_block(&mut self, _: &'ast syn::ExprBlock) {}
        fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    }
    let mut v = V {
        name,
        arg,
        found: None,
    };
    v.visit_expr(e);
    v.found
}
