//! The extraction pass: syntax tree + rule packs → [`FileModel`].
//!
//! One walk per function body ([`walk`], with [`bind`] for what it learns of
//! values and [`calls`] for chains and macros) keeps a block-scoped table of
//! bindings ([`locals`]) and flattens every call chain once ([`chain`]);
//! the classifier ([`classify`]) matches each chain against the packs
//! through per-anchor views ([`view`]) and turns matches into [`Event`]s
//! that record the key, the literal words, how the result is used
//! ([`result_use`]) and what encloses the call. A command built across
//! statements (`let mut c = cmd("SET"); c.arg(k).arg("NX"); c.query(..)`)
//! or returned unexecuted by a function of the file is one command, judged
//! where it runs; a call of a function that passes a lock call's outcome
//! on is a site of its own ([`wrappers`]). The file index ([`index`]) and
//! the per-file context
//! ([`context`]) are built before any body is walked and only read after.

mod bind;
mod calls;
mod chain;
mod classify;
mod context;
mod fields;
mod index;
mod locals;
mod macros;
mod result_use;
mod syntax;
mod view;
mod walk;
mod wrappers;

use std::collections::{BTreeSet, HashMap, HashSet};

use regex::Regex;
use syn::visit::Visit;

use super::event::*;
use super::lockname::is_lock_name;
use crate::pack::PackSet;
use crate::source::SourceFile;
use context::Cx;
use index::{FnItem, Index};
use locals::{Builder, LocalTable};
use walk::{KnownStrings, Walker};

pub use syntax::{mentions, pat_names};
pub use walk::MAX_EXPR_DEPTH;

pub struct Options<'a> {
    pub lock_name: &'a Regex,
    /// The pack crate this file belongs to (its `Cargo.toml` names it): a
    /// lock crate's own source never imports itself, so the crate is
    /// evidence there.
    pub own_crate: Option<&'a str>,
    /// Wrappers defined in other files of the crate, by name; a function
    /// of this file with the same name wins.
    pub imported: Option<&'a HashMap<String, Wrapper>>,
    /// This file's wrappers that other files of the crate call: their
    /// inner calls are reported at those calls, not again here.
    pub called_elsewhere: Option<&'a CalledElsewhere>,
    /// Statement text (SQL, Lua) other files of the crate keep in a
    /// constant or return from a function, by name.
    pub imported_texts: Option<&'a HashMap<String, Vec<String>>>,
    /// Type aliases other files of the crate define, by name; one of this
    /// file with the same name wins.
    pub imported_types: Option<&'a HashMap<String, String>>,
}

impl<'a> Options<'a> {
    pub fn new(lock_name: &'a Regex) -> Self {
        Options {
            lock_name,
            own_crate: None,
            imported: None,
            called_elsewhere: None,
            imported_texts: None,
            imported_types: None,
        }
    }
}

