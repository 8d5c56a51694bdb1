//! What every check gets, and helpers shared by several checks.

use regex::Regex;

use crate::directives::{Directives, PurposeLookup};
use crate::finding::{Finding, Purpose};
use crate::model::locks::Locks;
use crate::model::{Event, FileModel, Key};
use crate::pack::{Api, PackSet, Role};
use crate::source::SourceFile;

use super::CheckId;

/// Everything a check may read about one file.
pub struct CheckCtx<'a> {
    pub src: &'a SourceFile,
    pub model: &'a FileModel,
    pub packs: &'a PackSet,
    pub directives: &'a Directives,
    /// The file's locks: every acquisition with its purpose and what
    /// belongs to it.
    pub locks: &'a Locks,
    pub lock_name: &'a Regex,
    /// Functions of the same crate in other files (fencing only), found
    /// before the checks run: a check reads and parses nothing.
    pub fns: Option<&'a crate::model::resolve::FnIndex>,
    /// The functions of other files a check asked for and `fns` did not
    /// have: the file is audited again once they are indexed.
    pub asked: std::cell::RefCell<crate::model::resolve::Asked>,
}

impl<'a> CheckCtx<'a> {
    pub fn api(&self, e: &Event) -> &'a Api {
        self.packs.api(e.api)
    }

    pub fn lookup(&self, e: &Event) -> &'a PurposeLookup {
        self.locks.lookup(e.id)
    }

    /// The purpose an event is held to: its lock's annotation, else the
    /// configured `default-purpose`. A malformed annotation holds it to none.
    pub fn purpose(&self, e: &Event) -> Option<Purpose> {
        self.locks.purpose(e.id)
    }

    /// A finding on an event, with its backend, purpose and item filled in;
    /// at a lock call inside a wrapper, the call sites that reach it.
    pub fn finding(&self, check: CheckId, e: &Event, message: impl Into<String>) -> Finding {
        // A release, renewal or read carries the purpose of the lock it
        // belongs to.
        let purpose = self.held_to(e);
        let f = Finding::new(check, e.span, message)
            .backend(Some(&e.backend))
            .purpose(purpose)
            .item(&self.model.fns[e.func].qualified);
        let mut f = match &e.reached {
            Some(r) => reached_from(f, e, &r.sites, "reached from"),
            None => f,
        };
        if at_lock_call(check) {
            f = self.where_built(f, e);
        }
        f
    }

    /// A command a function of the file builds: what the command itself
    /// does wrong stands where it is built, once for all its runs.
    pub fn where_built(&self, mut f: Finding, e: &Event) -> Finding {
        if let Some(b) = e.built_in.as_ref().filter(|b| b.fn_line > 0) {
            f.related.push(crate::finding::Related {
                path: self.src.path.clone(),
                span: e.span,
                message: "the command runs here".to_string(),
            });
            f = f.note(format!(
                "the command is built here and runs at line {}",
                e.span.start.line
            ));
            f.span = b.span;
            f.labels.clear();
            f.item = b.item.clone();
        }
        f
    }

    /// Whether `e` is a lock call as written (not a call of a wrapper):
    /// where what the call itself does wrong is reported.
    pub fn lock_call(&self, e: &Event) -> bool {
        !e.through_wrapper()
    }

    /// Whether what is done with `e`'s outcome is judged here: not when a
    /// wrapper that is called hands it back (its callers use it).
    pub fn outcome_here(&self, e: &Event) -> bool {
        !e.relayed
    }

    /// The purpose a lock call is held to: its own annotation or the
    /// default, else, inside a wrapper, the strongest its callers state.
    pub fn held_to(&self, e: &Event) -> Option<Purpose> {
        self.purpose(e).or_else(|| {
            let r = e.reached.as_ref()?;
            r.purposes.iter().max().copied()
        })
    }

    /// Acquisitions of the file, in source order.
    pub fn takes(&self) -> impl Iterator<Item = &'a Event> {
        self.model.takes()
    }

    /// The latest read of `e`'s key before `e` in the same function: the
    /// first half of a read-then-write.
    pub fn read_before(&self, e: &Event) -> Option<&'a Event> {
        let key = e.key.as_ref()?;
        let read_of = |r: &Event, before: usize| {
            r.role == Role::Read
                && r.span.start.offset < before
                && r.key.as_ref().is_some_and(|k| k.norm == key.norm)
        };
        if let Some(r) = self
            .model
            .fn_events(e.func)
            .filter(|r| read_of(r, e.span.start.offset))
            .last()
        {
            return Some(r);
        }
        // The same two steps split across functions of the file: a
        // function reads the key, then calls the one that writes it
        // (`let l = self.api.get(name)?; .. self.acquire_lease(&l)` with
        // the patch in `acquire_lease`). The key must mean the same in
        // both: a field of `self`, a constant or a literal. A parameter or
        // a local of the writer says nothing of what its caller read. A
        // method is reached by its own type's methods calling it on `self`;
        // a free function by a plain call.
        let writer = &self.model.fns[e.func];
        let norm = key.norm.trim_start_matches(['&', '*']);
        let root = norm
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
            .unwrap_or_default();
        let same_everywhere = root == "self"
            || norm.starts_with('"')
            || (!root.is_empty() && root.chars().all(|c| c.is_ascii_uppercase() || c == '_'));
        if !same_everywhere {
            return None;
        }
        let owner =
            |f: &crate::model::FnModel| f.qualified.rsplit_once("::").map(|(ty, _)| ty.to_string());
        let writer_owner = owner(writer);
        self.model
            .fn_ids()
            .filter(|(g, _)| *g != e.func)
            .filter(|(_, f)| owner(f) == writer_owner)
            .flat_map(|(g, f)| {
                f.calls
                    .iter()
                    .filter(|c| c.local && c.name == writer.name)
                    .filter(|c| match &writer_owner {
                        Some(_) => c.method && c.receiver.contains("self"),
                        None => !c.method,
                    })
                    .filter_map(move |c| {
                        self.model
                            .fn_events(g)
                            .filter(|r| read_of(r, c.offset))
                            .last()
                    })
            })
            .next()
    }

    /// The acquisition a release, renewal, read or token use belongs to
    /// (the pairing rule is [`Locks`]'s, the same for every check).
    pub fn acquisition_for(&self, e: &Event) -> Option<&'a Event> {
        self.locks
            .lock_of(e.id)
            .filter(|l| l.take != e.id)
            .map(|l| &self.model.events[l.take])
    }
}

