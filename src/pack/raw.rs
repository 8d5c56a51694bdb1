//! The rule-pack file format, exactly as written in YAML. Every field is
//! documented here; these doc comments become `rules/schema.json`. Nothing
//! outside `pack/` sees these types: `compile.rs` validates them into
//! [`super::Pack`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A rule pack: what lockaudit knows about one lock backend.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawPack {
    /// Short backend name shown in findings and the inventory (`redis`, `etcd`).
    pub backend: String,
    /// One sentence on what the pack covers.
    pub description: String,
    /// Crate names (as written in `use` paths: `redis`, `etcd_client`). An
    /// import or a path starting with one of them is evidence that a file
    /// talks to this backend; APIs with `evidence: crate` need it.
    #[serde(default)]
    pub crates: Vec<String>,
    /// Whether the backend keeps the lock record behind consensus (etcd,
    /// ZooKeeper, Consul): false for single-node Redis and Redlock, whose
    /// failover can grant one lock twice.
    pub consensus: bool,
    /// Why the backend lacks consensus; shown by `non-consensus-correctness-lock`.
    #[serde(default)]
    pub consensus_note: Option<String>,
    /// Words that any text an API of this pack matches by `text` alone
    /// must contain, each starting a word (`pg_advisory` in
    /// `SELECT pg_advisory_lock`, not in `my_pg_advisory`). Such text is a
    /// string value, so a word counts inside a string literal of the file:
    /// a file that spells none there is never parsed for those APIs.
    /// Method, function, macro and command names are used as they are.
    #[serde(default)]
    pub trigger_words: Vec<String>,
    /// Methods that throw a reply away (redis-rs `exec`, `exec_async`): an API
    /// call chain ending in one discards its result. Applies to every API of
    /// the pack, in addition to the API's own `discard-methods`.
    #[serde(default)]
    pub discard_methods: Vec<String>,
    /// Methods that add to a command builder in place and hand the same
    /// builder back (redis-rs `arg`, `cmd` on a `&mut Cmd` or `Pipeline`):
    /// a statement `cmd.arg(k).arg("NX");` on a builder held in a local
    /// extends that builder, and the command is judged where it runs.
    #[serde(default)]
    pub builder_methods: Vec<String>,
    /// Traits (or types) whose methods code may call through their path,
    /// `Trait::method(receiver, args)` (redis-rs `Commands::del(con, k)`):
    /// such a call is matched as `receiver.method(args)`. Only these names:
    /// `TxnOp::put(k, v, None)` is a constructor, not a method of `k`.
    #[serde(default)]
    pub traits: Vec<String>,
    /// What to write instead, per check id (`unowned-release: "…"`), in this
    /// backend's own terms: quoted in findings about this pack's APIs that
    /// have no help of their own for that check. A check without one here
    /// gets a backend-neutral sentence.
    #[serde(default)]
    pub help: std::collections::BTreeMap<String, String>,
    /// The API shapes, most specific first: the first matching entry wins.
    pub apis: Vec<RawApi>,
}