pub fn extract(file: &syn::File, src: &SourceFile, packs: &PackSet, opts: &Options) -> FileModel {
    let rules = macros::macro_rules(file);
    let mut index = Index::default();
    index.visit_file(file);
    // The file's own aliases are offered to its crate; another file's are
    // known here by the names this file does not define itself.
    let own_aliases = exported_aliases(&index.aliases);
    for (name, text) in opts.imported_types.into_iter().flatten() {
        index
            .aliases
            .entry(name.clone())
            .or_insert_with(|| text.clone());
    }
    // A `macro_rules!` body is walked like a function named `name!`: an
    // annotation above the definition covers every acquisition in it.
    for r in &rules {
        for body in &r.bodies {
            index.visit_block(body);
            index.fns.push(FnItem {
                name: format!("{}!", r.name),
                qualified: format!("{}!", r.name),
                self_ty: None,
                trait_name: None,
                span: r.span,
                first_line: r.line,
                params: Vec::new(),
                ret: None,
                returns_option: false,
                flag_only: false,
                returns_nothing: false,
                unit_layers: None,
                in_drop: false,
                body,
            });
        }
    }
    // The text shapes (SQL, Lua) whose packs' trigger words the file holds.
    let mut hit = packs.triggered_in_literals(&src.text);
    // Packs with a text shape that is a lock call itself: an effect's text
    // (an `UPDATE`) only matters beside a lock this file would see anyway.
    let mut lock_text = vec![false; packs.packs.len()];
    for &r in packs.text_only() {
        if !packs.api(r).role.is_context() {
            lock_text[r.pack] = true;
        }
    }
    // Only a file that spells such a shape's trigger word can offer its
    // text to others (a generated file of 100,000 constants spells none).
    let offers_text = hit.iter().zip(&lock_text).any(|(h, l)| *h && *l);
    // Text another file of the crate gives this one counts as the file's.
    for text in opts
        .imported_texts
        .into_iter()
        .flat_map(|m| m.values())
        .flatten()
    {
        for (h, t) in hit.iter_mut().zip(packs.triggered(text)) {
            *h |= t;
        }
    }
    let text_only: Vec<_> = packs
        .text_only()
        .iter()
        .copied()
        .filter(|r| hit[r.pack])
        .collect();
    // Macro bodies are read as expressions only when they could hold a
    // lock call: a name some pack matches, a function of this file or a
    // wrapper of another file, or a string a text shape could match.
    {
        let own: HashSet<String> = index.fns.iter().map(|f| f.name.clone()).collect();
        // Another file's wrapper is called by the name the file gives it
        // (a function) or by its own name (a method).
        let imported: HashSet<&str> = opts
            .imported
            .into_iter()
            .flatten()
            .flat_map(|(n, w)| [n.as_str(), w.name.as_str()])
            .collect();
        let worth = |name: &str| {
            packs.call_names.contains(name) || own.contains(name) || imported.contains(name)
        };
        index.parse_macros(&worth, !text_only.is_empty());
    }
    let cx = Cx::new(
        packs,
        src,
        opts.lock_name,
        opts.own_crate,
        &index,
        text_only,
        opts.imported_texts,
    );
    // The file is walked again (at most twice) when a walk learned what
    // crosses its functions: an unexecuted builder a function returns (its
    // callers judge the command where they run it), or strings functions
    // return and fields hold (SQL built in one method, kept in a field and
    // run in another), when the file could hold a text shape at all.
    let mut builders = HashMap::new();
    let mut known = KnownStrings::default();
    // Another file's wrapper is followed unless this file defines the same
    // function (a free function of that name, or that method of that type).
    let free_fns: HashSet<&str> = index
        .fns
        .iter()
        .filter(|f| f.self_ty.is_none())
        .map(|f| f.name.as_str())
        .collect();
    let imported: HashMap<String, Wrapper> = opts
        .imported
        .map(|m| {
            m.iter()
                .filter(|(n, w)| match &w.owner {
                    Some(o) if w.method => !cx.methods.contains(&(o.clone(), w.name.clone())),
                    _ => !free_fns.contains(n.as_str()),
                })
                .map(|(n, w)| (n.clone(), w.clone()))
                .collect()
        })
        .unwrap_or_default();
    let empty = CalledElsewhere::default();
    let called_elsewhere = opts.called_elsewhere.unwrap_or(&empty);
    let mut wrappers: HashMap<String, Wrapper> = imported.clone();
    let order = index.callee_first();
    let mut pass = 0;
    loop {
        let ((mut model, returned, learned, found), stale) = run(
            &cx,
            &index.fns,
            &order,
            &builders,
            &known,
            &wrappers,
            called_elsewhere,
        );
        pass += 1;
        // Walked callee first, a file's builders and wrappers are known
        // where they are called, unless the calls go round a cycle.
        let new_builders = builders.is_empty() && stale.builders;
        let new_strings =
            !cx.text_only.is_empty() && !learned.is_empty() && learns_text(&cx, &learned, &known);
        // Wrappers of this file that are called in it and were not known
        // where they are called.
        let new_wrappers = stale.wrappers;
        // Builders and texts settle in three walks; a chain of wrappers of
        // the file that calls itself round needs one walk a layer, up to
        // MAX_LOCAL_LAYERS.
        let more = (pass < 3 && (new_builders || new_strings || new_wrappers))
            || (pass < MAX_LOCAL_LAYERS && new_wrappers);
        if !more {
            let mut own: Vec<(String, Wrapper)> = found.into_iter().collect();
            own.sort_by(|a, b| a.0.cmp(&b.0));
            if offers_text {
                model.texts = exported_texts(&cx, &index, &learned, &lock_text);
            }
            model.wrappers = own;
            model.type_aliases = own_aliases;
            return model;
        }
        if new_builders {
            builders = returned;
        }
        known = learned;
        wrappers = imported.clone();
        wrappers.extend(found);
    }
}

/// The statement texts this file offers the other files of its crate: the
/// strings of each constant, static, function or struct field that hold a
/// trigger word of a lock text shape (`pg_advisory`, `GET_LOCK`,
/// `redis.call`), by name.
fn exported_texts(
    cx: &Cx,
    index: &Index,
    learned: &KnownStrings,
    lock_text: &[bool],
) -> Vec<(String, Vec<String>)> {
    let packs = cx.packs;
    let mut out = Vec::new();
    let mut total = 0;
    let mut offer = |name: &str, set: locals::SetId| {
        let joined = cx.strings.joined(set);
        if joined.len() > MAX_EXPORTED_TEXT || total + joined.len() > MAX_EXPORTED_TOTAL {
            return;
        }
        let hit = packs.triggered(&joined);
        if hit.iter().zip(lock_text).any(|(h, l)| *h && *l) {
            total += joined.len();
            out.push((name.to_string(), cx.strings.list(set)));
        }
    };
    let mut consts: Vec<&String> = index.consts.keys().collect();
    consts.sort();
    for name in consts {
        if let Some(set) = cx.const_strings(name) {
            offer(name, set);
        }
    }
    // A function offers text only when it returns text (`-> String`,
    // `-> &'static str`): one that runs the statement returns its reply.
    let returns_text: HashSet<&str> = index
        .fns
        .iter()
        .filter(|f| {
            f.ret
                .as_deref()
                .is_some_and(|t| t.contains("str") || t.contains("String"))
        })
        .map(|f| f.name.as_str())
        .collect();
    let mut fns: Vec<(&String, &locals::SetId)> = learned
        .returned
        .iter()
        .filter(|(n, _)| returns_text.contains(n.as_str()))
        .collect();
    fns.sort_by(|a, b| a.0.cmp(b.0));
    for (name, set) in fns {
        offer(name, *set);
    }
    // A field is offered as `Type.field` for each struct of this file that
    // has a field of that name (`LockSql { try_lock: format!(..) }` in
    // `LockSql::new`): another file reads it as `self.sql.try_lock`.
    let mut fields: Vec<(&String, &String)> = index
        .fields
        .keys()
        .filter(|(_, f)| learned.fields.contains_key(f))
        .map(|(t, f)| (t, f))
        .collect();
    fields.sort();
    for (ty, field) in fields {
        offer(&field_text_name(ty, field), learned.fields[field]);
    }
    out
}

