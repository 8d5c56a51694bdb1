//! The lock events of one file: what the checks read. Built once per file by
//! `extract.rs`; no syn types survive into it.

use std::collections::{BTreeSet, HashSet};

use crate::finding::Purpose;
use crate::pack::{ApiRef, Role};
use crate::source::Span;

/// How the value of an API call is used by the code around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultUse {
    /// Thrown away: an expression statement, `let _ =`, `let _: () =`,
    /// `.exec()`, `.query::<()>()`. `how` says which.
    Discarded { how: String, propagated: bool },
    /// The error is propagated with `?` but the value is dropped.
    Propagated,
    /// The failure is turned into success or nothing: `.ok()` dropped,
    /// `.unwrap_or(true)`, `.unwrap_or_default()`, `if let Ok(..)` without
    /// an `else`.
    Swallowed { how: String },
    /// `if let Ok(..) = call { .. }` or `if let Some(..)` with no `else`:
    /// the success path is guarded (fine for an acquisition), but a failure
    /// passes silently (a renewal's failure must stop the work).
    IfLetNoElse,
    /// Bound by `let` to a name.
    Bound,
    /// Inspected: a condition, a `match`, returned, passed on.
    Inspected,
}

/// How [`ResultUse::Discarded`] says a statement dropped the value: the
/// drop is where the statement ends.
pub const DROPPED_BY_STATEMENT: &str = "the call is a statement whose value is dropped";

impl ResultUse {
    pub fn is_bound_or_inspected(&self) -> bool {
        matches!(self, ResultUse::Bound | ResultUse::Inspected)
    }
}

/// What the code shows about an acquisition's time to live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpiryState {
    /// A TTL is set; the text of the value when it is visible.
    Set(Option<String>),
    /// The API sets no TTL here.
    Missing,
    /// The server attaches one on its own (with the pack's note).
    Server(Option<String>),
    /// Held by a database session or transaction.
    Session,
    /// The pack does not say.
    Unknown,
}

/// The lock key of an event.
#[derive(Debug, Clone)]
pub struct Key {
    /// Normalised: `&`, `.clone()`, `.as_str()`, `.to_string()` stripped, no spaces.
    pub norm: String,
    /// As written.
    pub text: String,
    pub span: Span,
    /// A string literal's value, or the literal part of a `format!`.
    pub literal: Option<String>,
    /// Built from the holder's own lease id (`format!("/lock/{name}/{:x}",
    /// lease.id())`, as etcd's own lock keys are): no other holder's key
    /// is the same, so deleting it deletes only this holder's lock.
    pub holder_lease: bool,
}

/// The owner value of an event: what an acquisition stores to say who
/// holds the lock, or what an owner-checked release or renewal compares.
#[derive(Debug, Clone)]
pub struct Owner {
    /// Normalised, as [`Key::norm`].
    pub norm: String,
    /// As written.
    pub text: String,
    pub span: Span,
    /// The value, when it is the same on every run: a literal, a `const`
    /// or `static` holding one, or a local bound to one.
    pub constant: Option<String>,
}

/// An event of a file: its index in [`FileModel::events`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EventId(pub u32);

/// A function of a file: its index in [`FileModel::fns`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FnId(pub u32);

/// A condition of a function: its index in [`FnModel::guards`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GuardId(pub u32);