/// One API shape and what it means.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawApi {
    /// Unique id within the pack, e.g. `redis.set-nx-px`.
    pub id: String,
    /// The library the shape belongs to (`redis-rs`, `fred`, `rslock`).
    #[serde(default)]
    pub library: Option<String>,
    /// What the call does to a lock.
    pub role: Role,
    /// How to recognise the call in source.
    #[serde(rename = "match")]
    pub matcher: RawMatch,
    /// Where the lock key (name, resource) is; tried in order.
    #[serde(default)]
    pub key: Vec<RawKey>,
    /// Where the owner value is, tried in order: the value an acquisition
    /// stores to say who holds the lock, or the value an owner-checked
    /// release or renewal compares with the stored one. A constant there
    /// (`"1"`, `true`, a `const` holding a literal) is the same for every
    /// holder, so the owner check tells none of them apart.
    #[serde(default)]
    pub owner: Vec<RawKey>,
    /// The acquire (or renewal) is one server-side check-and-set, so two
    /// clients cannot both win.
    #[serde(default)]
    pub atomic: Option<bool>,
    /// Release or renewal succeeds only if the caller still holds the lock,
    /// checked in the same atomic step.
    #[serde(default)]
    pub owner_checked: Option<bool>,
    /// How the acquisition gets a time to live.
    #[serde(default)]
    pub expiry: Option<RawExpiry>,
    /// Whether the grant hands back a monotonic fencing token.
    #[serde(default)]
    pub token: Option<RawToken>,
    /// What the call's result says.
    #[serde(default)]
    pub result: Option<ResultKind>,
    /// Methods that, later in the same chain, discard the result (`execute`
    /// on a `pg_try_advisory_lock` query drops the boolean).
    #[serde(default)]
    pub discard_methods: Vec<String>,
    /// The shape is also used for data that is not a lock (GET, SET, DEL):
    /// it only counts when the key, the binding or the enclosing function
    /// matches `lock-name-pattern`.
    #[serde(default)]
    pub needs_lock_name: bool,
    /// Overrides the pack's `consensus` for this API.
    #[serde(default)]
    pub consensus: Option<bool>,
    /// The lock lives as long as a database session (or transaction): no TTL
    /// is needed, but acquire and release must run on the same connection.
    #[serde(default)]
    pub scope: Option<Scope>,
    /// The grant is a guard whose `Drop` gives the lock back, checked by
    /// owner (rlock, redlock's `acquire`, zookeeper-client's `LockClient`,
    /// sqlx's `PgAdvisoryLockGuard`): the inventory reports the release as
    /// owner-checked even when no explicit release call is visible.
    #[serde(default)]
    pub released_on_drop: bool,
    /// The call also renews the lock when its caller already holds it
    /// (kube-leader-election's `try_acquire_or_renew`): a loop that calls it
    /// again is the lock's renewal loop, paced against the lock's time to
    /// live. Only on an acquire or try-acquire api.
    #[serde(default)]
    pub renews: bool,
    /// The call returns a key no other holder can have (the path of an
    /// ephemeral-sequential node): a release of the key bound to its result
    /// deletes only this holder's lock, so it is owner-specific.
    #[serde(default)]
    pub returns_owned_key: bool,
    /// A known flaw of this library, quoted in findings about it.
    #[serde(default)]
    pub flaw: Option<String>,
    /// What to write instead, quoted in findings about this API: one text
    /// for every check, or a text per check id (`lock-without-expiry: "…"`).
    #[serde(default)]
    pub help: Option<RawHelp>,
}

/// An API's help: one text, or one per check id.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawHelp {
    /// Quoted in findings of every check about this API.
    All(String),
    /// Quoted in findings of the named checks only.
    PerCheck(std::collections::BTreeMap<String, String>),
}

/// What a call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Takes a lock and waits (or errors) until it has it.
    Acquire,
    /// Takes a lock if it is free; the result says whether it won.
    TryAcquire,
    /// Gives a lock back.
    Release,
    /// Extends a lock's lease or TTL.
    Renew,
    /// Reads a key that may be a lock (GET, EXISTS, a lease `get`).
    Read,
    /// Writes a key unconditionally (SET without NX, SETEX, a plain `put`).
    Write,
    /// Deletes a key (DEL, UNLINK, `delete_item`).
    Delete,
    /// Returns the fencing token of a grant (`Lease::token()`).
    Token,
    /// Mints a counter in a separate step (`INCR fence`): not a fencing token
    /// when it happens after the grant.
    Mint,
    /// Asks whether the lock is still held (`is_held()`, `lease_state()`).
    OwnershipCheck,
    /// A write to a protected resource that checks nothing.
    Effect,
    /// A write that the resource checks against a version or token.
    FencedEffect,
}

impl Role {
    /// Whether a call of this role only matters next to a lock taken
    /// elsewhere (an effect, a mint, a token read, an ownership check): on
    /// its own it leads to no finding.
    pub fn is_context(self) -> bool {
        matches!(
            self,
            Role::Effect | Role::FencedEffect | Role::Mint | Role::Token | Role::OwnershipCheck
        )
    }

    /// Whether a call of this role takes, releases or renews a lock (or
    /// deletes a key): an outcome a wrapper can hand to its caller.
    pub fn is_lock_outcome(self) -> bool {
        matches!(
            self,
            Role::Acquire | Role::TryAcquire | Role::Release | Role::Delete | Role::Renew
        )
    }
}

