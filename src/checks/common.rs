//! What every check gets, and helpers shared by several checks.

use regex::Regex;

use crate::directives::{Directives, PurposeLookup};
use crate::finding::{Finding, Purpose};
use crate::model::{Event, FileModel, Key};
use crate::pack::{Api, PackSet, Role};
use crate::source::SourceFile;

use super::CheckId;

/// The purpose lookup of each acquisition, by event id.
#[derive(Debug, Default)]
pub struct Purposes {
    pub lookups: Vec<Option<PurposeLookup>>,
}

/// Everything a check may read about one file.
pub struct CheckCtx<'a> {
    pub src: &'a SourceFile,
    pub model: &'a FileModel,
    pub packs: &'a PackSet,
    pub directives: &'a Directives,
    pub purposes: &'a Purposes,
    pub default_purpose: Option<Purpose>,
    pub lock_name: &'a Regex,
    /// Finds functions of the same crate in other files (fencing only).
    pub resolver: Option<&'a dyn crate::model::resolve::FnResolver>,
}

impl<'a> CheckCtx<'a> {
    pub fn api(&self, e: &Event) -> &'a Api {
        self.packs.api(e.api)
    }

    pub fn lookup(&self, e: &Event) -> &PurposeLookup {
        static NONE: PurposeLookup = PurposeLookup::None;
        self.purposes
            .lookups
            .get(e.id)
            .and_then(Option::as_ref)
            .unwrap_or(&NONE)
    }

    /// The purpose an acquisition is held to: its annotation, else the
    /// configured `default-purpose`. A malformed annotation holds it to none.
    pub fn purpose(&self, e: &Event) -> Option<Purpose> {
        match self.lookup(e) {
            PurposeLookup::Found { purpose, .. } => Some(*purpose),
            PurposeLookup::None => self.default_purpose,
            _ => None,
        }
    }

    /// A finding on an event, with its backend, purpose and item filled in.
    pub fn finding(&self, check: CheckId, e: &Event, message: impl Into<String>) -> Finding {
        // A release, renewal or read carries the purpose of the lock it
        // belongs to.
        let purpose = if matches!(e.role, Role::Acquire | Role::TryAcquire) {
            self.purpose(e)
        } else {
            self.acquisition_for(e).and_then(|a| self.purpose(a))
        };
        Finding::new(check, e.span, message)
            .backend(Some(&e.backend))
            .purpose(purpose)
            .item(&self.model.fns[e.func].qualified)
    }

    /// Acquisitions of the file, in source order.
    pub fn takes(&self) -> impl Iterator<Item = &'a Event> {
        self.model.takes()
    }

    /// The acquisition in the same function that a later event on the same
    /// key belongs to.
    pub fn acquisition_for(&self, e: &Event) -> Option<&'a Event> {
        let key = e.key.as_ref()?;
        self.model
            .fn_events(e.func)
            .filter(|a| matches!(a.role, Role::Acquire | Role::TryAcquire))
            .filter(|a| a.span.start.offset < e.span.start.offset)
            .filter(|a| a.key.as_ref().is_some_and(|k| k.norm == key.norm))
            .last()
            .or_else(|| {
                self.model
                    .takes()
                    .find(|a| a.key.as_ref().is_some_and(|k| k.norm == key.norm))
            })
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
