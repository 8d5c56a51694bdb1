//! `unfenced-correctness-lock`: a `correctness` lock whose effects carry no
//! fencing token. The check the tool exists for: a lock only records who
//! acquired last; a paused holder keeps acting after its lease expired, and
//! only a monotonic token issued with the grant and checked at the resource
//! stops its late writes.
//!
//! Data flow, kept deliberately small: the token is any value derived from
//! the acquisition's binding (through `let`s and assignments, struct fields
//! included). Each effect between the acquisition and its release must
//! mention it, or be an API the packs mark as resource-checked. Calls to
//! functions of the same file are followed up to three deep, mapping the
//! tainted arguments onto the callee's parameters.

use std::collections::{BTreeSet, HashMap};

use super::common::{
    call_label, connection_of, help_for, subject, token_use, CheckCtx, Conn, TokenUse,
};
use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Purpose, Severity};
use crate::model::{Event, FileModel, FnId, FnModel};
use crate::pack::{Role, Scope, TokenKind};
use crate::source::Span;

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::UnfencedCorrectnessLock,
    severity: Severity::Error,
    summary: "a `correctness` lock whose effects carry no fencing token",
    docs: include_str!("unfenced_correctness_lock.md"),
    precision: "medium",
    tags: &["distributed-lock", "correctness", "fencing"],
    help: HELP,
    run: Some(run),
};

const HELP: &str = "take a fencing token from the grant and make the resource check it on every write (a version or fence column compared in the write's own condition, a conditional put), or keep this lock for efficiency and protect correctness where the state lives";

/// An effect in the critical section that carries no token.
struct Unfenced {
    span: Span,
    text: String,
}

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    // Judged at the outermost call (the one no called wrapper hands back),
    // over its critical section: that is where the work the lock protects
    // is, and where a token would have to be passed on. A call of a
    // wrapper whose outcome escapes into a closure or future holds no
    // critical section: the lock call is judged inside the wrapper when
    // every call of it in the file lets the outcome escape.
    let judged_here = |a: &Event| (ctx.outcome_here(a) && !a.escapes) || a.outcome_escapes;
    for a in ctx.takes().filter(|a| judged_here(a)) {
        // Judged inside the wrapper, the lock call is held to the purpose
        // its callers state.
        let purpose = if a.outcome_escapes {
            ctx.held_to(a)
        } else {
            ctx.purpose(a)
        };
        if purpose != Some(Purpose::Correctness) {
            continue;
        }
        check_one(ctx, a, out);
    }
}

