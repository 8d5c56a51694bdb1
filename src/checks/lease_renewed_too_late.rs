//! `lease-renewed-too-late`: a renewal loop whose period is not comfortably
//! below the lock's time to live, so one late or failed renewal lets the
//! lock expire while its holder works.
//!
//! Evidence, all of it constant: the renewal's time to live (the renewal's
//! own `PEXPIRE key 30000`, the `PX`/`EX` of the acquisition it belongs
//! to, or the function's one etcd `lease_grant(10, None)`) and the period of the loop it runs in (one `sleep(d)` in that loop,
//! or a `.tick()` there of the function's one `interval(d)`), each a
//! literal or a `const` of the file. Reported at the wait, where the period
//! is set, when it is more than half the time to live.

use super::common::CheckCtx;
use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Severity};
use crate::model::{Pause, PauseKind};
use crate::pack::Role;
use crate::source::Span;

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::LeaseRenewedTooLate,
    severity: Severity::Warning,
    summary: "a lock is renewed every period longer than half its time to live, so one late renewal lets it expire mid-work",
    docs: include_str!("lease_renewed_too_late.md"),
    precision: "high",
    tags: &["distributed-lock", "correctness", "availability"],
    help: HELP,
    run: Some(run),
};

const HELP: &str = "renew at most every third of the time to live, and stop the work when a renewal fails or comes back late";