/// Most type aliases one file offers its crate, and the longest type text.
const MAX_EXPORTED_ALIASES: usize = 256;
const MAX_ALIAS_TEXT: usize = 256;

/// The type aliases a file offers the other files of its crate, sorted.
fn exported_aliases(aliases: &HashMap<String, String>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = aliases
        .iter()
        .filter(|(_, t)| t.len() <= MAX_ALIAS_TEXT)
        .map(|(n, t)| (n.clone(), t.clone()))
        .collect();
    out.sort();
    out.truncate(MAX_EXPORTED_ALIASES);
    out
}

/// The name a struct field's text is offered under: `Type.field`, which no
/// constant or function can be called.
pub fn field_text_name(ty: &str, field: &str) -> String {
    format!("{ty}.{field}")
}

/// The type and field of a name made by [`field_text_name`].
pub fn field_text_parts(name: &str) -> Option<(&str, &str)> {
    name.split_once('.')
}

/// Most walks of one file to find the layers of its own wrapper chains
/// (each walk finds one more layer): deeper chains in one file are
/// followed this far.
const MAX_LOCAL_LAYERS: usize = 6;

/// Longest text one name may offer to other files.
const MAX_EXPORTED_TEXT: usize = 64 * 1024;

/// Most text one file may offer to other files, all names together.
const MAX_EXPORTED_TOTAL: usize = 256 * 1024;

/// Whether a walk learned strings that a text shape of this file could be
/// about: some function now returns, or some field now holds, a set of
/// strings it did not before, and that set has a trigger word of one of
/// the file's text shapes (`pg_advisory`, `redis.call`). Other strings
/// (table names, messages) cannot make a lock statement, so they are not
/// worth another walk of the file.
fn learns_text(cx: &Cx, learned: &KnownStrings, known: &KnownStrings) -> bool {
    let changed = |now: &HashMap<String, locals::SetId>,
                   before: &HashMap<String, locals::SetId>| {
        now.iter()
            .filter(|(k, v)| before.get(*k) != Some(*v))
            .map(|(_, v)| *v)
            .collect::<Vec<_>>()
    };
    let mut sets = changed(&learned.returned, &known.returned);
    sets.extend(changed(&learned.fields, &known.fields));
    // A text shape that needs a lock name may find it in a returned text
    // (a table name): that is worth a walk too.
    let named = cx
        .text_only
        .iter()
        .any(|r| cx.packs.api(*r).needs_lock_name);
    // A text is worth a walk when one of a text shape's patterns matches
    // it: a pack's trigger word alone is also in log lines and error
    // contexts (`"… deleted this project"` holds `delete`).
    sets.into_iter().any(|set| {
        let text = cx.strings.joined(set);
        cx.text_only.iter().any(|r| {
            cx.packs
                .api(*r)
                .matcher
                .text
                .iter()
                .any(|p| p.is_match(&text))
        }) || (named && is_lock_name(cx.lock_name, &text))
    })
}

/// The wrappers that are methods, by method name: `acquire` →
/// `RedisLock::acquire`, `PgLock::acquire`.
fn wrapper_methods(wrappers: &HashMap<String, Wrapper>) -> HashMap<String, Vec<String>> {
    let mut by_name: HashMap<String, Vec<String>> = HashMap::new();
    for (key, w) in wrappers.iter().filter(|(_, w)| w.method) {
        by_name.entry(w.name.clone()).or_default().push(key.clone());
    }
    for keys in by_name.values_mut() {
        keys.sort();
    }
    by_name
}

type Walked<'ast> = (
    FileModel,
    HashMap<String, Builder<'ast>>,
    KnownStrings,
    HashMap<String, Wrapper>,
);

/// What a walk found out too late: a function called a wrapper or a
/// builder of the file that was only known after it was walked (a cycle,
/// or a call the walk order did not see).
#[derive(Default)]
struct Stale {
    wrappers: bool,
    builders: bool,
}

/// The key a function would have as a wrapper ([`Wrapper::key`]).
fn wrapper_key(item: &FnItem) -> String {
    Wrapper::key_of(item.self_ty.as_deref().map(syntax::type_head), &item.name)
}