fn check_one(ctx: &CheckCtx, a: &Event, out: &mut Vec<Finding>) {
    let api = ctx.api(a);
    if api.scope == Some(Scope::Transaction) {
        if let Some(tx) = transaction_of(ctx, a) {
            return check_in_transaction(ctx, a, &tx, out);
        }
    }
    let f = &ctx.model.fns[a.func];
    let kind = api
        .token
        .as_ref()
        .map(|t| t.kind)
        .unwrap_or(TokenKind::None);
    let start = a.span.end.offset;
    let end = release_offset(ctx, a).unwrap_or(usize::MAX);
    let in_section = |off: usize| off >= start && off < end;
    let tainted = taint(f, &a.binding, start);

    // Effects in the critical section and in the local functions it calls.
    let mut unfenced = Vec::new();
    let mut effects = 0usize;
    for e in ctx.model.fn_events(a.func) {
        if !in_section(e.span.start.offset) {
            continue;
        }
        match e.role {
            Role::FencedEffect => effects += 1,
            Role::Effect => {
                effects += 1;
                let carries = kind == TokenKind::Monotonic && !e.mentions.is_disjoint(&tainted);
                if !carries {
                    unfenced.push(Unfenced {
                        span: e.span,
                        text: format!(
                            "`{}` writes without the fencing token",
                            call_label(ctx, ctx.api(e), e)
                        ),
                    });
                }
            }
            _ => {}
        }
    }
    let mut follow = Follow::from(ctx.src.path.clone(), a.func);
    for call in &f.calls {
        if !in_section(call.offset) {
            continue;
        }
        let (n, inner) = follow_call(
            ctx,
            ctx.model,
            &ctx.src.path,
            call,
            &tainted,
            kind,
            &mut follow,
        );
        effects = effects.saturating_add(n);
        if inner > 0 {
            unfenced.push(Unfenced {
                span: call.span,
                text: format!(
                    "`{}` writes without the fencing token ({inner} effect{} inside)",
                    call.name,
                    if inner == 1 { "" } else { "s" }
                ),
            });
        }
    }

    let lock = subject(ctx, a);
    let token_note = api.token.as_ref().and_then(|t| t.note.clone());
    let accessors = api.token.as_ref().map_or(&[][..], |t| &t.accessors[..]);
    // No effect in sight and a token nothing reads: whatever work the lock
    // protects, wherever it runs, it cannot carry the token.
    let token_lost = kind == TokenKind::Monotonic
        && unfenced.is_empty()
        && effects == 0
        && !a.token_dropped
        && token_use(ctx, a, accessors) == TokenUse::Lost;
    let mut finding = match kind {
        TokenKind::Monotonic if token_lost => ctx
            .finding(
                CheckId::UnfencedCorrectnessLock,
                a,
                format!("correctness {lock}: its fencing token is read nowhere, so no work the lock protects can carry it"),
            )
            .label(if a.binding.is_empty() {
                "the grant is not kept, and its token with it".to_string()
            } else {
                format!(
                    "the grant's token (`{}`) is never asked for",
                    accessors.join("`, `")
                )
            })
            .note("no effect of the critical section is visible here; wherever the work happens, a write without the token cannot be told from a stale holder's"),
        TokenKind::Monotonic if unfenced.is_empty() => return,
        TokenKind::Monotonic if a.token_dropped => ctx
            .finding(
                CheckId::UnfencedCorrectnessLock,
                a,
                format!(
                    "correctness {lock}: the wrapper hands back only whether it was won, so no effect in the critical section can carry its fencing token"
                ),
            )
            .label(format!(
                "`{}` returns a success flag: the grant and its token stay inside it",
                a.wrapper.as_deref().and_then(|w| w.split(" → ").next()).unwrap_or("the wrapper")
            ))
            .note("return the grant (or its revision) from the wrapper, and pass it to every write the lock protects"),
        TokenKind::Monotonic if a.binding.is_empty() => ctx
            .finding(
                CheckId::UnfencedCorrectnessLock,
                a,
                format!("correctness {lock} is never asked for its fencing token"),
            )
            .label("the grant is not bound to a name, so its token cannot reach any effect"),
        TokenKind::Monotonic => ctx
            .finding(
                CheckId::UnfencedCorrectnessLock,
                a,
                format!(
                "correctness {lock}: {} effect{} in the critical section carr{} no fencing token",
                unfenced.len(),
                if unfenced.len() == 1 { "" } else { "s" },
                if unfenced.len() == 1 { "ies" } else { "y" },
            ),
            )
            .label("the grant carries a token, but it does not reach the effects"),
        TokenKind::OwnerId | TokenKind::None => ctx
            .finding(
                CheckId::UnfencedCorrectnessLock,
                a,
                format!(
                    "correctness {lock} has no fencing token: {} hands back {}",
                    a.backend,
                    if kind == TokenKind::OwnerId {
                        "only a random owner value, which orders nothing"
                    } else {
                        "nothing a resource could check"
                    }
                ),
            )
            .label(format!(
                "`{}` cannot fence the work it protects",
                call_label(ctx, api, a)
            )),
    };
    // The run of a command a function of the file builds is shown where
    // the command is built, like the command's other findings.
    finding = ctx.where_built(finding, a);
    for u in &unfenced {
        finding = finding.secondary(u.span, u.text.clone());
    }
    if let Some(note) = token_note {
        finding = finding.note(note);
    }
    // A counter minted in a separate step after the grant.
    if let Some(m) = ctx
        .model
        .fn_events(a.func)
        .find(|e| e.role == Role::Mint && in_section(e.span.start.offset))
    {
        finding = finding
            .secondary(m.span, "a counter minted after the grant is not a fence")
            .note("a paused holder can mint later and get the higher number: only a token that comes with the grant, or is minted atomically with it, orders holders");
    }
    // The token reaches only a log line.
    if kind == TokenKind::Monotonic
        && !tainted.is_empty()
        && f.logs
            .iter()
            .any(|l| in_section(l.span.start.offset) && !l.mentions.is_disjoint(&tainted))
    {
        finding = finding.note("the token is only logged: a log line checks nothing");
    }
    // "Is it still mine?" before an effect that carries no token: an
    // ownership check or a read of the lock's own key (a pack's API), or a
    // call whose name asks it (`is_leader()`, `still_holds(..)`).
    let before_unfenced = |span: &Span| {
        in_section(span.start.offset)
            && unfenced
                .iter()
                .any(|u| u.span.start.offset >= span.end.offset)
    };
    let asked = ctx
        .model
        .fn_events(a.func)
        .filter(|e| {
            e.role == Role::OwnershipCheck
                || (e.role == Role::Read
                    && e.key.as_ref().map(|k| &k.norm) == a.key.as_ref().map(|k| &k.norm))
        })
        .map(|e| {
            (
                e.span,
                1,
                "ownership is checked here, before the write".to_string(),
            )
        })
        // A call that names what it asks says it best, at the same place.
        .chain(f.held_checks.iter().map(|c| {
            (
                c.span,
                0,
                format!(
                    "`{}()` asks whether the lock is still held, then the write goes ahead",
                    c.name
                ),
            )
        }))
        .filter(|(span, _, _)| before_unfenced(span))
        .min_by_key(|(span, rank, _)| (span.start.offset, *rank));
    if let Some((span, _, label)) = asked {
        finding = finding.secondary(span, label).note(
            "checking the lock again is not a fence: the holder can pause between the check and the write, and its lease can run out in that gap; only the resource, comparing a token inside the write, closes it",
        );
    }
    if a.outcome_escapes {
        finding = finding.note("every call of the wrapper hands the outcome to a closure or an `async` block, which runs where the code does not show: the lock is judged where its outcome is last seen");
    }
    if effects == 0 && kind != TokenKind::Monotonic {
        finding = finding.note("no effect of the critical section is visible here; wherever the work happens, nothing can reject a stale holder");
    }
    out.push(finding.help(help_for(ctx.packs, a.api, CheckId::UnfencedCorrectnessLock)));
}

