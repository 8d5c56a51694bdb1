//! What every check gets, and helpers shared by several checks.

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
    /// Finds functions of the same crate in other files (fencing only).
    pub resolver: Option<&'a dyn crate::model::resolve::FnResolver>,
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

    /// A finding on an event, with its backend, purpose and item filled in.
    pub fn finding(&self, check: CheckId, e: &Event, message: impl Into<String>) -> Finding {
        // A release, renewal or read carries the purpose of the lock it
        // belongs to.
        let purpose = self.purpose(e);
        Finding::new(check, e.span, message)
            .backend(Some(&e.backend))
            .purpose(purpose)
            .item(&self.model.fns[e.func].qualified)
    }

    /// Acquisitions of the file, in source order.
    pub fn takes(&self) -> impl Iterator<Item = &'a Event> {
        self.model.takes()
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

/// `` `key` `` for messages, or "the lock" when the key is not visible.
pub fn key_name(key: Option<&Key>) -> String {
    match key {
        Some(k) => {
            let t = k.text.replace('\n', " ");
            if t.chars().count() > 48 {
                let short: String = t.chars().take(45).collect();
                format!("`{short}…`")
            } else {
                format!("`{t}`")
            }
        }
        None => "the lock".to_string(),
    }
}

/// Appends the pack's flaw note and help (if any) to a finding.
pub fn with_pack_notes(mut f: Finding, api: &Api, default_help: &str) -> Finding {
    if let Some(flaw) = &api.flaw {
        f = f.note(format!("known flaw: {flaw}"));
    }
    f.help(api.help.clone().unwrap_or_else(|| default_help.to_string()))
}

/// An expiry set right after an acquisition that had none (`SETNX` then
/// `EXPIRE`): `lock-without-expiry` reports the pair, so the renewal checks
/// leave it alone.
pub fn completes_missing_expiry(ctx: &CheckCtx, e: &Event) -> bool {
    ctx.acquisition_for(e)
        .is_some_and(|a| a.func == e.func && a.expiry == crate::model::ExpiryState::Missing)
}
