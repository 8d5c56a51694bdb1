//! Exit codes (SPEC "Exit codes"); the only place they are defined.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Nothing at or above `--fail-on`.
    Clean = 0,
    /// Findings at or above `--fail-on`.
    Findings = 1,
    /// The tool could not do its job.
    Error = 2,
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(s: ExitStatus) -> Self {
        std::process::ExitCode::from(s as u8)
    }
}

/// A failure that stops the run with exit code 2.
#[derive(Debug)]
pub struct Failure(pub String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(e.to_string())
    }
}