/// The transaction a transaction-scoped lock (`pg_advisory_xact_lock`) is
/// taken in, when the code shows one (`&mut *tx` after `pool.begin()`).
fn transaction_of(ctx: &CheckCtx, a: &Event) -> Option<String> {
    match connection_of(ctx, a) {
        c @ Conn::Transaction(_) => c.var().map(str::to_string),
        _ => None,
    }
}

/// A transaction-scoped lock fences the writes of its own transaction: the
/// database ends the lock with the commit, so those writes cannot outlive
/// it. Only writes that run outside the transaction are unfenced.
fn check_in_transaction(ctx: &CheckCtx, a: &Event, tx: &str, out: &mut Vec<Finding>) {
    let outside: Vec<&Event> = ctx
        .model
        .fn_events(a.func)
        .filter(|e| e.role == Role::Effect && e.span.start.offset > a.span.end.offset)
        .filter(|e| !e.mentions.contains(tx))
        .collect();
    // Only the function's own writes are judged: work handed the
    // transaction (`save(&mut tx, ..)`) runs in it, and what other calls
    // write is not followed for such a lock.
    if outside.is_empty() {
        return;
    }
    let api = ctx.api(a);
    let mut f = ctx
        .finding(
            CheckId::UnfencedCorrectnessLock,
            a,
            format!(
                "correctness {} is held by the transaction `{tx}`, but {} effect{} run{} outside it",
                subject(ctx, a),
                outside.len(),
                if outside.len() == 1 { "" } else { "s" },
                if outside.len() == 1 { "s" } else { "" },
            ),
        )
        .label(format!("`{}` is released when `{tx}` ends", call_label(ctx, api, a)));
    for e in &outside {
        f = f.secondary(
            e.span,
            format!(
                "`{}` does not run in `{tx}`",
                call_label(ctx, ctx.api(e), e)
            ),
        );
    }
    out.push(
        f.note("the database ends the lock with the transaction, so writes in that transaction cannot outlive it; a write on another connection can")
            .help(format!("run every protected write through `{tx}` (`.execute(&mut *{tx})`), so that it commits or rolls back together with the lock")),
    );
}

