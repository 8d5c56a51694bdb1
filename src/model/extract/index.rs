//! The file index: functions and methods, constants and statics, the types
//! the file defines with their fields, the crates it names, and macro
//! bodies parsed as expressions. Built in one visit before any function
//! is walked.

use std::collections::{BTreeSet, HashMap, HashSet};

use proc_macro2::TokenTree;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::Expr;

use super::super::keys;
use super::chain::{macro_key, MacroArgs};
use super::syntax::{macro_name, pat_names, type_text, vis_span, LOG_MACROS, OPAQUE_MACROS};
use crate::source::{SourceFile, Span};

/// Most functions of one name a call is ordered after
/// ([`Index::callee_first`]).
const MAX_SAME_NAME: usize = 16;

/// Most traits remembered for one generic parameter name.
const MAX_BOUNDS: usize = 16;

pub(super) struct FnItem<'ast> {
    pub name: String,
    /// `Type::name` for methods, `name` for free functions.
    pub qualified: String,
    /// The type of `self` in a method.
    pub self_ty: Option<String>,
    /// The trait a method implements (`impl Locker for RedisLocker`), or
    /// whose default body it is: a call on a `dyn Locker`, an `impl
    /// Locker` or a generic bounded by `Locker` may reach it.
    pub trait_name: Option<String>,
    pub span: proc_macro2::Span,
    pub first_line: usize,
    /// Parameter names, with their declared types.
    pub params: Vec<(String, Option<String>)>,
    /// The declared return type (`-> redis::Cmd`).
    pub ret: Option<String>,
    /// The declared return type can say "nothing" (`Option<..>` at any
    /// depth: `Result<Option<Guard>, _>`).
    pub returns_option: bool,
    /// It returns a `bool` or nothing (also inside `Result`/`Option`).
    pub flag_only: bool,
    /// It returns nothing at all (no return type, or `()`): it hands no
    /// outcome to its callers, whatever its last expression mentions.
    pub returns_nothing: bool,
    /// It returns `()` inside `n` layers of `Result`/`Option`
    /// (`Result<Result<(), Held>, Error>`: 2): the outcome can only be an
    /// `Err` or `None`, so a caller that unwraps or `?`s every layer has
    /// checked it.
    pub unit_layers: Option<usize>,
    pub in_drop: bool,
    pub body: &'ast syn::Block,
}

impl FnItem<'_> {
    pub fn full_span(&self, src: &SourceFile) -> Span {
        Span {
            start: src.span_of(self.span).start,
            end: src.span_of(self.body.brace_token.span.close()).end,
        }
    }
}

#[derive(Default)]
pub(super) struct Index<'ast> {
    pub fns: Vec<FnItem<'ast>>,
    pub consts: HashMap<String, &'ast Expr>,
    /// Declared types of constants and statics.
    pub const_types: HashMap<String, String>,
    pub crates: BTreeSet<String>,
    pub macros: MacroArgs,
    /// Types (structs, enums, traits, aliases) the file defines.
    pub types: HashSet<String>,
    /// Field types of the structs the file defines: (struct, field) → type.
    pub fields: HashMap<(String, String), String>,
    /// Methods defined on the file's own types: (type, method).
    pub methods: HashSet<(String, String)>,
    /// The impl or trait being visited: (type, is `Drop`, trait).
    impl_stack: Vec<(String, bool, Option<String>)>,
    /// The traits each generic parameter of the file is bounded by (`L:
    /// Locker`, `where L: Locker`), whatever item declares it.
    pub bounds: HashMap<String, Vec<String>>,
    /// Type aliases of the file (`type Shared = Arc<dyn Locker>;`), as
    /// [`type_text`] writes the aliased type (`dyn Locker`).
    pub aliases: HashMap<String, String>,
    pub modules: Vec<String>,
    /// Names a `use` of the crate's own paths imports, with the module
    /// before them (`use crate::store::write;`: `write` → `store`).
    pub use_modules: HashMap<String, String>,
    /// Names a `use` of the crate's own paths renames (`use
    /// crate::store::write as put;`): `put` → `write`.
    pub use_renames: HashMap<String, String>,
    /// Macros whose bodies may be read as expressions, once it is known
    /// which are worth it ([`Index::parse_macros`]).
    pending: Vec<&'ast syn::Macro>,
    /// The names each of [`Self::fns`] calls (a path call's last segment,
    /// a method's name), in its body outside macros: what orders the walk
    /// callee first ([`Index::callee_first`]).
    pub calls_in: Vec<Vec<&'ast syn::Ident>>,
    /// The functions being visited, innermost last.
    current: Vec<usize>,
}