/// The checks about what a lock call itself does: reported at the call as
/// written (inside a wrapper, where a command is built).
pub fn at_lock_call(check: CheckId) -> bool {
    matches!(
        check,
        CheckId::MissingPurpose
            | CheckId::ReadThenWriteAcquire
            | CheckId::UnownedRelease
            | CheckId::UnownedRenewal
            | CheckId::LockWithoutExpiry
            | CheckId::PooledSessionLock
            | CheckId::NonConsensusCorrectnessLock
    )
}

/// Findings of one check at one place are one finding: the runs of a
/// command built in one function (their call sites kept as related
/// locations).
pub fn merge_same_place(findings: &mut Vec<Finding>) {
    let mut seen: std::collections::HashMap<(CheckId, usize, usize), usize> =
        std::collections::HashMap::new();
    let mut out: Vec<Finding> = Vec::with_capacity(findings.len());
    for f in findings.drain(..) {
        let at = (f.check, f.span.start.offset, f.span.end.offset);
        match seen.get(&at) {
            Some(&i) if !f.related.is_empty() && !out[i].related.is_empty() => {
                let kept = &mut out[i];
                for r in f.related {
                    if !kept.related.contains(&r) {
                        kept.related.push(r);
                    }
                }
                for n in f.notes {
                    if !kept.notes.contains(&n) {
                        kept.notes.push(n);
                    }
                }
            }
            _ => {
                seen.insert(at, out.len());
                out.push(f);
            }
        }
    }
    *findings = out;
}

/// Most call sites a finding lists as related locations.
const MAX_RELATED: usize = 16;

/// A finding at a lock call inside a wrapper names the call sites that
/// reach it (`sites`): a note, and related locations.
pub fn reached_from(
    mut f: Finding,
    e: &Event,
    sites: &[crate::model::SiteRef],
    what: &str,
) -> Finding {
    if let Some(note) = crate::model::chains::reached_note(e, sites, what) {
        f = f.note(note);
    }
    f.related = sites
        .iter()
        .take(MAX_RELATED)
        .map(|s| crate::finding::Related {
            path: s.path.clone(),
            span: s.span,
            message: "a call that reaches this lock call".to_string(),
        })
        .collect();
    f
}

