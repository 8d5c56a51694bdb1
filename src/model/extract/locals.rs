//! The value flow of one function: block-scoped bindings, and the strings
//! each one can hold.
//!
//! A binding is resolved when it is declared: its strings are the literals
//! of its initialiser plus the (already resolved) strings of the bindings
//! and constants the initialiser names. So no lookup ever walks back
//! through a chain of `let`s, nothing is copied per path, and a binding
//! dies with its block. Strings are interned once per file ([`StrId`]) and
//! sets of them once per distinct set ([`SetId`]), so a 1 MB constant used
//! at 8,000 call sites is one string and one set, and a text pattern is
//! matched against it once.

use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

use proc_macro2::TokenTree;
use syn::visit::{self, Visit};
use syn::Expr;

use super::chain::{Root, Seg};
use super::syntax::collect_words;
use crate::pack::Pattern;

/// A string literal of the file, interned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct StrId(u32);

/// A set of interned strings, itself interned: equal sets share one id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct SetId(u32);

impl SetId {
    pub const EMPTY: SetId = SetId(0);
}

/// A binding of the function being walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LocalId(u32);

/// The file's strings and string sets, and text-pattern results per set.
pub(super) struct Strings {
    strs: RefCell<Vec<Rc<str>>>,
    by_text: RefCell<HashMap<Rc<str>, StrId>>,
    sets: RefCell<Vec<Rc<[StrId]>>>,
    by_set: RefCell<HashMap<Rc<[StrId]>, SetId>>,
    joined: RefCell<HashMap<SetId, Rc<str>>>,
    /// (set, pattern address) → does the pattern match the set's text.
    matched: RefCell<HashMap<(SetId, usize), bool>>,
}

impl Default for Strings {
    fn default() -> Self {
        let empty: Rc<[StrId]> = Rc::from(Vec::new());
        let mut by_set = HashMap::new();
        by_set.insert(empty.clone(), SetId::EMPTY);
        Strings {
            strs: RefCell::default(),
            by_text: RefCell::default(),
            sets: RefCell::new(vec![empty]),
            by_set: RefCell::new(by_set),
            joined: RefCell::default(),
            matched: RefCell::default(),
        }
    }
}

impl Strings {
    pub fn intern(&self, s: &str) -> StrId {
        if let Some(&id) = self.by_text.borrow().get(s) {
            return id;
        }
        let rc: Rc<str> = Rc::from(s);
        let mut strs = self.strs.borrow_mut();
        let id = StrId(strs.len() as u32);
        strs.push(rc.clone());
        self.by_text.borrow_mut().insert(rc, id);
        id
    }

    pub fn set_of(&self, mut ids: Vec<StrId>) -> SetId {
        ids.sort_unstable();
        ids.dedup();
        if let Some(&id) = self.by_set.borrow().get(ids.as_slice()) {
            return id;
        }
        let rc: Rc<[StrId]> = Rc::from(ids);
        let mut sets = self.sets.borrow_mut();
        let id = SetId(sets.len() as u32);
        sets.push(rc.clone());
        self.by_set.borrow_mut().insert(rc, id);
        id
    }

    pub fn union(&self, parts: &[SetId]) -> SetId {
        let parts: Vec<SetId> = parts
            .iter()
            .copied()
            .filter(|&p| p != SetId::EMPTY)
            .collect();
        match parts.as_slice() {
            [] => SetId::EMPTY,
            [one] => *one,
            _ => {
                let sets = self.sets.borrow();
                let all: Vec<StrId> = parts
                    .iter()
                    .flat_map(|p| sets[p.0 as usize].iter().copied())
                    .collect();
                drop(sets);
                self.set_of(all)
            }
        }
    }

    pub fn is_empty(&self, set: SetId) -> bool {
        set == SetId::EMPTY
    }

    /// The set's strings, in first-seen order.
    pub fn list(&self, set: SetId) -> Vec<String> {
        let sets = self.sets.borrow();
        let strs = self.strs.borrow();
        sets[set.0 as usize]
            .iter()
            .map(|s| strs[s.0 as usize].to_string())
            .collect()
    }

    /// The set's strings joined by newlines, in first-seen order.
    pub fn joined(&self, set: SetId) -> Rc<str> {
        if let Some(j) = self.joined.borrow().get(&set) {
            return j.clone();
        }
        let sets = self.sets.borrow();
        let strs = self.strs.borrow();
        let text: Vec<&str> = sets[set.0 as usize]
            .iter()
            .map(|s| &*strs[s.0 as usize])
            .collect();
        let j: Rc<str> = Rc::from(text.join("\n"));
        self.joined.borrow_mut().insert(set, j.clone());
        j
    }

