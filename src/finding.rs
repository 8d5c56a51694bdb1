//! What a check reports. Findings are plain owned data (`Send`), built on the
//! worker thread that parsed the file and handed to the reporters.

use crate::source::Span;
pub use crate::vocab::{CheckId, Purpose, Severity};

/// A secondary place that explains a finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// A place in another file (or elsewhere in this one) that a finding is
/// about too: the call sites that reach a lock call inside a wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Related {
    /// Path as printed, like [`Finding::path`].
    pub path: String,
    pub span: Span,
    pub message: String,
}

/// One reported problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub check: CheckId,
    pub severity: Severity,
    /// Path as printed: relative to the current directory, `/` separators.
    pub path: String,
    pub span: Span,
    pub message: String,
    /// Text under the primary span.
    pub label: Option<String>,
    pub labels: Vec<Label>,
    /// Places elsewhere the finding is about (SARIF `relatedLocations`).
    pub related: Vec<Related>,
    pub help: Option<String>,
    pub notes: Vec<String>,
    pub backend: Option<String>,
    pub purpose: Option<Purpose>,
    /// Stable identity across unrelated edits (see `fingerprint.rs`).
    pub fingerprint: String,
    /// `Some(justification)` when an in-source suppression silences it.
    pub suppressed: Option<String>,
    /// The item (fn, impl method) the finding sits in, for fingerprints.
    pub item: String,
    /// An exact fix, when there is one (see `fix/`).
    pub fix: Option<crate::fix::Fix>,
    /// `missing-purpose` only: the line a `lock-purpose:` annotation goes
    /// above (the first line of the acquisition's statement).
    pub purpose_line: Option<usize>,
}

impl Finding {
    pub fn new(check: CheckId, span: Span, message: impl Into<String>) -> Finding {
        Finding {
            check,
            severity: check.default_severity(),
            path: String::new(),
            span,
            message: message.into(),
            label: None,
            labels: Vec::new(),
            related: Vec::new(),
            help: None,
            notes: Vec::new(),
            backend: None,
            purpose: None,
            fingerprint: String::new(),
            suppressed: None,
            item: String::new(),
            fix: None,
            purpose_line: None,
        }
    }

    pub fn label(mut self, text: impl Into<String>) -> Self {
        self.label = Some(text.into());
        self
    }

    pub fn secondary(mut self, span: Span, text: impl Into<String>) -> Self {
        self.labels.push(Label {
            span,
            message: text.into(),
        });
        self
    }

    pub fn help(mut self, text: impl Into<String>) -> Self {
        self.help = Some(text.into());
        self
    }

    pub fn note(mut self, text: impl Into<String>) -> Self {
        self.notes.push(text.into());
        self
    }

    pub fn backend(mut self, backend: Option<&str>) -> Self {
        self.backend = backend.map(str::to_string);
        self
    }

    pub fn purpose(mut self, purpose: Option<Purpose>) -> Self {
        self.purpose = purpose;
        self
    }

    pub fn item(mut self, item: &str) -> Self {
        self.item = item.to_string();
        self
    }

    /// The order every reporter prints in: path, line, column, check.
    pub fn sort_key(&self) -> (&str, usize, usize, &'static str, &str) {
        (
            &self.path,
            self.span.start.line,
            self.span.start.column,
            self.check.as_str(),
            &self.message,
        )
    }
}
