//! Matching a chain against the packs: candidate anchors, one view per
//! anchor, the first matching API of each, and the event made of it.

use std::collections::BTreeSet;

use syn::spanned::Spanned;
use syn::Expr;

use super::super::event::*;
use super::super::keys;
use super::super::lockname::is_lock_name;
use super::chain::{is_cmd_new, Anchor, Chain, Root, SegKind};
use super::locals::{strings_of, SetId};
use super::result_use::{result_use, Use};
use super::syntax::{mentions, start_span, str_lit};
use super::view::{Need, View};
use super::walk::Walker;
use crate::pack::{ApiRef, Role};
use crate::source::Span;

impl<'a, 'c, 'ast> Walker<'a, 'c, 'ast> {
    /// An owner value as the event keeps it, with its value when that is a
    /// constant: written as a literal, or named through a local or a
    /// `const`/`static` bound to one (a few steps at most).
    pub(super) fn owner_value(&self, e: &Expr) -> Owner {
        let span = self.cx.src.span_of(e.span());
        Owner {
            norm: keys::normalise(e),
            text: self.cx.src.snippet(&span).to_string(),
            span,
            constant: self.constant_of(e, 4),
        }
    }

    fn constant_of(&self, e: &Expr, depth: usize) -> Option<String> {
        if let Some(c) = keys::constant(e) {
            return Some(c);
        }
        let Expr::Path(p) = keys::strip(e) else {
            return None;
        };
        let depth = depth.checked_sub(1)?;
        let name = p.path.segments.last()?.ident.to_string();
        if p.path.segments.len() == 1 {
            if let Some(b) = self.locals.get(&name) {
                // A parameter or a destructured part holds no known value.
                return b.init.and_then(|init| self.constant_of(init, depth));
            }
        }
        self.cx
            .consts
            .get(&name)
            .and_then(|init| self.constant_of(init, depth))
    }

    /// Every string the chain carries: its root variable's (a local or a
    /// constant), its root call's and every method's arguments. SQL and Lua
    /// are usually given to the root (`query(SQL)`) and run by a later
    /// method, so text shapes read the whole chain.
    fn chain_texts(&self, chain: &Chain<'ast>) -> SetId {
        let strings = &self.cx.strings;
        let mut parts = Vec::new();
        match &chain.root {
            Root::Path(p) => {
                if let Some(b) = self.locals.get(p) {
                    parts.push(b.strings);
                } else if let Some(s) = self.cx.const_strings(p.rsplit("::").next().unwrap_or(p)) {
                    parts.push(s);
                }
            }
            Root::Call { args, .. } | Root::Macro { args, .. } => {
                for a in args {
                    parts.push(strings_of(a, strings, self));
                }
            }
            Root::Other => {}
        }
        for s in &chain.segs {
            for a in s.args() {
                parts.push(strings_of(a, strings, self));
            }
        }
        strings.union(&parts)
    }

    /// The declared type of a receiver: a local's or parameter's (`self`
    /// is its impl's type), or a struct field's.
    pub(super) fn declared_type(&self, receiver: &Expr) -> Option<String> {
        match keys::strip(receiver) {
            Expr::Path(p) => p
                .path
                .get_ident()
                .and_then(|id| self.locals.get(&id.to_string()))
                .and_then(|b| b.ty.clone()),
            Expr::Field(f) => self.field_type(f),
            _ => None,
        }
    }

    /// The head of the declared type of the receiver of the method at
    /// segment `i` (`HashMap` for `self.held` of `held: HashMap<..>`), when
    /// a local's or a field's declaration says it.
    fn receiver_head(&self, chain: &Chain<'ast>, i: usize) -> Option<String> {
        if i == chain.inherited && chain.resolved {
            if let Some(b) = chain.var.as_ref().and_then(|v| self.locals.get(v)) {
                return b
                    .ty
                    .as_deref()
                    .map(|t| super::syntax::type_head(t).to_string());
            }
        }
        self.declared_type(chain.receiver(i))
            .map(|t| super::syntax::type_head(&t).to_string())
    }