/// How a finding names the call: `set_nx`, `SET … NX`, `PgAdvisoryLock::acquire`.
pub fn call_name(api: &Api, e: &Event) -> String {
    let m = &api.matcher;
    if let Some(method) = &m.method {
        return format!("{method}(..)");
    }
    if let Some(cmd) = &m.command {
        let flags: Vec<&str> = ["NX", "XX", "EX", "PX", "EXAT", "PXAT", "IFEQ", "GET"]
            .into_iter()
            .filter(|f| e.words.contains(*f))
            .collect();
        return if flags.is_empty() {
            cmd.clone()
        } else {
            format!("{cmd} … {}", flags.join(" "))
        };
    }
    if let Some(f) = &m.function {
        return format!("{}(..)", f.join("::"));
    }
    if let Some(mac) = &m.macro_name {
        return format!("{mac}!(..)");
    }
    if api.id.contains("lua") {
        "the Lua script".to_string()
    } else if api.id.contains("sql") {
        "the SQL statement".to_string()
    } else {
        api.library
            .clone()
            .unwrap_or_else(|| "this call".to_string())
    }
}

/// `` `key` `` for messages, or "an unnamed key" when the key is not visible
/// (prefer [`subject`], which names the call then).
pub fn key_name(key: Option<&Key>) -> String {
    match key {
        Some(k) => {
            let t = key_display(&k.text);
            if t.chars().count() > 48 {
                let short: String = t.chars().take(45).collect();
                format!("`{short}…`")
            } else {
                format!("`{t}`")
            }
        }
        None => "an unnamed key".to_string(),
    }
}

/// A key as written, without the wrapping that only carries it: a typed
/// value constructor with a one- or two-letter variant
/// (`AttributeValue::S(name.into())` shows as `name`) and a trailing
/// `.into()`, `.clone()` or `.to_string()`.
pub fn key_display(text: &str) -> String {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^(?:\w+::)*[A-Z][A-Za-z]*::[A-Z]{1,2}\((.+)\)$").expect("valid regex")
    });
    let mut t = text.replace('\n', " ").trim().to_string();
    if let Some(c) = re.captures(&t) {
        t = c[1].trim().to_string();
    }
    for suffix in [".into()", ".clone()", ".to_string()", ".to_owned()"] {
        if let Some(r) = t.strip_suffix(suffix) {
            t = r.to_string();
        }
    }
    t
}

/// Appends the API's flaw note and the help for `check` to a finding.
pub fn with_pack_notes(ctx: &CheckCtx, mut f: Finding, check: CheckId, e: &Event) -> Finding {
    if let Some(flaw) = &ctx.api(e).flaw {
        f = f.note(format!("known flaw: {flaw}"));
    }
    f.help(help_for(ctx.packs, e.api, check))
}

/// What to write instead, for a finding of `check` about the API `r`: in
/// the terms of that API's pack, else the check's backend-neutral help.
pub fn help_for(packs: &PackSet, r: crate::pack::ApiRef, check: CheckId) -> String {
    packs
        .help(r, check.as_str())
        .unwrap_or(check.info().help)
        .to_string()
}

/// What a message calls the lock of an event: `` lock `key` ``, or, when the
/// key is not visible, the call itself: `` `SET … NX` on an unnamed key ``.
pub fn subject(ctx: &CheckCtx, e: &Event) -> String {
    match &e.key {
        Some(k) => format!("lock {}", key_name(Some(k))),
        None => format!("`{}` on an unnamed key", call_label(ctx, ctx.api(e), e)),
    }
}

/// An owner check that compares a constant: the owner-checked release or
/// renewal `e` compares a value that is the same on every run, or its lock
/// was taken storing one. Every holder then looks the same to the check.
pub struct ConstantOwner<'a> {
    /// The constant, as a literal (`"1"`, `true`).
    pub value: String,
    /// Where it is written, when that is in this file and not the call
    /// itself.
    pub at: Option<crate::source::Span>,
    /// The acquisition that stores it, when the constant is found there.
    pub stored_by: Option<&'a Event>,
}

pub fn constant_owner<'a>(ctx: &CheckCtx<'a>, e: &'a Event) -> Option<ConstantOwner<'a>> {
    if ctx.api(e).owner_checked != Some(true) {
        return None;
    }
    // An imported wrapper's own value is re-spanned to the call: no label.
    let shown = |o: &crate::model::Owner, call: &Event| (o.span != call.span).then_some(o.span);
    // A compare-and-delete on a constant is also how a cache entry is
    // dropped only while it still holds a known value: on its own, it
    // counts on a lock's key.
    if let Some(o) = e.owner.as_ref().filter(|_| e.lockish) {
        if let Some(value) = &o.constant {
            return Some(ConstantOwner {
                value: value.clone(),
                at: shown(o, e),
                stored_by: None,
            });
        }
    }
    // The lock the release belongs to, when that is certain: taken in the
    // same function, or under the same literal name.
    let a = ctx.acquisition_for(e).filter(|a| {
        a.func == e.func
            || matches!((&a.key, &e.key), (Some(x), Some(y)) if x.literal.is_some() && x.literal == y.literal)
    })?;
    let o = a.owner.as_ref()?;
    Some(ConstantOwner {
        value: o.constant.clone()?,
        at: shown(o, a),
        stored_by: Some(a),
    })
}