    /// Whether `p` matches the set's text; each (set, pattern) is matched once.
    pub fn matches(&self, set: SetId, p: &Pattern) -> bool {
        let key = (set, p as *const Pattern as usize);
        if let Some(&m) = self.matched.borrow().get(&key) {
            return m;
        }
        let m = p.is_match(&self.joined(set));
        self.matched.borrow_mut().insert(key, m);
        m
    }
}

/// An unexecuted builder a binding holds: the chain it was built by.
#[derive(Clone)]
pub(super) struct Builder<'ast> {
    pub root: Root<'ast>,
    pub root_expr: &'ast Expr,
    pub segs: Vec<Seg<'ast>>,
}

pub(super) struct Binding<'ast> {
    pub name: String,
    /// The initialiser, when the binding is the whole of it (not a part of
    /// a destructured pattern, not a parameter).
    pub init: Option<&'ast Expr>,
    /// Strings the bound value may hold.
    pub strings: SetId,
    pub builder: Option<Builder<'ast>>,
    /// The declared (or evident) type, with references and smart pointers
    /// peeled off.
    pub ty: Option<String>,
    /// Events classified at the binding's own statement: a fuller view of
    /// the same builder (where it runs) replaces them.
    pub builder_events: Vec<super::super::event::EventId>,
    /// Fields assigned through the binding after it was declared
    /// (`lease.spec.holder_identity = None;`), in order.
    pub assigned: Vec<(String, bool)>,
    /// The local this binding borrows a part of (`if let Some(spec) =
    /// lease.spec.as_mut()`, `let spec = &mut lease.spec`): fields assigned
    /// through it are assigned to that local too.
    pub alias_of: Option<String>,
    words: OnceCell<Rc<BTreeSet<String>>>,
}

impl<'ast> Binding<'ast> {
    pub fn new(name: String) -> Self {
        Binding {
            name,
            init: None,
            strings: SetId::EMPTY,
            builder: None,
            ty: None,
            builder_events: Vec::new(),
            assigned: Vec::new(),
            alias_of: None,
            words: OnceCell::new(),
        }
    }

    /// Words of the initialiser (see [`collect_words`]), gathered once.
    pub fn words(&self) -> Rc<BTreeSet<String>> {
        self.words
            .get_or_init(|| {
                let mut w = BTreeSet::new();
                if let Some(e) = self.init {
                    collect_words(e, &mut w);
                }
                Rc::new(w)
            })
            .clone()
    }
}

/// Block-scoped bindings with shadowing.
#[derive(Default)]
pub(super) struct LocalTable<'ast> {
    bindings: Vec<Binding<'ast>>,
    /// Name → its visible bindings, innermost last.
    visible: HashMap<String, Vec<LocalId>>,
    /// Names declared in each open scope, innermost last.
    scopes: Vec<Vec<String>>,
}

impl<'ast> LocalTable<'ast> {
    pub fn push_scope(&mut self) {
        self.scopes.push(Vec::new());
    }

    pub fn pop_scope(&mut self) {
        for name in self.scopes.pop().unwrap_or_default() {
            if let Some(stack) = self.visible.get_mut(&name) {
                stack.pop();
                if stack.is_empty() {
                    self.visible.remove(&name);
                }
            }
        }
    }

    pub fn declare(&mut self, b: Binding<'ast>) -> LocalId {
        let id = LocalId(self.bindings.len() as u32);
        let name = b.name.clone();
        self.bindings.push(b);
        self.visible.entry(name.clone()).or_default().push(id);
        match self.scopes.last_mut() {
            Some(s) => s.push(name),
            None => self.scopes.push(vec![name]),
        }
        id
    }

    pub fn id(&self, name: &str) -> Option<LocalId> {
        self.visible.get(name).and_then(|s| s.last()).copied()
    }

    pub fn get(&self, name: &str) -> Option<&Binding<'ast>> {
        self.id(name).map(|id| &self.bindings[id.0 as usize])
    }

    /// The binding `id`.
    pub fn binding(&self, id: LocalId) -> &Binding<'ast> {
        &self.bindings[id.0 as usize]
    }

    /// The binding of `name` that `id` shadows, when `id` is one of the
    /// visible bindings of `name`: what `patch` names in
    /// `let patch = Patch::Merge(&patch);`.
    pub fn shadowed(&self, name: &str, id: LocalId) -> Option<LocalId> {
        let stack = self.visible.get(name)?;
        let at = stack.iter().position(|&i| i == id)?;
        at.checked_sub(1).map(|i| stack[i])
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Binding<'ast>> {
        let id = self.id(name)?;
        Some(&mut self.bindings[id.0 as usize])
    }
}