impl<'ast> Index<'ast> {
    /// Visits the body of the function just pushed, noting what it calls.
    fn in_last_fn(&mut self, visit: impl FnOnce(&mut Self)) {
        let f = self.fns.len() - 1;
        self.calls_in.resize_with(self.fns.len(), Vec::new);
        self.current.push(f);
        visit(self);
        self.current.pop();
    }

    fn note_call(&mut self, name: &'ast syn::Ident) {
        if let Some(&f) = self.current.last() {
            self.calls_in[f].push(name);
        }
    }

    /// The order to walk the functions in: each after the functions of the
    /// file it calls (by name), else in the file's order. A function that
    /// hands back a lock call's outcome or an unexecuted command is then
    /// known before its callers are walked, and one walk settles a file
    /// whose own wrappers and builders call each other without a cycle.
    pub fn callee_first(&self) -> Vec<usize> {
        let n = self.fns.len();
        let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, f) in self.fns.iter().enumerate() {
            by_name.entry(f.name.as_str()).or_default().push(i);
        }
        // A name many functions share (the `fmt` and `default` of a
        // generated file's thousands of types) orders nothing: a call of
        // it would be an edge to each.
        by_name.retain(|_, defs| defs.len() <= MAX_SAME_NAME);
        let edges: Vec<Vec<usize>> = (0..n)
            .map(|i| {
                let mut to: Vec<usize> = self
                    .calls_in
                    .get(i)
                    .into_iter()
                    .flatten()
                    .filter_map(|id| by_name.get(id.to_string().as_str()))
                    .flatten()
                    .copied()
                    .filter(|&j| j != i)
                    .collect();
                to.sort_unstable();
                to.dedup();
                to
            })
            .collect();
        // Depth first, without recursion (a generated file's chain of
        // 10,000 calls is as deep): a function is placed once everything
        // it calls is, a call back into a function being placed is a cycle
        // and is skipped (another walk settles it).
        let mut order = Vec::with_capacity(n);
        let mut state = vec![0u8; n];
        let mut stack: Vec<(usize, usize)> = Vec::new();
        for root in 0..n {
            if state[root] != 0 {
                continue;
            }
            state[root] = 1;
            stack.push((root, 0));
            while let Some((f, next)) = stack.last_mut() {
                let f = *f;
                if let Some(&to) = edges[f].get(*next) {
                    *next += 1;
                    if state[to] == 0 {
                        state[to] = 1;
                        stack.push((to, 0));
                    }
                } else {
                    state[f] = 2;
                    order.push(f);
                    stack.pop();
                }
            }
        }
        order
    }

    /// Parses the bodies of the pending macros that could hold a lock call:
    /// a macro whose name, or an identifier inside, is `worth` reading (a
    /// name a pack matches, a function of this file, another file's
    /// wrapper), or with a string literal inside when a text shape (SQL,
    /// Lua) could match this file. Parsing every `vec![..]` of a generated
    /// table costs as much as parsing the file again.
    pub fn parse_macros(&mut self, worth: &dyn Fn(&str) -> bool, strings_matter: bool) {
        for m in std::mem::take(&mut self.pending) {
            let name = macro_name(m);
            if !worth(&name) && !tokens_worth(&m.tokens, worth, strings_matter) {
                continue;
            }
            if let Ok(args) =
                m.parse_body_with(Punctuated::<Expr, syn::Token![,]>::parse_terminated)
            {
                self.macros.insert(macro_key(m), args.into_iter().collect());
            }
        }
    }
}

fn ends_as_string(literal: &str) -> bool {
    literal.ends_with('"') || literal.ends_with('#')
}