/// What to write instead of an owner check on a constant.
const CONSTANT_OWNER_HELP: &str = "store a value no other holder can have when acquiring (a random UUID drawn for each acquisition, kept by the holder) and compare with that one";

/// The finding of an owner-checked release or renewal whose owner value
/// is a constant (see [`constant_owner`]), for `check`. `words` are how
/// the message says it: (`released by comparing its value with`,
/// `release`, `deletes`).
pub fn constant_owner_finding(
    ctx: &CheckCtx,
    e: &Event,
    check: crate::checks::CheckId,
    words: (&str, &str, &str),
    note: &str,
) -> Option<crate::finding::Finding> {
    let c = constant_owner(ctx, e)?;
    let (compared, step, verb) = words;
    let lock = subject(ctx, e);
    let message = match c.stored_by {
        None => format!(
            "{lock} is {compared} the constant `{}`: every holder stores the same value, so the check cannot tell this holder from the next",
            c.value
        ),
        Some(_) => format!(
            "{lock} is taken storing the constant `{}`, so the owner check of its {step} cannot tell this holder from the next",
            c.value
        ),
    };
    let mut f = ctx.finding(check, e, message).label(format!(
        "`{}` {verb} the lock whoever holds it now",
        call_label(ctx, ctx.api(e), e)
    ));
    if let Some(at) = c.at {
        f = f.secondary(at, "the same value for every holder");
    }
    if let Some(a) = c.stored_by {
        f = f.secondary(a.span, "every acquisition stores this value");
    }
    Some(f.note(note).help(CONSTANT_OWNER_HELP))
}

/// An expiry set right after an acquisition that had none (`SETNX` then
/// `EXPIRE`): `lock-without-expiry` reports the pair, so the renewal checks
/// leave it alone.
pub fn completes_missing_expiry(ctx: &CheckCtx, e: &Event) -> bool {
    ctx.acquisition_for(e)
        .is_some_and(|a| a.func == e.func && a.expiry == crate::model::ExpiryState::Missing)
}

/// The connection a session- or transaction-scoped SQL lock runs on, as the
/// code shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conn {
    /// A connection pool (`&pool`, `&self.pool`, a `PgPool`): each statement
    /// may go to another connection.
    Pool(String),
    /// A transaction (`&mut *tx`, a `Transaction`): one connection until
    /// commit or rollback.
    Transaction(String),
    /// One pinned connection (`&mut *conn`, a `PoolConnection`, a client).
    Pinned(String),
    /// Not visible, or built inline (`&mut *pool.acquire().await?`).
    Unknown,
}

impl Conn {
    /// The variable the connection is held in: `tx` for `&mut *tx`,
    /// `pool` for `&self.pool`.
    pub fn var(&self) -> Option<&str> {
        let (Conn::Pool(t) | Conn::Transaction(t) | Conn::Pinned(t)) = self else {
            return None;
        };
        let t = t.trim_start_matches(['&', '*', '(']);
        let t = t
            .strip_prefix("mut")
            .unwrap_or(t)
            .trim_start_matches(['*', '(']);
        t.split(['.', ')']).rfind(|s| !s.is_empty() && *s != "self")
    }
}

/// Methods that run a SQL statement on an executor, in sqlx, diesel,
/// tokio-postgres, postgres, mysql and mysql_async.
const EXEC_METHODS: &[&str] = &[
    "execute",
    "execute_many",
    "execute_unprepared",
    "fetch",
    "fetch_one",
    "fetch_optional",
    "fetch_all",
    "fetch_many",
    "get_result",
    "get_results",
    "load",
    "first",
    "query",
    "query_one",
    "query_opt",
    "query_raw",
    "query_first",
    "query_drop",
    "query_iter",
    "query_all",
    "exec",
    "exec_drop",
    "exec_first",
    "exec_iter",
    "batch_execute",
    "simple_query",
];