/// What [`strings_of`] needs to resolve names: the visible bindings and the
/// file's constants.
pub(super) trait NameStrings {
    fn local_strings(&self, name: &str) -> Option<SetId>;
    fn const_strings(&self, name: &str) -> Option<SetId>;
    /// Strings a function of the file returns (`self.campaign_sql()`).
    fn fn_strings(&self, _name: &str) -> Option<SetId> {
        None
    }
    /// Strings stored in a struct field anywhere in the file
    /// (`ElectionSql { campaign: .. }`, `self.sql = ..`).
    /// What a function of another file of the crate returns, called
    /// through a path (`sql::unlock_sql()`).
    fn path_fn_strings(&self, _name: &str) -> Option<SetId> {
        None
    }
    fn field_strings(&self, _name: &str) -> Option<SetId> {
        None
    }
    /// Is this a type the file defines?
    fn is_local_type(&self, _name: &str) -> bool {
        false
    }
}

/// The strings an expression can evaluate to or carry: its literals, and
/// the resolved strings of the locals, constants, fields and functions of
/// the file it names. Struct literals, closures and `async` blocks are not
/// entered: their code runs elsewhere, and the walk
/// judges the calls inside them where they are.
pub(super) fn strings_of(e: &Expr, strings: &Strings, names: &dyn NameStrings) -> SetId {
    struct V<'s, 'n> {
        strings: &'s Strings,
        names: &'n dyn NameStrings,
        ids: Vec<StrId>,
        sets: Vec<SetId>,
    }
    impl V<'_, '_> {
        fn name(&mut self, name: &str) {
            if let Some(s) = self.names.local_strings(name) {
                self.sets.push(s);
            } else if name.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
                if let Some(s) = self.names.const_strings(name) {
                    self.sets.push(s);
                }
            }
        }
        fn tokens(&mut self, ts: &proc_macro2::TokenStream) {
            let mut stack = vec![ts.clone()];
            while let Some(ts) = stack.pop() {
                let mut it = ts.into_iter().peekable();
                while let Some(tt) = it.next() {
                    match tt {
                        TokenTree::Literal(l) => {
                            if let syn::Lit::Str(s) = syn::Lit::new(l) {
                                self.ids.push(self.strings.intern(&s.value()));
                            }
                        }
                        // `format!(.., table = Self::table_name())`: what
                        // the called function returns.
                        TokenTree::Ident(i)
                            if matches!(it.peek(), Some(TokenTree::Group(g))
                                if g.delimiter() == proc_macro2::Delimiter::Parenthesis) =>
                        {
                            if let Some(s) = self.names.fn_strings(&i.to_string()) {
                                self.sets.push(s);
                            }
                        }
                        TokenTree::Ident(i) => self.name(&i.to_string()),
                        TokenTree::Group(g) => stack.push(g.stream()),
                        TokenTree::Punct(_) => {}
                    }
                }
            }
        }
    }
    impl<'ast> Visit<'ast> for V<'_, '_> {
        fn visit_lit_str(&mut self, l: &'ast syn::LitStr) {
            self.ids.push(self.strings.intern(&l.value()));
        }
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            if let Some(last) = p.path.segments.last() {
                let name = last.ident.to_string();
                if p.path.segments.len() == 1 {
                    self.name(&name);
                } else if name.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
                    if let Some(s) = self.names.const_strings(&name) {
                        self.sets.push(s);
                    }
                }
            }
        }
        fn visit_expr_field(&mut self, f: &'ast syn::ExprField) {
            // `self.sql.campaign`: the strings the file stores in a field
            // of that name.
            if let syn::Member::Named(n) = &f.member {
                if let Some(s) = self.names.field_strings(&n.to_string()) {
                    self.sets.push(s);
                }
            }
            visit::visit_expr_field(self, f);
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            if let Some(s) = self.names.fn_strings(&m.method.to_string()) {
                self.sets.push(s);
            }
            visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if let Expr::Path(p) = &*c.func {
                let n = p.path.segments.len();
                let name = p.path.segments[n - 1].ident.to_string();
                if n == 1 || (n == 2 && p.path.segments[0].ident == "Self") {
                    if let Some(s) = self.names.fn_strings(&name) {
                        self.sets.push(s);
                    }
                } else if let Some(s) = self.names.path_fn_strings(&name) {
                    self.sets.push(s);
                }
            }
            visit::visit_expr_call(self, c);
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
        // An object of a type the file defines is not text: its fields'
        // strings are known by field name instead (`self.sql.campaign`),
        // so a method called on the object does not carry all of them. A
        // client crate's request struct (`PutItemInput { condition_expression:
        // .. }`) is read like any argument.
        fn visit_expr_struct(&mut self, s: &'ast syn::ExprStruct) {
            let own = s
                .path
                .segments
                .last()
                .is_some_and(|seg| self.names.is_local_type(&seg.ident.to_string()));
            if !own {
                visit::visit_expr_struct(self, s);
            }
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            match m
                .path
                .is_ident("format")
                .then(|| named_format(&m.tokens))
                .flatten()
            {
                Some((text, rest)) => {
                    self.ids.push(self.strings.intern(&text));
                    self.tokens(&rest);
                }
                None => self.tokens(&m.tokens),
            }
        }
    }
    let mut v = V {
        strings,
        names,
        ids: Vec::new(),
        sets: Vec::new(),
    };
    v.visit_expr(e);
    let own = strings.set_of(v.ids);
    v.sets.push(own);
    strings.union(&v.sets)
}