/// How to recognise a call. Every given field must match.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawMatch {
    /// Method-call name: `set_nx` matches `con.set_nx(k, v)`.
    #[serde(default)]
    pub method: Option<String>,
    /// Path call, matched on its last segments: `PgAdvisoryLock::new`
    /// matches `sqlx::postgres::PgAdvisoryLock::new(..)`.
    #[serde(default)]
    pub function: Option<String>,
    /// Macro name: `query` matches `sqlx::query!(..)`.
    #[serde(default, rename = "macro")]
    pub macro_name: Option<String>,
    /// Redis command word (any case) as built by `cmd("SET")`,
    /// `pipe().cmd("SET")` or `Cmd::new().arg("SET")`.
    #[serde(default)]
    pub command: Option<String>,
    /// Exact number of arguments of the matched call.
    #[serde(default)]
    pub args: Option<usize>,
    /// Words that must all appear in the call and the chain after it: string
    /// literals (any case) and the last segment of paths such as
    /// `SetExpiry::PX` or `PutMode::Update`.
    #[serde(default)]
    pub words: Vec<String>,
    /// At least one of these words must appear.
    #[serde(default)]
    pub any_words: Vec<String>,
    /// None of these words may appear.
    #[serde(default)]
    pub no_words: Vec<String>,
    /// Methods that must all appear in the chain (builder steps such as
    /// `condition_expression`).
    #[serde(default)]
    pub chain: Vec<String>,
    /// Methods that must not appear in the chain.
    #[serde(default)]
    pub no_chain: Vec<String>,
    /// Regexes that the chain's string text must all match: its string
    /// literals, and the text of a `const`, `static` or `let` it names (SQL
    /// statements, Lua scripts).
    #[serde(default)]
    pub text: Vec<String>,
    /// Regexes that the chain's string text must not match.
    #[serde(default)]
    pub no_text: Vec<String>,
    /// Regex the receiver expression must match (`(?i)lease|lock`).
    #[serde(default)]
    pub receiver: Option<String>,
    /// With `receiver`: a regex over the strings the receiver holds (its
    /// local's initialiser, or what the file stores in its field), that
    /// matches the call when the receiver's text does not: an
    /// `Api<DynamicObject>` built for `coordination.k8s.io` is a Lease API.
    #[serde(default)]
    pub receiver_strings: Option<String>,
    /// Fields that the call's arguments must all set: a struct-literal field
    /// (`acquire` in `CreateOrUpdateKeyRequest { acquire: &sid, .. }`) or a
    /// builder method (`acquire` in `SetKeyRequest::builder().acquire(sid)`).
    /// A field set to `None` does not count. Arguments held in a local
    /// variable are followed to its initialiser.
    #[serde(default)]
    pub fields: Vec<String>,
    /// Fields that the call's arguments must not set (same rules as `fields`).
    #[serde(default)]
    pub no_fields: Vec<String>,
    /// Fields that the call's arguments must all set to nothing: `None`,
    /// `""`, JSON `null` in a `json!` object, or a JSON Patch `remove` of
    /// that path (`holderIdentity` cleared by a Lease step-down).
    #[serde(default)]
    pub cleared_fields: Vec<String>,
    /// What else must show the file is about this backend.
    #[serde(default)]
    pub evidence: Option<Evidence>,
    /// Crate names that, for this API only, replace the pack's `crates` as
    /// evidence: one pack can then describe several libraries whose method
    /// names collide (rslock's and redlock's `lock(resource, ttl)`).
    #[serde(default)]
    pub crates: Vec<String>,
}

/// Evidence required besides the call shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Evidence {
    /// The file imports or names one of the pack's `crates` (the default).
    Crate,
    /// The shape alone is distinctive enough.
    None,
}

