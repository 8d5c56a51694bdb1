//! The lock lifecycle of one file: each acquisition with its purpose and
//! the releases, renewals, reads and token uses that belong to it. Built
//! once per file, after extraction, by one pairing rule; the checks and
//! `inventory` read it and never pair events themselves. The reads a write
//! or a delete follows (a read-then-write, a compare-then-delete) are
//! paired here too ([`Locks::read_before`], [`Locks::owner_read`]), and so
//! are an owner check's constant ([`Locks::constant_owner`]), a key only
//! its holder has ([`Locks::owned_key`]) and an expiry set after the take
//! ([`Locks::later_renewal`]). Which lock a release with another key
//! misses is paired beside it ([`super::missed_release::OpenLocks`]).
//!
//! The pairing rule, for an event that is not an acquisition:
//! 1. in the same function, the latest earlier acquisition of the same key;
//! 2. else, in the same function, the latest earlier acquisition whose
//!    grant the event names (`unlock(&guard)`, `lease.keep_alive()`), or,
//!    for a release, renewal or token API (never a generic delete or read,
//!    which a cache also does), the one on the same receiver
//!    (`latch.start()` … `latch.stop()`, `client.lock(..)` …
//!    `client.unlock(..)`);
//! 3. else, the first acquisition of the same key anywhere in the file
//!    (a `release` helper beside the `acquire` helper).

use crate::directives::purpose::{lookup, Placement};
use crate::directives::{Directives, PurposeLookup};
use crate::finding::Purpose;
use crate::pack::{PackSet, Role};

use super::{Event, EventId, FileModel, Layer};

/// One acquisition and what belongs to it (event ids, in source order).
#[derive(Debug, Clone)]
pub struct Lock {
    pub take: EventId,
    /// For a lock taken by a read and then a write (the take is the
    /// write): the read (see `Locks::acquiring_write`).
    pub read_first: Option<EventId>,
    /// Where its `lock-purpose:` annotation was found, if anywhere.
    pub lookup: PurposeLookup,
    pub releases: Vec<EventId>,
    pub renewals: Vec<EventId>,
    pub reads: Vec<EventId>,
    pub tokens: Vec<EventId>,
    pub others: Vec<EventId>,
}

/// An owner check that compares a constant ([`Locks::constant_owner`]).
pub struct ConstantOwner<'m> {
    /// The constant, as a literal (`"1"`, `true`).
    pub value: String,
    /// Where it is written, when that is in this file and not the call
    /// itself.
    pub at: Option<crate::source::Span>,
    /// The acquisition that stores it, when the constant is found there.
    pub stored_by: Option<&'m Event>,
}

/// Every lock of a file.
#[derive(Debug, Default)]
pub struct Locks {
    pub locks: Vec<Lock>,
    /// Per event: the lock (index into `locks`) it is or belongs to.
    owner: Vec<Option<usize>>,
    default_purpose: Option<Purpose>,
}

pub(super) fn is_take(e: &Event) -> bool {
    matches!(e.role, Role::Acquire | Role::TryAcquire)
}