/// The connection of a SQL lock call: the executor argument of
/// `.execute(&pool)` / `.fetch_one(&mut *conn)`, or the receiver of
/// `pool.execute("SELECT …")` / `client.query_one("SELECT …", ..)`,
/// classified by its declared type (when the function or a struct of the
/// file declares one) and else by its name.
pub fn connection_of(ctx: &CheckCtx, e: &Event) -> Conn {
    let text = ctx
        .src
        .text
        .get(e.chain_span.start.offset..e.chain_span.end.offset);
    let mut executor = text
        .and_then(|t| syn::parse_str::<syn::Expr>(t).ok())
        .and_then(|x| executor_of(&x));
    if executor.is_none() {
        // A Rust function of the query DSL (`diesel::select(pg_advisory_lock(id))`)
        // sits inside the statement: its executor follows it.
        executor = executor_after(&ctx.src.text, e.chain_span.end.offset);
    }
    match executor {
        Some(x) => classify_conn(ctx, e, &x),
        None => Conn::Unknown,
    }
}

fn strip_expr(mut x: &syn::Expr) -> &syn::Expr {
    loop {
        x = match x {
            syn::Expr::Await(a) => &a.base,
            syn::Expr::Try(t) => &t.expr,
            syn::Expr::Paren(p) => &p.expr,
            syn::Expr::Group(g) => &g.expr,
            _ => return x,
        }
    }
}

/// The executor of the innermost statement-running method of a chain.
fn executor_of(x: &syn::Expr) -> Option<String> {
    let syn::Expr::MethodCall(m) = strip_expr(x) else {
        return None;
    };
    if let Some(found) = executor_of(&m.receiver) {
        return Some(found);
    }
    if !EXEC_METHODS.iter().any(|n| m.method == n) {
        return None;
    }
    let carries_sql = |a: &syn::Expr| {
        let t = crate::model::keys::compact(a);
        t.contains('"')
            || t.contains("query")
            || t.split("::").last().is_some_and(|s| {
                s.len() > 1
                    && s.chars()
                        .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
            })
    };
    if m.args.iter().any(carries_sql) {
        Some(crate::model::keys::compact(&*m.receiver))
    } else {
        m.args.first().map(crate::model::keys::compact)
    }
}

/// `.get_result(conn)`, `.execute(conn)` … after `offset`, in the same
/// statement.
fn executor_after(text: &str, offset: usize) -> Option<String> {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^\s*\.\s*(?:get_result|get_results|execute|first|load)\s*(?:::\s*<[^()]*>)?\s*\(([^()]*)\)")
            .expect("valid regex")
    });
    let rest = text.get(offset..)?;
    // Close the brackets the call sits in, then look at the next method.
    let mut depth = 0i32;
    for (i, c) in rest.char_indices().take(400) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth < 0 {
                    let after = &rest[i + 1..];
                    if let Some(c) = re.captures(after) {
                        let mut s = c[1].to_string();
                        s.retain(|c| !c.is_whitespace());
                        return Some(s);
                    }
                    depth = 0;
                }
            }
            ';' => return None,
            _ => {}
        }
    }
    None
}

fn classify_conn(ctx: &CheckCtx, e: &Event, executor: &str) -> Conn {
    let mut t = executor;
    let mut deref = false;
    loop {
        let before = t;
        t = t.trim_start_matches('&');
        t = t
            .strip_prefix("mut")
            .filter(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
            .unwrap_or(t);
        if let Some(r) = t.strip_prefix('*') {
            deref = true;
            t = r;
        }
        for m in [
            ".as_ref()",
            ".as_mut()",
            ".clone()",
            ".deref()",
            ".deref_mut()",
            ".borrow()",
            ".borrow_mut()",
        ] {
            if let Some(r) = t.strip_suffix(m) {
                t = r;
            }
        }
        if let Some(r) = t.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
            t = r;
        }
        if t == before {
            break;
        }
    }
    // A connection checked out of a pool for this one statement
    // (`&mut *pool.acquire().await?`): it goes back to the pool when the
    // statement ends, holding whatever session lock it took.
    if let Some(pool) = inline_checkout(t) {
        let pooled = declared_type(ctx, e, pool)
            .and_then(|ty| classify_type(&ty, ""))
            .map(|c| matches!(c, Conn::Pool(_)))
            .unwrap_or_else(|| {
                let name = pool.rsplit('.').next().unwrap_or(pool);
                crate::model::lockname::mentions_word(name, "pool")
            });
        return if pooled {
            Conn::Pool(executor.to_string())
        } else {
            Conn::Unknown
        };
    }
    // Any other expression: nothing to say.
    if t.is_empty()
        || !t
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
    {
        return Conn::Unknown;
    }
    let name = t.rsplit('.').next().unwrap_or(t);
    let shown = executor.to_string();
    if let Some(ty) = declared_type(ctx, e, t) {
        if let Some(c) = classify_type(&ty, &shown) {
            return c;
        }
    }
    let has = |ws: &[&str]| {
        ws.iter()
            .any(|w| crate::model::lockname::mentions_word(name, w))
    };
    // A dereferenced guard (`&mut *conn`) is one connection, but `&*pool`
    // (an `Arc<PgPool>`) is still the pool.
    if has(&["tx", "txn", "trx", "transaction", "xact"]) {
        Conn::Transaction(shown)
    } else if has(&["conn", "connection", "client", "session"]) {
        Conn::Pinned(shown)
    } else if has(&["pool", "pools"]) {
        Conn::Pool(shown)
    } else if deref {
        Conn::Pinned(shown)
    } else {
        Conn::Unknown
    }
}