    /// Classifies a chain; returns the ids of the events it made.
    pub(super) fn classify(
        &mut self,
        chain: &Chain<'ast>,
        top: &'ast Expr,
        use_: &Use,
    ) -> Vec<EventId> {
        let packs = self.cx.packs;
        let n = chain.segs.len();
        // Candidate anchors, with whether each starts a command (a new
        // command in a pipeline ends the window of the one before it).
        let mut anchors: Vec<(Anchor, Vec<ApiRef>, bool)> = Vec::new();
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
                    anchors.push((Anchor::Root, cands, false));
                }
            }
            Root::Macro { name, .. } => {
                let cands = packs.by_macro(name);
                if !cands.is_empty() {
                    anchors.push((Anchor::Root, cands.to_vec(), false));
                }
            }
            _ => {}
        }
        for (i, s) in chain.segs.iter().enumerate() {
            if let SegKind::Method { name, args, .. } = &s.kind {
                let mut cands: Vec<ApiRef> = packs.by_method(name).to_vec();
                let mut command = false;
                // `pipe().cmd("SET")` and `Cmd::new().arg("SET")`.
                if name == "cmd" || (name == "arg" && is_cmd_new(chain, i)) {
                    if let Some(word) = args.first().and_then(|a| str_lit(a)) {
                        cands.extend_from_slice(packs.by_command(&word.to_uppercase()));
                        command = true;
                    }
                }
                // A method of a type the file defines is that type's, in a
                // lock crate's own source too: its layers (`acquire` calling
                // `try_acquire`) are its own functions, and the lock is
                // where one of them calls the backend.
                // A method of a standard collection (`held.get(key)` on a
                // `HashMap`) is never a lock client's either, whatever crate
                // the file imports or is.
                if !cands.is_empty() && !command {
                    let head = self.receiver_head(chain, i);
                    if head.as_ref().is_some_and(|h| {
                        self.cx.methods.contains(&(h.clone(), name.clone()))
                            || super::syntax::is_collection(h)
                    }) {
                        continue;
                    }
                }
                // A setter of a builder the chain goes on to `.build()`
                // (`DLock::builder().name(..).retry(d).build()`) configures
                // the lock; it takes nothing.
                if !cands.is_empty() && !command && builds_later(chain, i) {
                    continue;
                }
                if !cands.is_empty() {
                    anchors.push((Anchor::Seg(i), cands, command));
                }
            }
        }
        if anchors.is_empty() && self.cx.text_only.is_empty() {
            return self.wrapper_call(chain, top, use_);
        }
        let texts = std::cell::OnceCell::new();
        let texts_of = |w: &Self| *texts.get_or_init(|| w.chain_texts(chain));
        // (anchor, api, window end). Anchored shapes (a method, function,
        // macro or command) first, right to left, so each anchor's window
        // ends where the next matched anchor (or command) begins.
        let mut matched: Vec<(Anchor, ApiRef, usize)> = Vec::new();
        let mut end = n;
        for (anchor, cands, command) in anchors.iter().rev() {
            let need = Need::of(packs, cands);
            let t = if need.texts {
                texts_of(self)
            } else {
                SetId::EMPTY
            };
            let view = View::new(self, chain, *anchor, end, t, need);
            if let Some(api) = self.first_match(cands, &view) {
                matched.push((*anchor, api, end));
                end = anchor.from();
            } else if *command {
                end = anchor.from();
            }
        }
        // A script or SQL statement says more than the generic method that
        // runs it (`execute`, `invoke`): text shapes win over effects.
        let only_effects = matched
            .iter()
            .all(|(_, r, _)| matches!(packs.api(*r).role, Role::Effect | Role::FencedEffect));
        if only_effects && !self.cx.text_only.is_empty() {
            let t = texts_of(self);
            if !self.cx.strings.is_empty(t) {
                let need = Need::of(packs, &self.cx.text_only);
                let view = View::new(self, chain, Anchor::Root, n, t, need);
                if let Some(api) = self.first_match(&self.cx.text_only, &view) {
                    matched.clear();
                    matched.push((Anchor::Root, api, n));
                }
            }
        }
        if matched.is_empty() {
            return self.wrapper_call(chain, top, use_);
        }
        // The builder a local held is judged here, where it runs: the view
        // taken where it was bound is replaced (a bare call, such as
        // `let q = sqlx::query(SQL)` or `let s = Script::new(LUA)`, is a
        // builder of no segments).
        if chain.resolved && chain.var.is_some() {
            if let Some(b) = chain.var.as_ref().and_then(|v| self.locals.get_mut(v)) {
                let old = std::mem::take(&mut b.builder_events);
                self.dead.extend(old);
            }
        }
        matched.reverse();
        let t = texts_of(self);
        let facts = self.chain_facts(chain, top);
        let mut ids = Vec::new();
        for (anchor, api, end) in matched {
            let view = View::new(self, chain, anchor, end, t, Need::ALL);
            let event = self.event(chain, &facts, &view, api, top, use_);
            let id = EventId::of(self.model.events.len());
            // Matched only because the key is a parameter: a candidate
            // wrapper's inner call, never a site of its own.
            if packs.api(api).needs_lock_name && !self.lockish(&view, packs.api(api), &[]) {
                self.provisional.push(id);
            }
            self.model.events.push(Event { id, ..event });
            self.model.fns[self.f].events.push(id);
            ids.push(id);
        }
        ids
    }

    /// The first candidate that matches, skipping shapes that need a lock
    /// name when this call's key, binding and function have none.
    fn first_match(&self, cands: &[ApiRef], view: &View) -> Option<ApiRef> {
        let packs = self.cx.packs;
        cands.iter().copied().find(|&r| {
            let api = packs.api(r);
            view.matches(api, packs.pack(r))
                && (!api.needs_lock_name
                    || self.lockish(view, api, &[])
                    || self.key_from_param(view, api))
                && !(matches!(api.role, Role::Acquire | Role::TryAcquire)
                    && self.fresh_random_key(view, api)
                    && !self.lockish(view, api, &[]))
        })
    }

    /// The call's key is drawn at random right here (`let sid =
    /// Uuid::new_v4().to_string()`, or the same inline): no other process
    /// can ask for that key, so nothing contends for it. Writing it once
    /// (`SET sid data NX EX 3600`) creates a unique record, a session or an
    /// idempotency id, not a lock, unless a lock name says otherwise.
    fn fresh_random_key(&self, view: &View, api: &crate::pack::Api) -> bool {
        use std::sync::OnceLock;
        static RANDOM: OnceLock<regex::Regex> = OnceLock::new();
        let random = RANDOM.get_or_init(|| {
            regex::Regex::new(
                r"(?i)\b(?:new_v4|new_v7|Ulid::new|nanoid|random|thread_rng|rng|OsRng|gen_range|random_(?:string|id|key|token)|gen_(?:random|id)|generate_(?:id|session_id|session_key|token))\b",
            )
            .expect("a valid regex")
        });
        let Some(k) = view.key(api) else {
            return false;
        };
        let init_of = |name: &str| {
            self.locals
                .get(name)
                .and_then(|b| b.init)
                .map(keys::normalise)
        };
        let text = init_of(&k.norm).unwrap_or_else(|| k.norm.clone());
        // The key itself, or a local it is built from (`format!("req:{id}")`
        // after `let id: u64 = rand::random()`), one step back.
        random.is_match(&text)
            || text
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty() && *w != k.norm)
                .any(|w| init_of(w).is_some_and(|i| random.is_match(&i)))
    }

    /// The call's key is a parameter of this function (`fn delete_key(con,
    /// key) { con.del(key) }`): whether it names a lock is for the callers
    /// to say, if the function turns out to hand the outcome back.
    fn key_from_param(&self, view: &View, api: &crate::pack::Api) -> bool {
        // A parameter declared a number or a flag (`idx: usize` of
        // `args.get(idx)`) is an index, never a key a caller names a lock by.
        view.key(api).is_some_and(|k| {
            self.params.contains(&k.norm)
                && !self
                    .locals
                    .get(&k.norm)
                    .and_then(|b| b.ty.as_deref())
                    .is_some_and(super::syntax::is_scalar)
        })
    }

    pub(super) fn lockish(&self, view: &View, api: &crate::pack::Api, binding: &[String]) -> bool {
        let key = view.key(api);
        let key_lockish = key.as_ref().is_some_and(|k| {
            is_lock_name(self.cx.lock_name, &k.norm)
                || k.literal
                    .as_ref()
                    .is_some_and(|l| is_lock_name(self.cx.lock_name, l))
                || self
                    .locals
                    .get(&k.norm)
                    .and_then(|b| b.init)
                    .is_some_and(|init| is_lock_name(self.cx.lock_name, &keys::normalise(init)))
        });
        // A statement matched by its text names its lock in that text
        // (`INSERT INTO moderation_locks …`).
        let text_lockish = || {
            !api.matcher.text.is_empty()
                && !self.cx.strings.is_empty(view.texts)
                && is_lock_name(self.cx.lock_name, &self.cx.strings.joined(view.texts))
        };
        key_lockish
            || self.fn_lockish
            || binding.iter().any(|b| is_lock_name(self.cx.lock_name, b))
            || text_lockish()
    }

    /// What every event of one chain shares, computed once per chain: a
    /// pipeline of thousands of commands has as many events, and each
    /// would otherwise walk the whole chain again.
    fn chain_facts(&self, chain: &Chain<'ast>, top: &'ast Expr) -> ChainFacts {
        let mut mentions_all = mentions(chain.root_expr);
        let mut arg_mentions = BTreeSet::new();
        for s in &chain.segs {
            for a in s.args() {
                let m = mentions(a);
                arg_mentions.extend(m.iter().cloned());
                mentions_all.extend(m);
            }
        }
        if let Root::Call { args, .. } | Root::Macro { args, .. } = &chain.root {
            for a in args {
                arg_mentions.extend(mentions(a));
            }
        }
        let span = super::syntax::expr_span(self.cx.src, top);
        ChainFacts {
            executor: crate::model::conn::executor(&self.cx.src.text, top, span.end.offset),
            span,
            mentions: mentions_all,
            arg_mentions,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn event(
        &self,
        chain: &Chain<'ast>,
        facts: &ChainFacts,
        view: &View,
        r: ApiRef,
        top: &'ast Expr,
        use_: &Use,
    ) -> Event {
        let packs = self.cx.packs;
        let api = packs.api(r);
        let src = self.cx.src;
        // Primary span: from the anchor to the last method of its window.
        // A builder continued from elsewhere is reported where it runs.
        let inherited_anchor = match view.anchor {
            Anchor::Root => chain.resolved,
            Anchor::Seg(i) => i < chain.inherited,
        };
        let start = if inherited_anchor {
            facts.span.start
        } else {
            match view.anchor {
                Anchor::Root => src.span_of(start_span(chain.root_expr)).start,
                Anchor::Seg(i) => src.span_of(chain.segs[i].start).start,
            }
        };
        let last_method = (view.from..view.end)
            .rev()
            .find(|&i| matches!(chain.segs[i].kind, SegKind::Method { .. }));
        let end_pos = match last_method {
            Some(i) if !inherited_anchor || i >= chain.inherited => {
                src.span_of(super::syntax::end_span(chain.segs[i].expr)).end
            }
            _ if inherited_anchor => src.span_of(super::syntax::end_span(top)).end,
            _ => src.span_of(super::syntax::end_span(chain.root_expr)).end,
        };
        let span = Span {
            start,
            end: end_pos,
        };
        let chain_span = facts.span;
        // A command a function of this file built: its own defects are
        // reported where it is built (the function and its line are
        // filled in once the file's functions are known).
        let built_in = chain
            .built_by
            .as_ref()
            .filter(|_| inherited_anchor)
            .map(|name| {
                let at = src.span_of(start_span(chain.root_expr)).start;
                Built {
                    span: Span {
                        start: at,
                        end: src.span_of(super::syntax::end_span(chain.root_expr)).end,
                    },
                    item: name.clone(),
                    stmt_line: at.line,
                    fn_line: 0,
                }
            });
        let key = view.key(api);
        let owner = view.owner(api);
        let binding = match use_ {
            Use::Let { names, .. } | Use::Cond { names } | Use::IfLetNoElse { names } => {
                names.clone()
            }
            _ => Vec::new(),
        };
        let acquire = matches!(api.role, Role::Acquire | Role::TryAcquire);
        // Only a take's and a renewal's outcome is judged; the others need
        // no scan of the chain after them (each command of a long pipeline
        // would read the rest of it).
        let result = if acquire || api.role == Role::Renew {
            result_use(
                chain,
                view.anchor,
                use_,
                api.result,
                &api.discard_methods,
                acquire,
            )
        } else {
            ResultUse::Inspected
        };
        let expiry = view.expiry(api);
        let ttl_ms = view.ttl_millis(api);
        let lockish = self.lockish(view, api, &binding);
        Event {
            id: EventId::default(),
            api: r,
            role: api.role,
            backend: packs.pack(r).backend.clone(),
            func: self.f,
            span,
            chain_span,
            executor: facts.executor.clone(),
            stmt_line: self.stmt_line,
            key,
            owner,
            words: view.words.clone(),
            result,
            binding,
            mentions: facts.mentions.clone(),
            arg_mentions: facts.arg_mentions.clone(),
            expiry,
            ttl_ms,
            guards: self.guards.clone(),
            lockish,
            receiver: view.receiver().to_string(),
            purpose: None,
            layers: Vec::new(),
            chain_purpose: None,
            targets: Vec::new(),
            direct: Vec::new(),
            handed_by: None,
            relayed: false,
            reached: None,
            built_in,
            owner_at_call: false,
            wrapper: None,
            token_dropped: false,
            escapes: false,
            outcome_escapes: false,
        }
    }
}

/// See [`Walker::chain_facts`].
struct ChainFacts {
    /// The whole chain's span.
    span: Span,
    /// Every name the chain mentions, and those in its arguments.
    mentions: BTreeSet<String>,
    arg_mentions: BTreeSet<String>,
    /// The executor of the SQL statement the chain runs, if any.
    executor: Option<String>,
}

/// Whether the chain calls `.build()` after segment `i`, before anything
/// runs (an `.await` or `?`): segment `i` then sets an option of a builder.
fn builds_later(chain: &Chain, i: usize) -> bool {
    chain.segs[i + 1..]
        .iter()
        .take_while(|s| !matches!(s.kind, SegKind::Await | SegKind::Try))
        .any(|s| matches!(&s.kind, SegKind::Method { name, args, .. } if name == "build" && args.is_empty()))
}
