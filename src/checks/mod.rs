//! The checks. Each lives in its own file named after its id, with its
//! documentation beside it (`<id>.md`, shown by `lockaudit explain`, SARIF
//! help and the book's check pages, `docs/src/checks/<id>.md`, which
//! `tests/docs.rs` generates from it). This module holds the registry: the [`CheckId`]
//! enum and the [`CHECKS`] slice that `rules`, `explain`, SARIF and the meta
//! tests all read.

mod common;
mod ignored_acquire_result;
mod ignored_renewal_failure;
mod lock_without_expiry;
mod missing_purpose;
mod non_consensus_correctness_lock;
mod parse_error;
mod pooled_session_lock;
mod read_then_write_acquire;
mod unattached_purpose;
mod unfenced_correctness_lock;
mod unknown_purpose;
mod unowned_release;
mod unowned_renewal;
mod unused_suppression;

pub use common::{
    connection_of, constant_owner, help_for, key_display, merge_same_place, token_use, CheckCtx,
    Conn, TokenUse,
};

use crate::finding::{Finding, Severity};

/// The stable check ids (SPEC "Checks"). Never rename one: they are SARIF
/// `ruleId`s and appear in suppressions and baselines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CheckId {
    MissingPurpose,
    UnknownPurpose,
    ReadThenWriteAcquire,
    UnownedRelease,
    UnfencedCorrectnessLock,
    UnownedRenewal,
    LockWithoutExpiry,
    IgnoredAcquireResult,
    IgnoredRenewalFailure,
    NonConsensusCorrectnessLock,
    PooledSessionLock,
    UnattachedPurpose,
    UnusedSuppression,
    ParseError,
}

impl CheckId {
    pub const ALL: [CheckId; 14] = [
        CheckId::MissingPurpose,
        CheckId::UnknownPurpose,
        CheckId::ReadThenWriteAcquire,
        CheckId::UnownedRelease,
        CheckId::UnfencedCorrectnessLock,
        CheckId::UnownedRenewal,
        CheckId::LockWithoutExpiry,
        CheckId::IgnoredAcquireResult,
        CheckId::IgnoredRenewalFailure,
        CheckId::NonConsensusCorrectnessLock,
        CheckId::PooledSessionLock,
        CheckId::UnattachedPurpose,
        CheckId::UnusedSuppression,
        CheckId::ParseError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CheckId::MissingPurpose => "missing-purpose",
            CheckId::UnknownPurpose => "unknown-purpose",
            CheckId::ReadThenWriteAcquire => "read-then-write-acquire",
            CheckId::UnownedRelease => "unowned-release",
            CheckId::UnfencedCorrectnessLock => "unfenced-correctness-lock",
            CheckId::UnownedRenewal => "unowned-renewal",
            CheckId::LockWithoutExpiry => "lock-without-expiry",
            CheckId::IgnoredAcquireResult => "ignored-acquire-result",
            CheckId::IgnoredRenewalFailure => "ignored-renewal-failure",
            CheckId::NonConsensusCorrectnessLock => "non-consensus-correctness-lock",
            CheckId::UnattachedPurpose => "unattached-purpose",
            CheckId::PooledSessionLock => "pooled-session-lock",
            CheckId::UnusedSuppression => "unused-suppression",
            CheckId::ParseError => "parse-error",
        }
    }

    pub fn parse(s: &str) -> Option<CheckId> {
        CheckId::ALL.into_iter().find(|c| c.as_str() == s)
    }

    pub fn info(self) -> &'static CheckInfo {
        CHECKS
            .iter()
            .find(|c| c.id == self)
            .expect("every check id is registered")
    }

    pub fn default_severity(self) -> Severity {
        self.info().severity
    }
}

impl std::fmt::Display for CheckId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A check's metadata and entry point.
pub struct CheckInfo {
    pub id: CheckId,
    pub severity: Severity,
    /// One line, lowercase, no final period.
    pub summary: &'static str,
    /// Markdown with the fixed headings; `explain` prints it.
    pub docs: &'static str,
    /// SARIF `properties.precision`.
    pub precision: &'static str,
    /// SARIF `properties.tags`.
    pub tags: &'static [&'static str],
    /// What to write instead, naming no backend: used when the pack of the
    /// backend at hand has no help of its own for this check.
    pub help: &'static str,
    /// Runs over one file's model. `None` for checks the engine emits itself
    /// (`parse-error`, `unused-suppression`).
    pub run: Option<fn(&CheckCtx, &mut Vec<Finding>)>,
}

pub static CHECKS: &[CheckInfo] = &[
    missing_purpose::INFO,
    unknown_purpose::INFO,
    read_then_write_acquire::INFO,
    unowned_release::INFO,
    unfenced_correctness_lock::INFO,
    unowned_renewal::INFO,
    lock_without_expiry::INFO,
    ignored_acquire_result::INFO,
    ignored_renewal_failure::INFO,
    non_consensus_correctness_lock::INFO,
    pooled_session_lock::INFO,
    unattached_purpose::INFO,
    unused_suppression::INFO,
    parse_error::INFO,
];

pub use parse_error::finding as parse_error_finding;
pub use parse_error::too_large as too_large_finding;
pub use unused_suppression::findings as unused_suppression_findings;

/// The help for a check id that names no check: the closest id when one is
/// near (`unowned-relase` → `unowned-release`), and where the ids are listed.
pub fn unknown_id_help(id: &str) -> String {
    match crate::suggest::closest(id, CHECKS.iter().map(|c| c.id.as_str())) {
        Some(near) => format!("did you mean `{near}`? `lockaudit rules` lists the check ids"),
        None => "`lockaudit rules` lists the check ids".to_string(),
    }
}