/// Walks `fns` in `order` (callee first, [`Index::callee_first`]): each
/// wrapper and builder a function turns out to be is known to the
/// functions walked after it, as the given `wrappers` and `returned` are
/// to all.
#[allow(clippy::too_many_arguments)]
fn run<'ast>(
    cx: &Cx<'_, 'ast>,
    fns: &[FnItem<'ast>],
    order: &[usize],
    returned: &HashMap<String, Builder<'ast>>,
    known: &KnownStrings,
    wrappers: &HashMap<String, Wrapper>,
    called_elsewhere: &CalledElsewhere,
) -> (Walked<'ast>, Stale) {
    #[cfg(test)]
    tests::WALKS.with(|w| w.set(w.get() + 1));
    let mut model = FileModel::default();
    let mut learned = KnownStrings::default();
    let mut called = HashSet::new();
    let mut held = HashSet::new();
    let mut found: HashMap<String, Option<Wrapper>> = HashMap::new();
    let mut dead = HashSet::new();
    // Events made only as a wrapper's inner call (a plain delete whose key
    // is a parameter, the command a function returns unexecuted): kept
    // once the wrapper is called, where its own defects are reported.
    let mut inner_only: HashSet<EventId> = HashSet::new();
    let mut returns = HashMap::new();
    // What the functions walked so far know: the given wrappers and
    // builders, and those found since, each from the position in the walk
    // after the function that is it.
    let mut live_wrappers = wrappers.clone();
    let mut live_methods = wrapper_methods(&live_wrappers);
    let mut live_builders = returned.clone();
    let mut wrapper_at: HashMap<String, usize> = HashMap::new();
    let mut builder_at: HashMap<String, usize> = HashMap::new();
    // A key two functions have is a wrapper only if one of them is: it is
    // known once the last of them is walked.
    let mut unwalked: HashMap<String, usize> = HashMap::new();
    for item in fns {
        *unwalked.entry(wrapper_key(item)).or_default() += 1;
    }
    for item in fns {
        model.fns.push(FnModel {
            name: item.name.clone(),
            qualified: item.qualified.clone(),
            span: item.full_span(cx.src),
            first_line: item.first_line,
            params: item.params.iter().map(|(n, _)| n.clone()).collect(),
            in_drop: item.in_drop,
            ..FnModel::default()
        });
    }
    let mut position = vec![0; fns.len()];
    for (at, &k) in order.iter().enumerate() {
        position[k] = at;
        let item = &fns[k];
        let f = FnId::of(k);
        let span = model.fns[f].span;
        let mut w = Walker {
            cx,
            model: &mut model,
            dead: &mut dead,
            f,
            fn_lockish: is_lock_name(cx.lock_name, &item.qualified),
            locals: LocalTable::default(),
            guards: Vec::new(),
            stmt_line: span.start.line,
            depth: 0,
            returned: &live_builders,
            returns: None,
            let_init: None,
            let_events: Vec::new(),
            known,
            fn_name: item.name.clone(),
            self_ty: item
                .self_ty
                .as_deref()
                .map(|t| syntax::type_head(t).to_string()),
            learned: &mut learned,
            wrappers: &live_wrappers,
            wrapper_methods: &live_methods,
            wrappers_called: &mut called,
            wrappers_held: &mut held,
            returned_exprs: Vec::new(),
            returned_events: Vec::new(),
            returned_guards: Vec::new(),
            params: item.params.iter().map(|(n, _)| n.clone()).collect(),
            provisional: Vec::new(),
            escaping: HashSet::new(),
        };
        w.body(&item.params, item.body);
        let mut wrapper = passed_on(&w, item);
        let provisional = std::mem::take(&mut w.provisional);
        inner_only.extend(provisional.iter().copied());
        w.dead.extend(provisional);
        // A function that returns an unexecuted lock command (`->
        // redis::Cmd`) hands it to callers in other files, who run it: a
        // wrapper to them, around the command as it would run. (Callers in
        // this file continue the builder itself.) The command is judged
        // here only for that: nothing of it is reported in the function.
        if wrapper.is_none() && item.ret.is_some() && item.self_ty.is_none() {
            if let Some(b) = &w.returns {
                let chain = chain::Chain {
                    root: b.builder.root.clone(),
                    root_expr: b.builder.root_expr,
                    segs: b.builder.segs.clone(),
                    inherited: 0,
                    resolved: false,
                    var: None,
                    built_by: None,
                };
                let made = w.classify(&chain, chain.root_expr, &result_use::Use::Value);
                wrapper = made
                    .iter()
                    .map(|&e| &w.model.events[e])
                    .find(|e| e.role.is_lock_outcome())
                    .map(|e| wrapper_of(e, &[e], item));
                inner_only.extend(made.iter().copied());
                w.dead.extend(made);
            }
        }
        if let Some(wr) = wrapper {
            // A function, or a method of one type, defined twice is
            // ambiguous: neither is followed. Methods of two types that
            // share a name are two wrappers (`RedisLock::acquire`,
            // `PgLock::acquire`).
            let key = wr.key();
            match found.get(&key) {
                None => {
                    found.insert(key, Some(wr));
                }
                Some(_) => {
                    found.insert(key, None);
                }
            }
        }
        if let Some(b) = w.returns.take() {
            // Only a function declared to return something hands a builder
            // back; the events its body made of it are its callers' now.
            if item.ret.is_some() && item.self_ty.is_none() {
                dead.extend(b.events.iter().copied());
                if !returned.contains_key(&item.name) {
                    live_builders.insert(item.name.clone(), b.builder.clone());
                    builder_at.insert(item.name.clone(), at);
                }
                returns.insert(item.name.clone(), b.builder);
            }
        }
        let key = wrapper_key(item);
        let left = unwalked.get_mut(&key).map(|n| {
            *n -= 1;
            *n
        });
        if left == Some(0) && !wrappers.contains_key(&key) {
            // Each layer of a chain of the file's own wrappers keeps the
            // layers below it: a call knows MAX_LOCAL_LAYERS of them, as
            // it would after as many walks (a generated chain of 20,000
            // functions costs no more).
            let shallow = |wr: &&Wrapper| wr.inner.layers.len() + 1 < MAX_LOCAL_LAYERS;
            if let Some(wr) = found.get(&key).and_then(Option::as_ref).filter(shallow) {
                if wr.method {
                    let keys = live_methods.entry(wr.name.clone()).or_default();
                    keys.push(key.clone());
                    keys.sort();
                }
                live_wrappers.insert(key.clone(), wr.clone());
                wrapper_at.insert(key, at);
            }
        }
    }
    // A function that calls a wrapper or builder found at or after its own
    // place in the walk did not know it.
    let mut last_wrapper: HashMap<&str, usize> = HashMap::new();
    for (key, &at) in &wrapper_at {
        let last = last_wrapper
            .entry(live_wrappers[key].name.as_str())
            .or_default();
        *last = (*last).max(at);
    }
    let mut stale = Stale::default();
    for (k, f) in model.fns.iter().enumerate() {
        let late = |at: Option<&usize>| at.is_some_and(|&at| at >= position[k]);
        for c in &f.calls {
            stale.builders |= !c.method && late(builder_at.get(&c.name));
            stale.wrappers |= late(last_wrapper.get(c.name.as_str()));
        }
    }
    // The wrappers of this file whose inner calls are relayed: this
    // walk's view of each first (it knows every wrapper the body calls, a
    // recursive call among them).
    let mut keys: Vec<&String> = found
        .iter()
        .filter(|(_, w)| w.is_some())
        .map(|(k, _)| k)
        .chain(wrappers.iter().filter(|(_, w)| !w.imported).map(|(k, _)| k))
        .collect();
    keys.sort();
    keys.dedup();
    let keys: Vec<(String, Wrapper)> = keys
        .into_iter()
        .filter_map(|key| {
            let w = found
                .get(key)
                .and_then(Option::as_ref)
                .or_else(|| wrappers.get(key).filter(|w| !w.imported))?;
            Some((key.clone(), w.clone()))
        })
        .collect();
    let unrelayed = Unrelayed {
        model: Box::default(),
        keys,
        called,
        held,
        inner_only,
        dead,
    };
    let model = if unrelayed.keys.is_empty() {
        relay(model, &unrelayed, called_elsewhere)
    } else {
        let before = Box::new(model.clone());
        let mut relayed = relay(model, &unrelayed, called_elsewhere);
        relayed.unrelayed = Some(std::sync::Arc::new(Unrelayed {
            model: before,
            ..unrelayed
        }));
        relayed
    };
    let found = found
        .into_iter()
        .filter_map(|(n, w)| w.map(|w| (n, w)))
        .collect();
    ((model, returns, learned, found), stale)
}