impl Locks {
    /// The read a write `e` follows when the two take a lock between them
    /// (a read-then-write acquisition): a read of the same key before it
    /// ([`Locks::read_before`]), on a key that names a lock when the API
    /// is also data access (`GET`, `SET`); a Kubernetes Lease is a lock
    /// whatever it is called. Such a write is an acquisition: it states a
    /// purpose like any other.
    fn acquiring_write<'m>(model: &'m FileModel, packs: &PackSet, e: &Event) -> Option<&'m Event> {
        if e.role != Role::Write || e.through_wrapper() {
            return None;
        }
        let read = Self::read_before(model, e)?;
        (!packs.api(e.api).needs_lock_name || e.lockish || read.lockish).then_some(read)
    }

    pub fn build(
        model: &FileModel,
        packs: &PackSet,
        d: &Directives,
        default_purpose: Option<Purpose>,
    ) -> Locks {
        let mut locks = Vec::new();
        let mut owner = vec![None; model.events.len()];
        let takes = model.takes().map(|e| (e, None));
        let writes = model
            .events
            .iter()
            .filter_map(|e| Some((e, Some(Self::acquiring_write(model, packs, e)?.id))));
        for (e, read_first) in takes.chain(writes) {
            let f = &model.fns[e.func];
            let found = chain_lookup(
                d,
                Layer {
                    // The statement that holds the call; a builder continued
                    // from an earlier `let` is annotated where it runs.
                    stmt_line: e.stmt_line,
                    last_line: e.span.end.line.max(e.stmt_line),
                    fn_line: f.first_line,
                },
                e,
            );
            owner[e.id.index()] = Some(locks.len());
            locks.push(Lock {
                take: e.id,
                read_first,
                lookup: found,
                releases: Vec::new(),
                renewals: Vec::new(),
                reads: Vec::new(),
                tokens: Vec::new(),
                others: Vec::new(),
            });
        }
        let mut set = Locks {
            locks,
            owner,
            default_purpose,
        };
        let mut order: Vec<&Event> = model.events.iter().filter(|e| !is_take(e)).collect();
        order.sort_by_key(|e| e.span.start.offset);
        for e in order {
            // An acquiring write is a lock of its own.
            if set.owner[e.id.index()].is_some() {
                continue;
            }
            let Some(take) = pair(model, e) else {
                continue;
            };
            let Some(l) = set.owner[take.index()] else {
                continue;
            };
            set.owner[e.id.index()] = Some(l);
            let lock = &mut set.locks[l];
            match e.role {
                Role::Release | Role::Delete => lock.releases.push(e.id),
                Role::Renew => lock.renewals.push(e.id),
                Role::Read => lock.reads.push(e.id),
                Role::Token => lock.tokens.push(e.id),
                _ => lock.others.push(e.id),
            }
        }
        set
    }

    /// The latest read of `e`'s key before `e` in the same function: the
    /// first half of a read-then-write; else the same two steps split across
    /// functions of the file (the rule below).
    pub fn read_before<'m>(model: &'m FileModel, e: &Event) -> Option<&'m Event> {
        let key = e.key.as_ref()?;
        let read_of = |r: &Event, before: usize| {
            r.role == Role::Read
                && r.span.start.offset < before
                && r.key.as_ref().is_some_and(|k| k.norm == key.norm)
        };
        if let Some(r) = model
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
        let writer = &model.fns[e.func];
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
        model
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
                    .filter_map(move |c| model.fn_events(g).filter(|r| read_of(r, c.offset)).last())
            })
            .next()
    }

    /// The read of the same key whose result the condition around a
    /// release `e` compares: a compare in Rust, then a separate delete.
    pub fn owner_read<'m>(model: &'m FileModel, e: &Event) -> Option<&'m Event> {
        let key = e.key.as_ref()?;
        let f = &model.fns[e.func];
        model.fn_events(e.func).find(|r| {
            r.role == Role::Read
                && r.span.start.offset < e.span.start.offset
                && r.key.as_ref().is_some_and(|k| k.norm == key.norm)
                && e.guards.iter().any(|&g| {
                    let guard = &f.guards[g];
                    guard.events.contains(&r.id)
                        || r.binding.iter().any(|b| guard.mentions.contains(b))
                })
        })
    }

    /// The acquisition a release, renewal, read or token use belongs to.
    pub fn acquisition_for<'m>(&self, model: &'m FileModel, e: &Event) -> Option<&'m Event> {
        self.lock_of(e.id)
            .filter(|l| l.take != e.id)
            .map(|l| &model.events[l.take])
    }

    /// The owner check of a release or renewal `e` (of an API that checks
    /// the owner) when it compares a constant: a value written in the call
    /// (on a lock's key: a compare-and-delete on a constant is also how a
    /// cache entry is dropped only while it holds a known value), or one
    /// its lock was taken storing, when that lock is certain (taken in the
    /// same function, or under the same literal name). Every holder then
    /// looks the same to the check.
    pub fn constant_owner<'m>(
        &self,
        model: &'m FileModel,
        packs: &PackSet,
        e: &'m Event,
    ) -> Option<ConstantOwner<'m>> {
        if packs.api(e.api).owner_checked != Some(true) {
            return None;
        }
        // An imported wrapper's own value is re-spanned to the call: no label.
        let shown = |o: &super::Owner, call: &Event| (o.span != call.span).then_some(o.span);
        if let Some(o) = e.owner.as_ref().filter(|_| e.lockish) {
            if let Some(value) = &o.constant {
                return Some(ConstantOwner {
                    value: value.clone(),
                    at: shown(o, e),
                    stored_by: None,
                });
            }
        }
        let a = self.acquisition_for(model, e).filter(|a| {
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

    /// Whether a release deletes a key only this holder can have: one built
    /// from its own lease id, or one an earlier call of the same function
    /// returned as its own (the path of its sequential node).
    pub fn owned_key(model: &FileModel, packs: &PackSet, e: &Event) -> bool {
        let Some(key) = &e.key else { return false };
        if key.holder_lease {
            return true;
        }
        model.fn_events(e.func).any(|a| {
            a.span.start.offset < e.span.start.offset
                && packs.api(a.api).returns_owned_key
                && a.binding.contains(&key.norm)
        })
    }

    /// The first renewal of `take`'s key after it in the same function: an
    /// expiry set by a separate command (`SETNX` then `EXPIRE`).
    pub fn later_renewal<'m>(model: &'m FileModel, take: &Event) -> Option<&'m Event> {
        let key = take.key.as_ref()?;
        model.fn_events(take.func).find(|x| {
            x.role == Role::Renew
                && x.span.start.offset > take.span.start.offset
                && x.key.as_ref().is_some_and(|k| k.norm == key.norm)
        })
    }

    /// The lock an event is or belongs to.
    pub fn lock_of(&self, event: EventId) -> Option<&Lock> {
        self.owner
            .get(event.index())
            .copied()
            .flatten()
            .map(|l| &self.locks[l])
    }

    /// The first release of the lock an acquisition takes: its own, else
    /// that of a later acquisition of the same key in the same function
    /// (a lock taken twice and released once).
    pub fn release_for(&self, model: &FileModel, take: EventId) -> Option<EventId> {
        let lock = self.lock_of(take)?;
        if let Some(&r) = lock.releases.first() {
            return Some(r);
        }
        let e = &model.events[take];
        let key = e.key.as_ref()?;
        self.locks
            .iter()
            .filter(|l| l.take > take)
            .filter(|l| {
                let a = &model.events[l.take];
                a.func == e.func && a.key.as_ref().is_some_and(|k| k.norm == key.norm)
            })
            .find_map(|l| l.releases.first().copied())
    }

    /// Where the annotation of an acquisition was found.
    pub fn lookup(&self, take: EventId) -> &PurposeLookup {
        static NONE: PurposeLookup = PurposeLookup::None;
        match self.lock_of(take) {
            Some(l) if l.take == take => &l.lookup,
            _ => &NONE,
        }
    }

    /// The purpose an event is held to: its lock's annotation, else the
    /// configured `default-purpose`. A malformed annotation holds it to none.
    pub fn purpose(&self, event: EventId) -> Option<Purpose> {
        let lock = self.lock_of(event)?;
        match &lock.lookup {
            PurposeLookup::Found { purpose, .. } | PurposeLookup::Inherited { purpose } => {
                Some(*purpose)
            }
            PurposeLookup::None => self.default_purpose,
            _ => None,
        }
    }
}

