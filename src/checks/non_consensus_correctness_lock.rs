//! `non-consensus-correctness-lock`: a correctness lock backed by a store
//! without consensus, which a failover can grant twice.

use super::common::{call_label, help_for, CheckCtx};
use super::{CheckId, CheckInfo};
use crate::finding::{Finding, Purpose, Severity};

pub(super) const INFO: CheckInfo = CheckInfo {
    id: CheckId::NonConsensusCorrectnessLock,
    severity: Severity::Warning,
    summary: "a `correctness` lock is backed by a store without consensus, which a failover can grant twice",
    docs: include_str!("non_consensus_correctness_lock.md"),
    precision: "high",
    tags: &["distributed-lock", "correctness", "availability"],
    help: HELP,
    run: Some(run),
};

const HELP: &str = "take correctness locks from a store that decides by consensus and hands out a fencing token, and fence every effect; or use a database constraint or row lock where the state lives";

fn run(ctx: &CheckCtx, out: &mut Vec<Finding>) {
    for e in ctx.takes() {
        if !ctx.lock_call(e) || ctx.held_to(e) != Some(Purpose::Correctness) {
            continue;
        }
        let api = ctx.api(e);
        if api.consensus {
            continue;
        }
        let pack = ctx.packs.pack(e.api);
        let mut f = ctx
            .finding(
                CheckId::NonConsensusCorrectnessLock,
                e,
                match &pack.consensus_source {
                    // The deployment's fact, from a config's `backends:`.
                    Some(source) => format!(
                        "correctness lock on {}, which has no consensus here ({source}): a failover can grant it to two clients",
                        e.backend
                    ),
                    None => format!(
                        "correctness lock on {}, a store without consensus: a failover can grant it to two clients",
                        e.backend
                    ),
                },
            )
            .label(format!("`{}` records the holder on a store that can lose it", call_label(ctx, api, e)))
            .help(help_for(ctx.packs, e.api, CheckId::NonConsensusCorrectnessLock));
        if let Some(note) = &pack.consensus_note {
            f = f.note(note.clone());
        }
        out.push(f);
    }
}