/// `pool` of `pool.acquire().await?`, `self.pool.get().await.unwrap()`,
/// `pool.get_conn().await?`.
fn inline_checkout(t: &str) -> Option<&str> {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^([A-Za-z_][\w.]*)\.(?:acquire|get|get_conn|get_connection|get_owned)\(\)(?:\.await)?(?:\?|\.unwrap\(\)|\.expect\([^()]*\))?$")
            .expect("valid regex")
    });
    re.captures(t).and_then(|c| c.get(1)).map(|m| m.as_str())
}

fn classify_type(ty: &str, shown: &str) -> Option<Conn> {
    // The outer type decides (`Pool<ConnectionManager<PgConnection>>` is a
    // pool); smart pointers and extractors are looked through.
    let mut t = ty.trim();
    loop {
        t = t.trim_start_matches('&').trim_start();
        t = t.strip_prefix("mut ").unwrap_or(t).trim_start();
        let (head, inner) = match t.find('<') {
            Some(i) => (&t[..i], t[i + 1..].strip_suffix('>').unwrap_or(&t[i + 1..])),
            None => (t, ""),
        };
        let name = head.rsplit("::").next().unwrap_or(head).trim();
        match name {
            "Arc" | "Rc" | "Box" | "State" | "Extension" | "Data" | "Cow" if !inner.is_empty() => {
                t = inner;
                continue;
            }
            _ => {}
        }
        let c = if name == "Transaction" || name.ends_with("Transaction") {
            Conn::Transaction(shown.to_string())
        } else if name.ends_with("Pool") {
            Conn::Pool(shown.to_string())
        } else if name.ends_with("Connection")
            || name.ends_with("Conn")
            || name == "Client"
            || name == "Object"
        {
            Conn::Pinned(shown.to_string())
        } else {
            return None;
        };
        return Some(c);
    }
}

/// The declared type of `path` (`pool`, `self.db`, `state.pool`) as written
/// in the source: a parameter or `let` of the enclosing function, else a
/// struct field of the file. A stand-in read from the text until the model
/// carries declared types.
fn declared_type(ctx: &CheckCtx, e: &Event, path: &str) -> Option<String> {
    let name = path.rsplit('.').next()?;
    let f = &ctx.model.fns[e.func];
    let text = &ctx.src.text;
    let in_fn = text.get(f.span.start.offset..f.span.end.offset.min(text.len()))?;
    let re = Regex::new(&format!(
        r"(?:^|[^\w.:])\(?{}\s*\)?\s*:([^:]|$)",
        regex::escape(name)
    ))
    .ok()?;
    let scan = |hay: &str| -> Option<String> {
        for m in re.find_iter(hay) {
            let ty = type_text(&hay[m.end() - 1..]);
            if !ty.is_empty() {
                return Some(ty);
            }
        }
        None
    };
    if path.contains('.') {
        // A field: the struct definitions of the file.
        scan(text)
    } else {
        scan(in_fn)
    }
}

/// The type text at the start of `s`, up to a `,`, `)`, `=`, `;`, `{` or line
/// end outside angle brackets.
fn type_text(s: &str) -> String {
    let mut depth = 0i32;
    let mut out = String::new();
    for c in s.chars().take(200) {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ']' => depth -= 1,
            ')' if depth > 0 => depth -= 1,
            ',' | ')' | '=' | ';' | '{' | '\n' if depth <= 0 => break,
            _ => {}
        }
        out.push(c);
    }
    out.trim().to_string()
}