/// Where the lock key is.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawKey {
    /// Argument index (0-based) of the matched call; with `method`, the
    /// argument of that method (`{ method: item, arg: 1 }` is the value of
    /// `.item("lock_id", value)`).
    #[serde(default)]
    pub arg: Option<usize>,
    /// A later method in the chain whose first argument is the key (`arg`
    /// for `cmd("SET").arg(key)`, `key` for a script invocation, `bind`).
    #[serde(default)]
    pub method: Option<String>,
    /// With `method`: which call of it (0-based), e.g. 2 for the key after
    /// `EVAL`'s script and key count.
    #[serde(default)]
    pub nth: Option<usize>,
    /// A struct-literal field in the arguments (`LockRequest { key, .. }`).
    #[serde(default)]
    pub field: Option<String>,
    /// Argument index (0-based) of the constructor call the chain starts
    /// from: the key of `PgAdvisoryLock::new(key).acquire(conn)`, also when
    /// the constructed value was bound by a `let` earlier in the function.
    #[serde(default)]
    pub root_arg: Option<usize>,
    /// The value a Lua script reads as `ARGV[n]` (1-based): the nth `arg`
    /// of a script invocation (`Script::key(k).arg(token)`), or in an
    /// `EVAL`/`EVALSHA` command the nth argument after its keys (their
    /// count read from the command's literal `numkeys`).
    #[serde(default)]
    pub script_arg: Option<usize>,
    /// The value a SQL statement's nth placeholder (1-based: `$1`, the
    /// first `?`) is given: the nth `.bind(..)`, or the nth element of the
    /// parameter list beside the statement (`&[&name, &me]`,
    /// `vec![Value::from(name), ..]`, also in a call inside the arguments
    /// such as `Statement::from_sql_and_values(backend, sql, values)`).
    #[serde(default)]
    pub param: Option<usize>,
    /// A call inside the arguments, also in a local an argument passes on:
    /// the key is its argument `arg` (0 unless given). `{ call: version }`
    /// reads the key of a transaction from its `Compare::version(key, ..)`.
    #[serde(default)]
    pub call: Option<String>,
}

/// How an acquisition gets its time to live.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawExpiry {
    /// Where the TTL comes from.
    pub from: ExpirySource,
    /// With `from: words`: any of these words sets a TTL (`EX`, `PX`).
    #[serde(default)]
    pub words: Vec<String>,
    /// With `from: arg`: the argument (0-based) that holds the TTL; a literal
    /// `None` there means no TTL.
    #[serde(default)]
    pub arg: Option<usize>,
    /// With `from: field`: the struct-literal field that holds the TTL.
    #[serde(default)]
    pub field: Option<String>,
    /// With `from: methods`: builder methods that set a TTL (`with_lease`, `ttl`).
    #[serde(default)]
    pub methods: Vec<String>,
    /// With `from: text`: regexes, any of which matching the chain's string
    /// text (an attribute name, a SQL column) shows that a TTL is stored.
    #[serde(default)]
    pub text: Vec<String>,
    /// Shown when the expiry needs explaining (etcd `lock(name, None)`).
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ExpirySource {
    /// A TTL word among the chain's words (`"PX"`, `SetExpiry::EX`).
    Words,
    /// An argument of the call.
    Arg,
    /// A struct-literal field.
    Field,
    /// A builder method in the chain.
    Methods,
    /// The chain's string text (a DynamoDB item's expiry attribute).
    Text,
    /// The server attaches a lease on its own.
    Server,
    /// Held by the database session or transaction; no TTL needed.
    Session,
    /// The API always sets one (library-managed lease).
    Always,
    /// The API never sets one.
    Never,
}

/// Whether a grant carries a fencing token.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawToken {
    pub kind: TokenKind,
    /// Methods or fields on the grant that yield the token (`revision`,
    /// `create_revision`, `rev`, `token`).
    #[serde(default)]
    pub accessors: Vec<String>,
    /// Shown in fencing findings (what the value is, known flaws).
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TokenKind {
    /// Strictly increasing across successive holders: a fencing token.
    Monotonic,
    /// A random owner value: proves who holds the lock, orders nothing.
    OwnerId,
    /// Nothing comes back.
    None,
}

/// What the call's result says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ResultKind {
    /// The value says whether the lock was won (SET NX reply, `Option`,
    /// `bool`): it must be inspected, `?` alone is not enough.
    SuccessFlag,
    /// `Result` of a guard or response: `?` is enough, dropping the error is not.
    Guard,
    /// Nothing worth inspecting.
    Unit,
    /// The call runs the protected code itself (a closure or future it is
    /// handed: `lock_across(.., || ..)`, `DLock::with`) and only when the
    /// lock is won: there is no result to inspect.
    Closure,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Held by the database session (`pg_advisory_lock`, `GET_LOCK`).
    Session,
    /// Held until the transaction ends (`pg_advisory_xact_lock`).
    Transaction,
}