/// Where the acquisition's release happens in the same function.
fn release_offset(ctx: &CheckCtx, a: &Event) -> Option<usize> {
    ctx.model
        .fn_events(a.func)
        .filter(|e| e.role == Role::Release && e.span.start.offset > a.span.end.offset)
        .find(|e| {
            let same_key = matches!((&e.key, &a.key), (Some(k1), Some(k2)) if k1.norm == k2.norm);
            same_key || a.binding.iter().any(|b| e.mentions.contains(b))
        })
        .map(|e| e.span.start.offset)
}

/// Names holding the token: the seeds and everything derived from them.
fn taint(f: &FnModel, seeds: &[String], from: usize) -> BTreeSet<String> {
    let mut t: BTreeSet<String> = seeds.iter().cloned().collect();
    if t.is_empty() {
        return t;
    }
    loop {
        let before = t.len();
        for l in f.lets.iter().filter(|l| l.offset >= from) {
            if !l.mentions.is_disjoint(&t) {
                t.extend(l.names.iter().cloned());
            }
        }
        for asg in f.assigns.iter().filter(|x| x.offset >= from) {
            if !asg.target.is_empty() && !asg.mentions.is_disjoint(&t) {
                t.insert(asg.target.clone());
            }
        }
        if t.len() == before {
            return t;
        }
    }
}

/// Most functions followed from one acquisition, counted each time one is
/// entered without a summary: a hostile crate's web of calls that recurse
/// into each other costs a bounded walk. Calls are otherwise followed as
/// deep as they go.
const MAX_ENTERED: usize = 20_000;

/// The walk of the calls from one critical section: the functions on the
/// way (a call back into one of them adds nothing), and each function's
/// summary by the parameters holding the token, made once.
struct Follow {
    stack: Vec<(String, FnId)>,
    /// (file, function, parameters holding the token) → (effects seen,
    /// effects without the token).
    summaries: HashMap<(String, FnId, Vec<String>), (usize, usize)>,
    /// How often a call back into a function on the way was cut: a
    /// summary made below a cut depends on the way it was reached, and is
    /// not kept.
    cuts: usize,
    entered: usize,
}

impl Follow {
    fn from(path: String, func: FnId) -> Follow {
        Follow {
            stack: vec![(path, func)],
            summaries: HashMap::new(),
            cuts: 0,
            entered: 0,
        }
    }
}

/// Follows a call into a function of this file, or of another file of the
/// crate, and the calls it makes, as deep as they go. Returns (effects
/// seen, effects without the token).
fn follow_call(
    ctx: &CheckCtx,
    model: &FileModel,
    path: &str,
    call: &crate::model::CallSite,
    tainted: &BTreeSet<String>,
    kind: TokenKind,
    follow: &mut Follow,
) -> (usize, usize) {
    let remote;
    let (m, callee, file): (&FileModel, FnId, &str) = match model.find_fn(&call.name) {
        Some(i) if call.local => (model, i, path),
        _ if call.method && call.owner.is_none() => return (0, 0),
        _ => match ctx.fns.and_then(|r| r.resolve(path, call)) {
            Some(found) => {
                remote = found;
                (&*remote.0, remote.1, remote.2.as_str())
            }
            None => {
                // Asked of this file's crate; the index follows further
                // calls from the functions it finds itself.
                if path == ctx.src.path {
                    ctx.asked
                        .borrow_mut()
                        .calls
                        .insert(crate::model::resolve::Wanted::of(call));
                }
                return (0, 0);
            }
        },
    };
    if follow.stack.iter().any(|(p, i)| p == file && *i == callee) {
        follow.cuts += 1;
        return (0, 0);
    }
    let g = &m.fns[callee];
    // Map the call's arguments onto the callee's parameters.
    let params: &[String] = if call.method && g.params.first().map(String::as_str) == Some("self") {
        &g.params[1..]
    } else {
        &g.params
    };
    let mut seeds: Vec<String> = params
        .iter()
        .zip(&call.args)
        .filter(|(_, arg)| !arg.is_disjoint(tainted))
        .map(|(p, _)| p.clone())
        .collect();
    if call.method && !call.receiver.is_disjoint(tainted) {
        seeds.push("self".to_string());
    }
    seeds.sort_unstable();
    let key = (file.to_string(), callee, seeds);
    if let Some(&summary) = follow.summaries.get(&key) {
        return summary;
    }
    if follow.entered >= MAX_ENTERED {
        return (0, 0);
    }
    follow.entered += 1;
    let cuts = follow.cuts;
    follow.stack.push((file.to_string(), callee));
    let inner = taint(g, &key.2, 0);
    let mut effects: usize = 0;
    let mut unfenced: usize = 0;
    for e in m.fn_events(callee) {
        match e.role {
            Role::FencedEffect => effects += 1,
            Role::Effect => {
                effects += 1;
                if kind != TokenKind::Monotonic || e.mentions.is_disjoint(&inner) {
                    unfenced += 1;
                }
            }
            _ => {}
        }
    }
    for c in &g.calls {
        let (n, u) = follow_call(ctx, m, file, c, &inner, kind, follow);
        // Counted once per way to reach them: a call made twice on every
        // level of a deep chain counts far more, so the counts saturate.
        effects = effects.saturating_add(n);
        unfenced = unfenced.saturating_add(u);
    }
    follow.stack.pop();
    if follow.cuts == cuts {
        follow.summaries.insert(key, (effects, unfenced));
    }
    (effects, unfenced)
}

