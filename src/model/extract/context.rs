//! The read-only context of one file's extraction: the packs, the source,
//! the file index, and the strings of constants (resolved once, on demand).

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};

use regex::Regex;
use syn::Expr;

use super::chain::MacroArgs;
use super::index::Index;
use super::locals::{strings_of, NameStrings, SetId, Strings};
use crate::pack::{ApiRef, PackSet};
use crate::source::SourceFile;

pub(super) struct Cx<'a, 'ast> {
    pub packs: &'a PackSet,
    pub src: &'a SourceFile,
    pub lock_name: &'a Regex,
    pub consts: &'ast HashMap<String, &'ast Expr>,
    /// Pack crates the file imports or names.
    pub crates: BTreeSet<String>,
    pub local_fns: HashSet<String>,
    /// Functions of the file that return a key they build from a literal
    /// (`fn lock_key(&self, name: &str) -> String { format!("lock:{name}") }`):
    /// name → that literal, `None` when two such functions of the name
    /// build different ones.
    pub key_fns: HashMap<String, Option<String>>,
    /// Modules this file declares (`mod store;`).
    pub modules: HashSet<String>,
    /// Names imported from a module of the crate, with that module.
    pub use_modules: &'ast HashMap<String, String>,
    /// Names imported under another name: alias → the name defined.
    pub use_renames: &'ast HashMap<String, String>,
    /// Text shapes (SQL, Lua) whose pack's trigger words occur in the file:
    /// the others cannot match, and are not tried on every chain.
    pub text_only: Vec<ApiRef>,
    pub macros: &'ast MacroArgs,
    /// Types the file defines, their field types and methods.
    pub types: &'ast HashSet<String>,
    pub fields: &'ast HashMap<(String, String), String>,
    pub methods: &'ast HashSet<(String, String)>,
    /// The traits generic parameters of the file are bounded by.
    pub bounds: &'ast HashMap<String, Vec<String>>,
    /// The file's type aliases.
    pub aliases: &'ast HashMap<String, String>,
    pub strings: Strings,
    const_sets: RefCell<HashMap<String, Option<SetId>>>,
    /// Texts other files of the crate keep under a name (a constant, a
    /// function's return value).
    pub imported_texts: HashMap<String, SetId>,
    /// Texts the constructors of other files' structs store in a field, by
    /// field name.
    pub imported_fields: HashMap<String, SetId>,
}

impl<'a, 'ast> Cx<'a, 'ast> {
    pub fn new(
        packs: &'a PackSet,
        src: &'a SourceFile,
        lock_name: &'a Regex,
        own_crate: Option<&str>,
        index: &'ast Index<'ast>,
        text_only: Vec<ApiRef>,
        imported_texts: Option<&HashMap<String, Vec<String>>>,
    ) -> Self {
        let strings = Strings::default();
        let mut imported: HashMap<String, SetId> = HashMap::new();
        let mut fields: HashMap<String, SetId> = HashMap::new();
        for (name, texts) in imported_texts.into_iter().flatten() {
            let ids = texts.iter().map(|t| strings.intern(t)).collect();
            let set = strings.set_of(ids);
            match super::field_text_parts(name) {
                // A type of the same name this file defines is its own
                // (a MySQL twin of a Postgres `ElectionSqlSet`).
                Some((ty, _)) if index.types.contains(ty) => {}
                // Read by field name, whichever of the types offering it
                // the receiver is (`self.sql.try_lock`).
                Some((_, field)) => {
                    let entry = fields.entry(field.to_string()).or_insert(SetId::EMPTY);
                    *entry = strings.union(&[*entry, set]);
                }
                None => {
                    imported.insert(name.clone(), set);
                }
            }
        }
        Cx {
            imported_texts: imported,
            imported_fields: fields,
            packs,
            src,
            lock_name,
            consts: &index.consts,
            crates: index
                .crates
                .iter()
                .filter(|c| packs.crate_names.contains(*c))
                .cloned()
                .chain(own_crate.map(str::to_string))
                .collect(),
            local_fns: index.fns.iter().map(|f| f.name.clone()).collect(),
            key_fns: key_fns(&index.fns),
            modules: index.modules.iter().cloned().collect(),
            use_modules: &index.use_modules,
            use_renames: &index.use_renames,
            text_only,
            macros: &index.macros,
            types: &index.types,
            fields: &index.fields,
            methods: &index.methods,
            bounds: &index.bounds,
            aliases: &index.aliases,
            strings,
            const_sets: RefCell::default(),
        }
    }