macro_rules! typed_index {
    ($id:ident, $item:ty) => {
        impl $id {
            /// The id of the `i`th item.
            pub fn of(i: usize) -> $id {
                $id(u32::try_from(i).expect("fewer than 4 billion items in a file"))
            }

            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl std::ops::Index<$id> for Vec<$item> {
            type Output = $item;
            fn index(&self, id: $id) -> &$item {
                &self[id.index()]
            }
        }

        impl std::ops::IndexMut<$id> for Vec<$item> {
            fn index_mut(&mut self, id: $id) -> &mut $item {
                &mut self[id.index()]
            }
        }
    };
}

typed_index!(EventId, Event);
typed_index!(FnId, FnModel);
typed_index!(GuardId, Guard);

/// One classified call.
#[derive(Debug, Clone)]
pub struct Event {
    pub id: EventId,
    pub api: ApiRef,
    pub role: Role,
    pub backend: String,
    pub func: FnId,
    /// The smallest span that shows the call (`set_nx(k, v)`, the whole
    /// `cmd("SET")…` builder).
    pub span: Span,
    /// The whole chain expression.
    pub chain_span: Span,
    /// The executor a SQL statement of the chain runs on (`&pool` of
    /// `.execute(&pool)`, the receiver of `client.query_one("…")`), as
    /// written: read from the syntax tree when the call is modelled.
    pub executor: Option<String>,
    /// First line of the innermost statement holding the call.
    pub stmt_line: usize,
    pub key: Option<Key>,
    /// The owner value the call stores or compares (where its pack says).
    pub owner: Option<Owner>,
    /// Literal words of the call (upper case).
    pub words: BTreeSet<String>,
    pub result: ResultUse,
    /// Names bound by the `let` that holds the call.
    pub binding: Vec<String>,
    /// Identifiers mentioned anywhere in the chain (receiver and arguments).
    pub mentions: BTreeSet<String>,
    /// Identifiers in the arguments only (not the receiver).
    pub arg_mentions: BTreeSet<String>,
    pub expiry: ExpiryState,
    /// The expiry in milliseconds, when the call spells it as a constant
    /// (`PX 30_000`, `EX 60`, or a `const` of the file holding one).
    pub ttl_ms: Option<u64>,
    /// Enclosing `if`/`match` conditions, innermost last.
    pub guards: Vec<GuardId>,
    /// The key, binding or enclosing function matches `lock-name-pattern`.
    pub lockish: bool,
    /// Text of the receiver expression.
    pub receiver: String,
    pub purpose: Option<Purpose>,
    /// A call of a wrapper of this file (a function that takes, releases or
    /// renews a lock and hands the outcome back): where each wrapper of the
    /// chain holds its inner call, nearest first. An annotation on that
    /// statement or above that `fn` covers this call when it has none of
    /// its own.
    pub layers: Vec<Layer>,
    /// The purpose a wrapper chain defined in another file states (an
    /// annotation on its lock call or above one of its `fn`s).
    pub chain_purpose: Option<Purpose>,
    /// A call of a wrapper: the lock calls it reaches (the innermost
    /// wrapper of each chain; several for the agreeing implementations of
    /// a trait).
    pub targets: Vec<Origin>,
    /// A call of a wrapper: the wrappers it calls directly.
    pub direct: Vec<Origin>,
    /// The function this event is in hands its outcome back (it is a
    /// wrapper), by the wrapper's key.
    pub handed_by: Option<String>,
    /// Handed back by a wrapper that is called: what is done with the
    /// outcome (its use, the fencing token) is judged at the callers.
    pub relayed: bool,
    /// A lock call inside a wrapper that is called: the call sites that
    /// reach it, where its purpose is stated or missing.
    pub reached: Option<Box<Reached>>,
    /// A command a function of this file builds and this call runs
    /// (`acquire_lock_command(key).query(con)`): where it is built, which
    /// is where the command's own defects are reported.
    pub built_in: Option<Built>,
    /// A call of a wrapper whose owner value is this call's argument: a
    /// constant given here is this caller's choice, reported here.
    pub owner_at_call: bool,
    /// The wrapper called, as its callers reach it (`locks::acquire_lock`,
    /// `Locker::try_take`), outermost first when one wraps another.
    pub wrapper: Option<String>,
    /// A wrapper on the way hands back only whether the lock was won (a
    /// `bool`, or nothing): the grant's token stays inside it.
    pub token_dropped: bool,
    /// A call of a wrapper whose outcome is the value of a closure or an
    /// `async` block (`futures.push(async move { try_lock(..).await })`):
    /// it is handed to whatever runs the future, which the code does not
    /// show, so the critical section is not held here. Set for a wrapper
    /// of the same file only.
    pub escapes: bool,
    /// A lock call handed back by a wrapper every call of which in this
    /// file lets the outcome escape ([`Event::escapes`]): the last place
    /// the outcome is seen, so its fencing is judged here.
    pub outcome_escapes: bool,
}

impl Event {
    /// A call of a wrapper (a function of the crate that reaches a lock
    /// call): what the lock call itself does wrong is reported at that
    /// call, inside the wrapper, not here.
    pub fn through_wrapper(&self) -> bool {
        self.wrapper.is_some()
    }
}

/// Where a command was built, in a function of the file that returns it
/// unexecuted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    pub span: Span,
    /// The builder function (`Type::name` for a method).
    pub item: String,
    pub stmt_line: usize,
    pub fn_line: usize,
}

/// Where a wrapper holds its inner call, for the purpose placement rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layer {
    pub stmt_line: usize,
    pub last_line: usize,
    pub fn_line: usize,
}

/// A wrapper, as a call site names it: its key in the file that defines it
/// (`None`: the file the event is in).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin {
    pub file: Option<String>,
    pub key: String,
}