#[cfg(test)]
mod tests {
    use crate::checks::CheckId;
    use crate::config::Settings;
    use crate::engine::Engine;
    use crate::pack::PackSet;

    fn notes(src: &str) -> Vec<String> {
        let packs = PackSet::builtin();
        let settings = Settings::default();
        let only = [CheckId::UnfencedCorrectnessLock];
        let engine = Engine::new(&packs, &settings).only(&only);
        let out = engine.check_bytes("t.rs", src.as_bytes(), false);
        assert_eq!(out.findings.len(), 1, "{:?}", out.findings);
        out.findings[0].notes.clone()
    }

    #[test]
    fn verify_then_act_and_minted_tokens_are_explained() {
        let n = notes(
            r#"
// lock-purpose: correctness — x
fn f(con: &mut redis::Connection, db: &mut postgres::Client, lock_key: &str) -> redis::RedisResult<()> {
    let won: Option<String> = redis::cmd("SET").arg(lock_key).arg("me").arg("NX").arg("PX").arg(1000).query(con)?;
    let fence: i64 = con.incr("fence", 1)?;
    let holder: Option<String> = con.get(lock_key)?;
    db.execute("UPDATE t SET a = 1 WHERE fence < $1", &[&fence]);
    db.execute("UPDATE u SET b = 2", &[]);
    Ok(())
}
"#,
        );
        assert!(n.iter().any(|x| x.contains("not a fence")), "{n:?}");
        assert!(n.iter().any(|x| x.contains("mint later")), "{n:?}");
        assert!(n.iter().any(|x| x.contains("random owner id")), "{n:?}");
    }

