//! What one anchor of a chain sees: the call's arguments, the literal words
//! and builder methods of its window, the texts of the whole chain, and its
//! receiver with the receiver's type. A view borrows the chain; what is
//! costly (words, texts, the receiver's text) is gathered only when a
//! candidate asks for it.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::BTreeSet;

use syn::spanned::Spanned;
use syn::Expr;

use super::super::event::{ExpiryState, Key, Owner};
use super::super::keys;
use super::super::lockname::mentions_word;
use super::chain::{Anchor, Chain, Root, Seg, SegKind};
use super::fields::{arg_fields, call_arg, named_locals, FieldSets};
use super::locals::SetId;
use super::syntax::{collect_words, is_none, str_lit, struct_field};
use super::walk::Walker;
use crate::pack::{Api, ApiRef, ExpirySource, KeySpec, Pack, PackSet, Role};

/// The longest key literal a key keeps (see [`View::key_at`]).
const MAX_KEY_LITERAL: usize = 1024;

/// Most locals followed from a call's arguments for its fields.
const MAX_FOLLOWED: usize = 16;

/// What a view must gather for the candidates it is matched against: the
/// words and strings under a chain are costly, and most candidates (a
/// method named `get` or `query`) ask for neither.
#[derive(Clone, Copy)]
pub(super) struct Need {
    pub words: bool,
    pub texts: bool,
}

impl Need {
    /// Everything: the view an event is made from.
    pub const ALL: Need = Need {
        words: true,
        texts: true,
    };

    pub fn of(packs: &PackSet, cands: &[ApiRef]) -> Need {
        let mut need = Need {
            words: false,
            texts: false,
        };
        for &r in cands {
            let m = &packs.api(r).matcher;
            need.words |= !m.words.is_empty() || !m.any_words.is_empty() || !m.no_words.is_empty();
            need.texts |= !m.text.is_empty()
                || !m.no_text.is_empty()
                || packs
                    .api(r)
                    .expiry
                    .as_ref()
                    .is_some_and(|e| e.from == ExpirySource::Text);
        }
        need
    }
}

pub(super) struct View<'v, 'w, 'a, 'c, 'ast> {
    pub w: &'w Walker<'a, 'c, 'ast>,
    pub chain: &'v Chain<'ast>,
    pub anchor: Anchor,
    pub from: usize,
    pub end: usize,
    /// The matched call's own arguments.
    pub args: Vec<&'ast Expr>,
    pub words: BTreeSet<String>,
    pub methods: Vec<&'v str>,
    /// Strings of the whole chain (set once per chain by the classifier).
    pub texts: SetId,
    receiver_expr: Option<&'ast Expr>,
    /// The receiver's text and type, made on first use.
    receiver: OnceCell<String>,
    pub root_is_command: Option<String>,
    root_fn: Option<Vec<String>>,
    macro_name: Option<&'v str>,
    pub method_name: Option<&'v str>,
    /// Fields the matched call's arguments set (struct-literal fields and
    /// builder methods), for `fields` / `no-fields`.
    fields: OnceCell<FieldSets>,
    /// Arguments of the constructor call the chain starts from, for
    /// `root-arg` keys.
    root_args: &'v [&'ast Expr],
}