/// A `format!`'s string with each positional `{}` that takes a plain name
/// or field (`self.lock_id`) written as that named argument
/// (`{self.lock_id}`), so the text says what goes there; and the tokens
/// after the string. `None` when the first token is not a string literal.
fn named_format(ts: &proc_macro2::TokenStream) -> Option<(String, proc_macro2::TokenStream)> {
    let mut it = ts.clone().into_iter();
    let Some(TokenTree::Literal(l)) = it.next() else {
        return None;
    };
    let syn::Lit::Str(s) = syn::Lit::new(l) else {
        return None;
    };
    let rest: proc_macro2::TokenStream = it.collect();
    // The arguments, split at top-level commas.
    let mut args: Vec<String> = Vec::new();
    let mut cur = String::new();
    for tt in rest.clone() {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => {
                if !cur.is_empty() {
                    args.push(std::mem::take(&mut cur));
                }
            }
            TokenTree::Ident(i) => cur.push_str(&i.to_string()),
            TokenTree::Punct(p) if p.as_char() == '.' || p.as_char() == '&' => {
                cur.push(p.as_char())
            }
            // Anything else (a call, an operator, `name = ..`) is no plain
            // name: marked so it is left as `{}`.
            _ => cur.push(' '),
        }
    }
    if !cur.is_empty() {
        args.push(cur);
    }
    let value = s.value();
    // Only `{}` and `{name}` holes: with `{:?}`, `{0}` or `{{` among them
    // the positions are not counted here, and the text stays as written.
    let simple = value.split('{').skip(1).all(|after| {
        after.split_once('}').is_some_and(|(inside, _)| {
            inside.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !inside.starts_with(|c: char| c.is_ascii_digit())
        })
    });
    if !value.contains("{}") || !simple {
        return Some((value, rest));
    }
    let mut out = String::with_capacity(value.len());
    let mut args = args.into_iter();
    let mut parts = value.split("{}");
    out.push_str(parts.next().unwrap_or(""));
    for part in parts {
        let arg = args.next().map(|a| a.trim_start_matches('&').to_string());
        match arg.filter(|a| {
            !a.is_empty()
                && a.chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        }) {
            Some(a) => {
                out.push('{');
                out.push_str(&a);
                out.push('}');
            }
            None => out.push_str("{}"),
        }
        out.push_str(part);
    }
    Some((out, rest))
}

#[cfg(test)]
mod format_tests {
    use super::named_format;

    fn text(src: &str) -> String {
        let m: syn::Macro = syn::parse_str(src).expect("macro");
        named_format(&m.tokens).expect("a format string").0
    }

    #[test]
    fn a_positional_hole_given_a_plain_name_says_the_name() {
        assert_eq!(
            text(r#"format!("SELECT pg_try_advisory_lock({})", self.lock_id)"#),
            "SELECT pg_try_advisory_lock({self.lock_id})"
        );
        assert_eq!(text(r#"format!("{} {}", &table, id)"#), "{table} {id}");
        // A call or an expression stays a hole.
        assert_eq!(
            text(r#"format!("lock({}) in {}", key.hash(), a + b)"#),
            "lock({}) in {}"
        );
        assert_eq!(text(r#"format!("plain")"#), "plain");
        // Holes whose positions are not all `{}` are left as written.
        assert_eq!(text(r#"format!("{:?} {}", a, b)"#), "{:?} {}");
        assert_eq!(text(r#"format!("{0} {}", a)"#), "{0} {}");
        assert_eq!(text(r#"format!("{{}} {}", a)"#), "{{}} {}");
        assert_eq!(text(r#"format!("{t} {}", b, t = x)"#), "{t} {b}");
    }
}