/// A file's model before the inner calls of its wrappers are relayed,
/// with what relaying them needs.
#[derive(Debug, Clone, Default)]
pub struct Unrelayed {
    model: Box<FileModel>,
    /// The file's wrappers, by key.
    keys: Vec<(String, Wrapper)>,
    /// The wrappers the file calls itself.
    called: HashSet<String>,
    /// Those of them a call holds the outcome of.
    held: HashSet<String>,
    /// Events made only as a wrapper's inner call.
    inner_only: HashSet<EventId>,
    /// Events the walk found dead.
    dead: HashSet<EventId>,
}

/// The calls a wrapper of this file hands back know it. When it is called
/// (in this file, or, per `called_elsewhere`, in another file of the
/// crate) they are relayed: their own defects are reported here, what is
/// done with their outcome where the wrapper is called. A wrapper whose
/// every call lets the outcome escape into a closure or future (in this
/// file and in the others) has its lock call judged for that outcome too
/// ([`Event::outcome_escapes`]).
fn relay(mut model: FileModel, u: &Unrelayed, elsewhere: &CalledElsewhere) -> FileModel {
    let called_elsewhere = &elsewhere.called;
    let mut dead = u.dead.clone();
    let mut handed: Vec<(EventId, String, bool)> = Vec::new();
    for (key, w) in &u.keys {
        let is_called = u.called.contains(key) || called_elsewhere.contains(key);
        for f in model.fns.iter().filter(|f| &f.qualified == key) {
            for &e in &f.events {
                let ev = &model.events[e];
                let at = ev.span.start.offset;
                if at == w.inner.span.start.offset || w.handed_back.contains(&at) {
                    handed.push((e, key.clone(), is_called));
                    continue;
                }
                // The same call seen inside the one handed back (a statement
                // built in the argument of the call that runs it) is that
                // call: one site.
                let inside = ev.api == w.inner.api
                    && at >= w.inner.span.start.offset
                    && ev.span.end.offset <= w.inner.span.end.offset;
                if inside && is_called {
                    dead.insert(e);
                }
            }
        }
    }
    for (e, key, is_called) in handed {
        if !is_called && u.inner_only.contains(&e) {
            continue;
        }
        if is_called && u.inner_only.contains(&e) {
            dead.remove(&e);
        }
        let ev = &mut model.events[e];
        ev.outcome_escapes = is_called && !u.held.contains(&key) && !elsewhere.held.contains(&key);
        ev.handed_by = Some(key);
        ev.relayed = is_called;
    }
    outer_duplicates(&model, &mut dead);
    remove_dead(&mut model, &dead);
    model.wrappers_called = u.called.iter().cloned().collect();
    model.wrappers_called.sort();
    model.wrappers_held = u.held.iter().cloned().collect();
    model.wrappers_held.sort();
    for f in &mut model.fns {
        f.events.sort_by_key(|&i| model.events[i].span.start.offset);
    }
    model
}

/// The model of a file that defines wrappers, relayed again knowing which
/// of them other files of the crate call: the walk is not redone. `None`
/// for a file that defines none.
pub fn relayed_again(model: &FileModel, called_elsewhere: &CalledElsewhere) -> Option<FileModel> {
    let u = model.unrelayed.as_deref()?;
    let mut again = relay((*u.model).clone(), u, called_elsewhere);
    again.wrappers = model.wrappers.clone();
    again.texts = model.texts.clone();
    again.type_aliases = model.type_aliases.clone();
    again.too_deep = model.too_deep;
    again.unrelayed = model.unrelayed.clone();
    Some(again)
}

