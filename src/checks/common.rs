//! What every check gets, and helpers shared by several checks.

pub use crate::model::conn::Conn;
pub use crate::model::tokens::TokenUse;
use regex::Regex;

use crate::directives::{Directives, PurposeLookup};
use crate::finding::{Finding, Purpose};
use crate::model::locks::Locks;
use crate::model::{Event, FileModel, Key};
use crate::pack::{Api, PackSet};
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

    /// Every acquisition of the file: the takes, and the writes that take a
    /// lock after a read ([`crate::model::locks::Lock::read_first`]), in source
    /// order.
    pub fn acquisitions(&self) -> impl Iterator<Item = &'a Event> {
        let mut all: Vec<&'a Event> = self
            .locks
            .locks
            .iter()
            .map(|l| &self.model.events[l.take])
            .collect();
        all.sort_by_key(|e| e.span.start.offset);
        all.into_iter()
    }

    /// The read a write of `e`'s key follows (see [`Locks::read_before`]).
    pub fn read_before(&self, e: &Event) -> Option<&'a Event> {
        Locks::read_before(self.model, e)
    }

    /// The acquisition a release, renewal, read or token use belongs to
    /// (the pairing rule is [`Locks`]'s, the same for every check).
    pub fn acquisition_for(&self, e: &Event) -> Option<&'a Event> {
        self.locks.acquisition_for(self.model, e)
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

/// What to write instead of an owner check on a constant.
const CONSTANT_OWNER_HELP: &str = "store a value no other holder can have when acquiring (a random UUID drawn for each acquisition, kept by the holder) and compare with that one";

/// The finding of an owner-checked release or renewal whose owner value
/// is a constant ([`Locks::constant_owner`]), for `check`. `words` are how
/// the message says it: (`released by comparing its value with`,
/// `release`, `deletes`).
pub fn constant_owner_finding(
    ctx: &CheckCtx,
    e: &Event,
    check: crate::checks::CheckId,
    words: (&str, &str, &str),
    note: &str,
) -> Option<crate::finding::Finding> {
    let c = ctx.locks.constant_owner(ctx.model, ctx.packs, e)?;
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

/// The connection of a SQL lock call: see [`crate::model::conn::connection_of`].
pub fn connection_of(ctx: &CheckCtx, e: &Event) -> Conn {
    crate::model::conn::connection_of(ctx.src, ctx.model, e)
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

/// How the grant of `a` meets its token `accessors`: see
/// [`crate::model::tokens::token_use`].
pub fn token_use(ctx: &CheckCtx, a: &Event, accessors: &[String]) -> TokenUse {
    crate::model::tokens::token_use(ctx.src, ctx.model, ctx.api(a), a, accessors)
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