    /// The literal a call of one of the file's key-building functions
    /// builds its key from: `self.lock_key(name)`, `Self::lock_key(..)`,
    /// `lock_key(name)` (see [`Cx::key_fns`]).
    pub fn built_key(&self, e: &Expr) -> Option<String> {
        let name = match crate::model::keys::strip(e) {
            Expr::MethodCall(m) if matches!(&*m.receiver, Expr::Path(p) if p.path.is_ident("self")) => {
                m.method.to_string()
            }
            Expr::Call(c) => match &*c.func {
                Expr::Path(p)
                    if p.path.segments.len() == 1
                        || (p.path.segments.len() == 2 && p.path.segments[0].ident == "Self") =>
                {
                    p.path.segments.last()?.ident.to_string()
                }
                _ => return None,
            },
            _ => return None,
        };
        self.key_fns.get(&name).cloned().flatten()
    }

    /// The strings a constant or static holds, resolved once. A constant
    /// that names itself (directly or through others) resolves to what was
    /// found before the cycle closed.
    pub fn const_strings(&self, name: &str) -> Option<SetId> {
        if let Some(s) = self.const_sets.borrow().get(name) {
            return *s;
        }
        let Some(&e) = self.consts.get(name) else {
            return self.imported_texts.get(name).copied();
        };
        // Mark as in progress: a cycle sees no strings.
        self.const_sets
            .borrow_mut()
            .insert(name.to_string(), Some(SetId::EMPTY));
        struct Consts<'c, 'a, 'ast>(&'c Cx<'a, 'ast>);
        impl NameStrings for Consts<'_, '_, '_> {
            fn local_strings(&self, _: &str) -> Option<SetId> {
                None
            }
            fn const_strings(&self, name: &str) -> Option<SetId> {
                self.0.const_strings(name)
            }
        }
        let set = strings_of(lazy_value(e), &self.strings, &Consts(self));
        self.const_sets
            .borrow_mut()
            .insert(name.to_string(), Some(set));
        Some(set)
    }
}

/// What a lazily initialised static holds: the body of the closure given
/// to `LazyLock::new`, `Lazy::new` or `LazyCell::new` (`static UNLOCK:
/// LazyLock<Script> = LazyLock::new(|| Script::new(LUA))`), else the
/// initialiser itself.
fn lazy_value(e: &Expr) -> &Expr {
    if let Expr::Call(c) = e {
        if let (Expr::Path(p), Some(Expr::Closure(body))) = (&*c.func, c.args.first()) {
            let n = p.path.segments.len();
            let lazy = n >= 2
                && p.path.segments[n - 1].ident == "new"
                && matches!(
                    p.path.segments[n - 2].ident.to_string().as_str(),
                    "LazyLock" | "Lazy" | "LazyCell"
                );
            if lazy && c.args.len() == 1 {
                return &body.body;
            }
        }
    }
    e
}

/// The file's functions that return text built from one literal as their
/// last expression (see [`Cx::key_fns`]).
fn key_fns(fns: &[super::index::FnItem]) -> HashMap<String, Option<String>> {
    let mut out: HashMap<String, Option<String>> = HashMap::new();
    for f in fns {
        let text = f
            .ret
            .as_deref()
            .is_some_and(|t| t.contains("String") || t.contains("str"));
        if !text {
            continue;
        }
        let Some(syn::Stmt::Expr(tail, None)) = f.body.stmts.last() else {
            continue;
        };
        let Some(lit) = crate::model::keys::literal(tail) else {
            continue;
        };
        // Placeholders only (`format!("{}{}", ..)`, `format!("{:x}", ..)`):
        // nothing constant to tell the key by; its call says more.
        if !has_constant_text(&lit) {
            continue;
        }
        out.entry(f.name.clone())
            .and_modify(|seen| {
                if seen.as_deref() != Some(lit.as_str()) {
                    *seen = None;
                }
            })
            .or_insert(Some(lit));
    }
    out
}

/// Whether a format literal has text outside its `{..}` placeholders.
fn has_constant_text(lit: &str) -> bool {
    let mut depth = 0usize;
    let mut chars = lit.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => return true,
            '{' => depth += 1,
            '}' if depth > 0 => depth -= 1,
            _ if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    #[test]
    fn constant_text_is_what_lies_outside_the_placeholders() {
        assert!(super::has_constant_text("lock:{name}"));
        assert!(super::has_constant_text("{a}-{b}"));
        assert!(super::has_constant_text("{{lock}}"));
        assert!(!super::has_constant_text("{}{}"));
        assert!(!super::has_constant_text("{:x}"));
        assert!(!super::has_constant_text(""));
    }
}