/// The lock call whose outcome a function hands back, if any: a take,
/// release, delete, renewal or read (the owner a `get_key` helper returns,
/// compared by its caller) that is (part of) its returned value, or whose bound
/// result it returns (`let won = con.set_nx(..)?; Ok(won)`).
fn passed_on(w: &Walker, item: &FnItem) -> Option<Wrapper> {
    use crate::pack::Role;
    if item.returns_nothing {
        return None;
    }
    let f = &w.model.fns[w.f];
    // What the returned values mention, gathered only when a lock call's
    // result was bound to a name (most functions have none).
    let bound = f
        .events
        .iter()
        .any(|&i| !w.model.events[i].binding.is_empty());
    let returned_mentions: BTreeSet<String> = if bound {
        w.returned_exprs
            .iter()
            .flat_map(|e| syntax::mentions(e))
            .collect()
    } else {
        BTreeSet::new()
    };
    // The names a bound result flows into through later `let`s (`let row =
    // reply.map(..)?; Ok(row)` hands the reply back).
    let derived = |e: &Event| -> HashSet<String> {
        let mut names: HashSet<String> = e.binding.iter().cloned().collect();
        if names.is_empty() {
            return names;
        }
        for l in f.lets.iter().filter(|l| l.offset > e.span.start.offset) {
            if l.mentions.iter().any(|m| names.contains(m)) {
                names.extend(l.names.iter().cloned());
            }
        }
        names
    };
    // A returned value that holds the call (`match lock(..) { Ok(l) =>
    // Some(l), Err(_) => None }` as the tail).
    let spans: Vec<crate::source::Span> = w
        .returned_exprs
        .iter()
        .map(|r| syntax::expr_span(w.cx.src, r))
        .collect();
    let inside_returned = |e: &Event| spans.iter().any(|s| s.contains(&e.span));
    // A "not won" value returned under a condition on the outcome (`if
    // won.is_none() { return Ok(None); } … Ok(Some(Lock { .. }))`): which
    // value comes back says whether the lock was won. Only in a function
    // that can hand back "nothing" (`-> Option<Lock>`, `-> Result<Option<
    // Guard>, _>`): one returning `false` early and `true` after its own
    // work consumed the lock itself. The conditions, gathered once.
    let mut not_won_guards: Vec<GuardId> = if item.returns_option {
        w.returned_exprs
            .iter()
            .zip(&w.returned_guards)
            .filter(|(r, _)| syntax::says_not_won(r))
            .flat_map(|(_, gs)| gs.iter().copied())
            .collect()
    } else {
        Vec::new()
    };
    not_won_guards.sort_unstable();
    not_won_guards.dedup();
    let decides_return = |e: &Event, names: &HashSet<String>| {
        matches!(e.role, Role::Acquire | Role::TryAcquire)
            && not_won_guards.iter().any(|&g| {
                let guard = &f.guards[g];
                guard.events.contains(&e.id) || names.iter().any(|b| guard.mentions.contains(b))
            })
    };
    // What a returned value starts on another task (`tokio::spawn(async
    // move { .. })`) is consumed there: the handle hands back no outcome.
    let spawned: Vec<crate::source::Span> = w
        .returned_exprs
        .iter()
        .flat_map(|r| syntax::spawned_spans(w.cx.src, r))
        .collect();
    let in_spawned = |e: &Event| spawned.iter().any(|s| s.contains(&e.span));
    let handed: Vec<&Event> = f
        .events
        .iter()
        .map(|&i| &w.model.events[i])
        .filter(|e| !in_spawned(e))
        .filter(|e| {
            if !(e.role.is_lock_outcome() || e.role == Role::Read) {
                return false;
            }
            if w.returned_events.contains(&e.id) || inside_returned(e) {
                return true;
            }
            let names = derived(e);
            names.iter().any(|b| returned_mentions.contains(b)) || decides_return(e, &names)
        })
        .collect();
    let handed = with_take_read_back(w, f, handed);
    let e = *handed.first()?;
    Some(wrapper_of(e, &handed, item))
}

/// A function that takes a lock, lets the reply go and hands back a read
/// of the key it just took (a MySQL lease upsert, then `SELECT holder ..
/// WHERE service = ?` returned, as MySQL has no `RETURNING`): the read
/// says whether the take won, so the take is what it hands back, first.
fn with_take_read_back<'m>(
    w: &'m Walker,
    f: &crate::model::FnModel,
    mut handed: Vec<&'m Event>,
) -> Vec<&'m Event> {
    use crate::pack::Role;
    let is_take = |e: &Event| matches!(e.role, Role::Acquire | Role::TryAcquire);
    if handed.iter().any(|e| is_take(e)) {
        return handed;
    }
    let Some(read) = handed.iter().find(|e| e.role == Role::Read) else {
        return handed;
    };
    let Some(key) = read.key.as_ref() else {
        return handed;
    };
    let packs = w.cx.packs;
    let take = f.events.iter().map(|&i| &w.model.events[i]).rfind(|t| {
        is_take(t)
            && !t.through_wrapper()
            && t.span.end.offset <= read.span.start.offset
            && t.key.as_ref().is_some_and(|k| k.norm == key.norm)
            && packs.pack(t.api).backend == packs.pack(read.api).backend
            && matches!(
                t.result,
                ResultUse::Propagated | ResultUse::Discarded { .. }
            )
    });
    if let Some(t) = take {
        handed.insert(0, t);
    }
    handed
}

