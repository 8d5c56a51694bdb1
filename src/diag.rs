//! Errors in the user's YAML (rule packs and config), rendered by miette with
//! the file, line and column, a label under the offending value and a hint.
//! Every problem in a file is collected and reported together.

use miette::{Diagnostic, NamedSource, SourceSpan};
use thiserror::Error;

use crate::yamlloc::{self, Loc, Seg};

/// One problem at one place in a YAML file.
#[derive(Debug, Error, Diagnostic)]
#[error("{path}:{line}:{column}: {message}")]
pub struct YamlProblem {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
    #[help]
    pub help: Option<String>,
    #[source_code]
    pub src: NamedSource<String>,
    #[label("{label}")]
    pub span: SourceSpan,
    pub label: String,
}

/// Every problem found in one YAML file.
#[derive(Debug, Error, Diagnostic)]
#[error("{what} {path} is invalid ({} problem{})", problems.len(), if problems.len() == 1 { "" } else { "s" })]
#[diagnostic(code(lockaudit::invalid_yaml))]
pub struct YamlErrors {
    pub what: &'static str,
    pub path: String,
    #[related]
    pub problems: Vec<YamlProblem>,
}

/// Collects problems for one file.
pub struct Collector<'a> {
    pub path: &'a str,
    pub text: &'a str,
    pub problems: Vec<YamlProblem>,
}

impl<'a> Collector<'a> {
    pub fn new(path: &'a str, text: &'a str) -> Self {
        Collector {
            path,
            text,
            problems: Vec::new(),
        }
    }

    /// A problem at the value found at `path` (or the file start).
    pub fn at(&mut self, path: &[Seg], message: impl Into<String>, help: Option<String>) {
        let loc = yamlloc::locate(self.text, path).unwrap_or(Loc {
            line: 1,
            column: 1,
            offset: 0,
        });
        self.at_loc(loc, message, help);
    }

    pub fn at_loc(&mut self, loc: Loc, message: impl Into<String>, help: Option<String>) {
        let message = message.into();
        let len = value_len(self.text, loc.offset);
        self.problems.push(YamlProblem {
            path: self.path.to_string(),
            line: loc.line,
            column: loc.column,
            label: "here".to_string(),
            message,
            help,
            src: NamedSource::new(self.path, self.text.to_string()),
            span: (loc.offset, len).into(),
        });
    }

    /// A `yaml_serde` error (syntax, unknown field, wrong type).
    pub fn serde(&mut self, err: &yaml_serde::Error, help: Option<String>) {
        let loc = yamlloc::error_loc(err).unwrap_or_default();
        let loc = Loc {
            line: loc.line.max(1),
            column: loc.column.max(1),
            offset: loc.offset,
        };
        self.at_loc(loc, yamlloc::message(err), help);
    }

    pub fn finish(self, what: &'static str) -> Result<(), YamlErrors> {
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(YamlErrors {
                what,
                path: self.path.to_string(),
                problems: self.problems,
            })
        }
    }
}

/// Length of the scalar (or line remainder) starting at `offset`, for the label.
fn value_len(text: &str, offset: usize) -> usize {
    let rest = &text[offset.min(text.len())..];
    let line = rest.lines().next().unwrap_or("");
    let trimmed = line.trim_end();
    let len = match trimmed.find(" #") {
        Some(i) => i,
        None => trimmed.len(),
    };
    len.max(1).min(rest.len().max(1))
}