impl Origin {
    /// The same wrapper, named from anywhere: a file of `None` is `here`.
    pub fn resolved(&self, here: &str) -> Origin {
        Origin {
            file: Some(self.file.clone().unwrap_or_else(|| here.to_string())),
            key: self.key.clone(),
        }
    }
}

/// A place in some file of the crate (a call site of a wrapper).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SiteRef {
    pub path: String,
    pub span: Span,
    /// The key as the call site gives it (`"lock:report"`), when it does.
    pub key: Option<String>,
}

/// A file's wrappers that other files of its crate call, by key.
#[derive(Debug, Clone, Default)]
pub struct CalledElsewhere {
    /// Those some other file calls.
    pub called: HashSet<String>,
    /// Those a call of another file holds the outcome of ([`Event::escapes`]
    /// is false there): the outcome is used, fenced or dropped at that call.
    pub held: HashSet<String>,
}

/// The call sites that reach a lock call inside a wrapper.
#[derive(Debug, Clone, Default)]
pub struct Reached {
    /// Every call site at the end of a chain (the outermost callers).
    pub sites: Vec<SiteRef>,
    /// Those whose chain carries no `lock-purpose:` annotation.
    pub uncovered: Vec<SiteRef>,
    /// The purposes the annotated chains state.
    pub purposes: BTreeSet<Purpose>,
    /// A call site names a lock (`delete_key(con, "lock:report")`): the
    /// lock-name evidence of a helper whose key is a parameter.
    pub lockish: bool,
}

/// What a file says of one call of a wrapper, for the file that defines
/// the lock call it reaches.
#[derive(Debug, Clone)]
pub struct SiteReport {
    /// The lock calls reached (innermost wrappers), files resolved.
    pub targets: Vec<Origin>,
    /// The wrappers called directly, files resolved.
    pub direct: Vec<Origin>,
    /// The wrapper of this file that hands the call's outcome back, if
    /// any: the call is then no end of a chain when that wrapper is called.
    pub handed_by: Option<String>,
    pub at: SiteRef,
    /// An annotation covers the chain from this call.
    pub covered: bool,
    /// The purpose it states (or the configured default).
    pub purpose: Option<Purpose>,
    pub lockish: bool,
}

/// A condition that encloses code (`if c {..}`, `match s {..}`).
#[derive(Debug, Clone)]
pub struct Guard {
    pub span: Span,
    pub mentions: BTreeSet<String>,
    /// Events inside the condition itself.
    pub events: Vec<EventId>,
}

/// `let names = init`.
#[derive(Debug, Clone)]
pub struct LetBinding {
    pub names: Vec<String>,
    pub mentions: BTreeSet<String>,
    pub offset: usize,
}

/// `target = value` or `target.field = value`.
#[derive(Debug, Clone)]
pub struct Assign {
    pub target: String,
    pub mentions: BTreeSet<String>,
    pub offset: usize,
}

/// A call that may go to a function of this file.
#[derive(Debug, Clone)]
pub struct CallSite {
    pub name: String,
    pub method: bool,
    pub args: Vec<BTreeSet<String>>,
    pub receiver: BTreeSet<String>,
    pub span: Span,
    pub offset: usize,
    /// Defined in this file (else: a path call into another file of the crate).
    pub local: bool,
    /// The module the call's path names (`store` of `crate::store::write`),
    /// which chooses between files that define the same name.
    pub module: Option<String>,
    /// A method's receiver type, when declared (`store: &Store` for
    /// `store.write(..)`): the method is that type's, wherever the crate
    /// defines it.
    pub owner: Option<String>,
}

/// A log or print macro and the identifiers it mentions.
#[derive(Debug, Clone)]
pub struct LogUse {
    pub mentions: BTreeSet<String>,
    pub span: Span,
}

/// A function or method body.
#[derive(Debug, Clone, Default)]
pub struct FnModel {
    pub name: String,
    /// `Type::name` for methods, `name` for free functions.
    pub qualified: String,
    pub span: Span,
    /// First line that placement rules treat as the fn's start.
    pub first_line: usize,
    pub params: Vec<String>,
    pub in_drop: bool,
    pub events: Vec<EventId>,
    pub lets: Vec<LetBinding>,
    pub assigns: Vec<Assign>,
    pub calls: Vec<CallSite>,
    pub logs: Vec<LogUse>,
    pub guards: Vec<Guard>,
    /// Calls whose name says they ask whether the lock or leadership is
    /// still held (`is_leader()`, `still_holds(..)`), whoever defines them
    /// ([`asks_if_held`]).
    pub held_checks: Vec<HeldCheck>,
    /// The spans of the function's loops (`loop`, `while`, `for`).
    pub loops: Vec<Span>,
    /// Waits with a constant period: `sleep(Duration::from_secs(20))`, a
    /// `tokio::time::interval(..)` made, and `.tick()` calls.
    pub pauses: Vec<Pause>,
    /// Leases granted with a constant time to live, in milliseconds:
    /// etcd's `client.lease_grant(10, None)`, a Kubernetes Lease's
    /// `lease_duration_seconds: Some(15)` (or `"leaseDurationSeconds": 15`
    /// in a `json!`), kube-leader-election's `lease_ttl: Duration::from_secs(15)`.
    pub lease_ttls: Vec<(Span, u64)>,
    /// It grants a lease whose time to live is not a constant
    /// (`lease_grant(config.ttl, None)`, `lease_duration_seconds:
    /// Some(ttl)`): which lease a renewal keeps is then not known.
    pub lease_ttl_unknown: bool,
}