/// Whether a token stream holds an identifier worth reading, or a string
/// literal when strings matter.
fn tokens_worth(
    tokens: &proc_macro2::TokenStream,
    worth: &dyn Fn(&str) -> bool,
    strings_matter: bool,
) -> bool {
    let mut stack = vec![tokens.clone()];
    while let Some(ts) = stack.pop() {
        for tt in ts {
            match tt {
                TokenTree::Ident(id) if worth(&id.to_string()) => return true,
                // `"..."`, `r#"..."#`: a string ends with a quote or a raw
                // string's hashes; a number or a char never does.
                TokenTree::Literal(l) if strings_matter && ends_as_string(&l.to_string()) => {
                    return true
                }
                TokenTree::Group(g) => stack.push(g.stream()),
                _ => {}
            }
        }
    }
    false
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

fn params(sig: &syn::Signature, self_ty: Option<&str>) -> Vec<(String, Option<String>)> {
    sig.inputs
        .iter()
        .map(|arg| match arg {
            syn::FnArg::Receiver(_) => ("self".to_string(), self_ty.map(str::to_string)),
            syn::FnArg::Typed(t) => (
                pat_names(&t.pat).into_iter().next().unwrap_or_default(),
                Some(type_text(&t.ty)),
            ),
        })
        .collect()
}

/// The declared return type, when it can be an unexecuted command or
/// builder: not `()`, not a `Result`, `Option`, `bool` or `impl Trait`
/// (a reply, or a future of one).
fn ret(sig: &syn::Signature) -> Option<String> {
    let syn::ReturnType::Type(_, t) = &sig.output else {
        return None;
    };
    if sig.asyncness.is_some() {
        return None;
    }
    let text = keys::compact(&**t);
    let head = text.split('<').next().unwrap_or(&text);
    let head = head.rsplit("::").next().unwrap_or(head);
    let reply = head.ends_with("Result")
        || matches!(head, "Option" | "bool" | "()" | "Self")
        || text.starts_with("impl")
        || text.starts_with('(');
    (!reply).then(|| type_text(t))
}

/// Whether a function returns only a success flag: nothing, `bool`, or
/// either inside a `Result` or an `Option`.
fn returns_option(sig: &syn::Signature) -> bool {
    match &sig.output {
        syn::ReturnType::Default => false,
        syn::ReturnType::Type(_, t) => keys::compact(&**t).contains("Option<"),
    }
}

fn returns_nothing(sig: &syn::Signature) -> bool {
    match &sig.output {
        syn::ReturnType::Default => true,
        syn::ReturnType::Type(_, t) => matches!(&**t, syn::Type::Tuple(t) if t.elems.is_empty()),
    }
}

fn unit_layers(sig: &syn::Signature) -> Option<usize> {
    let syn::ReturnType::Type(_, t) = &sig.output else {
        return None;
    };
    let mut t: &syn::Type = t;
    let mut layers = 0;
    loop {
        match t {
            syn::Type::Tuple(u) if u.elems.is_empty() => return Some(layers),
            syn::Type::Path(p) => {
                let last = p.path.segments.last()?;
                let name = last.ident.to_string();
                if !(name.ends_with("Result") || name == "Option") || layers >= 4 {
                    return None;
                }
                let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
                    return None;
                };
                t = a.args.iter().find_map(|g| match g {
                    syn::GenericArgument::Type(t) => Some(t),
                    _ => None,
                })?;
                layers += 1;
            }
            _ => return None,
        }
    }
}

fn flag_only(sig: &syn::Signature) -> bool {
    let syn::ReturnType::Type(_, t) = &sig.output else {
        return true;
    };
    let text: String = keys::compact(&**t)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let (head, inner) = match text.split_once('<') {
        Some((h, rest)) => (h, rest.strip_suffix('>').unwrap_or(rest)),
        None => (text.as_str(), ""),
    };
    let head = head.rsplit("::").next().unwrap_or(head);
    let flag = |t: &str| matches!(t, "bool" | "()");
    if head.ends_with("Result") || head == "Option" {
        let first = inner.split(',').next().unwrap_or("");
        return flag(first);
    }
    flag(head)
}

fn self_type_name(t: &syn::Type) -> String {
    match t {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        other => keys::compact(other),
    }
}