impl<'v, 'w, 'a, 'c, 'ast> View<'v, 'w, 'a, 'c, 'ast> {
    pub fn new(
        w: &'w Walker<'a, 'c, 'ast>,
        chain: &'v Chain<'ast>,
        anchor: Anchor,
        end: usize,
        texts: SetId,
        need: Need,
    ) -> Self {
        let from = anchor.from();
        let mut arg_lists: Vec<&'ast Expr> = Vec::new();
        let mut args = Vec::new();
        let mut root_is_command = None;
        let mut root_fn = None;
        let mut macro_name = None;
        let mut method_name = None;
        match anchor {
            Anchor::Root => {
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
                        macro_name = Some(name.as_str());
                        args = a.clone();
                    }
                    Root::Path(_) | Root::Other => {}
                }
                arg_lists.extend(args.iter().copied());
            }
            Anchor::Seg(i) => {
                if let SegKind::Method { name, args: a, .. } = &chain.segs[i].kind {
                    method_name = Some(name.as_str());
                    args = a.clone();
                    if name == "cmd" || name == "arg" {
                        root_is_command =
                            a.first().and_then(|x| str_lit(x)).map(|s| s.to_uppercase());
                    }
                }
            }
        }
        let mut methods = Vec::new();
        for s in &chain.segs[from..end] {
            if let SegKind::Method { name, args: a, .. } = &s.kind {
                methods.push(name.as_str());
                arg_lists.extend(a.iter().copied());
            }
        }
        let mut words = BTreeSet::new();
        if need.words {
            for a in &arg_lists {
                collect_words(a, &mut words);
            }
            // The locals an argument names (`client.txn(txn)`, `opts`), and
            // those they name in turn (`let cmp = Compare::..; let txn =
            // Txn::new().when(vec![cmp])`): each binding's words are
            // gathered once, when first asked.
            let (_, _, followed) = follow_locals(&w.locals, arg_lists.iter().copied());
            for id in followed {
                words.extend(w.locals.binding(id).words().iter().cloned());
            }
        }
        // The receiver: everything before the anchor.
        let receiver_expr = chain.receiver_of(anchor);
        let root_args: &'v [&'ast Expr] = match &chain.root {
            Root::Call { args: a, .. } => a,
            _ => &[],
        };
        View {
            w,
            chain,
            anchor,
            from,
            end,
            args,
            words,
            methods,
            texts,
            receiver_expr,
            receiver: OnceCell::new(),
            root_is_command,
            root_fn,
            macro_name,
            method_name,
            fields: OnceCell::new(),
            root_args,
        }
    }

    /// The receiver's text, and its type when it is known (`leases` typed
    /// `Api<Lease>` reads `leases:Api<Lease>`): what `receiver` patterns
    /// and crate evidence are matched against.
    pub fn receiver(&self) -> &str {
        self.receiver.get_or_init(|| {
            let Some(e) = self.receiver_expr else {
                return String::new();
            };
            // The first own method of a chain continued from a local: the
            // receiver is the variable, with its type and its builder.
            if let (Anchor::Seg(i), Some(var)) = (self.anchor, &self.chain.var) {
                if i == self.chain.inherited && self.chain.resolved {
                    let mut text = var.clone();
                    if let Some(ty) = self.w.locals.get(var).and_then(|b| b.ty.as_deref()) {
                        self.push_type(&mut text, ty);
                    }
                    text.push('=');
                    text.push_str(&keys::compact_receiver(e, self.chain.root_expr));
                    return text;
                }
            }
            let mut text = keys::compact_receiver(e, self.chain.root_expr);
            if let Some(ty) = self.w.declared_type(e) {
                self.push_type(&mut text, &ty);
            }
            text
        })
    }

    /// Appends `:ty` to a receiver's text, and `:aliased` when `ty` is a
    /// type alias of the file or of its crate (`api: Api` with `type Api =
    /// kube::Api<LeaseObject>;` reads `self.api:Api:kube::Api<LeaseObject>`),
    /// also named by its path in the crate (`crate::types::Api`): the
    /// alias's name and what it names are both evidence.
    fn push_type(&self, text: &mut String, ty: &str) {
        text.push(':');
        text.push_str(ty);
        let cx = &self.w.cx;
        let in_crate = ty.split_once("::").is_some_and(|(first, _)| {
            matches!(first, "crate" | "self" | "super") || cx.modules.contains(first)
        });
        let aliased = cx.aliases.get(ty).or_else(|| {
            let name = ty.rsplit("::").next()?;
            (in_crate && !ty.contains('<')).then(|| cx.aliases.get(name))?
        });
        if let Some(aliased) = aliased {
            text.push(':');
            text.push_str(aliased);
        }
    }

    /// The arguments, then the initialisers of the locals they pass on
    /// (`&Patch::Merge(&patch)`, `client.txn(txn)`), each local once and
    /// at most [`MAX_FOLLOWED`], with the fields assigned to those locals.
    fn passed(&self) -> (Vec<&'ast Expr>, Vec<(String, bool)>) {
        self.passed_from(self.args.iter().copied())
    }

    /// [`View::passed`], from `args`.
    fn passed_from(
        &self,
        args: impl DoubleEndedIterator<Item = &'ast Expr>,
    ) -> (Vec<&'ast Expr>, Vec<(String, bool)>) {
        let (exprs, assigned, _) = follow_locals(&self.w.locals, args);
        (exprs, assigned)
    }

    /// Whether a field set in an argument of the chain's methods (or in
    /// the locals they pass on) satisfies `ok`: the `duration` of a lock
    /// item struct serialised into `.set_item(Some(item))`.
    fn chain_fields(&self, ok: impl Fn(&str) -> bool) -> bool {
        let args = self.segs().iter().flat_map(|s| match &s.kind {
            SegKind::Method { args, .. } => args.clone(),
            _ => Vec::new(),
        });
        let args: Vec<&'ast Expr> = args.collect();
        let (exprs, assigned) = self.passed_from(args.into_iter());
        let mut fields = FieldSets::default();
        for e in exprs {
            arg_fields(e, &mut fields);
        }
        fields.set.iter().any(|f| ok(f)) || assigned.iter().any(|(f, cleared)| !cleared && ok(f))
    }

    fn fields(&self) -> &FieldSets {
        self.fields.get_or_init(|| {
            let mut fields = FieldSets::default();
            let (exprs, assigned) = self.passed();
            for e in exprs {
                arg_fields(e, &mut fields);
            }
            for (field, cleared) in &assigned {
                fields.record(field, *cleared);
            }
            fields
        })
    }

    /// Whether the strings the receiver holds match `p`.
    fn receiver_holds(&self, p: Option<&crate::pack::Pattern>) -> bool {
        let (Some(p), Some(e)) = (p, self.receiver_expr) else {
            return false;
        };
        let set = self.w.value_strings(e);
        self.w.cx.strings.matches(set, p)
    }

    fn segs(&self) -> &'v [Seg<'ast>] {
        &self.chain.segs[self.from..self.end]
    }

    pub fn matches(&self, api: &Api, pack: &Pack) -> bool {
        let m = &api.matcher;
        if let Some(name) = &m.method {
            if self.method_name != Some(name.as_str()) {
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
            if self.macro_name != Some(name.as_str()) {
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
                self.methods.iter().filter(|x| **x == "arg").count()
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
        if !m.chain.iter().all(|c| self.methods.contains(&c.as_str())) {
            return false;
        }
        if m.no_chain
            .iter()
            .any(|c| self.methods.contains(&c.as_str()))
        {
            return false;
        }
        if !m.text.is_empty() || !m.no_text.is_empty() {
            let strings = &self.w.cx.strings;
            if !m.text.iter().all(|r| strings.matches(self.texts, r)) {
                return false;
            }
            if m.no_text.iter().any(|r| strings.matches(self.texts, r)) {
                return false;
            }
        }
        if let Some(r) = &m.receiver {
            if !r.is_match(self.receiver()) && !self.receiver_holds(m.receiver_strings.as_ref()) {
                return false;
            }
        }
        if !m.fields.is_empty() || !m.no_fields.is_empty() || !m.cleared_fields.is_empty() {
            let fields = self.fields();
            if !m.fields.iter().all(|f| fields.set.contains(f))
                || m.no_fields.iter().any(|f| fields.set.contains(f))
                || !m.cleared_fields.iter().all(|f| fields.cleared.contains(f))
            {
                return false;
            }
        }
        let crates = m.evidence_crates(pack);
        if m.needs_crate && !crates.is_empty() {
            let root_mentions = self
                .root_fn
                .as_ref()
                .and_then(|p| p.first())
                .is_some_and(|first| crates.iter().any(|c| c == first));
            if !root_mentions
                && !crates.iter().any(|c| self.w.cx.crates.contains(c))
                && !crates.iter().any(|c| mentions_word(self.receiver(), c))
            {
                return false;
            }
        }
        true
    }

    pub fn key(&self, api: &Api) -> Option<Key> {
        let Some(e) = self.locate(&api.key, &api.matcher.text) else {
            return self.statement_key(api);
        };
        // Only a release or a delete asks whether its key is the holder's
        // own (built from its lease id).
        let lease = matches!(api.role, Role::Release | Role::Delete);
        Some(self.key_at(&e, lease))
    }

    /// The key `e` is, with the literal it holds, and (`lease`) whether it
    /// is built from a lease id.
    fn key_at(&self, e: &Expr, lease: bool) -> Key {
        let w = self.w;
        let span = w.cx.src.span_of(e.span());
        let norm = keys::normalise(e);
        // A key variable: what it was bound to (a literal, a `format!`).
        let init = w.locals.get(&norm).and_then(|b| b.init);
        Key {
            text: w.cx.src.snippet(&span).to_string(),
            span,
            literal: keys::literal(e)
                .or_else(|| init.and_then(keys::literal))
                .or_else(|| w.cx.built_key(e))
                .or_else(|| init.and_then(|i| w.cx.built_key(i)))
                // Each event and inventory row keeps its own copy: a key
                // of a kilobyte or more (generated, or hostile) keeps none.
                .filter(|l| l.len() <= MAX_KEY_LITERAL),
            holder_lease: lease
                && (keys::embeds_lease_id(e) || init.is_some_and(keys::embeds_lease_id)),
            norm,
        }
    }

    /// The key a statement spells itself, when no argument of the call
    /// gives it: the arguments of the SQL function the pack's pattern
    /// matched (`pg_try_advisory_lock(1)`,
    /// `pg_try_advisory_xact_lock(hashtext('jobs'))`, `GET_LOCK('jobs', 0)`,
    /// a named format argument `{lock_id}`). A placeholder (`$1`, `?`) is
    /// the value the call gives it (a parameter list beside the statement,
    /// see [`View::param`]); a positional `{}` names nothing here.
    fn statement_key(&self, api: &Api) -> Option<Key> {
        if api.matcher.text.is_empty() {
            return None;
        }
        let strings = &self.w.cx.strings;
        let texts = strings.list(self.texts);
        let (args, nth) = texts.iter().find_map(|t| {
            api.matcher.text.iter().find_map(|p| {
                let m = p.find(t)?;
                let args = statement_args(t, m.end())?;
                let nth = placeholder_number(&t[..m.end()], &args);
                Some((args, nth))
            })
        })?;
        if let Some(e) = nth.and_then(|n| self.param(n)) {
            return Some(self.key_at(&e, false));
        }
        let text = named_key(&args)?;
        let literal = sql_literal(&text);
        Some(Key {
            norm: text.chars().filter(|c| !c.is_whitespace()).collect(),
            text,
            span: self
                .w
                .cx
                .src
                .span_of(syn::spanned::Spanned::span(self.chain.root_expr)),
            literal,
            holder_lease: false,
        })
    }

    /// The value the call stores as its owner, or compares with the stored
    /// one (see the pack's `owner`).
    pub fn owner(&self, api: &Api) -> Option<Owner> {
        self.locate(&api.owner, &api.matcher.text)
            .map(|e| self.w.owner_value(&e))
    }

    /// The arguments of the chain's `arg` calls, without the command word.
    fn command_args(&self) -> impl Iterator<Item = &'ast Expr> + '_ {
        self.segs()
            .iter()
            .filter_map(|s| match &s.kind {
                SegKind::Method { name, args, .. } if name == "arg" => args.first().copied(),
                _ => None,
            })
            .filter(|a| {
                !(self.root_is_command.is_some() && is_command_word(a, &self.root_is_command))
            })
    }

    /// The value a SQL statement's `n`th placeholder is given: the `n`th
    /// `.bind(..)` of the chain, else the `n`th element of the first
    /// parameter list (an array or `vec!`) among the chain's arguments
    /// and the arguments of calls made in them
    /// (`Statement::from_sql_and_values(backend, sql, vec![..])`).
    fn param(&self, n: usize) -> Option<Cow<'ast, Expr>> {
        let binds = self.segs().iter().filter_map(|s| match &s.kind {
            SegKind::Method { name, args, .. } if name == "bind" => args.first().copied(),
            _ => None,
        });
        if let Some(e) = binds.clone().nth(n - 1) {
            return Some(Cow::Borrowed(e));
        }
        if binds.count() > 0 {
            return None;
        }
        // `query!("… $1 …", job)`: the values follow the statement.
        if let Root::Macro { args, .. } = &self.chain.root {
            let at = args.iter().position(|a| str_lit(a).is_some())?;
            return args.get(at.checked_add(n)?).map(|e| Cow::Borrowed(*e));
        }
        let mut lists: Vec<&'ast Expr> = self.root_args.to_vec();
        for s in self.segs() {
            if let SegKind::Method { args, .. } = &s.kind {
                lists.extend(args.iter().copied());
            }
        }
        let inner: Vec<&'ast Expr> = lists
            .iter()
            .filter_map(|e| match keys::strip(e) {
                Expr::Call(c) => Some(c.args.iter()),
                _ => None,
            })
            .flatten()
            .collect();
        lists.extend(inner);
        lists.into_iter().find_map(|e| {
            let found = match keys::strip(e) {
                Expr::Array(a) => a.elems.iter().nth(n - 1).cloned(),
                Expr::Macro(m) if m.mac.path.is_ident("vec") => {
                    super::syntax::vec_elements(&m.mac).into_iter().nth(n - 1)
                }
                _ => return None,
            };
            Some(Cow::Owned(unconverted(found?)))
        })
    }

    /// What a Lua script run by this call reads as `ARGV[n]`.
    fn script_arg(&self, n: usize) -> Option<&'ast Expr> {
        let eval = matches!(self.root_is_command.as_deref(), Some("EVAL" | "EVALSHA"));
        if eval {
            // EVAL script numkeys key.. arg..
            let args: Vec<&Expr> = self.command_args().collect();
            let numkeys = match keys::strip(args.get(1)?) {
                Expr::Lit(l) => match &l.lit {
                    syn::Lit::Int(i) => i.base10_parse::<usize>().ok()?,
                    _ => return None,
                },
                _ => return None,
            };
            args.get(2usize.checked_add(numkeys)?.checked_add(n - 1)?)
                .copied()
        } else {
            // A script invocation keeps keys and arguments apart.
            self.command_args().nth(n - 1)
        }
    }

    /// The first of `specs` that finds an argument, passing over the
    /// statement a text shape matched (`format!("INSERT …")` given where a
    /// driver's call takes its SQL is not the key).
    fn locate(
        &self,
        specs: &[KeySpec],
        statement: &[crate::pack::Pattern],
    ) -> Option<Cow<'ast, Expr>> {
        for spec in specs {
            if let KeySpec::Param(n) = spec {
                match self.param(*n) {
                    Some(e) => return Some(e),
                    None => continue,
                }
            }
            let e = match spec {
                KeySpec::Param(_) => None,
                KeySpec::Arg(i) => self.args.get(*i).copied(),
                KeySpec::Method { name, nth, arg } => self
                    .segs()
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
                KeySpec::Call { name, arg } => self
                    .passed()
                    .0
                    .into_iter()
                    .find_map(|e| call_arg(e, name, *arg)),
                KeySpec::ScriptArg(n) => self.script_arg(*n),
            };
            let is_statement = |e: &Expr| {
                !statement.is_empty()
                    && keys::literal(e).is_some_and(|t| statement.iter().any(|p| p.is_match(&t)))
            };
            if let Some(e) = e.filter(|e| !is_statement(e)) {
                return Some(Cow::Borrowed(e));
            }
        }
        None
    }

    /// The expiry in milliseconds when the command spells it as a
    /// constant after its word: `PX 30_000`, `EX 60`, `PX TTL_MS` with a
    /// `const TTL_MS: u64 = 30_000;` in the file.
    pub fn ttl_millis(&self, api: &Api) -> Option<u64> {
        let consts = self.w.cx.consts;
        let scaled = |n: f64, per: f64| {
            let ms = n * per;
            ((0.0..1e15).contains(&ms)).then_some(ms as u64)
        };
        // A renewal that sets the time to live again: `PEXPIRE key 30000`,
        // `con.expire(&key, 30)`.
        if api.role == Role::Renew {
            let per = |w: &str| {
                if w.eq_ignore_ascii_case("pexpire") {
                    Some(1.0)
                } else if w.eq_ignore_ascii_case("expire") {
                    Some(1000.0)
                } else {
                    None
                }
            };
            if let Some(p) = api.matcher.command.as_deref().and_then(per) {
                let n = self
                    .command_args()
                    .skip(1)
                    .find_map(|a| super::calls::number(a, consts, 0))?;
                return scaled(n, p);
            }
            if let Some(p) = api.matcher.method.as_deref().and_then(per) {
                return scaled(super::calls::number(self.args.get(1)?, consts, 0)?, p);
            }
            return None;
        }
        let e = api.expiry.as_ref()?;
        if e.from != ExpirySource::Words {
            return None;
        }
        let args: Vec<&Expr> = self.command_args().collect();
        let (i, per) = args.iter().enumerate().find_map(|(i, a)| {
            let w = keys::literal(a)?;
            let per = if w.eq_ignore_ascii_case("px") {
                1.0
            } else if w.eq_ignore_ascii_case("ex") {
                1000.0
            } else {
                return None;
            };
            Some((i, per))
        })?;
        scaled(super::calls::number(args.get(i + 1)?, consts, 0)?, per)
    }

    pub fn expiry(&self, api: &Api) -> ExpiryState {
        let Some(e) = &api.expiry else {
            return ExpiryState::Unknown;
        };
        match e.from {
            ExpirySource::Words => match e.words.iter().find(|w| self.words.contains(*w)) {
                // The TTL is the argument after its word: `PX 30000`.
                Some(w) => {
                    let args: Vec<&Expr> = self.command_args().collect();
                    let value = args
                        .iter()
                        .position(|a| keys::literal(a).is_some_and(|l| l.eq_ignore_ascii_case(w)))
                        .and_then(|i| args.get(i + 1))
                        .copied()
                        .map(keys::compact);
                    ExpiryState::Set(Some(match value {
                        Some(v) => format!("{w} {v}"),
                        None => w.clone(),
                    }))
                }
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
                // A chain method, or a builder method called in an argument
                // or in the local an argument passes on.
                let found = e.methods.iter().any(|m| {
                    self.methods.contains(&m.as_str())
                        || self.fields().set.contains(&crate::pack::field_name(m))
                });
                if found {
                    ExpiryState::Set(None)
                } else {
                    ExpiryState::Missing
                }
            }
            ExpirySource::Text => {
                let strings = &self.w.cx.strings;
                if e.text.iter().any(|r| strings.matches(self.texts, r))
                    || self.chain_fields(|f| e.text.iter().any(|r| r.is_match(f)))
                {
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

/// `args`, then the initialisers of the locals they name (and those name,
/// each local once, at most [`MAX_FOLLOWED`]), with the fields assigned to
/// those locals, and the locals followed.
#[allow(clippy::type_complexity)]
fn follow_locals<'ast>(
    locals: &super::locals::LocalTable<'ast>,
    args: impl DoubleEndedIterator<Item = &'ast Expr>,
) -> (
    Vec<&'ast Expr>,
    Vec<(String, bool)>,
    Vec<super::locals::LocalId>,
) {
    let mut exprs = Vec::new();
    let mut assigned = Vec::new();
    let mut seen: Vec<super::locals::LocalId> = Vec::new();
    // Each expression with the binding whose initialiser it is: a name
    // that binding shadows, used in its own initialiser, is the one
    // before it (`let patch = json!(..); let patch = Patch::Merge(&patch);`).
    let mut todo: Vec<(&'ast Expr, Option<super::locals::LocalId>)> =
        args.rev().map(|e| (e, None)).collect();
    while let Some((e, of)) = todo.pop() {
        exprs.push(e);
        for name in named_locals(e) {
            let id = match of {
                Some(of) if locals.binding(of).name == name => locals.shadowed(&name, of),
                _ => locals.id(&name),
            };
            let Some(id) = id else {
                continue;
            };
            if seen.len() >= MAX_FOLLOWED || seen.contains(&id) {
                continue;
            }
            let b = locals.binding(id);
            if let Some(init) = b.init {
                todo.push((init, Some(id)));
            }
            assigned.extend(b.assigned.iter().cloned());
            seen.push(id);
        }
    }
    (exprs, assigned, seen)
}

/// Longest statement argument list taken as a key, in characters.
const MAX_STATEMENT_KEY: usize = 120;

/// The argument list of the SQL call whose `(` ends just before `at` in
/// `text`: up to its matching `)`, trimmed; `None` for a pattern that does
/// not end at a `(`, an unbalanced or empty list, or a long one.
fn statement_args(text: &str, at: usize) -> Option<String> {
    if !text[..at].ends_with('(') {
        return None;
    }
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (i, c) in text[at..].char_indices() {
        if i > MAX_STATEMENT_KEY * 4 {
            return None;
        }
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') if depth == 0 => {
                let args = text[at..at + i]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                return (!args.is_empty() && args.chars().count() <= MAX_STATEMENT_KEY)
                    .then_some(args);
            }
            (None, ')') => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The placeholder a statement's function takes its key from, as the
/// parameter number it stands for: `$2` is 2, a `?` is one more than the
/// `?`s written before it (`before` is the statement up to the call).
fn placeholder_number(before: &str, args: &str) -> Option<usize> {
    // The first placeholder of the arguments: `$1` in `hashtext($1)`.
    let at = args.find(['?', '$'])?;
    if args[at..].starts_with('?') {
        return Some(before.matches('?').count() + args[..at].matches('?').count() + 1);
    }
    let digits: String = args[at + 1..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let n: usize = digits.parse().ok()?;
    (n > 0).then_some(n)
}

/// What of a statement's argument list names its lock: the list itself
/// when it holds a literal or an expression of literals, the name in a
/// named format argument (`{lock_id}` → `lock_id`); nothing when it is
/// only placeholders bound at run time (`$1`, `?`, `:id`, `@id`, `{}`).
fn named_key(args: &str) -> Option<String> {
    let placeholder = |a: &str| {
        let a = a.trim();
        a == "?"
            || a == "{}"
            || a.starts_with('$')
            || a.starts_with(':')
            || a.starts_with('@')
            || (a.starts_with("{:") && a.ends_with('}'))
    };
    let parts: Vec<&str> = args.split(',').map(str::trim).collect();
    // A timeout after the key (`GET_LOCK(?, 10)`) does not make it named.
    if placeholder(parts[0]) {
        return None;
    }
    let first = parts[0];
    if let Some(name) = first.strip_prefix('{').and_then(|n| n.strip_suffix('}')) {
        let name = name.split(':').next().unwrap_or("");
        let ident = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
        return ident.then(|| name.to_string());
    }
    // Two integers are one key (`pg_advisory_lock(1, 2)`); otherwise the
    // first argument is the key and the rest are options (a timeout).
    let numbers = parts
        .iter()
        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit() || c == '-'));
    let key = if numbers { args } else { first_argument(args) };
    if key.contains("{}") || key.contains('$') || key.contains('?') {
        return None;
    }
    Some(key.to_string())
}

/// The first top-level argument of an argument list (commas inside
/// parentheses or quotes belong to it).
fn first_argument(args: &str) -> &str {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (i, c) in args.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => return args[..i].trim(),
            _ => {}
        }
    }
    args.trim()
}

/// The value of a key that is one SQL literal: a number, or a string in
/// single quotes.
fn sql_literal(text: &str) -> Option<String> {
    let t = text.trim();
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '-') {
        return Some(t.to_string());
    }
    let inner = t.strip_prefix('\'')?.strip_suffix('\'')?;
    (!inner.contains('\'')).then(|| inner.to_string())
}

/// `Value::from(x)`, `From::from(x)`, `Into::into(x)`, `x.into()` and
/// `&x` name the value `x`.
fn unconverted(e: Expr) -> Expr {
    match keys::strip(&e) {
        Expr::Call(c)
            if c.args.len() == 1
                && matches!(&*c.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "from" || s.ident == "into")) =>
        {
            unconverted(c.args[0].clone())
        }
        Expr::MethodCall(m) if m.args.is_empty() && m.method == "into" => {
            unconverted((*m.receiver).clone())
        }
        // `&job`, `(job)`: the value itself.
        stripped => stripped.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::{named_key, placeholder_number, sql_literal, statement_args};

    #[test]
    fn a_placeholder_is_the_parameter_it_numbers() {
        let number = |sql: &str, call: &str| {
            let at = sql.find(call).expect("call in sql") + call.len();
            placeholder_number(&sql[..at], &statement_args(sql, at)?)
        };
        let cases = [
            ("SELECT pg_try_advisory_lock($1)", Some(1)),
            ("SELECT pg_try_advisory_lock($12)", Some(12)),
            ("SELECT pg_try_advisory_lock(hashtext($2))", Some(2)),
            ("SELECT ?, pg_try_advisory_lock(?)", Some(2)),
            ("SELECT pg_try_advisory_lock(hashtext(?), ?)", Some(1)),
            ("SELECT pg_try_advisory_lock(7)", None),
            ("SELECT pg_try_advisory_lock($0)", None),
            ("SELECT pg_try_advisory_lock($x)", None),
        ];
        for (sql, want) in cases {
            assert_eq!(number(sql, "pg_try_advisory_lock("), want, "{sql}");
        }
    }

    fn key_of(sql: &str, call: &str) -> Option<String> {
        let at = sql.find(call).expect("call in sql") + call.len();
        statement_args(sql, at).and_then(|a| named_key(&a))
    }

    #[test]
    fn a_statement_names_its_key_when_it_spells_it() {
        let cases = [
            (
                "SELECT pg_try_advisory_lock(1)",
                "pg_try_advisory_lock(",
                Some("1"),
            ),
            (
                "SELECT pg_advisory_lock(7, 9)",
                "pg_advisory_lock(",
                Some("7, 9"),
            ),
            (
                "SELECT GET_LOCK('reindex', 5)",
                "GET_LOCK(",
                Some("'reindex'"),
            ),
            (
                "SELECT pg_try_advisory_xact_lock(hashtextextended('jobs, nightly', 0)) AS x",
                "pg_try_advisory_xact_lock(",
                Some("hashtextextended('jobs, nightly', 0)"),
            ),
            (
                "SELECT pg_try_advisory_lock({self.lock_id})",
                "pg_try_advisory_lock(",
                Some("self.lock_id"),
            ),
            (
                "SELECT pg_try_advisory_lock({lock_id:?})",
                "pg_try_advisory_lock(",
                Some("lock_id"),
            ),
            ("SELECT pg_advisory_lock($1)", "pg_advisory_lock(", None),
            ("SELECT GET_LOCK(?, 10)", "GET_LOCK(", None),
            ("SELECT pg_advisory_lock({})", "pg_advisory_lock(", None),
            ("SELECT pg_advisory_lock(:id)", "pg_advisory_lock(", None),
            (
                "SELECT pg_advisory_lock(hashtext($1))",
                "pg_advisory_lock(",
                None,
            ),
            ("SELECT pg_advisory_lock(", "pg_advisory_lock(", None),
            ("SELECT pg_advisory_lock()", "pg_advisory_lock(", None),
        ];
        for (sql, call, want) in cases {
            assert_eq!(key_of(sql, call).as_deref(), want, "{sql}");
        }
    }

    #[test]
    fn only_a_lone_literal_has_a_value() {
        assert_eq!(sql_literal("42").as_deref(), Some("42"));
        assert_eq!(sql_literal("'reindex'").as_deref(), Some("reindex"));
        assert_eq!(sql_literal("hashtext('x')"), None);
        assert_eq!(sql_literal("self.lock_id"), None);
    }
}