/// Most waits, leases and "still mine?" checks the model keeps per
/// function, and most loops a function may have for the checks that pace
/// renewals to judge it: a generated or hostile function of thousands
/// would make each renewal cost as much as all of them.
pub const MAX_PACED: usize = 256;

/// A wait of the function ([`FnModel::pauses`]).
#[derive(Debug, Clone)]
pub struct Pause {
    pub span: Span,
    pub kind: PauseKind,
    /// The period in milliseconds (`None` for a tick, and for a period the
    /// code does not spell as a constant).
    pub millis: Option<u64>,
    /// The `if`/`match`/`while` conditions it runs under, innermost last.
    pub guards: Vec<GuardId>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseKind {
    /// `sleep(d)`: waits `d` where it is called.
    Sleep,
    /// `interval(d)` or `interval_at(start, d)`: a timer that ticks every `d`.
    Interval,
    /// `timer.tick()`: waits for the next tick of an interval.
    Tick,
}

/// A call that asks "is it still mine?" ([`asks_if_held`]).
#[derive(Debug, Clone)]
pub struct HeldCheck {
    pub name: String,
    pub span: Span,
}

/// Whether a function's name says it asks whether a lock, a lease or
/// leadership is still held: a question word first (`is`, `am`, `still`,
/// `check`, `verify`, `has`, `holds`, `owns`) and a holder word after it
/// (`leader`, `leadership`, `holder`, `held`, `holds`, `mine`, or `owner`
/// and `ownership` next to `lock` or `lease`), as in `is_leader`,
/// `am_i_leader`, `still_holds_lock`, `verify_lease_ownership`, or
/// `has_lock`. A name of the domain (`is_owner(doc)`, `has_permission`)
/// is not one.
pub fn asks_if_held(name: &str) -> bool {
    const FIRST: [&str; 8] = [
        "is", "am", "still", "check", "verify", "has", "holds", "owns",
    ];
    const HOLDER: [&str; 6] = ["leader", "leadership", "holder", "held", "holds", "mine"];
    let name = name.strip_prefix("r#").unwrap_or(name);
    let mut words = name.split('_').filter(|w| !w.is_empty());
    let Some(first) = words.next() else {
        return false;
    };
    let is = |w: &str, set: &[&str]| set.iter().any(|s| w.eq_ignore_ascii_case(s));
    if !is(first, &FIRST) {
        return false;
    }
    let (mut holder, mut of_lock, mut owner) = (false, false, false);
    for w in words {
        holder |= is(w, &HOLDER);
        of_lock |= is(w, &["lock", "lease"]);
        owner |= is(w, &["owner", "ownership", "still"]);
    }
    holder || (of_lock && (owner || is(first, &["has", "holds", "owns", "still"])))
}

/// Everything the checks know about one file.
#[derive(Debug, Default, Clone)]
pub struct FileModel {
    pub fns: Vec<FnModel>,
    pub events: Vec<Event>,
    /// The file's wrappers: functions that take, release or renew a lock
    /// and hand the outcome back, by name (another file of the crate may
    /// call them).
    pub wrappers: Vec<(String, Wrapper)>,
    /// Names of wrappers this file calls (its own and other files').
    pub wrappers_called: Vec<String>,
    /// Those of them some call holds the outcome of: not only the tail of
    /// a closure or `async` block, which hands it to whatever runs it.
    pub wrappers_held: Vec<String>,
    /// Statement texts (SQL, Lua) its constants and functions hold, by
    /// name, for the other files of the crate.
    pub texts: Vec<(String, Vec<String>)>,
    /// Its type aliases (`type ElectionRef = Arc<dyn Election>;`), for the
    /// other files of the crate, as name and type text.
    pub type_aliases: Vec<(String, String)>,
    /// The line of a statement whose expressions nest deeper than the
    /// extractor walks: the model is incomplete.
    pub too_deep: Option<usize>,
    /// For a file that defines wrappers: the model before their inner
    /// calls were relayed, so that it can be relayed again knowing which
    /// of them other files call ([`crate::model::extract::relayed_again`]).
    pub unrelayed: Option<std::sync::Arc<crate::model::extract::Unrelayed>>,
}

/// A function that takes, releases or renews a lock and hands the outcome
/// back (the success flag, the guard, the reply): each of its calls is a
/// lock site with the inner call's API, expiry and owner check.
#[derive(Clone, Debug)]
pub struct Wrapper {
    /// The function's own name (a caller may import it under another).
    pub name: String,
    /// The inner call's event, as the wrapper's body made it.
    pub inner: Event,
    /// Where every call whose outcome the wrapper hands back starts (the
    /// inner call, and a recursive or second call on another path): none
    /// of them is reported in the wrapper once its callers are.
    pub handed_back: Vec<usize>,
    /// The parameter the inner call's key comes from.
    pub key_param: Option<usize>,
    /// The field of `self` a method's key comes from (`self.key`): at a
    /// call site, that field of the receiver (`job_lock.key`).
    pub key_field: Option<String>,
    /// The parameter the inner call's owner value comes from (the token a
    /// release wrapper compares): at a call site, the argument given.
    pub owner_param: Option<usize>,
    /// The field of `self` the owner value comes from (`self.token`).
    pub owner_field: Option<String>,
    pub fn_line: usize,
    /// Whether the wrapper is defined in an `impl` block (called as
    /// `x.name(..)`, `Type::name(..)` or `Self::name(..)`).
    pub method: bool,
    /// It takes `self`: at a method call (`x.name(a)`) its parameter `i`
    /// is the call's argument `i - 1`; at a path call (`Type::name(x, a)`),
    /// and for an associated function, argument `i`.
    pub has_self: bool,
    /// It returns `()` inside this many `Result`/`Option` layers: the
    /// outcome is an `Err` or `None`, checked once every layer is
    /// unwrapped or `?`-ed.
    pub unit_layers: Option<usize>,
    /// A method's type (`impl Locker { fn acquire(..) }`: `Locker`).
    pub owner: Option<String>,
    /// Defined in another file of the crate.
    pub imported: bool,
    /// The module of that file (`locks` for `src/locks.rs` or
    /// `src/locks/mod.rs`): a call through a path names it.
    pub module: Option<String>,
    /// It returns only a success flag (`bool`, `Result<bool, _>`, `()`):
    /// the inner grant and its token do not reach the caller.
    pub flag_only: bool,
    /// The trait the method implements (`impl Locker for RedisLocker`):
    /// a call on a receiver declared as `dyn Locker`, `impl Locker` or a
    /// generic bounded by `Locker` reaches it.
    pub via_trait: Option<String>,
    /// The lock calls its calls reach: its own key, or, for a wrapper of
    /// another wrapper, that one's targets.
    pub targets: Vec<Origin>,
    /// The file that defines it, once offered to the crate (shown path).
    pub file: Option<String>,
    /// The purpose its annotations state (on the inner call's statement,
    /// above its `fn`, or further down the chain), for callers in other
    /// files.
    pub purpose: Option<Purpose>,
}

impl Wrapper {
    /// What the wrapper is known by in a file: a method as `Type::name`
    /// (two types' methods of one name are two wrappers), a function by its
    /// name.
    pub fn key(&self) -> String {
        Wrapper::key_of(self.owner.as_deref().filter(|_| self.method), &self.name)
    }

    /// The key of a method of `owner` named `name`, or of the function
    /// `name` when there is no owner.
    pub fn key_of(owner: Option<&str>, name: &str) -> String {
        match owner {
            Some(owner) => format!("{owner}::{name}"),
            None => name.to_string(),
        }
    }
}

impl FileModel {
    pub fn fn_events(&self, f: FnId) -> impl Iterator<Item = &Event> {
        self.fns[f].events.iter().map(|&i| &self.events[i])
    }

    pub fn takes(&self) -> impl Iterator<Item = &Event> {
        self.events
            .iter()
            .filter(|e| matches!(e.role, Role::Acquire | Role::TryAcquire))
    }

    pub fn find_fn(&self, name: &str) -> Option<FnId> {
        self.fns.iter().position(|f| f.name == name).map(FnId::of)
    }

    /// Every function with its id.
    pub fn fn_ids(&self) -> impl Iterator<Item = (FnId, &FnModel)> {
        self.fns.iter().enumerate().map(|(i, f)| (FnId::of(i), f))
    }
}