    /// Calls are followed as deep as they go, each function summarised
    /// once: sixty levels that each call the next twice (2^60 ways down)
    /// reach the unfenced write at the bottom at once, and a fenced twin
    /// stays silent.
    #[test]
    fn calls_are_followed_as_deep_as_they_go_each_function_once() {
        const LEVELS: usize = 60;
        let chain = |prefix: &str, write: &str| {
            let mut src = String::new();
            for i in 0..LEVELS - 1 {
                src.push_str(&format!(
                    "fn {prefix}{i}(db: &mut postgres::Client, fence: i64) {{\n    {prefix}{n}(db, fence);\n    {prefix}{n}(db, fence);\n}}\n",
                    n = i + 1
                ));
            }
            src.push_str(&format!(
                "fn {prefix}{}(db: &mut postgres::Client, fence: i64) {{\n    {write}\n}}\n",
                LEVELS - 1
            ));
            src
        };
        let entry = |name: &str, first: &str| {
            format!(
                r#"
// lock-purpose: correctness — one writer per row
async fn {name}(client: &mut etcd_client::Client, db: &mut postgres::Client, lease: i64) -> Result<(), etcd_client::Error> {{
    let lock = client.lock("ledger/1", Some(etcd_client::LockOptions::new().with_lease(lease))).await?;
    let fence = lock.header().map(|h| h.revision()).unwrap_or_default();
    {first}0(db, fence);
    client.unlock(lock.key()).await?;
    Ok(())
}}
"#
            )
        };
        let src = format!(
            "{}{}{}{}",
            entry("fenced", "safe"),
            chain(
                "safe",
                r#"db.execute("UPDATE t SET a = 1 WHERE fence < $1", &[&fence]);"#
            ),
            entry("unfenced", "plain"),
            chain("plain", r#"db.execute("UPDATE t SET a = 1", &[]);"#),
        );
        let n = notes(&src);
        assert!(!n.is_empty());
        let packs = PackSet::builtin();
        let settings = Settings::default();
        let only = [CheckId::UnfencedCorrectnessLock];
        let engine = Engine::new(&packs, &settings).only(&only);
        let out = engine.check_bytes("t.rs", src.as_bytes(), false);
        let line = src
            .lines()
            .position(|l| l.contains("plain0(db, fence)"))
            .unwrap()
            + 1;
        let f = &out.findings[0];
        assert!(
            f.labels
                .iter()
                .any(|l| l.span.start.line == line && l.message.contains("`plain0` writes without")),
            "{:?}",
            f.labels
        );
    }

    /// "Is it still mine?" before a write is named, with the call that
    /// asks, however it is spelled; a check after the write, or a question
    /// about the domain, adds nothing.
    #[test]
    fn a_check_before_the_write_is_named_as_no_fence() {
        let src = include_str!("../../fixtures/checks/unfenced-correctness-lock/check_then_act.rs");
        let packs = PackSet::builtin();
        let settings = Settings::default();
        let only = [CheckId::UnfencedCorrectnessLock];
        let engine = Engine::new(&packs, &settings).only(&only);
        let out = engine.check_bytes("t.rs", src.as_bytes(), false);
        let line_of = |needle: &str| src.lines().position(|l| l.contains(needle)).unwrap() + 1;
        let named = |f: &crate::finding::Finding| {
            f.notes.iter().any(|n| n.contains("not a fence")).then(|| {
                f.labels
                    .iter()
                    .map(|l| l.message.clone())
                    .collect::<Vec<_>>()
                    .join(" | ")
            })
        };
        let by_line: std::collections::HashMap<usize, Option<String>> = out
            .findings
            .iter()
            .map(|f| (f.span.start.line, named(f)))
            .collect();
        for (lock, asks) in [
            ("lock:renumber", Some("`is_leader()`")),
            ("lock:ledger\").arg(me)", Some("still_holds_lock")),
            ("lock:export", Some("`am_i_leader()`")),
            ("lock:late", None),
            ("lock:doc", None),
        ] {
            let line = line_of(lock);
            let got = by_line
                .get(&line)
                .unwrap_or_else(|| panic!("no finding at {line}: {by_line:?}"));
            match (asks, got) {
                // Named once, however often its statement is walked.
                (Some(a), Some(labels)) => {
                    assert_eq!(labels.matches(a).count(), 1, "{lock}: {labels}")
                }
                (None, None) => {}
                _ => panic!("{lock}: expected {asks:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn names_that_ask_whether_the_lock_is_still_held() {
        use crate::model::asks_if_held;
        for name in [
            "is_leader",
            "am_i_leader",
            "still_holds_lock",
            "verify_lease_ownership",
            "has_lock",
            "is_lock_held",
            "check_leadership",
            "is_still_holder",
            "r#is_leader",
        ] {
            assert!(asks_if_held(name), "{name}");
        }
        for name in [
            "is_owner",
            "has_permission",
            "is_locked",
            "check_balance",
            "is_leaf",
            "leader",
            "holds",
            "verify_signature",
            "lock_holder_name",
        ] {
            assert!(!asks_if_held(name), "{name}");
        }
    }

    #[test]
    fn a_token_that_is_only_logged_is_explained() {
        let n = notes(
            r#"
// lock-purpose: correctness — x
async fn f(client: &mut etcd_client::Client, db: &sqlx::PgPool) -> Result<(), etcd_client::Error> {
    let lock = client.lock("l", None).await?;
    let rev = lock.header().unwrap().revision();
    tracing::info!(rev, "locked");
    sqlx::query("UPDATE t SET a = 1").execute(db).await;
    Ok(())
}
"#,
        );
        assert!(n.iter().any(|x| x.contains("only logged")), "{n:?}");
    }
}