impl<'ast> Visit<'ast> for Index<'ast> {
    fn visit_item_fn(&mut self, i: &'ast syn::ItemFn) {
        let vis = vis_span(&i.vis);
        self.fns.push(FnItem {
            name: i.sig.ident.to_string(),
            qualified: i.sig.ident.to_string(),
            self_ty: None,
            trait_name: None,
            span: i.sig.ident.span(),
            first_line: first_line(&i.attrs, &i.sig, vis),
            params: params(&i.sig, None),
            ret: ret(&i.sig),
            returns_option: returns_option(&i.sig),
            flag_only: flag_only(&i.sig),
            returns_nothing: returns_nothing(&i.sig),
            unit_layers: unit_layers(&i.sig),
            in_drop: false,
            body: &i.block,
        });
        self.in_last_fn(|me| visit::visit_item_fn(me, i));
    }

    fn visit_item_struct(&mut self, i: &'ast syn::ItemStruct) {
        let name = i.ident.to_string();
        for f in &i.fields {
            if let Some(id) = &f.ident {
                self.fields
                    .insert((name.clone(), id.to_string()), type_text(&f.ty));
            }
        }
        self.types.insert(name);
        visit::visit_item_struct(self, i);
    }

    fn visit_item_enum(&mut self, i: &'ast syn::ItemEnum) {
        self.types.insert(i.ident.to_string());
        visit::visit_item_enum(self, i);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let ty = self_type_name(&i.self_ty);
        let trait_name = i
            .trait_
            .as_ref()
            .and_then(|(_, p, _)| p.segments.last())
            .map(|s| s.ident.to_string());
        let drop = trait_name.as_deref() == Some("Drop");
        self.impl_stack.push((ty, drop, trait_name));
        visit::visit_item_impl(self, i);
        self.impl_stack.pop();
    }

    fn visit_impl_item_fn(&mut self, i: &'ast syn::ImplItemFn) {
        let (ty, drop, trait_name) = self.impl_stack.last().cloned().unwrap_or_default();
        let vis = vis_span(&i.vis);
        self.methods.insert((ty.clone(), i.sig.ident.to_string()));
        self.fns.push(FnItem {
            name: i.sig.ident.to_string(),
            qualified: format!("{ty}::{}", i.sig.ident),
            self_ty: Some(ty.clone()),
            trait_name,
            span: i.sig.ident.span(),
            first_line: first_line(&i.attrs, &i.sig, vis),
            params: params(&i.sig, Some(&ty)),
            ret: ret(&i.sig),
            returns_option: returns_option(&i.sig),
            flag_only: flag_only(&i.sig),
            returns_nothing: returns_nothing(&i.sig),
            unit_layers: unit_layers(&i.sig),
            in_drop: drop,
            body: &i.block,
        });
        self.in_last_fn(|me| visit::visit_impl_item_fn(me, i));
    }

    fn visit_item_trait(&mut self, i: &'ast syn::ItemTrait) {
        self.types.insert(i.ident.to_string());
        let name = i.ident.to_string();
        self.impl_stack.push((name.clone(), false, Some(name)));
        visit::visit_item_trait(self, i);
        self.impl_stack.pop();
    }

    fn visit_trait_item_fn(&mut self, i: &'ast syn::TraitItemFn) {
        if let Some(body) = &i.default {
            let (ty, _, trait_name) = self.impl_stack.last().cloned().unwrap_or_default();
            self.fns.push(FnItem {
                name: i.sig.ident.to_string(),
                qualified: format!("{ty}::{}", i.sig.ident),
                self_ty: Some(ty.clone()),
                trait_name,
                span: i.sig.ident.span(),
                first_line: first_line(&i.attrs, &i.sig, None),
                params: params(&i.sig, Some(&ty)),
                ret: ret(&i.sig),
                returns_option: returns_option(&i.sig),
                flag_only: flag_only(&i.sig),
                returns_nothing: returns_nothing(&i.sig),
                unit_layers: unit_layers(&i.sig),
                in_drop: false,
                body,
            });
            return self.in_last_fn(|me| visit::visit_trait_item_fn(me, i));
        }
        visit::visit_trait_item_fn(self, i);
    }

    fn visit_generics(&mut self, g: &'ast syn::Generics) {
        let mut bound = |name: String,
                         bounds: &syn::punctuated::Punctuated<
            syn::TypeParamBound,
            syn::Token![+],
        >| {
            let traits = self.bounds.entry(name).or_default();
            for b in bounds {
                if let syn::TypeParamBound::Trait(t) = b {
                    if let Some(last) = t.path.segments.last() {
                        let name = last.ident.to_string();
                        if traits.len() < MAX_BOUNDS && !traits.contains(&name) {
                            traits.push(name);
                        }
                    }
                }
            }
        };
        for p in g.type_params() {
            bound(p.ident.to_string(), &p.bounds);
        }
        for w in g.where_clause.iter().flat_map(|w| &w.predicates) {
            if let syn::WherePredicate::Type(t) = w {
                if let syn::Type::Path(p) = &t.bounded_ty {
                    if let Some(id) = p.path.get_ident() {
                        bound(id.to_string(), &t.bounds);
                    }
                }
            }
        }
        visit::visit_generics(self, g);
    }

    fn visit_item_type(&mut self, i: &'ast syn::ItemType) {
        self.aliases.insert(i.ident.to_string(), type_text(&i.ty));
        visit::visit_item_type(self, i);
    }

    fn visit_item_mod(&mut self, i: &'ast syn::ItemMod) {
        self.modules.push(i.ident.to_string());
        visit::visit_item_mod(self, i);
    }

    fn visit_item_const(&mut self, i: &'ast syn::ItemConst) {
        self.consts.insert(i.ident.to_string(), &i.expr);
        self.const_types
            .insert(i.ident.to_string(), type_text(&i.ty));
        visit::visit_item_const(self, i);
    }

    /// `impl Driver { const TABLE: &str = "election_leader"; }`: read by
    /// name like a module's constant (`Self::TABLE`, `Driver::TABLE`).
    fn visit_impl_item_const(&mut self, i: &'ast syn::ImplItemConst) {
        self.consts.insert(i.ident.to_string(), &i.expr);
        self.const_types
            .insert(i.ident.to_string(), type_text(&i.ty));
        visit::visit_impl_item_const(self, i);
    }

    /// A trait's constant with its default value, read the same way.
    fn visit_trait_item_const(&mut self, i: &'ast syn::TraitItemConst) {
        if let Some((_, e)) = &i.default {
            self.consts.insert(i.ident.to_string(), e);
            self.const_types
                .insert(i.ident.to_string(), type_text(&i.ty));
        }
        visit::visit_trait_item_const(self, i);
    }

    fn visit_item_static(&mut self, i: &'ast syn::ItemStatic) {
        self.consts.insert(i.ident.to_string(), &i.expr);
        self.const_types
            .insert(i.ident.to_string(), type_text(&i.ty));
        visit::visit_item_static(self, i);
    }

    fn visit_item_use(&mut self, i: &'ast syn::ItemUse) {
        local_uses(&i.tree, false, None, self);
        visit::visit_item_use(self, i);
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

    fn visit_expr_call(&mut self, i: &'ast syn::ExprCall) {
        if let Expr::Path(p) = &*i.func {
            if let Some(last) = p.path.segments.last() {
                self.note_call(&last.ident);
            }
        }
        visit::visit_expr_call(self, i);
    }

    fn visit_expr_method_call(&mut self, i: &'ast syn::ExprMethodCall) {
        self.note_call(&i.method);
        visit::visit_expr_method_call(self, i);
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
        if name == "select" {
            if let Some(arms) = super::macros::select_arms(&m.tokens) {
                self.macros.insert(macro_key(m), arms);
            }
        } else if !LOG_MACROS.contains(&name.as_str()) && !OPAQUE_MACROS.contains(&name.as_str()) {
            self.pending.push(m);
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

/// The names a `use` of this crate's own paths (`use crate::{locks,
/// store};`, `use super::store as db;`) brings into scope: a path call
/// through one (`store::write(..)`) is a call into another file of the
/// crate, and a name imported from a module (`use crate::store::write;`)
/// is that module's.
fn local_uses(t: &syn::UseTree, local: bool, parent: Option<String>, out: &mut Index) {
    match t {
        syn::UseTree::Path(p) => {
            let name = p.ident.to_string();
            let root = matches!(name.as_str(), "crate" | "self" | "super");
            local_uses(&p.tree, local || root, Some(name), out);
        }
        syn::UseTree::Name(n) if local && n.ident != "self" => {
            let name = n.ident.to_string();
            if let Some(m) = parent.filter(|m| !matches!(m.as_str(), "self" | "super")) {
                out.use_modules.insert(name.clone(), m);
            }
            out.modules.push(name);
        }
        syn::UseTree::Rename(r) if local => {
            let (name, alias) = (r.ident.to_string(), r.rename.to_string());
            if let Some(m) = parent.filter(|m| !matches!(m.as_str(), "self" | "super")) {
                out.use_modules.insert(alias.clone(), m);
            }
            out.use_renames.insert(alias.clone(), name);
            out.modules.push(alias);
        }
        syn::UseTree::Group(g) => {
            for item in &g.items {
                local_uses(item, local, parent.clone(), out);
            }
        }
        _ => {}
    }
}