/// How a finding names the call, reading the source where the pack's shape
/// is a text pattern: `pg_advisory_lock(..)` rather than "the SQL statement".
pub fn call_label(ctx: &CheckCtx, api: &Api, e: &Event) -> String {
    // A wrapper's call is named by the wrapper (`SqlDriver::try_campaign`).
    if let Some(outer) = e.wrapper.as_deref().and_then(|w| w.split(" → ").next()) {
        return format!("{outer}(..)");
    }
    let m = &api.matcher;
    if m.method.is_none() && m.function.is_none() && m.macro_name.is_none() && m.command.is_none() {
        let text = ctx
            .src
            .text
            .get(e.chain_span.start.offset..e.chain_span.end.offset)
            .unwrap_or("");
        for p in &m.text {
            if let Some(found) = p.find(text) {
                let name: String = found
                    .as_str()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let called = found.as_str()[name.len()..].trim_start().starts_with('(');
                match (name.is_empty(), called) {
                    (false, true) => return format!("{name}(..)"),
                    // A statement, not a function: its first word.
                    (false, false) => return format!("{} …", name.to_uppercase()),
                    _ => {}
                }
            }
        }
        // The statement is out of sight (a `match` of SQL strings, a field):
        // name the SQL function the pack's pattern is about.
        if !api.id.contains("lua") {
            if let Some(name) = m.text.first().and_then(|p| pattern_name(p.as_str())) {
                return format!("{name}(..)");
            }
        }
    }
    call_name(api, e)
}

/// The function name a text pattern such as `(?i)\bpg_advisory_lock(_shared)?\s*\(`
/// is about: its first identifier of three or more characters.
fn pattern_name(pattern: &str) -> Option<String> {
    let plain = pattern.replace("(?i)", "").replace("\\b", " ");
    plain
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| w.len() >= 3 && w.chars().next().is_some_and(|c| c.is_ascii_alphabetic()))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_pattern_names_its_sql_function() {
        assert_eq!(
            pattern_name(r"(?i)\bpg_try_advisory_xact_lock(_shared)?\s*\(").as_deref(),
            Some("pg_try_advisory_xact_lock")
        );
        assert_eq!(
            pattern_name(r"(?i)\bget_lock\s*\(").as_deref(),
            Some("get_lock")
        );
        assert_eq!(pattern_name(r"\s*\(").as_deref(), None);
    }

    #[test]
    fn keys_show_without_their_wrapping() {
        assert_eq!(key_display("AttributeValue::S(name.into())"), "name");
        assert_eq!(
            key_display("aws_sdk_dynamodb::types::AttributeValue::N(n.to_string())"),
            "n"
        );
        assert_eq!(
            key_display("PgAdvisoryLockKey::BigInt(42)"),
            "PgAdvisoryLockKey::BigInt(42)"
        );
        assert_eq!(key_display("lock_key.clone()"), "lock_key");
    }
}

/// What the code does with the fencing token of an acquisition's grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenUse {
    /// A token accessor is called on the grant (`lock.header()`).
    Read,
    /// Nothing can read it: the grant is not bound, or only a projection
    /// that drops the token is kept (`.key().to_vec()`), or the binding is
    /// only ever asked for other parts.
    Lost,
    /// The grant goes somewhere the check does not follow (a call, a
    /// return, a field): it may be read there.
    Unknown,
}

/// Most of a function read after a grant for its token's uses, in bytes.
const MAX_TOKEN_SCAN: usize = 64 * 1024;

/// Methods that hand on the reply itself: awaiting, error handling,
/// conversions.
const ADAPTERS: &[&str] = &[
    "await",
    "context",
    "with_context",
    "map_err",
    "unwrap",
    "expect",
    "ok_or",
    "ok_or_else",
    "into",
    "clone",
    "as_ref",
];