/// The wrapper `item` is, around the call `e` (and the others whose
/// outcome it also hands back).
fn wrapper_of(e: &Event, handed: &[&Event], item: &FnItem) -> Wrapper {
    let (key_param, key_field) = e
        .key
        .as_ref()
        .map_or((None, None), |k| value_source(&k.norm, item, true));
    // The owner value only as a whole: one built from a parameter
    // (`format!("{host}-{pid}")`) is no constant for a constant argument.
    let (owner_param, owner_field) = e
        .owner
        .as_ref()
        .filter(|o| o.constant.is_none())
        .map_or((None, None), |o| value_source(&o.norm, item, false));
    let mut w = Wrapper {
        name: item.name.clone(),
        inner: e.clone(),
        handed_back: handed.iter().map(|e| e.span.start.offset).collect(),
        key_param,
        key_field,
        owner_param,
        owner_field,
        fn_line: item.first_line,
        method: item.self_ty.is_some(),
        has_self: item.params.first().is_some_and(|(p, _)| p == "self"),
        unit_layers: item.unit_layers,
        owner: item
            .self_ty
            .as_deref()
            .map(|t| syntax::type_head(t).to_string()),
        imported: false,
        module: None,
        flag_only: item.flag_only,
        via_trait: item.trait_name.clone(),
        targets: Vec::new(),
        file: None,
        purpose: None,
    };
    // A wrapper of a wrapper reaches the lock calls its inner call
    // reaches; any other reaches its own.
    w.targets = if e.through_wrapper() {
        e.targets.clone()
    } else {
        vec![Origin {
            file: None,
            key: w.key(),
        }]
    };
    w
}

