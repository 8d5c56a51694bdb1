//! The checks. Each lives in its own file named after its id, with its
//! documentation beside it (`<id>.md`, shown by `lockaudit explain`, SARIF
//! help and the book's check pages, `docs/src/checks/<id>.md`, which
//! `tests/docs.rs` generates from it). This module holds the registry: the
//! [`CHECKS`] slice that `rules`, `explain`, SARIF and the meta tests all
//! read, and what it says of each [`CheckId`] (the ids themselves are in
//! [`crate::vocab`], beneath everything).

mod common;
mod ignored_acquire_result;
mod ignored_renewal_failure;
mod lease_renewed_too_late;
mod lock_without_expiry;
mod mismatched_release_key;
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
    connection_of, help_for, key_display, merge_same_place, token_use, CheckCtx, Conn, TokenUse,
};

use crate::finding::{Finding, Severity};
pub use crate::vocab::CheckId;

/// Where the registry says more of a check: its metadata and entry point.
impl CheckId {
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
    mismatched_release_key::INFO,
    lease_renewed_too_late::INFO,
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

/// The page `lockaudit explain` prints for a check (also shown by the
/// language server's explain command).
pub fn explain_text(check: CheckId) -> String {
    let info = check.info();
    let mut text = format!(
        "# {} [{}]\n\n{}\n\n{}",
        info.id.as_str(),
        info.severity.as_str(),
        info.summary,
        info.docs
    );
    if check == CheckId::UnfencedCorrectnessLock || check == CheckId::NonConsensusCorrectnessLock {
        text.push_str(&crate::pack::builtin::token_table());
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}
