//! The words every part of lockaudit shares: check ids, severities and
//! purposes. The bottom of the house: it depends on nothing of the crate,
//! so findings, config and reports name a check without reaching the
//! check registry (`crate::checks`, which adds each check's metadata).

use serde::{Deserialize, Serialize};

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
    MismatchedReleaseKey,
    LeaseRenewedTooLate,
    UnattachedPurpose,
    UnusedSuppression,
    ParseError,
}

impl CheckId {
    pub const ALL: [CheckId; 16] = [
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
        CheckId::MismatchedReleaseKey,
        CheckId::LeaseRenewedTooLate,
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
            CheckId::MismatchedReleaseKey => "mismatched-release-key",
            CheckId::LeaseRenewedTooLate => "lease-renewed-too-late",
            CheckId::UnusedSuppression => "unused-suppression",
            CheckId::ParseError => "parse-error",
        }
    }

    pub fn parse(s: &str) -> Option<CheckId> {
        CheckId::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl std::fmt::Display for CheckId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How serious a finding is. Ordered: `Note < Warning < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// Why a lock is taken (SPEC "Purpose annotation").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Purpose {
    Efficiency,
    Correctness,
}

impl Purpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Efficiency => "efficiency",
            Purpose::Correctness => "correctness",
        }
    }
}