/// Where a value the inner call uses (its key, its owner value) comes
/// from in the wrapper: a field of `self` (`self.key`: at a call site, that
/// field of the receiver), else the parameter it is, or the only one it is
/// built from (`self.key(name)`, `format!("lock:{job}")`) when `built`:
/// at a call site, the argument given for it.
fn value_source(norm: &str, item: &FnItem, built: bool) -> (Option<usize>, Option<String>) {
    let field = norm
        .strip_prefix("self.")
        .filter(|f| !f.is_empty() && f.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .filter(|_| item.self_ty.is_some())
        .map(str::to_string);
    if let Some(i) = item.params.iter().position(|(p, _)| p == norm) {
        return (Some(i), field);
    }
    if field.is_some() || !built {
        return (None, field);
    }
    let words: HashSet<&str> = norm
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .collect();
    let mut built_from = item
        .params
        .iter()
        .enumerate()
        .filter(|(_, (p, _))| p != "self" && !p.is_empty() && words.contains(p.as_str()));
    match (built_from.next(), built_from.next()) {
        (Some((i, _)), None) => (Some(i), None),
        _ => (None, None),
    }
}

/// One site, one event: when the same API matches an expression and one
/// that contains or consumes it (a SQL text bound to a local, then
/// converted, then prepared), the innermost is the call; the others are
/// dropped.
fn outer_duplicates(model: &FileModel, dead: &mut HashSet<EventId>) {
    let mut by_api: std::collections::BTreeMap<(FnId, usize, usize), Vec<EventId>> =
        Default::default();
    for e in &model.events {
        if !dead.contains(&e.id) {
            by_api
                .entry((e.func, e.api.pack, e.api.api))
                .or_default()
                .push(e.id);
        }
    }
    for ids in by_api.values_mut().filter(|v| v.len() > 1) {
        let span = |i: EventId| model.events[i].span;
        ids.sort_by_key(|&i| (span(i).start.offset, std::cmp::Reverse(span(i).end.offset)));
        let mut open: Vec<EventId> = Vec::new();
        for &i in ids.iter() {
            while open
                .last()
                .is_some_and(|&o| span(o).end.offset <= span(i).start.offset)
            {
                open.pop();
            }
            if let Some(&o) = open.last() {
                if span(o).end.offset >= span(i).end.offset {
                    dead.insert(o);
                }
            }
            open.push(i);
        }
    }
}

/// Drops events replaced by a fuller view of the same builder, renumbering
/// the rest.
fn remove_dead(model: &mut FileModel, dead: &HashSet<EventId>) {
    if dead.is_empty() {
        return;
    }
    let mut remap: Vec<Option<EventId>> = vec![None; model.events.len()];
    let mut events = Vec::new();
    for e in model.events.drain(..) {
        if !dead.contains(&e.id) {
            remap[e.id.index()] = Some(EventId::of(events.len()));
            events.push(e);
        }
    }
    for (i, e) in events.iter_mut().enumerate() {
        e.id = EventId::of(i);
    }
    model.events = events;
    let keep = |ids: &mut Vec<EventId>| {
        *ids = ids.iter().filter_map(|&i| remap[i.index()]).collect();
    };
    for f in &mut model.fns {
        keep(&mut f.events);
        for g in &mut f.guards {
            keep(&mut g.events);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::{extract, Options};
    use crate::config::Settings;
    use crate::model::FileModel;
    use crate::pack::{PackSet, Role};
    use crate::source::SourceFile;

    thread_local! {
        /// Walks of a file's functions on this thread.
        pub(super) static WALKS: Cell<usize> = const { Cell::new(0) };
    }

    /// The model of `text`, and how many walks it took.
    fn walked(text: &str) -> (FileModel, usize) {
        let packs = PackSet::builtin();
        let settings = Settings::default();
        let file = syn::parse_file(text).unwrap();
        let src = SourceFile::new("src/locks.rs", text);
        WALKS.with(|w| w.set(0));
        let model = extract(&file, &src, &packs, &Options::new(&settings.lock_name));
        (model, WALKS.with(Cell::get))
    }

    fn wrappers(model: &FileModel) -> Vec<&str> {
        model.wrappers.iter().map(|(k, _)| k.as_str()).collect()
    }

    /// The function `poll` holds a lock call: a wrapper's call, or the
    /// command a builder hands it.
    fn assert_poll_takes(model: &FileModel) {
        let poll = model.find_fn("poll").expect("poll");
        assert!(
            model.fn_events(poll).any(|e| e.role == Role::TryAcquire),
            "{:?}",
            model.events
        );
    }

    const TAKE: &str = "redis::cmd(\"SET\").arg(key).arg(\"me\").arg(\"NX\").arg(\"PX\").arg(ttl)\n        .query_async::<Option<String>>(con).await.map(|r| r.is_some()).unwrap_or(false)";

    /// A chain of the file's own wrappers, written callers first, is
    /// known layer by layer in one walk: each function is walked after
    /// the ones it calls.
    #[test]
    fn a_chain_of_wrappers_is_settled_in_one_walk() {
        let text = format!(
            "type C = redis::aio::MultiplexedConnection;\n\
             pub async fn poll(con: &mut C) {{ if run_once(con).await {{ work(); }} }}\n\
             async fn run_once(con: &mut C) -> bool {{ acquire_default(con, \"jobs\").await }}\n\
             async fn acquire_default(con: &mut C, key: &str) -> bool {{ acquire(con, key, 30_000).await }}\n\
             async fn acquire(con: &mut C, key: &str, ttl: u64) -> bool {{ try_acquire(con, key, ttl).await }}\n\
             async fn try_acquire(con: &mut C, key: &str, ttl: u64) -> bool {{\n    {TAKE}\n}}\n\
             fn work() {{}}\n"
        );
        let (model, walks) = walked(&text);
        assert_eq!(
            wrappers(&model),
            ["acquire", "acquire_default", "run_once", "try_acquire"]
        );
        assert_eq!(walks, 1);
        // The outermost call is a lock site of `poll`.
        assert_poll_takes(&model);
    }

    /// Methods of the file's own type, called through `self` and written
    /// callers first, are ordered the same way: one walk.
    #[test]
    fn a_chain_of_methods_is_settled_in_one_walk() {
        let text = format!(
            "pub struct RedisLock {{ con: redis::aio::MultiplexedConnection }}\n\
             impl RedisLock {{\n\
                 pub async fn poll(&mut self) {{ if self.run_once().await {{}} }}\n\
                 async fn run_once(&mut self) -> bool {{ self.acquire(\"jobs\", 30_000).await }}\n\
                 async fn acquire(&mut self, key: &str, ttl: u64) -> bool {{ Self::try_acquire(&mut self.con, key, ttl).await }}\n\
                 async fn try_acquire(con: &mut redis::aio::MultiplexedConnection, key: &str, ttl: u64) -> bool {{\n    {TAKE}\n}}\n\
             }}\n"
        );
        let (model, walks) = walked(&text);
        assert_eq!(
            wrappers(&model),
            [
                "RedisLock::acquire",
                "RedisLock::run_once",
                "RedisLock::try_acquire"
            ]
        );
        assert_eq!(walks, 1);
        assert_poll_takes(&model);
    }

    /// A generated chain of wrappers is followed MAX_LOCAL_LAYERS layers
    /// deep, as many walks followed it: each layer keeps the ones below,
    /// so 40 layers (or 20,000) cost no more.
    #[test]
    fn a_long_chain_of_wrappers_is_followed_a_bounded_depth() {
        let mut text = String::from("type C = redis::aio::MultiplexedConnection;\n");
        for i in 0..40 {
            text.push_str(&format!(
                "async fn f{i}(con: &mut C, key: &str, ttl: u64) -> bool {{ f{}(con, key, ttl).await }}\n",
                i + 1
            ));
        }
        text.push_str(&format!(
            "async fn f40(con: &mut C, key: &str, ttl: u64) -> bool {{\n    {TAKE}\n}}\n"
        ));
        let (model, walks) = walked(&text);
        assert_eq!(walks, 1);
        assert_eq!(model.wrappers.len(), super::MAX_LOCAL_LAYERS);
        assert!(model
            .events
            .iter()
            .all(|e| e.layers.len() < super::MAX_LOCAL_LAYERS));
    }

    /// Wrappers that call each other round a cycle are still found: the
    /// file is walked again knowing what the first walk found late.
    #[test]
    fn wrappers_round_a_cycle_are_found_by_another_walk() {
        let text = format!(
            "type C = redis::aio::MultiplexedConnection;\n\
             async fn take(con: &mut C, key: &str, ttl: u64, again: bool) -> bool {{\n\
                 if again {{ return take_again(con, key, ttl).await; }}\n    {TAKE}\n}}\n\
             async fn take_again(con: &mut C, key: &str, ttl: u64) -> bool {{ take(con, key, ttl, false).await }}\n\
             pub async fn poll(con: &mut C) {{ if take_again(con, \"jobs\", 30_000).await {{}} }}\n"
        );
        let (model, walks) = walked(&text);
        assert_eq!(wrappers(&model), ["take", "take_again"]);
        assert!(walks > 1, "{walks}");
        assert_poll_takes(&model);
    }

    /// An unexecuted command a function returns is continued where a
    /// caller written above it runs it, in the same walk.
    #[test]
    fn a_builder_below_its_caller_is_known_in_one_walk() {
        let text = "pub fn poll(con: &mut redis::Connection) -> bool {\n\
                    \x20   lock_cmd(\"jobs\").query::<Option<String>>(con).map(|r| r.is_some()).unwrap_or(false)\n\
                    }\n\
                    fn lock_cmd(key: &str) -> redis::Cmd {\n\
                    \x20   let mut c = redis::cmd(\"SET\");\n\
                    \x20   c.arg(key).arg(\"me\").arg(\"NX\").arg(\"PX\").arg(30_000);\n\
                    \x20   c\n\
                    }\n";
        let (model, walks) = walked(text);
        assert_eq!(walks, 1);
        assert_poll_takes(&model);
    }
}