/// How the grant of `a` meets its token `accessors` (`header`, `revision`)
/// in the acquisition's own statement and the rest of its function.
pub fn token_use(ctx: &CheckCtx, a: &Event, accessors: &[String]) -> TokenUse {
    let text = &ctx.src.text;
    let is_accessor = |m: &str| accessors.iter().any(|x| x == m);
    // The rest of the acquisition's chain: `.await?.key().to_vec()`,
    // after the matched method's own arguments.
    let call_end = ctx
        .api(a)
        .matcher
        .method
        .as_deref()
        .and_then(|m| {
            let from = a.span.start.offset;
            let chain = text.get(from..a.span.end.offset.max(a.chain_span.end.offset))?;
            let at = chain
                .match_indices(m)
                .map(|(i, _)| i + m.len())
                .find(|&i| chain[i..].trim_start().starts_with(['(', ':']))?;
            let after = skip_group(chain[at..].trim_start());
            Some(from + chain.len() - after.len())
        })
        .unwrap_or(a.span.end.offset);
    let rest = text.get(call_end..).unwrap_or("");
    let chain: Vec<&str> = methods_in(rest).collect();
    // A request built by a fluent builder and sent
    // (`update_item().key(..).send().await`): what comes before the
    // `.await` builds the request, what comes after reads the reply.
    let from = chain
        .iter()
        .position(|m| *m == "await")
        .filter(|&i| !chain[..i].iter().any(|m| is_accessor(m)))
        .unwrap_or(0);
    for &m in &chain[from..] {
        if is_accessor(m) {
            return TokenUse::Read;
        }
        if !ADAPTERS.contains(&m) && !accessors.is_empty() {
            // A projection: what is bound no longer holds the token.
            return TokenUse::Lost;
        }
    }
    if a.binding.is_empty() {
        // Handed back whole by its function: the caller has the token,
        // whether or not the crate calls that function.
        if a.handed_by.is_some() && !a.relayed {
            return TokenUse::Unknown;
        }
        return TokenUse::Lost;
    }
    let f = &ctx.model.fns[a.func];
    // The rest of the function, after the acquisition's statement.
    let start = a
        .span
        .end
        .offset
        .max(a.chain_span.end.offset)
        .min(text.len());
    let end = f.span.end.offset.clamp(start, text.len());
    // Each grant reads at most this much of its function: a hostile
    // function of thousands of grants costs each a bounded scan, and a
    // use beyond it is not ruled out.
    if end - start > MAX_TOKEN_SCAN {
        return TokenUse::Unknown;
    }
    let after = &text[start..end];
    let mut result = TokenUse::Lost;
    for b in &a.binding {
        for (at, _) in after.match_indices(b.as_str()) {
            let bytes = after.as_bytes();
            let before = after[..at].trim_end();
            let word_start = at == 0 || !crate::words::is_ident_byte(bytes[at - 1]);
            let word_end = after[at + b.len()..]
                .bytes()
                .next()
                .is_none_or(|c| !crate::words::is_ident_byte(c));
            if !word_start || !word_end || before.ends_with('.') {
                continue;
            }
            if before.ends_with("let") || before.ends_with("let mut") {
                break; // shadowed from here on
            }
            let next = after[at + b.len()..]
                .trim_start()
                .trim_start_matches('?')
                .trim_start();
            let method = next
                .starts_with('.')
                .then(|| methods_in(next).next())
                .flatten();
            match next.starts_with('.').then_some(method) {
                Some(Some(m)) if is_accessor(m) => return TokenUse::Read,
                Some(Some(m)) if !ADAPTERS.contains(&m) && !accessors.is_empty() => {}
                // A token without accessors is the grant itself.
                _ if accessors.is_empty() => return TokenUse::Read,
                _ => result = TokenUse::Unknown,
            }
        }
    }
    result
}

/// The names of the method calls and fields at the start of a chain's
/// text (`.await?.key().to_vec()` → `await`, `key`, `to_vec`), up to the
/// first thing that is neither.
fn methods_in(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix('?') {
            rest = r;
            continue;
        }
        // Comments between the links of a chain.
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.split_once('\n').map_or("", |(_, after)| after);
            continue;
        }
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |(_, after)| after);
            continue;
        }
        let r = rest.strip_prefix('.')?.trim_start();
        let len = r
            .bytes()
            .take_while(|c| crate::words::is_ident_byte(*c))
            .count();
        if len == 0 {
            return None;
        }
        let (name, tail) = r.split_at(len);
        rest = skip_group(tail.trim_start());
        return Some(name);
    })
}

/// `text` after one balanced `(..)` at its start (with any turbofish before
/// it), or `text` itself.
fn skip_group(text: &str) -> &str {
    let t = match text.strip_prefix("::<") {
        Some(r) => match r.find('>') {
            Some(i) => r[i + 1..].trim_start(),
            None => return "",
        },
        None => text,
    };
    if !t.starts_with('(') {
        return t;
    }
    let mut depth = 0usize;
    for (i, c) in t.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return &t[i + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}