/// The annotation that covers a call at `at`: the nearest on its own
/// statement or above its `fn`, else on each wrapper of this file the call
/// goes through, nearest first (the wrapper's inner statement, then the
/// wrapper `fn`), else the purpose the chain states in another file.
pub fn chain_lookup(d: &Directives, at: Layer, e: &Event) -> PurposeLookup {
    for l in std::iter::once(&at).chain(&e.layers) {
        let found = lookup(
            &d.annotations,
            &d.lexed,
            &Placement {
                stmt_line: l.stmt_line,
                last_line: l.last_line,
                fn_line: Some(l.fn_line),
            },
        );
        if found != PurposeLookup::None {
            return found;
        }
    }
    match e.chain_purpose {
        Some(purpose) => PurposeLookup::Inherited { purpose },
        None => PurposeLookup::None,
    }
}

/// The acquisition an event belongs to, by the rule in the module docs.
fn pair(model: &FileModel, e: &Event) -> Option<EventId> {
    let earlier = || {
        model
            .fn_events(e.func)
            .filter(|a| is_take(a) && a.span.start.offset < e.span.start.offset)
    };
    let same_key = |a: &Event| matches!((&a.key, &e.key), (Some(x), Some(y)) if x.norm == y.norm);
    if e.key.is_some() {
        if let Some(a) = earlier().filter(|a| same_key(a)).last() {
            return Some(a.id);
        }
    }
    let names_grant = |a: &Event| a.binding.iter().any(|b| e.mentions.contains(b));
    let lock_api = matches!(e.role, Role::Release | Role::Renew | Role::Token);
    let same_object = |a: &Event| lock_api && !a.receiver.is_empty() && a.receiver == e.receiver;
    if let Some(a) = earlier()
        .filter(|a| names_grant(a) || same_object(a))
        .last()
    {
        return Some(a.id);
    }
    if e.key.is_some() {
        return model.takes().find(|a| same_key(a)).map(|a| a.id);
    }
    None
}