/// `30 s`, `1.5 s`, `800 ms`.
fn shown(ms: u64) -> String {
    if ms >= 1000 && ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else if ms >= 1000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{ms} ms")
    }
}

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    // The one time to live the file's leases are granted with, wherever
    // it is set (a `LeaseLockParams` built in a constructor, a Lease spec
    // written in a helper).
    let file_ttls: Vec<(Span, u64)> = ctx
        .model
        .fns
        .iter()
        .flat_map(|f| f.lease_ttls.iter().copied())
        .collect();
    // A lease granted with a time to live computed at run time could be
    // the one a loop keeps: then nothing is known of the file's leases.
    let unknown = ctx.model.fns.iter().any(|f| f.lease_ttl_unknown);
    let file_ttl = match file_ttls.as_slice() {
        [first, rest @ ..] if !unknown && rest.iter().all(|(_, ms)| *ms == first.1) => Some(*first),
        _ => None,
    };
    // Each function's waits with the innermost loop they run in, found once.
    let mut pause_loops: std::collections::HashMap<crate::model::FnId, Vec<Option<usize>>> =
        std::collections::HashMap::new();
    for r in &ctx.model.events {
        // A renewal, or a call that renews when called again by its holder
        // (kube-leader-election's `try_acquire_or_renew`).
        let renews = r.role == Role::Renew
            || (matches!(r.role, Role::Acquire | Role::TryAcquire) && ctx.api(r).renews);
        if !renews || !ctx.lock_call(r) {
            continue;
        }
        let taken = if r.role == Role::Renew {
            ctx.acquisition_for(r)
        } else {
            None
        };
        let f = &ctx.model.fns[r.func];
        // The renewal's own time to live, else its acquisition's, else the
        // one lease the function grants (etcd's keep-alive of
        // `lease_grant(10, None)`), else the one the file grants (a lease
        // object built in another function).
        let leased = matches!(r.backend.as_str(), "etcd" | "kubernetes");
        let granted = match f.lease_ttls.as_slice() {
            [(at, ms)] if leased && !f.lease_ttl_unknown => Some((*ms, *at)),
            [] if leased && !f.lease_ttl_unknown => file_ttl.map(|(at, ms)| (ms, at)),
            _ => None,
        };
        let Some((ttl, ttl_at)) = r
            .ttl_ms
            .map(|t| (t, r.span))
            .or_else(|| taken.and_then(|a| a.ttl_ms.map(|t| (t, a.span))))
            .or(granted)
        else {
            continue;
        };
        if ttl == 0 {
            continue;
        }
        // A function of more loops or waits than the model keeps is not
        // judged (its list of waits may be cut short).
        if f.loops.len() > crate::model::MAX_PACED || f.pauses.len() >= crate::model::MAX_PACED {
            continue;
        }
        let innermost = |span: &Span| {
            f.loops
                .iter()
                .enumerate()
                .filter(|(_, l)| l.contains(span))
                .min_by_key(|(_, l)| l.len())
                .map(|(i, _)| i)
        };
        // The innermost loop the renewal runs in; a wait counts when that
        // loop is its own innermost one (a wait in a nested loop paces
        // that loop, not this one).
        let Some(lp) = innermost(&r.span) else {
            continue;
        };
        let pause_loops = pause_loops
            .entry(r.func)
            .or_insert_with(|| f.pauses.iter().map(|p| innermost(&p.span)).collect());
        let in_this_loop = |j: usize| pause_loops[j] == Some(lp);
        // A call that renews by being called again (`try_acquire_or_renew`)
        // is also how a standby waits its turn: a wait under a condition on
        // its outcome (`if !won { sleep(30 s); continue }`) paces the
        // waiting, not the renewals.
        let on_outcome = |p: &Pause| {
            r.role != Role::Renew
                && p.guards.iter().any(|&g| {
                    let g = &f.guards[g];
                    g.events.contains(&r.id) || r.binding.iter().any(|b| g.mentions.contains(b))
                })
        };
        let waits: Vec<&Pause> = f
            .pauses
            .iter()
            .enumerate()
            .filter(|(j, p)| in_this_loop(*j) && !on_outcome(p))
            .map(|(_, p)| p)
            .collect();
        let sleeps: Vec<&&Pause> = waits
            .iter()
            .filter(|p| p.kind == PauseKind::Sleep)
            .collect();
        let ticks = waits.iter().any(|p| p.kind == PauseKind::Tick);
        let intervals: Vec<&Pause> = f
            .pauses
            .iter()
            .filter(|p| p.kind == PauseKind::Interval)
            .collect();
        // One wait sets the period, or nothing is said.
        let (period, at) = match (sleeps.as_slice(), ticks, intervals.as_slice()) {
            ([s], false, _) => match s.millis {
                Some(ms) => (ms, s.span),
                None => continue,
            },
            ([], true, [i]) => match i.millis {
                Some(ms) => (ms, i.span),
                None => continue,
            },
            _ => continue,
        };
        if period.saturating_mul(2) <= ttl {
            continue;
        }
        let message = if period >= ttl {
            format!(
                "the lock is renewed every {} but lives {} after each renewal: it expires before each renewal, while the work goes on",
                shown(period),
                shown(ttl),
            )
        } else {
            format!(
                "the lock is renewed every {} but lives {} after each renewal: a renewal {} late lets it expire while the work goes on",
                shown(period),
                shown(ttl),
                shown(ttl - period),
            )
        };
        let mut finding = ctx
            .finding(CheckId::LeaseRenewedTooLate, r, message)
            .label(format!(
                "renewed at most every {}: more than half the time to live",
                shown(period)
            ));
        finding.span = at;
        finding = finding
            .secondary(r.span, "the renewal this wait paces")
            .note(format!(
                "renew at most every {} (a third of {}): a GC pause, a slow round trip or one failed renewal then leaves two more tries before the lock expires",
                shown(ttl / 3),
                shown(ttl)
            ));
        if ttl_at != r.span {
            finding = finding.secondary(
                ttl_at,
                format!("the time to live, {}, is set here", shown(ttl)),
            );
        }
        out.push(finding.help(HELP));
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Settings;
    use crate::engine::Engine;
    use crate::pack::PackSet;
    use crate::vocab::CheckId;

    /// A renewal paced too slowly, followed by `extra` other loops that
    /// each wait: within the bound it is judged; past it, the function is
    /// not (and a run over such a file stays linear).
    fn findings(extra: usize) -> usize {
        let mut body = String::from(
            "fn g(con: &mut redis::Connection, lock_key: &str) -> redis::RedisResult<()> {\n    loop {\n        let _: bool = redis::cmd(\"PEXPIRE\").arg(lock_key).arg(30_000).query(con)?;\n        std::thread::sleep(std::time::Duration::from_secs(20));\n    }\n",
        );
        for _ in 0..extra {
            body.push_str("    loop { std::thread::sleep(std::time::Duration::from_secs(1)); }\n");
        }
        body.push_str("}\n");
        let packs = PackSet::builtin();
        let settings = Settings::default();
        let only = [CheckId::LeaseRenewedTooLate];
        let engine = Engine::new(&packs, &settings).only(&only);
        engine
            .check_bytes("t.rs", body.as_bytes(), false)
            .findings
            .len()
    }

    #[test]
    fn a_function_of_thousands_of_loops_is_not_judged() {
        assert_eq!(findings(3), 1);
        assert_eq!(findings(crate::model::MAX_PACED + 1), 0);
    }
}
